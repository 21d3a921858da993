package container

import (
	"strconv"
	"strings"
)

// MaxProcCgroupLines is the most lines of /proc/PID/cgroup read: one per
// hierarchy (a dozen v1 controllers and named hierarchies, and 0::).
const MaxProcCgroupLines = 64

// procCgroup is what /proc/PID/cgroup says of a process.
type procCgroup struct {
	v2    string   // the "0::" line's path, "" when absent
	hasV2 bool     // there is a "0::" line
	dead  bool     // v2 ended in " (deleted)": the kernel's mark of a removed cgroup, cut off
	v1    []string // the other lines' paths, in the file's order
}

// deletedMark is what the kernel appends to a removed cgroup2 cgroup's
// path in /proc/PID/cgroup (a process that outlived it: a zombie), and
// readlink to a removed cgroup's directory.
const deletedMark = " (deleted)"

// parseProcCgroup parses /proc/PID/cgroup: "0::/path" (cgroup2),
// "N:ctrl,ctrl:/path" and "N:name=systemd:/path" (v1). A malformed file
// (a line without two colons or whose path is not absolute, a hierarchy
// id twice, too many lines) is no answer at all: ok false. The kernel
// refuses '\n' in a cgroup's name (mkdir gives EINVAL), so no name can
// forge a line; the checks are for a /proc that is not the kernel's.
func parseProcCgroup(text string) (pc procCgroup, ok bool) {
	seen := map[uint64]bool{}
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		if n++; n > MaxProcCgroupLines {
			return procCgroup{}, false
		}
		hid, rest, ok1 := strings.Cut(line, ":")
		ctrl, path, ok2 := strings.Cut(rest, ":")
		id, err := strconv.ParseUint(hid, 10, 32)
		if !ok1 || !ok2 || err != nil || !strings.HasPrefix(path, "/") || seen[id] {
			return procCgroup{}, false
		}
		seen[id] = true
		if id == 0 && ctrl == "" {
			pc.v2, pc.hasV2 = path, true
			if p, found := strings.CutSuffix(path, deletedMark); found {
				pc.v2, pc.dead = p, true
			}
		} else {
			pc.v1 = append(pc.v1, path)
		}
	}
	return pc, n > 0
}

// choose picks the path that identifies the process's container: the
// cgroup2 path if it parses as a container's, else the first v1 path
// that does; failing those the first that names a pod or a runtime
// (conmon); failing all, the cgroup2 path (or "/" on v1 alone).
func (pc procCgroup) choose() (path, runtime, id, podUID string) {
	paths := make([]string, 0, 1+len(pc.v1))
	if pc.hasV2 {
		paths = append(paths, pc.v2)
	}
	paths = append(paths, pc.v1...)
	for _, p := range paths {
		if rt, cid, uid := ParseCgroupPath(p); cid != "" {
			return p, rt, cid, uid
		}
	}
	for _, p := range paths {
		if rt, _, uid := ParseCgroupPath(p); rt != "" || uid != "" {
			return p, rt, "", uid
		}
	}
	if pc.hasV2 {
		return pc.v2, "", "", ""
	}
	if len(pc.v1) > 0 {
		return pc.v1[0], "", "", ""
	}
	return "", "", "", ""
}
