package session

import (
	"os"
	"slices"

	"github.com/oncetool/once/internal/mountinfo"
	"github.com/oncetool/once/trace"
)

// maxGeneratedDevs bounds generatedDevs' map: the mount table is the
// traced user's to grow.
const maxGeneratedDevs = 4096

// generatedDevs maps the devices of the mounts at path (a mountinfo
// file) of a trace.GeneratedFS type (procfs, sysfs, …) to that type;
// nil when it can't be read. A device of a mount only the traced
// command's mount namespace has is not in it.
func generatedDevs(path string) map[uint64]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	devs := map[uint64]string{}
	mountinfo.Each(f, func(m mountinfo.Mount) bool {
		if trace.GeneratedFS(m.FSType) {
			devs[m.Dev] = m.FSType
		}
		return len(devs) < maxGeneratedDevs
	})
	return devs
}

// learnGenerated records that dev is a device of fstype (a
// trace.GeneratedFS), as the kernel said of a file opened there: a mount
// of the traced command's own mount namespace (its own /proc) is not in
// once's mount table. Within maxGeneratedDevs, but for a device known
// already (a device number freed and given to another mount is taken
// anew).
func (s *Session) learnGenerated(dev uint64, fstype string) {
	if !s.genRead {
		s.genDevs, s.genRead = generatedDevs("/proc/self/mountinfo"), true
	}
	if s.genDevs == nil {
		s.genDevs = map[uint64]string{}
	}
	if _, ok := s.genDevs[dev]; ok || len(s.genDevs) < maxGeneratedDevs {
		s.genDevs[dev] = fstype
	}
}

// markGenerated sets FSType of the file findings of fs on a
// trace.GeneratedFS mount (procfs, sysfs, …): the devices of once's
// mount table, read at the first file finding, for once run and once
// watch alike.
func (s *Session) markGenerated(fs []trace.Finding) {
	if !slices.ContainsFunc(fs, func(f trace.Finding) bool { return f.Info().Shape == trace.ShapeFile && f.Errno == 0 }) {
		return
	}
	if !s.genRead {
		s.genDevs, s.genRead = generatedDevs("/proc/self/mountinfo"), true
	}
	trace.MarkGeneratedFS(fs, s.genDevs)
}
