package trace

import (
	"path"
	"strings"
)

// EventKind says which of an Event's parts is set. The values are those of
// enum event_kind in bpf/once.h.
type EventKind uint32

const (
	EventOpen  EventKind = 1
	EventExec  EventKind = 2
	EventFork  EventKind = 3
	EventExit  EventKind = 4
	EventImage EventKind = 5
	// EventUnsent reports, in Proc.Unsent, opens of Task's image that the
	// kernel counted without sending (first opens unsent): those of one
	// thread, at its exit or exec.
	EventUnsent EventKind = 6
	// EventExecArgs carries, in Exec, the Filename and Argv of the
	// EventExec that follows with the same OldTid. The collector joins
	// the two and never delivers it.
	EventExecArgs EventKind = 7
	// EventKeptStack brings, in Snapshot (nil: it was lost), the stack
	// of Task's image's first open of the file Open names (Dev, Ino,
	// Gen; EnterNs when it was taken): that open came without it
	// (StStackKept), and the one just before this event repeated it.
	// With Open.FirstCall that open was counted, not sent (its event
	// before had StSeenBefore), and this is its call: Task, Open's
	// fields and Fname are that call's; it has no Path. Without it,
	// where the repeat had StSeenBefore, the first call was lost with
	// its stack.
	EventKeptStack EventKind = 10
	// EventTally is made by the collector, not read from the ring: opens
	// the kernel counted instead of sending.
	EventTally EventKind = 100
	// EventMade is made by the collector from an open event of mkdir or
	// mkdirat (Open: Fname, Path as a lookup's): a directory made, which
	// the kernel sends only when a lookup probe chain may have missed it
	// there. No open, no lookup: it only ends chains.
	EventMade EventKind = 101
)

// Status is the bit set of enum event_status in bpf/once.h: what was cut
// or could not be read in an event, and a few facts about it.
type Status uint16

const (
	StFnameTruncated  Status = 1 << 0
	StFnameUnreadable Status = 1 << 1
	StPathTruncated   Status = 1 << 2
	StPathUnresolved  Status = 1 << 3
	StArgvTruncated   Status = 1 << 4
	StArgvUnreadable  Status = 1 << 5
	StFnameReread     Status = 1 << 6
	StPathIsBase      Status = 1 << 7  // open: Path is the directory a relative Fname was tried in
	StTallyNext       Status = 1 << 8  // the last open of its kind sent: later ones are tallied
	StUntimed         Status = 1 << 9  // no entry time was read: ExitNs - EnterNs is 0, not the latency
	StCompat          Status = 1 << 10 // image: a 32-bit program, whose syscalls no syscall tracepoint sees
	StSeenBefore      Status = 1 << 11 // open: the image opened this file before, in an open not sent
	StArgsSent        Status = 1 << 12 // exec: Filename and Argv came in an EventExecArgs
	// StPathInternal: Path is the kernel's name for a file on an
	// internal mount ("pipe:[INO]", "/memfd:NAME (deleted)"), not a path
	// a mount reaches.
	StPathInternal Status = 1 << 14
	// StStackKept: an open sent without its stack snapshot, which the
	// kernel keeps for an EventKeptStack should the image open the file
	// again (a first open, with --stacks).
	StStackKept Status = 1 << 15
)

// Has reports whether every bit of b is set.
func (s Status) Has(b Status) bool { return s&b == b }

// Task is who caused an event.
type Task struct {
	Pid      uint32 // thread group id
	Tid      uint32
	PPid     uint32
	UID      uint32
	Start    uint64 // group leader start time, ns since boot
	ExecID   uint64
	CgroupID uint64
	Comm     string
}

// Image is the exec image the task was running when the event happened.
func (t *Task) Image() ImageKey { return ImageKey{Pid: t.Pid, Start: t.Start, ExecID: t.ExecID} }

// Proc is the process (every image of it) the task belongs to.
func (t *Task) Proc() ProcKey { return ProcKey{Pid: t.Pid, Start: t.Start} }

// ImageKey identifies one exec image: a process (pid + start time, so a
// reused pid is a different process) at one exec generation.
type ImageKey struct {
	Pid    uint32
	Start  uint64 // the thread group leader's start time, ns since boot
	ExecID uint64 // the kernel's self_exec_id: bumped by every successful exec
}

// Proc is the process the image belongs to.
func (k ImageKey) Proc() ProcKey { return ProcKey{Pid: k.Pid, Start: k.Start} }

// ProcKey identifies a process across its images.
type ProcKey struct {
	Pid   uint32
	Start uint64
}

// OpenRecord is one open-family call, complete (entry and exit).
type OpenRecord struct {
	Syscall Syscall
	Status  Status
	EnterNs uint64
	ExitNs  uint64
	Flags   uint64
	Mode    uint64
	Resolve uint64
	Dev     uint64 // userspace st_dev encoding
	Ino     uint64
	// Gen is the inode's generation (i_generation), set when the inode is
	// created: with Dev and Ino it tells a file apart from a later one
	// that was given the same inode number once the first was deleted.
	// On tracefs, which gives all its event files one inode number, it is
	// a hash of the file's path within tracefs (file_id in
	// bpf/path.bpf.h): there a file is its name.
	Gen uint32
	// FileType is the opened inode's file type (its mode & S_IFMT:
	// FileReg, FileDir, FileChr...), 0 for a failure or when unknown.
	// Mode is the open's mode argument, not this.
	FileType uint16
	// Created: the call made the file (O_CREAT, and it was not there):
	// a name made, not found.
	Created bool
	// FSType: the file system of the opened file when it is one that
	// makes its files' content at each read (GeneratedFS: "proc",
	// "sysfs", …), as the kernel tells it; "" otherwise. A procfs only
	// the caller's mount namespace has (a container's own /proc) is one
	// too, though once's mount table does not know its device.
	FSType string
	// FirstCall: an EventKeptStack that is the image's first open of
	// the file itself, kept with its stack instead of sent (see
	// EventKeptStack).
	FirstCall bool
	Dirfd     int32
	Ret       int32
	Fname     string
	// Path is the resolved file (Ret >= 0) or base dir (StPathIsBase).
	// When it was cut at the kernel's bound (StPathTruncated) it starts
	// with PathCut, never with "/": it is not a path that exists.
	Path string
	// Unsent: successful opens the thread made in this image before this
	// one that were counted, not sent (first opens unsent).
	Unsent uint32
	// LookupsUnsent: the same, for the thread's successful lookups (stat,
	// access), in every mode.
	LookupsUnsent uint32
	// MissRepeats: repeats of the thread's last failed open sent that
	// the kernel counted instead of sending, before this event.
	MissRepeats Repeats
	// LookupMissRepeats: the same, of its last failed lookup sent. A
	// thread has a run of each kind: one does not end the other.
	LookupMissRepeats Repeats
}

// Repeats is a count of one thread's repeats of its last failed lookup
// sent, or of its last failed open sent (the same call, flags, name,
// directory and errno), counted in the kernel past the first ones sent:
// of them, Timed were timed, in TimedNs.
type Repeats struct {
	N, Timed uint32
	TimedNs  uint64
	// Syscall is their call: a lookup's or an open's (IsLookup).
	Syscall Syscall
}

// Ns is the call's latency (0 when StUntimed).
func (o *OpenRecord) Ns() uint64 { return o.ExitNs - o.EnterNs }

// ExecRecord is one execve/execveat call, complete.
type ExecRecord struct {
	Syscall  Syscall
	Status   Status
	EnterNs  uint64
	ExitNs   uint64
	OldTid   uint32
	Dirfd    int32
	Ret      int32
	AtFlags  uint32
	Argc     uint32
	Filename string
	Argv     []string
	// Path is where Filename was looked up, as OpenRecord's: the
	// directory a relative Filename was tried in (StPathIsBase: the
	// dirfd's or the cwd's), or the file an AT_EMPTY_PATH exec ran; ""
	// for an absolute Filename. Cut (StPathTruncated), it starts with
	// PathCut.
	Path string
}

// CallerTid is the thread that called exec. A non-leader thread whose
// exec succeeds takes the leader's pid (de_thread): the exit's task, t,
// is then the leader's tid, and OldTid, recorded at the entry, the
// caller's, as strace -f shows it ("[pid OLD] execve(...)").
func (r *ExecRecord) CallerTid(t *Task) uint32 {
	if r.OldTid != 0 {
		return r.OldTid
	}
	return t.Tid
}

// Resolved is the file the exec tried: Filename as passed when absolute
// (or nothing better is known), else Path joined with it (StPathIsBase),
// or Path itself: the file of an AT_EMPTY_PATH exec, or the file exec'd
// when Filename is the kernel's copy of a name the entry could not read
// ("/dev/fd/N/NAME" for one relative to a dirfd).
func (r *ExecRecord) Resolved() string {
	switch {
	case r.Path == "":
		return r.Filename
	case !r.Status.Has(StPathIsBase):
		return r.Path
	case strings.HasPrefix(r.Filename, "/"):
		return r.Filename
	}
	return JoinBase(r.Path, r.Filename)
}

// JoinBase names the relative name fname tried in the directory base, as
// the kernel would: "." and ".." are taken lexically, which a symbolic
// link on the way can make differ from the kernel's lookup. A base cut
// at the kernel's bound (PathCut) stays marked.
func JoinBase(base, fname string) string {
	if strings.HasPrefix(base, PathCut) {
		return PathCut + path.Join(base[len(PathCut):], fname)
	}
	return path.Join(base, fname)
}

// NameDir is the directory a name is tried in, as the kernel resolves
// it: a trailing slash only says the last component must be a directory,
// so "/etc/pyenv.d/which/" is "which" tried in "/etc/pyenv.d", where
// path.Dir would answer "/etc/pyenv.d/which" (path.Base already agrees).
func NameDir(name string) string {
	if t := strings.TrimRight(name, "/"); t != "" {
		name = t
	}
	return path.Dir(name)
}

// ProcRecord is a process lifecycle event: fork, exit, or a new exec image.
type ProcRecord struct {
	Status      Status
	TSNs        uint64
	ExeDev      uint64 // userspace encoding
	ExeIno      uint64
	Exe         string
	ParentPid   uint32 // fork: the parent; image: the tid that called exec
	ParentStart uint64
	ExitCode    int32 // raw kernel exit_code: status << 8 | signal
	// ThreadsLeft (EventExit): the group's other threads the kernel had
	// not released when the last one left: one may not have added its
	// repeats yet (the collector waits a little for them).
	ThreadsLeft uint32
	Unsent      uint32 // EventUnsent: opens counted, not sent
	// LookupsUnsent (EventUnsent): successful lookups counted, not sent.
	LookupsUnsent uint32
	// MissRepeats (EventUnsent): repeats of the thread's last failed
	// open sent, counted.
	MissRepeats Repeats
	// LookupMissRepeats (EventUnsent): those of its last failed lookup
	// sent.
	LookupMissRepeats Repeats
}

// TallyRecord is a number of successful opens of one file by one image,
// all with one syscall and one set of flags, that the kernel counted but
// did not send. The opens before them (at least one) were sent as
// EventOpen records with the same image, file, syscall and flags.
type TallyRecord struct {
	Syscall Syscall
	Flags   uint64
	Dev     uint64 // userspace st_dev encoding
	Ino     uint64
	Gen     uint32
	// FileType is a lookup's file type (its mode & S_IFMT), part of its
	// identity (see OpenRecord.FileType); 0 for opens.
	FileType uint16
	Opens    uint64 // opens counted since the previous tally of the kind
	Ns       uint64 // their summed latency
}

// Event is one decoded ring buffer record. Only the part named by Kind is
// meaningful; the others keep whatever a previous decode left there.
type Event struct {
	Kind EventKind
	Task Task
	Open OpenRecord
	Exec ExecRecord
	Proc ProcRecord
	// Tally: for Kind EventTally. Task has only Pid, Start, ExecID and
	// Comm (the comm of the last open sent).
	Tally TallyRecord
	// Snapshot: for an open or exec with --stacks, what the kernel
	// captured of the caller's stack; nil when nothing was captured.
	Snapshot *StackSnapshot
	// Stack: the snapshot unwound and interned (set before the engine
	// sees the event); 0 when there is none.
	Stack StackID
}

// ExitStatus turns the kernel's exit_code into a shell-style status:
// 128+signal for a signal death.
func ExitStatus(code int32) int {
	if sig := code & 0x7f; sig != 0 {
		return 128 + int(sig)
	}
	return int(code>>8) & 0xff
}

// PathCut starts a resolved path that was cut at the kernel's bound: what
// is left is its last components, which must not read as an absolute
// path of its own.
const PathCut = "…"

// ResolveInRoot is openat2's RESOLVE_IN_ROOT: the name, absolute or not,
// is resolved below the dirfd's directory as if it were "/", so a failed
// one's "/etc/x" was tried as DIR/etc/x (the kernel sends DIR as the base,
// StPathIsBase).
const ResolveInRoot = 0x10

// OPath is O_PATH on every architecture once supports: such an open names
// a file without opening it for I/O, and never counts as a duplicate.
const OPath = 0x200000

// File types, as an inode's mode & S_IFMT gives them (OpenRecord.FileType).
const (
	FileFIFO uint16 = 0o010000
	FileChr  uint16 = 0o020000
	FileDir  uint16 = 0o040000
	FileBlk  uint16 = 0o060000
	FileReg  uint16 = 0o100000
	FileLnk  uint16 = 0o120000
	FileSock uint16 = 0o140000
)

// FileApart reports whether a file of type t is a device, FIFO or socket:
// opened for what stands behind it, not for its contents, so that opening
// it again (a shell's every redirection to /dev/null) is no duplicate.
// Its opens are kept apart, like O_PATH opens. A directory is not: reading
// one twice is work done twice.
func FileApart(t uint16) bool {
	switch t {
	case FileChr, FileBlk, FileFIFO, FileSock:
		return true
	}
	return false
}

// FileTypeName is t's short name: "reg", "dir", "chr", "blk", "fifo",
// "sock", "lnk", or "" when unknown.
func FileTypeName(t uint16) string {
	switch t {
	case FileReg:
		return "reg"
	case FileDir:
		return "dir"
	case FileChr:
		return "chr"
	case FileBlk:
		return "blk"
	case FileFIFO:
		return "fifo"
	case FileSock:
		return "sock"
	case FileLnk:
		return "lnk"
	}
	return ""
}

// MissErrnos are the errnos that make a failed lookup a miss of a search:
// an errno that says "not here" about the place tried, so that a search
// goes on to the next place. ENOENT and ENOTDIR (nothing there), EACCES
// (a directory on the way not searchable), ELOOP (a symlink loop there)
// and ENAMETOOLONG (the name does not fit there) are; an error that says
// nothing about the place (EMFILE, ENOMEM, EINTR), or that the file is
// there but cannot be opened that way (EEXIST with O_EXCL, EISDIR,
// EROFS, ETXTBSY, EPERM, EWOULDBLOCK), is not. ld.so gives up a whole
// library search on ELOOP and ENAMETOOLONG, make goes on: either way the
// attempt was made, and one that ends a search leaves its chain without a
// winner. enum miss_errno of bpf/once.h, which the kernel side decides
// by, is the same list (a test holds them together).
var MissErrnos = []int32{2, 13, 20, 36, 40} // ENOENT, EACCES, ENOTDIR, ENAMETOOLONG, ELOOP

// IsMiss reports whether a lookup that failed with errno (positive) is a
// miss of a search.
func IsMiss(errno int32) bool {
	for _, e := range MissErrnos {
		if e == errno {
			return true
		}
	}
	return false
}
