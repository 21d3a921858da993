package session

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProcComm is the comm of process pid from /proc/PID/comm ("" if it is
// gone or unreadable): detect.Options.ParentComm, for the parents that
// predate the trace. The pid is the kernel's, so once reads the host's
// /proc (as it does in its DaemonSet, hostPID). The read is bounded: a
// comm is at most 15 bytes.
func ProcComm(pid uint32) string {
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	if err != nil {
		return ""
	}
	defer f.Close()
	var b [64]byte
	n, _ := f.Read(b[:])
	return string(bytes.TrimSuffix(b[:n], []byte("\n")))
}

// ParentComms is ProcComm with a short memory: a parent that forks many
// children (a build started before once) is read once per commWindow,
// not once per child in the drain loop. Bounded: past maxComms parents
// it forgets them all. Not safe for concurrent use (the engine's).
type ParentComms struct {
	read  func(pid uint32) string
	clock func() time.Time
	m     map[uint32]knownComm
}

type knownComm struct {
	comm string
	at   time.Time
}

// commWindow is how long a parent's comm read from /proc is reused: a
// pid reused by another parent within it would be named by the first.
const commWindow = time.Second

// maxComms bounds the parents ParentComms remembers.
const maxComms = 4096

// NewParentComms returns a ParentComms reading /proc, or knowing no
// comm ("") where /proc does not name processes by the kernel's pids
// (procHostPids): there /proc/PPID is another process, or none (in a
// container without hostPID, the host's pid 1 is once's own /proc/1).
// self is once's pid as the kernel knows it (the tracer's SelfTgid; 0:
// unknown).
func NewParentComms(self uint32) *ParentComms {
	read := ProcComm
	if !ProcHostPids(self) {
		read = func(uint32) string { return "" }
	}
	return &ParentComms{read: read, clock: time.Now, m: map[uint32]knownComm{}}
}

// ProcHostPids reports whether /proc gives processes the kernel's pids,
// self being once's pid as the kernel knows it (0: unknown): see
// procHostPids. Where it does not, /proc/PID is not the process an
// event's pid names.
func ProcHostPids(self uint32) bool { return procHostPids("/proc", self) }

// procHostPids reports whether the procfs at proc gives processes the
// kernel's pids (the initial namespace's): there once's own pid
// (proc/self) is self, the kernel's. Without self, only where once is
// in the initial namespace with its /proc (hostPids).
func procHostPids(proc string, self uint32) bool {
	if self == 0 {
		return hostPids(proc+"/self/status", proc+"/self/ns/pid")
	}
	link, err := os.Readlink(proc + "/self")
	return err == nil && link == strconv.FormatUint(uint64(self), 10)
}

// Comm is pid's comm: detect.Options.ParentComm.
func (p *ParentComms) Comm(pid uint32) string {
	now := p.clock()
	if k, ok := p.m[pid]; ok && now.Sub(k.at) < commWindow {
		return k.comm
	}
	if len(p.m) >= maxComms {
		clear(p.m)
	}
	c := p.read(pid)
	p.m[pid] = knownComm{c, now}
	return c
}

// ProcessGone is WatchOptions.Gone from /proc: pid has no entry there, or
// the process there is not the one that started at start (its start time,
// CLOCK_MONOTONIC ns, as trace.ProcKey has it; 0: unknown, the entry
// alone says): the pid was reused. A churn wraps pid_max in a minute; a
// process whose exit was lost (or left out by a filter) would otherwise
// live on as long as another holds its pid. nil when /proc is not the
// kernel's pids' (once runs in a pid namespace of its own): a pid missing
// there may live.
func ProcessGone() func(pid uint32, start uint64) bool {
	if !hostPids("/proc/self/status", "/proc/self/ns/pid") {
		return nil
	}
	// In a time namespace of its own once's clocks are offset from the
	// kernel's task start times: the entry alone says.
	starts := initialTimeNs("/proc/self/ns/time")
	return func(pid uint32, start uint64) bool {
		b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return true
		}
		if err != nil || start == 0 || !starts {
			return false
		}
		ticks, ok := statStartTicks(b)
		if !ok {
			return false
		}
		return startedAfter(ticks, start, bootOffset())
	}
}

// procTimeInitIno is the inode number of the initial time namespace's
// ns/time file, fixed by the kernel (PROC_TIME_INIT_INO).
const procTimeInitIno = 0xEFFFFFFA

// initialTimeNs reports whether the ns/time file at ns is the initial
// time namespace's (or, before Linux 5.6, there is none).
func initialTimeNs(ns string) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(ns, &st); err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return st.Ino == procTimeInitIno
}

// userHz is the unit of /proc/PID/stat's start time (USER_HZ, the
// kernel's clock_t: 100 on every architecture once runs on).
const userHz = 100

// startSlack covers the two clock readings bootOffset subtracts.
const startSlack = uint64(time.Millisecond)

// startedAfter reports whether the process /proc says started ticks
// clock ticks after boot (CLOCK_BOOTTIME, rounded down to a tick) started
// after start (CLOCK_MONOTONIC ns; off is CLOCK_BOOTTIME less
// CLOCK_MONOTONIC): then it is another process with the pid. The same
// process's ticks never start after it; a pid reused within the tick the
// first process started in is not told apart (taken for the same).
func startedAfter(ticks, start, off uint64) bool {
	return ticks*(uint64(time.Second)/userHz) > start+off+startSlack
}

// statStartTicks is the start time (field 22) of a /proc/PID/stat line,
// read after the comm's closing parenthesis (a comm may hold spaces and
// parentheses).
func statStartTicks(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	const field = 22 - 3 // fields after the comm start at the state, field 3
	if len(f) <= field {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[field]), 10, 64)
	return v, err == nil
}

// bootOffset is CLOCK_BOOTTIME less CLOCK_MONOTONIC now: the time the
// machine was suspended, what /proc's start times count and the kernel's
// task start times do not. 0 if a clock can't be read.
func bootOffset() uint64 {
	var boot, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0
	}
	d := boot.Nano() - mono.Nano()
	if d < 0 {
		return 0
	}
	return uint64(d)
}

// procPidInitIno is the inode number of the initial pid namespace's
// ns/pid file, fixed by the kernel (PROC_PID_INIT_INO).
const procPidInitIno = 0xEFFFFFFC

// hostPids reports whether /proc gives the process the pids of the
// initial pid namespace: its status file (at status) has one pid only
// (NSpid), and its namespace (the ns/pid file at ns) is the initial one.
// NSpid alone does not tell: a /proc mounted in the namespace (unshare
// -p --mount-proc, a container's) lists the pids from its own namespace
// down, one for a process in it.
func hostPids(status, ns string) bool {
	var st syscall.Stat_t
	if syscall.Stat(ns, &st) != nil || st.Ino != procPidInitIno {
		return false
	}
	b, err := os.ReadFile(status)
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			return len(bytes.Fields(v)) == 1
		}
	}
	return false
}
