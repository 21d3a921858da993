package collector

import (
	"errors"

	"fmt"
	"github.com/cilium/ebpf"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CommLen is how many bytes of a task's comm the kernel keeps: TASK_COMM_LEN
// (16) less the terminating NUL.
const CommLen = 15

// Filter selects the processes a system-wide tracer reports. Zero value:
// everything. The filters combine: a task is reported when it passes every
// one that is set.
//
// Every check runs in the kernel, before any string is read: a filtered-out
// task costs one or two map lookups per system call, and nothing about it
// reaches user space (neither its opens and execs nor its image and exit
// events). The attributes are those of the task when the event happens:
// a system call is judged when it enters (an exec that passes is reported
// with the new image's comm), a new image after its comm changed, a fork
// by the parent's attributes (the child's at that instant).
type Filter struct {
	Pids []int // only these processes (tgids)...
	// ...and, with Tree, every process they fork from now on (followed in
	// the kernel from the instant they exist). Needs Pids.
	Tree bool
	// Comms: only tasks whose comm is one of these (exact, as the kernel
	// truncates it: at most CommLen bytes).
	Comms        []string
	ExcludeComms []string // never tasks whose comm is one of these
	UIDs         []uint32 // only these real uids (empty: any)
	// CgroupPath: only tasks in this cgroup v2 directory or below it
	// (containers), e.g. /sys/fs/cgroup/system.slice/foo.service.
	CgroupPath string
	// CgroupIDs: only tasks in, or below, a cgroup v2 of CgroupIDs, and
	// in cgroups made after Open until the caller decides on them
	// (Tracer.CgroupPending, SelectCgroup, DropCgroup): what selecting
	// containers by name needs, as they start after the tracer did too.
	CgroupIDs []uint64
	// ByCgroupID turns the CgroupIDs filter on, even with none yet.
	ByCgroupID bool
}

// IsZero reports whether f selects everything.
func (f Filter) IsZero() bool {
	return len(f.Pids) == 0 && !f.Tree && len(f.Comms) == 0 && len(f.ExcludeComms) == 0 &&
		len(f.UIDs) == 0 && f.CgroupPath == "" && !f.ByCgroupID && len(f.CgroupIDs) == 0
}

// cgroup2SuperMagic is CGROUP2_SUPER_MAGIC, statfs's f_type on cgroup2.
const cgroup2SuperMagic = 0x63677270

// Validate checks f before any BPF is loaded. Its errors are one line,
// meant to be shown to a user as is.
func (f Filter) Validate() error {
	if f.Tree && len(f.Pids) == 0 {
		return errors.New("filter: Tree follows the children of Pids, and no pid is given")
	}
	for _, p := range f.Pids {
		if err := checkPid(p); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		what  string
		comms []string
	}{{"comm", f.Comms}, {"excluded comm", f.ExcludeComms}} {
		for _, c := range list.comms {
			if err := checkComm(c); err != nil {
				return fmt.Errorf("filter: %s %q: %w", list.what, c, err)
			}
		}
	}
	for _, u := range f.UIDs {
		if u == math.MaxUint32 {
			return fmt.Errorf("filter: uid %d is the invalid uid (-1)", u)
		}
	}
	if f.CgroupPath != "" {
		if err := checkCgroup(f.CgroupPath); err != nil {
			return err
		}
	}
	return nil
}

func checkComm(c string) error {
	switch {
	case c == "":
		return errors.New("empty")
	case strings.IndexByte(c, 0) >= 0:
		return errors.New("contains a NUL byte")
	case len(c) > CommLen:
		return fmt.Errorf("%d bytes, but the kernel truncates comm to %d bytes: it would never match (use %q)",
			len(c), CommLen, c[:CommLen])
	}
	return nil
}

// checkPid accepts a live process id: not a thread of another process,
// whose events carry its process's id and would never match. The pid is
// the kernel's (the initial namespace's): in a pid namespace of once's
// own, /proc names another process or none by it, so only its sign is
// checked there.
func checkPid(p int) error {
	if p <= 0 {
		return fmt.Errorf("filter: pid %d: must be positive", p)
	}
	if checkPidNamespace() != nil {
		return nil
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("filter: pid %d: no such process", p)
		}
		return fmt.Errorf("filter: pid %d: %w", p, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "State:"); ok && exitedState(v) {
			return fmt.Errorf("filter: pid %d has exited (a zombie its parent has not reaped): its number would name the next process given it", p)
		}
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if tgid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && tgid != p {
				return fmt.Errorf("filter: pid %d is a thread of process %d: give the process id", p, tgid)
			}
			break
		}
	}
	return nil
}

// exitedState: /proc/PID/status's State of a process that has exited, a
// zombie (Z) or dead (X). Its exit went by before once could see it: its
// pid, followed, would never be let go, and once reaped, it names the
// next process the kernel gives it.
func exitedState(v string) bool {
	v = strings.TrimSpace(v)
	return strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X")
}

// pidsGone: the first of pids that exited (or became a zombie) between
// Validate and the attach of the exit hook, which would have let it go:
// a later process given its number would be followed. 0 if none.
func pidsGone(pids []int) int {
	if checkPidNamespace() != nil {
		return 0
	}
	for _, p := range pids {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
		if err != nil {
			return p
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				if exitedState(v) {
					return p
				}
				break
			}
		}
	}
	return 0
}

func checkCgroup(path string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return fmt.Errorf("filter: cgroup %s: %w", path, err)
	}
	if fs.Type != cgroup2SuperMagic {
		return fmt.Errorf("filter: cgroup %s is not on a cgroup v2 (cgroup2) filesystem; give a directory of the unified hierarchy (see `mount -t cgroup2`)", path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("filter: cgroup %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("filter: cgroup %s is not a directory", path)
	}
	return nil
}

// commKey is a comm as bpf_get_current_comm writes it: NUL padded to 16.
func commKey(c string) [CommLen + 1]byte {
	var k [CommLen + 1]byte
	copy(k[:CommLen], c)
	return k
}

// Verdicts of the cgroup id filter (bpf/once.h).
const (
	cgroupSelected = 1
	cgroupPending  = 2
)

// CgroupPending reports whether the cgroup id filter lets cgroup id
// through only until it is decided on: it was made after Open and the
// caller has not yet named its container. Events of a task in it reach
// Next; the caller decides with SelectCgroup or DropCgroup.
func (t *Tracer) CgroupPending(id uint64) bool {
	var v uint8
	if t.objs.CgroupIds == nil || t.objs.CgroupIds.Lookup(id, &v) != nil {
		return false
	}
	return v == cgroupPending
}

// SelectCgroup keeps cgroup id's tasks traced for good.
func (t *Tracer) SelectCgroup(id uint64) error {
	v := uint8(cgroupSelected)
	return t.objs.CgroupIds.Put(id, v)
}

// DropCgroup stops tracing cgroup id's tasks (unless a cgroup above it
// is selected).
func (t *Tracer) DropCgroup(id uint64) error {
	err := t.objs.CgroupIds.Delete(id)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	}
	return err
}

// CgroupChange is what FollowCgroupPath found at Filter.CgroupPath.
type CgroupChange int

const (
	CgroupSame   CgroupChange = iota // the cgroup filtered on is still there (or no CgroupPath)
	CgroupGone                       // the directory was removed: nothing can match until it is made again
	CgroupRemade                     // another cgroup is at the path now (removed and made again): filtered on from now
)

// FollowCgroupPath keeps the --cgroup filter on the cgroup its path
// names. The kernel's filter holds the cgroup the path named at Open:
// one removed and made again (systemd does so at every restart of a
// service) is another cgroup, whose tasks would never pass. Called now
// and then (a watch: every second), it says when the directory is gone
// (once per removal) and points the filter at the cgroup made anew.
func (t *Tracer) FollowCgroupPath() (CgroupChange, error) {
	if t.cgroupPath == "" {
		return CgroupSame, nil
	}
	fd, err := unix.Open(t.cgroupPath, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			if t.cgroupGone {
				return CgroupSame, nil
			}
			t.cgroupGone = true
			return CgroupGone, nil
		}
		return CgroupSame, fmt.Errorf("cgroup %s: %w", t.cgroupPath, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	var fs unix.Statfs_t
	if err := unix.Fstat(fd, &st); err != nil {
		return CgroupSame, fmt.Errorf("cgroup %s: %w", t.cgroupPath, err)
	}
	if st.Ino == t.cgroupIno {
		t.cgroupGone = false
		return CgroupSame, nil
	}
	if err := unix.Fstatfs(fd, &fs); err != nil || fs.Type != cgroup2SuperMagic {
		return CgroupSame, fmt.Errorf("cgroup %s: no longer a cgroup v2 directory", t.cgroupPath)
	}
	if err := t.objs.CgroupInclude.Put(uint32(0), uint32(fd)); err != nil {
		return CgroupSame, fmt.Errorf("cgroup %s: %w", t.cgroupPath, err)
	}
	t.cgroupIno, t.cgroupGone = st.Ino, false
	return CgroupRemade, nil
}
