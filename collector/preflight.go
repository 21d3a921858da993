package collector

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PreflightError is a missing prerequisite, with what to do about it. Its
// message is one line, meant to be shown as is.
type PreflightError struct {
	What string // what is missing
	Fix  string // what the user can do
}

func (e *PreflightError) Error() string { return e.What + ": " + e.Fix }

const (
	btfPath     = "/sys/kernel/btf/vmlinux"
	tracefsPath = "/sys/kernel/tracing"
)

// Preflight checks what loading needs and fixes what it safely can: it mounts
// tracefs when it is missing. It returns a *PreflightError for anything the
// user has to fix.
func Preflight() error {
	if err := checkPrivileges(); err != nil {
		return err
	}
	if _, err := os.Stat(btfPath); err != nil {
		return &PreflightError{
			What: "kernel BTF not found at " + btfPath,
			Fix:  "once needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.8)",
		}
	}
	if err := checkKernelVersion(); err != nil {
		return err
	}
	if data, err := os.ReadFile(lockdownPath); err == nil {
		if err := lockdownError(string(data)); err != nil {
			return err
		}
	}
	return ensureTracefs()
}

const lockdownPath = "/sys/kernel/security/lockdown"

// procPidInitIno is the inode number of the initial pid namespace's
// file (/proc/PID/ns/pid), fixed by the kernel (PROC_PID_INIT_INO).
const procPidInitIno = 0xEFFFFFFC

// pidNamespaceError says why once can't follow processes by pid from a
// pid namespace of its own (the inode of its ns/pid file, ino): the
// kernel side knows tasks by their pids in the initial namespace, and
// once knows its own and its command's only in its own (getpid, fork),
// so the command was never followed and the run traced nothing. nil in
// the initial namespace, or when that can't be told (ino 0).
func pidNamespaceError(ino uint64) error {
	if ino == 0 || ino == procPidInitIno {
		return nil
	}
	return &PreflightError{
		What: fmt.Sprintf("in a pid namespace of its own (pid:[%d]) once can't tell the kernel's pids of its command or its own", ino),
		Fix:  "run once in the initial pid namespace: on the host, or in a container that shares the host's (docker run --pid=host, a pod's hostPID: true)",
	}
}

// stacksPidNamespaceError says why --stacks is refused in a pid
// namespace of its own (the inode of its ns/pid file, ino): a stack is
// symbolized by the mappings the kernel's perf records report, which
// name a process by its pid in once's namespace (0 outside it), while
// the calls carry the initial namespace's pids; a process of once's
// namespace would lend its mappings to the host process with the same
// number. nil in the initial namespace, or when that can't be told.
func stacksPidNamespaceError(ino uint64) error {
	if pidNamespaceError(ino) == nil {
		return nil
	}
	return &PreflightError{
		What: fmt.Sprintf("--stacks in a pid namespace of its own (pid:[%d]): the kernel reports mappings by this namespace's pids and calls by the host's, so stacks can't be symbolized", ino),
		Fix:  "run once in the initial pid namespace (docker run --pid=host, a pod's hostPID: true), or without --stacks",
	}
}

// checkStacksPidNamespace is stacksPidNamespaceError of this process.
func checkStacksPidNamespace() error {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return nil
	}
	return stacksPidNamespaceError(st.Ino)
}

// PidNamespaceWarning is what a watch in a pid namespace of its own
// (checkPidNamespace's) should be told, "" in the initial one: the pids
// it shows and --pid takes are the kernel's (the initial namespace's),
// and the counts that threads still running at the end hold can't be
// taken from them (CollectHeld names threads by /proc, which has not
// the host's, and those outside the namespace not at all). Its own calls
// it leaves out by its tgid there, which the kernel tells it
// (kernelTgid); only where it could not (SelfKnown false) are they
// traced too, and the warning says so.
func (t *Tracer) PidNamespaceWarning() string {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return ""
	}
	return pidNamespaceWarning(st.Ino, t.selfKnown)
}

// SelfTgid is once's pid as the kernel knows it (the initial pid
// namespace's), which its programs leave out (see selfTgid); 0 where
// that is not known (SelfKnown false).
func (t *Tracer) SelfTgid() uint32 {
	if !t.selfKnown {
		return 0
	}
	return t.selfTgid
}

// SelfKnown reports whether the programs leave out once's own calls by
// its tgid as the kernel knows it: true but in a pid namespace of its
// own where the kernel could not be asked (see selfTgid).
func (t *Tracer) SelfKnown() bool { return t.selfKnown }

func pidNamespaceWarning(ino uint64, selfKnown bool) string {
	if pidNamespaceError(ino) == nil {
		return ""
	}
	if selfKnown {
		return fmt.Sprintf("in a pid namespace of its own (pid:[%d]) once shows the kernel's pids (the host's, not this namespace's), --pid takes those, and what a process still running at the end counted but had not sent is lost (counts are lower bounds): run it in the host's (--pid=host, hostPID: true)", ino)
	}
	return fmt.Sprintf("in a pid namespace of its own (pid:[%d]) once shows the kernel's pids (the host's, not this namespace's), --pid takes those, and its own calls are traced too: run it in the host's (--pid=host, hostPID: true)", ino)
}

// checkPidNamespace is pidNamespaceError of this process.
func checkPidNamespace() error {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return nil
	}
	return pidNamespaceError(st.Ino)
}

// lockdownError reads the kernel lockdown state ("none integrity
// [confidentiality]"): in confidentiality mode BPF may not read kernel
// memory, which every once program does.
func lockdownError(state string) error {
	if strings.Contains(state, "[confidentiality]") {
		return &PreflightError{
			What: "the kernel is locked down (lockdown=confidentiality): BPF programs may not read kernel memory",
			Fix:  "boot with lockdown=integrity or none (kernel parameter), or run once where lockdown is not in confidentiality mode",
		}
	}
	return nil
}

// procUserInitIno is the inode number of the initial user namespace's
// file (/proc/PID/ns/user), fixed by the kernel (PROC_USER_INIT_INO).
const procUserInitIno = 0xEFFFFFFD

// userNamespaceError says why a process in a user namespace of its own
// (the inode of its ns/user file, ino) loads no BPF program whatever
// capabilities it holds there: the kernel asks for CAP_BPF and
// CAP_PERFMON (or CAP_SYS_ADMIN) in the initial user namespace, and a
// namespace's capabilities are its own (unshare -U -r, a rootless
// container). Without this, capget there says every capability and the
// first map create fails with EPERM. nil in the initial namespace, or
// when that can't be told (ino 0).
func userNamespaceError(ino uint64) error {
	if ino == 0 || ino == procUserInitIno {
		return nil
	}
	return &PreflightError{
		What: fmt.Sprintf("permission denied: once runs in a user namespace of its own (user:[%d]), whose capabilities load no BPF program: that needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) in the initial one", ino),
		Fix:  "run it as root on the host, or in a container without a user namespace of its own (not rootless)",
	}
}

func checkPrivileges() error {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/user", &st) == nil {
		if err := userNamespaceError(st.Ino); err != nil {
			return err
		}
	}
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	return privilegeError(os.Geteuid(), uint64(data[1].Effective)<<32|uint64(data[0].Effective))
}

// privilegeError says what is missing, given the effective uid and
// capability set (bit n: capability n). An ordinary user is told to use
// sudo; root without the capabilities (a container, a systemd unit with a
// capability bounding set, setpriv) is told which ones it lacks, since
// sudo would change nothing.
func privilegeError(euid int, eff uint64) error {
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	if has(unix.CAP_SYS_ADMIN) || (has(unix.CAP_BPF) && has(unix.CAP_PERFMON)) {
		return nil
	}
	if euid != 0 && !has(unix.CAP_BPF) && !has(unix.CAP_PERFMON) {
		return &PreflightError{
			What: "permission denied: loading BPF programs needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)",
			Fix:  "run it with sudo",
		}
	}
	var missing []string
	if !has(unix.CAP_BPF) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(unix.CAP_PERFMON) {
		missing = append(missing, "CAP_PERFMON")
	}
	return &PreflightError{
		What: "missing capability " + strings.Join(missing, " and ") + ": loading BPF programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)",
		Fix:  "grant them (docker run --cap-add BPF --cap-add PERFMON; systemd AmbientCapabilities=CAP_BPF CAP_PERFMON) or run as unrestricted root",
	}
}

// kernelRelease is the running kernel's release string and its major and
// minor version; ok is false when they can't be read.
func kernelRelease() (rel string, major, minor int, ok bool) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", 0, 0, false
	}
	rel = unix.ByteSliceToString(u.Release[:])
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return rel, 0, 0, false
	}
	return rel, major, minor, true
}

// noBTFCasts, set by tests only, makes the kernel side read kernel
// structs with BPF_CORE_READ even where bpf_rdonly_cast exists: the path
// kernels before 6.2 take.
var noBTFCasts bool

// btfCastsAvailable says whether the kernel is new enough for the BTF
// casts (Linux 6.2, bpf_rdonly_cast). Open also requires the link to have
// found the kfunc in the kernel's BTF (kernelLink.Casts).
func btfCastsAvailable() bool {
	_, major, minor, ok := kernelRelease()
	return ok && !noBTFCasts && (major > 6 || major == 6 && minor >= 2)
}

func checkKernelVersion() error {
	rel, major, minor, ok := kernelRelease()
	if !ok {
		return nil // not fatal: the loader will say what fails
	}
	// bpf_loop (the path walk) came in 5.17; ring buffers in 5.8.
	if major < 5 || (major == 5 && minor < 17) {
		return &PreflightError{
			What: "kernel " + rel + " is too old",
			Fix:  "once needs Linux 5.17 or newer (BPF ring buffer, bpf_loop)",
		}
	}
	return nil
}

// ensureTracefs mounts tracefs at /sys/kernel/tracing when no tracefs is
// mounted: the syscall tracepoints are attached by their tracefs id.
func ensureTracefs() error {
	if tracefsMounted() {
		return nil
	}
	if err := os.MkdirAll(tracefsPath, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return tracefsError(err)
	}
	if err := unix.Mount("tracefs", tracefsPath, "tracefs", 0, ""); err != nil {
		return tracefsError(err)
	}
	return nil
}

func tracefsMounted() bool {
	if _, err := tracefsRoot(); err == nil {
		return true
	}
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "tracefs" {
			return true
		}
	}
	return false
}

func tracefsError(err error) error {
	return &PreflightError{
		What: fmt.Sprintf("tracefs is not mounted and mounting it failed (%v)", err),
		Fix:  "run: mount -t tracefs nodev " + tracefsPath,
	}
}

// WallOffset is what turns the kernel's event times (bpf_ktime_get_ns:
// CLOCK_MONOTONIC, ns since boot) into wall-clock time: add it to get ns
// since the Unix epoch. Read once; a clock step afterwards is not
// followed.
func WallOffset() int64 {
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return 0
	}
	return time.Now().UnixNano() - mono.Nano()
}

// tracefsDevice is the device of the tracefs mounted here (userspace
// encoding), 0 if none is found. tracefs has one superblock however many
// times it is mounted: this is its device in every mount namespace.
func tracefsDevice() uint64 {
	for _, p := range []string{tracefsPath, "/sys/kernel/debug/tracing"} {
		var fs unix.Statfs_t
		var st unix.Stat_t
		if unix.Statfs(p, &fs) == nil && fs.Type == unix.TRACEFS_MAGIC && unix.Stat(p, &st) == nil {
			return st.Dev
		}
	}
	return 0
}
