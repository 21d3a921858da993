package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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
	// KindFailedStatProbes: one basename missed by stat or access in one
	// or more directories before a lookup of any kind found it, or in two
	// or more and never found (a shell's PATH search).
	KindFailedStatProbes FindingKind = "failed_stat_probes"
	// KindRepeatedMiss: one image failing the same lookup (open, stat,
	// access) of the same path with the same errno again and again.
	KindRepeatedMiss FindingKind = "repeated_miss"
	// KindDuplicateStat: one image stat-ing the same file (device, inode)
	// more than once.
	KindDuplicateStat FindingKind = "duplicate_stat"
)

// Result is the outcome of tracing one command tree.
type Result struct {
	Command  []string // with ArgvRedacted, every argument after the program is RedactArg of it
	ExitCode int
	// ExitSignal is the signal that killed the command ("SIGKILL"), whose
	// ExitCode is then 128 + its number, as a shell's; "" when it exited
	// (an exit(137) is no SIGKILL).
	ExitSignal string
	// StartErrno is why the command's own exec failed (ENOENT for a
	// script whose interpreter is missing, EACCES for a file that is not
	// executable): the command never ran, and ExitCode is a shell's
	// (127 not found, 126 otherwise). 0 when it ran.
	StartErrno int32
	// StartReason is StartErrno in a shell's words, as once run says it:
	// "its #! interpreter or ELF loader was not found" for an ENOENT of
	// a file that is there, else the errno's text. "" when it ran.
	StartReason string
	// ArgvRedacted: every argument after argv[0] (Command, and every
	// exec's argv) was replaced with RedactArg of it.
	ArgvRedacted bool
	// Interrupted: once itself got a signal it passed on to the command
	// (SIGTERM, or a SIGINT the command could not have had), which then
	// ended a run that would have gone on; "" when none.
	Interrupted string
	// Violations: once check's assertions that failed, each a sentence
	// as its stderr gives it (unescaped); nil for once run and an empty
	// slice when every assertion held.
	Violations []string
	// TimedOut: the command outlived Timeout and was sent SIGTERM (then
	// SIGKILL).
	TimedOut bool
	Timeout  time.Duration
	Started  time.Time
	Duration time.Duration
	// CPU is the command's user and system time with that of the
	// descendants it waited for (wait4's rusage): what the kernel charged
	// the tree, short of orphans nobody reaped. 0 when unknown (the
	// command never ran, or once watch).
	CPU      time.Duration
	Counters Counters
	// Files says which files each Process lists (FilesDuplicates or
	// FilesAll); the counts in Process.Totals are exact either way.
	Files string
	// ProcessesListed says which processes a report gives an entry of:
	// ProcessesFindings (the default, also when empty) or ProcessesAll.
	// Processes holds every one either way, and the totals count them.
	ProcessesListed string
	Processes       []*Process // in order of first appearance
	Findings        []Finding  // most wasteful first
	// Stacks: with --stacks, every stack a call or call site names,
	// by ascending ID.
	Stacks []Stack
	// Totals over every process in the tree.
	Opens       int // open-family calls observed (successful and failed)
	FailedOpens int
	Execs       int // execve/execveat calls observed (successful and failed)
	FailedExecs int
	// Lookups: stat, statx, lstat, access, faccessat and faccessat2 calls
	// that named a file (successful and failed).
	Lookups       int
	FailedLookups int
	// Waste sums Findings per kind (TotalsOf): what compare and the
	// reports' totals read, never adding findings up again.
	Waste []KindTotal
}

// WastedNs is the run's total waste: the sum of its findings' WastedNs.
func (r *Result) WastedNs() uint64 {
	var n uint64
	for _, t := range r.Waste {
		n += t.WastedNs
	}
	return n
}

// KindTotal is the total of kind k (zero when it made no finding).
func (r *Result) KindTotal(k FindingKind) KindTotal {
	for _, t := range r.Waste {
		if t.Kind == k {
			return t
		}
	}
	return KindTotal{Kind: k}
}

// Stack returns the stack id names, nil for 0, StackNotKept or one not
// in Stacks: r is the StackSource of its own findings.
func (r *Result) Stack(id StackID) *Stack {
	i, ok := slices.BinarySearchFunc(r.Stacks, id, func(s Stack, id StackID) int { return cmp.Compare(s.ID, id) })
	if !ok {
		return nil
	}
	return &r.Stacks[i]
}

// What Process.Opens, PathOpens, SpecialOpens and FailedOpens list.
const (
	// FilesDuplicates: the files opened (or failed) more than once, and
	// the files an assertion names. What a report of a large tree needs:
	// it grows with the waste found, not with the opens made.
	FilesDuplicates = "duplicates"
	// FilesAll: every file each image opened.
	FilesAll = "all"
)

// Which processes a report lists (Result.ProcessesListed).
const (
	// ProcessesFindings: the processes with a finding or with files
	// listed (Process.Listed), and a row per program for all of them.
	// What a report of a large tree needs: it grows with the waste
	// found, not with the processes run.
	ProcessesFindings = "findings"
	// ProcessesAll: every process.
	ProcessesAll = "all"
)

// Listed reports whether p lists anything a report shows of it besides
// its counts and exec attempts: files opened again (or every file with
// FilesAll), failed opens repeated.
func (p *Process) Listed() bool {
	return len(p.Opens) > 0 || len(p.PathOpens) > 0 || len(p.SpecialOpens) > 0 || len(p.FailedOpens) > 0
}

// StillRunning is how many of r's process images were running when the
// trace ended (past --linger): neither exited nor replaced by an exec,
// nor gone with their exit lost (ExitUnseen).
func (r *Result) StillRunning() int {
	last := map[ProcKey]uint64{} // each process's latest exec id
	for _, p := range r.Processes {
		last[p.Key.Proc()] = max(last[p.Key.Proc()], p.Key.ExecID)
	}
	n := 0
	for _, p := range r.Processes {
		if !p.Exited && !p.ExitUnseen && p.Key.ExecID == last[p.Key.Proc()] {
			n++
		}
	}
	return n
}

// Process is one exec image of one process: what a pid ran between two
// execs. Threads of the image are merged into it.
type Process struct {
	Key      ImageKey
	Pid      uint32
	PPid     uint32
	UID      uint32
	CgroupID uint64
	// Comm is the image's name, fixed for its life: the comm its exec
	// gave it (the file's name, as execsnoop shows it) or, for an image
	// whose exec was not seen (a fork's copy of its parent, a process
	// older than once watch), its main thread's comm at its first event
	// seen. Its findings, its row and its metrics all go by it.
	Comm string
	// LastComm is its main thread's comm at its last event seen: Comm
	// unless the process renamed itself since (prctl PR_SET_NAME, a
	// write to /proc/PID/comm), as top and ps show it.
	LastComm      string
	ParentComm    string
	Exe           string   // absolute path of the executable (or interpreter), "" if unknown
	Argv          []string // as passed to the exec that started this image; nil for a forked copy
	ArgvTruncated bool
	Threads       int // distinct thread ids seen, up to 4,096
	// ThreadsCapped: more threads than Threads were seen, past the
	// thread ids an image remembers.
	ThreadsCapped bool
	Exited        bool
	ExitCode      int // valid when Exited; a signal death is 128+signo, like a shell
	// ExitUnseen: not Exited, yet gone when the run's trace ended (no
	// /proc entry): its exit was among the events lost. It is not
	// still running (Result.StillRunning).
	ExitUnseen bool
	// Compat: a 32-bit program (i386 or x32 on x86-64). The kernel's
	// syscall tracepoints skip compat syscalls, so its opens and execs
	// are missing (Counters.CompatImages); its exec and exit are seen.
	Compat bool

	// Container is the container (and pod) the image ran in, as the
	// node's runtime names it; nil outside any, or when not resolved.
	Container *Container

	// Totals are exact, whatever the lists below keep.
	Totals ProcessTotals

	Opens     []*FileOpens // successful opens grouped by file (dev+ino), first-open order
	PathOpens []*FileOpens // O_PATH opens, grouped the same way, never duplicates
	// SpecialOpens: opens of devices, FIFOs and sockets (FileApart),
	// grouped the same way, never duplicates (O_PATH ones are in
	// PathOpens).
	SpecialOpens []*FileOpens
	FailedOpens  []*FailedOpen
	Execs        []ExecAttempt // the exec attempts this image made, in order
	// ExecsOmitted: exec attempts past the ones kept in Execs (counted
	// in Totals).
	ExecsOmitted int
	// DetailDropped: pieces of this image's detail (calls, spellings,
	// attempts, files, failed opens, execs) not kept because of the byte
	// budgets. Its counts stay exact.
	DetailDropped int
}

// Container is what names a process's container on its node: its cgroup
// and the runtime's own state. Any field may be empty.
type Container struct {
	Cgroup    string // the cgroup path that tells it (v2's, or v1's on a hybrid host)
	Runtime   string // docker, containerd, cri-o, podman; runc, crun (run by hand)
	ID        string // 64 hex digits (an engine's), or the ID of runc run ID
	Name      string
	Pod       string
	Namespace string
	PodUID    string
}

// ShortID is how a container with no name is shown: an engine's id of
// 64 hex digits by its first 12, as docker ps shows it; any other id
// (runc run by hand takes any name: runc run web) whole.
func (c *Container) ShortID() string {
	if len(c.ID) == 64 && strings.Trim(c.ID, "0123456789abcdef") == "" {
		return c.ID[:12]
	}
	return c.ID
}

// ProcessTotals are one image's counts.
type ProcessTotals struct {
	Opens       int // open-family calls, successful and failed
	Files       int // distinct files opened successfully, O_PATH and special opens included
	DupFiles    int // files opened successfully more than once (not O_PATH, not special)
	FailedOpens int
	Execs       int
	FailedExecs int
	// Lookups: stat and access calls that named a file (successful and
	// failed), exact whether sent or counted in the kernel.
	Lookups       int
	FailedLookups int
}

// Add adds o's counts to t: the totals of several images (a program's).
func (t *ProcessTotals) Add(o ProcessTotals) {
	t.Opens += o.Opens
	t.Files += o.Files
	t.DupFiles += o.DupFiles
	t.FailedOpens += o.FailedOpens
	t.Execs += o.Execs
	t.FailedExecs += o.FailedExecs
	t.Lookups += o.Lookups
	t.FailedLookups += o.FailedLookups
}

// CallKind is how many opens of a file used one syscall with one set of
// flags: exact even when Calls was capped.
type CallKind struct {
	Syscall Syscall
	Flags   uint64
	Count   int
}

// FileOpens is every successful open of one file (dev+ino) by one image.
type FileOpens struct {
	Dev uint64 // userspace st_dev encoding
	Ino uint64
	Gen uint32 // the inode's generation: see OpenRecord.Gen
	// FileType: its type (OpenRecord.FileType), 0 when unknown (only
	// opens counted in the kernel were seen).
	FileType uint16
	// PathTruncated: Path was cut at the kernel's bound (it starts
	// with PathCut).
	PathTruncated bool
	Path          string   // absolute path of the first open
	Paths         []string // every distinct absolute path used, first-use order
	// PathsCapped: a spelling was not kept in Paths (past the policy's
	// spellings per file, or the image's detail budget).
	PathsCapped  bool
	Count        int
	Calls        []OpenCall
	Kinds        []CallKind // per (syscall, flags), first-use order; exact
	CallsOmitted int        // calls not kept in Calls
	ExtraNs      uint64     // latency of every open after the first
	// CallSites: with --stacks, how many of the opens each distinct
	// call stack made (Stack 0: opens without one, such as those the
	// kernel counted); exact, summing to Count.
	CallSites []CallSite
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
	Stack   StackID // the caller's stack (--stacks), 0 for none
}

// FailedOpen groups failed opens of one spelling with one errno.
type FailedOpen struct {
	Fname        string // as passed
	Base         string // directory a relative Fname was resolved against (cwd or dirfd), "" if absolute
	Errno        int32  // positive errno
	Count        int
	Calls        []OpenCall
	CallsOmitted int        // calls not kept in Calls
	CallSites    []CallSite // as FileOpens.CallSites, summing to Count
}

// ExecAttempt is one execve/execveat call.
type ExecAttempt struct {
	Syscall  Syscall
	Tid      uint32
	Filename string // as passed
	// Path is the file tried (ExecRecord.Resolved): Filename when
	// absolute, else joined to the directory it was tried in (a dirfd's
	// or the cwd's), or an AT_EMPTY_PATH exec's file.
	Path              string
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
	Ns                 uint64  // latency enter to exit (to the new image for a success)
	Stack              StackID // the caller's stack (--stacks), 0 for none
}

// Attempt is one step of a probe chain.
type Attempt struct {
	Path    string
	Errno   int32   // 0 for the attempt that worked
	Syscall Syscall // the call that made it (lookup and open chains)
	Ns      uint64
	// Fallback: an exec of the shell running a file that failed with
	// ENOEXEC (execvp's fallback for scripts without #!), or the shell's
	// own search.
	Fallback bool
	Stack    StackID // the caller's stack (--stacks), 0 for none
}

// Finding is one detector result: a header every kind has and the
// payload of its kind's Shape (KindInfo); the other payload is zero.
type Finding struct {
	Kind FindingKind
	Key  ImageKey
	Pid  uint32
	PPid uint32
	Comm string
	// LastComm is the image's LastComm when the finding completed.
	LastComm   string
	ParentComm string
	// Proc is the image that made it, as the engine knew it when the
	// finding completed: what a finding line of once watch says of its
	// process (uid, executable, argv), where no process list follows.
	Proc *Process
	// WastedNs is what the finding's avoidable calls cost
	// (KindInfo.Avoidable): their latency, measured.
	WastedNs uint64
	// CallSites: with --stacks, the distinct call stacks of the
	// finding's calls (each open of a duplicate, each attempt of a
	// chain, the winner included) and how many each made; exact, past
	// the calls and attempts kept.
	CallSites []CallSite

	FileDetail  // ShapeFile kinds
	ChainDetail // ShapeChain kinds
}

// FileDetail is the payload of a file kind (duplicate_open): one file
// used more than once by one image.
type FileDetail struct {
	Path         string   // absolute, first spelling
	Paths        []string // the absolute spellings of the calls sent (not of those counted in the kernel)
	PathsCapped  bool     // a spelling sent was not kept in Paths (FileOpens.PathsCapped)
	Dev          uint64
	Ino          uint64
	Gen          uint32
	Count        int
	Calls        []OpenCall
	Kinds        []CallKind // exact counts per (syscall, flags)
	CallsOmitted int
	// Errno: the error every call failed with (ShapeMiss), 0 otherwise.
	Errno int32
	// FSType is the type of the file system Dev is (mountinfo's: "proc",
	// "sysfs", "cgroup2") when it is one that makes a file's content and
	// attributes at each read or stat (GeneratedFS), where a reopen or a
	// stat again may be to see them anew; "" otherwise, or not known (a
	// mount once's own mount namespace does not have, of which no
	// traced open told the kernel's file system: only stats there).
	FSType string
	// Chained (ShapeMiss): of the calls after the first, those that are
	// attempts of a search reported as a chain finding, whose time is
	// counted there and not again here.
	Chained int
}

// ChainDetail is the payload of a chain kind (failed_exec_probes,
// failed_open_probes, exec_shell_fallback): one name searched for.
type ChainDetail struct {
	Target   string    // the basename searched for
	Attempts []Attempt // the attempts, in order, including the winner
	// AttemptsOmitted: attempts not kept in Attempts (past the cap);
	// Failed and WastedNs count them.
	AttemptsOmitted int
	Failed          int     // failed attempts (the waste)
	Found           *string // the winning path as passed, nil when every attempt failed
	// AlsoFound: a lookup chain of a process image that found the name
	// in another directory too, right before the chain or while it was
	// held, or an open chain that found it nowhere, begun past an
	// earlier open chain's find, where that one did not look (vim's
	// after/ entries of its runtimepath): the program looks in every place,
	// found or not, and the order of its list saves nothing. The
	// directory; "" otherwise.
	AlsoFound string
	// DirChecks: failed lookups of the directory a miss of the chain was
	// just tried in, by the thread that missed (ld.so stats each
	// directory its open failed in, to skip it next time): part of the
	// search, counted here and in WastedNs, not in Failed nor in a
	// chain of the directory's own name.
	DirChecks int
	// ViaCache: the cache file (ld.so's /etc/ld.so.cache) through which
	// an open chain's winner was found: the same thread opened it after
	// the chain's last miss and before the winner, or the image had
	// opened it for an earlier such chain, this chain missed only in
	// directories that one missed in, and its winner is in none of them
	// (ld.so maps its cache once). The misses are of the search-path
	// entries ld.so tries before its cache, whatever their order. ""
	// otherwise.
	ViaCache string
	// Variants: other names of the same stem (the basename up to its
	// first dot) tried in the same directory right before or after a miss
	// of the chain, by the same thread: a loader trying the suffixes it
	// accepts for one name (Python's extension-module suffixes before
	// .py, perl's .pmc before .pm, gcc's .gch before a header); up to
	// MaxVariants, first seen first. VariantMisses: how many of Failed
	// were such misses (exact whatever Variants keeps).
	Variants      []string
	VariantMisses int
}

// MaxVariants bounds ChainDetail.Variants.
const MaxVariants = 4

// GeneratedFS says whether fstype (mountinfo's) is a file system whose
// files' content and attributes are made at each read or stat: procfs,
// sysfs, cgroupfs, debugfs, tracefs, securityfs.
func GeneratedFS(fstype string) bool {
	switch fstype {
	case "proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs":
		return true
	}
	return false
}

// MarkGeneratedFS sets FSType of the file findings of fs (duplicate_open,
// duplicate_stat) whose device devs maps to a GeneratedFS type (devs:
// device to mountinfo's type: the mounts of once's mount namespace, and
// the devices traced opens found such a file system on).
func MarkGeneratedFS(fs []Finding, devs map[uint64]string) {
	for i := range fs {
		f := &fs[i]
		if f.Kind.Info().Shape != ShapeFile || f.Errno != 0 {
			continue
		}
		if t, ok := devs[f.Dev]; ok && GeneratedFS(t) {
			f.FSType = t
		}
	}
}

// SignalName is a signal's name with its SIG prefix ("SIGKILL"), or
// "signal N" for one without a name: what a report says killed a command.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
