package collector

import "time"

// The types in this file are the collector's output: what happened to one
// traced command tree (Result), each process image in it (Process), and what
// the detectors concluded (Finding). They hold no BPF state and are what the
// report package renders. Strings that come from the traced system (paths,
// argv, comm) hold the raw bytes the kernel saw; they may contain any byte,
// including invalid UTF-8 and control characters. Renderers must escape them.

// Syscall identifies the hooked system call an event came from.
type Syscall uint8

// The values match the SYS_* constants in bpf/once.h.
const (
	SysUnknown Syscall = iota
	SysOpen
	SysOpenat
	SysOpenat2
	SysCreat
	SysExecve
	SysExecveat
)

func (s Syscall) String() string {
	switch s {
	case SysOpen:
		return "open"
	case SysOpenat:
		return "openat"
	case SysOpenat2:
		return "openat2"
	case SysCreat:
		return "creat"
	case SysExecve:
		return "execve"
	case SysExecveat:
		return "execveat"
	}
	return "unknown"
}

// FindingKind names a detector's conclusion. The string values are part of
// the JSON contract.
type FindingKind string

const (
	// KindDuplicateOpen: one process image opened the same file (dev+ino)
	// successfully more than once.
	KindDuplicateOpen FindingKind = "duplicate_open"
	// KindFailedExecProbes: consecutive failed execve/execveat calls (PATH
	// search misses) before a success or a final failure.
	KindFailedExecProbes FindingKind = "failed_exec_probes"
	// KindFailedOpenProbes: one basename tried in several directories before
	// one worked (ld.so library search, interpreter module search).
	KindFailedOpenProbes FindingKind = "failed_open_probes"
	// KindExecShellFallback: an exec failed with ENOEXEC and the caller
	// retried the same file through /bin/sh (execvp's fallback for scripts
	// without a #! line).
	KindExecShellFallback FindingKind = "exec_shell_fallback"
)

// Counters is everything the tracer knows it missed or cut. Every output
// format shows all of them; none is ever hidden because it is zero.
type Counters struct {
	DroppedEvents   uint64 // ring buffer reservations that failed: events lost
	EnterMapFull    uint64 // syscall entries not recorded: no room for the thread's slot or the pending exec
	MissedEnter     uint64 // syscall exits with no recorded entry, in a thread seen at an entry before
	FnameTruncated  uint64 // filenames cut at the kernel-side bound
	FnameUnreadable uint64 // filenames that could not be read from user memory
	PathTruncated   uint64 // kernel-resolved paths cut (too long or too deep)
	PathUnresolved  uint64 // successful opens whose file could not be resolved
	ArgvTruncated   uint64 // argv lists cut at the kernel-side bound
	ArgvUnreadable  uint64 // argv lists that could not be read
	DecodeErrors    uint64 // ring buffer records that failed to decode
	TrackedFull     uint64 // descendants not followed because the tracked set was full
	EventsSent      uint64 // records the kernel side put in the ring buffer
	EventsReceived  uint64 // records read from the ring buffer
	// OpensTallied: successful opens the kernel counted instead of
	// sending (past Options.SendOpensPerKind of their kind), as read back
	// so far. Not lost: they are in every count; only their per-call
	// detail is not kept, and their time is scaled from a timed sample.
	OpensTallied uint64
	// TalliesEvicted: tallied kinds whose kernel count was evicted (the
	// tally map full of newer kinds) before it was read. The opens they
	// counted since their last read are missing from the counts.
	TalliesEvicted uint64
	// TalliesLate: tallied kinds whose last repeats, counted in their
	// thread's own slot, found the kind's kernel count gone when they
	// were added to it (evicted, or read for the last time because the
	// image had ended). Those repeats are missing from the counts.
	// Shown together with TalliesEvicted (TalliesLost).
	TalliesLate uint64
	// OpensUntimed: opens sent without their latency (OpenCall.Untimed):
	// present and counted, their time missing from the waste figures.
	OpensUntimed uint64
	// CompatImages: traced images of 32-bit programs. Syscall
	// tracepoints do not fire for compat syscalls, so none of their
	// opens and execs are seen: how many is unknown, but not zero.
	CompatImages uint64
	// OpensUnsent: first opens of a file the kernel counted without
	// sending (Options.FirstOpensUnsent). Not lost: they are in the
	// counts, as each thread reports them (EventUnsent, OpenRecord.Unsent).
	OpensUnsent uint64
	// FilesUntracked: of those, opens of files past what the kernel
	// tells apart per image: their repeats are not recognised.
	FilesUntracked uint64
}

// TalliesLost is the number of tallied kinds with opens missing from their
// counts: TalliesEvicted + TalliesLate.
func (c Counters) TalliesLost() uint64 { return c.TalliesEvicted + c.TalliesLate }

// Lost reports the number of events known to be missing entirely (as opposed
// to present but with a truncated field).
func (c Counters) Lost() uint64 {
	return c.DroppedEvents + c.EnterMapFull + c.MissedEnter + c.DecodeErrors + c.TrackedFull + c.TalliesLost()
}

// Result is the outcome of tracing one command tree.
type Result struct {
	Command  []string // with ArgvRedacted, every argument after the program is RedactArg of it
	ExitCode int
	// ArgvRedacted: the tracer replaced every argument after argv[0]
	// (Command, and every exec's argv) with RedactArg of it.
	ArgvRedacted bool
	// TimedOut: the command outlived RunOptions.Timeout (Timeout) and was
	// sent SIGTERM (then SIGKILL).
	TimedOut  bool
	Timeout   time.Duration
	Started   time.Time
	Duration  time.Duration
	Counters  Counters
	Processes []*Process // in order of first appearance
	Findings  []Finding  // most wasteful first
	// Totals over every process in the tree.
	Opens       int // open-family calls observed (successful and failed)
	FailedOpens int
	Execs       int // execve/execveat calls observed (successful and failed)
	FailedExecs int
}

// ImageKey identifies one exec image: a process (pid + start time, so a
// reused pid is a different process) at one exec generation.
type ImageKey struct {
	Pid    uint32
	Start  uint64 // the thread group leader's start time, ns since boot
	ExecID uint64 // the kernel's self_exec_id: bumped by every successful exec
}

// Process is one exec image of one process: what a pid ran between two
// execs. Threads of the image are merged into it.
type Process struct {
	Key           ImageKey
	Pid           uint32
	PPid          uint32
	UID           uint32
	CgroupID      uint64
	Comm          string
	ParentComm    string
	Exe           string   // absolute path of the executable (or interpreter), "" if unknown
	Argv          []string // as passed to the exec that started this image; nil for a forked copy
	ArgvTruncated bool
	Threads       int // distinct thread ids seen
	Exited        bool
	ExitCode      int // valid when Exited; a signal death is 128+signo, like a shell
	// Compat: a 32-bit program (i386 or x32 on x86-64). The kernel's
	// syscall tracepoints skip compat syscalls, so its opens and execs
	// are missing (Counters.CompatImages); its exec and exit are seen.
	Compat bool

	Opens       []*FileOpens // successful opens grouped by file (dev+ino), first-open order
	PathOpens   []*FileOpens // O_PATH opens, grouped the same way, never duplicates
	FailedOpens []*FailedOpen
	Execs       []ExecAttempt // every exec attempt this image made, in order
}

// MaxCalls bounds the calls kept per file or failed spelling: a loop that
// opens one file a million times must not cost a million records. Counts
// (Count, Kinds) stay exact; CallsOmitted says how many were not kept.
const MaxCalls = 256

// CallKind is how many opens of a file used one syscall with one set of
// flags: exact even when Calls was capped.
type CallKind struct {
	Syscall Syscall
	Flags   uint64
	Count   int
}

// FileOpens is every successful open of one file (dev+ino) by one image.
type FileOpens struct {
	Dev          uint64 // userspace st_dev encoding
	Ino          uint64
	Path         string   // absolute path of the first open
	Paths        []string // every distinct absolute path used, first-use order
	Count        int
	Calls        []OpenCall
	Kinds        []CallKind // per (syscall, flags), first-use order; exact
	CallsOmitted int        // calls not kept in Calls (past MaxCalls)
	ExtraNs      uint64     // latency of every open after the first
}

// OpenCall is one open-family system call.
type OpenCall struct {
	Syscall         Syscall
	Tid             uint32
	Fname           string // the path argument as passed
	Dirfd           int32  // AT_FDCWD (-100) for open/creat and cwd-relative calls
	Flags           uint64
	Mode            uint64
	Resolve         uint64 // openat2 RESOLVE_* flags
	Ret             int32  // fd, or -errno
	EnterNs         uint64
	Ns              uint64 // syscall latency, enter to exit
	Path            string // kernel-resolved absolute path (success) or base dir (relative failure)
	FnameTruncated  bool
	FnameUnreadable bool
	PathTruncated   bool
	// Untimed: the kernel read no clock at the call's entry (it took
	// it for a repeat counted in the thread's slot, which is timed in
	// a sample only): Ns is 0, not its latency. Counters.OpensUntimed.
	Untimed bool
}

// FailedOpen groups failed opens of one spelling with one errno.
type FailedOpen struct {
	Fname        string // as passed
	Base         string // directory a relative Fname was resolved against (cwd or dirfd), "" if absolute
	Errno        int32  // positive errno
	Count        int
	Calls        []OpenCall
	CallsOmitted int // calls not kept in Calls (past MaxCalls)
}

// ExecAttempt is one execve/execveat call.
type ExecAttempt struct {
	Syscall           Syscall
	Tid               uint32
	Filename          string // as passed
	Argv              []string
	ArgvTruncated     bool
	FilenameTruncated bool
	// Unreadable: the kernel side could not read the string from the
	// caller's memory (a page not yet faulted in): Filename or Argv is
	// empty, not the call's.
	FilenameUnreadable bool
	ArgvUnreadable     bool
	Dirfd              int32
	AtFlags            uint32
	Errno              int32 // 0 on success, positive errno otherwise
	EnterNs            uint64
	Ns                 uint64 // latency enter to exit (to the new image for a success)
}

// Attempt is one step of a probe chain.
type Attempt struct {
	Path  string
	Errno int32 // 0 for the attempt that worked
	Ns    uint64
}

// Finding is one detector result. Fields not relevant to a Kind are zero.
type Finding struct {
	Kind       FindingKind
	Key        ImageKey
	Pid        uint32
	PPid       uint32
	Comm       string
	ParentComm string

	// duplicate_open
	Path         string   // absolute, first spelling
	Paths        []string // every absolute spelling used
	Dev          uint64
	Ino          uint64
	Count        int
	Calls        []OpenCall
	Kinds        []CallKind // duplicate_open: exact counts per (syscall, flags)
	CallsOmitted int

	// failed_exec_probes, failed_open_probes, exec_shell_fallback
	Target   string    // the basename searched for
	Attempts []Attempt // every attempt, in order, including the winner
	Failed   int       // failed attempts (the waste)
	Found    *string   // the winning path as passed, nil when every attempt failed
	WastedNs uint64    // total latency of the failed attempts
}
