package collector

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
)

// EventKind says which of an Event's parts is set.
type EventKind uint32

const (
	EventOpen  = EventKind(bpf.OnceEventKindEVENT_OPEN)
	EventExec  = EventKind(bpf.OnceEventKindEVENT_EXEC)
	EventFork  = EventKind(bpf.OnceEventKindEVENT_FORK)
	EventExit  = EventKind(bpf.OnceEventKindEVENT_EXIT)
	EventImage = EventKind(bpf.OnceEventKindEVENT_IMAGE)
	// EventUnsent reports, in Proc.Unsent, opens of Task's image that the
	// kernel counted without sending (Options.FirstOpensUnsent): those
	// of one thread, at its exit or exec.
	EventUnsent = EventKind(bpf.OnceEventKindEVENT_UNSENT)
	// EventExecArgs carries, in Exec, the Filename and Argv of the
	// EventExec that follows with the same OldTid. Tracer.Next joins the
	// two and never returns it.
	EventExecArgs = EventKind(bpf.OnceEventKindEVENT_EXEC_ARGS)
	// EventTally is made by the Tracer, not read from the ring: opens the
	// kernel counted instead of sending (see Options.SendOpensPerKind).
	EventTally EventKind = 100
)

// Status bits of an event, as in enum event_status of bpf/once.h (bpf2go
// can't emit an enum that no map or event field is typed with, so
// TestStatusBitsMatchHeader checks these against the header).
const (
	StFnameTruncated  = 1 << 0
	StFnameUnreadable = 1 << 1
	StPathTruncated   = 1 << 2
	StPathUnresolved  = 1 << 3
	StArgvTruncated   = 1 << 4
	StArgvUnreadable  = 1 << 5
	StFnameReread     = 1 << 6
	StPathIsBase      = 1 << 7
	StTallyNext       = 1 << 8  // the last open of its kind sent: later ones are tallied
	StUntimed         = 1 << 9  // no entry time was read: ExitNs - EnterNs is 0, not the latency
	StCompat          = 1 << 10 // image: a 32-bit program, whose syscalls no syscall tracepoint sees
	StSeenBefore      = 1 << 11 // open: the image opened this file before, in an open not sent
	StArgsSent        = 1 << 12 // exec: Filename and Argv came in an EventExecArgs (joined by Tracer.Next)
)

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

// OpenRecord is one open-family call, complete (entry and exit).
type OpenRecord struct {
	Syscall Syscall
	Status  uint16
	EnterNs uint64
	ExitNs  uint64
	Flags   uint64
	Mode    uint64
	Resolve uint64
	Dev     uint64 // userspace st_dev encoding
	Ino     uint64
	Dirfd   int32
	Ret     int32
	Fname   string
	Path    string // resolved file (Ret >= 0) or base dir (StPathIsBase)
	// Unsent: successful opens the thread made in this image before this
	// one that were counted, not sent (Options.FirstOpensUnsent).
	Unsent uint32
}

// ExecRecord is one execve/execveat call, complete.
type ExecRecord struct {
	Syscall  Syscall
	Status   uint16
	EnterNs  uint64
	ExitNs   uint64
	OldTid   uint32
	Dirfd    int32
	Ret      int32
	AtFlags  uint32
	Argc     uint32
	Filename string
	Argv     []string
}

// ProcRecord is a process lifecycle event: fork, exit, or a new exec image.
type ProcRecord struct {
	Status      uint16
	TsNs        uint64
	ExeDev      uint64 // userspace encoding
	ExeIno      uint64
	Exe         string
	ParentPid   uint32 // fork: the parent; image: the tid that called exec
	ParentStart uint64
	ExitCode    int32  // raw kernel exit_code: status << 8 | signal
	Unsent      uint32 // EventUnsent: opens counted, not sent
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
	Opens   uint64 // opens counted since the previous tally of the kind
	Ns      uint64 // their summed latency
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
}

var errShort = errors.New("short record")

// fixed copies the fixed-size head of a record into a bpf2go struct. No
// reflection: the Go type has the C layout (structs.HostLayout) and the
// record was written by this machine, so native byte order holds.
func fixed[T any](dst *T, b []byte) error {
	n := int(unsafe.Sizeof(*dst))
	if len(b) < n {
		return fmt.Errorf("%w: %d bytes, want at least %d", errShort, len(b), n)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(dst)), n), b)
	return nil
}

// strs2 slices the variable part of a record into two strings of the
// given lengths, made with one allocation.
func strs2(b []byte, n1, n2 int) (string, string, error) {
	if n1+n2 > len(b) {
		return "", "", fmt.Errorf("%w: strings want %d+%d bytes, %d left", errShort, n1, n2, len(b))
	}
	s := string(b[:n1+n2])
	return s[:n1], s[n1:], nil
}

func decodeTask(t *Task, ti *bpf.OnceTaskInfo) {
	t.Pid, t.Tid, t.PPid, t.UID = ti.Pid, ti.Tid, ti.Ppid, ti.Uid
	t.Start, t.ExecID, t.CgroupID = ti.StartNs, ti.ExecId, ti.CgroupId
	comm := ti.Comm[:]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	// Most events come from the comm of the event before (ev is reused):
	// no allocation then.
	if t.Comm != string(comm) {
		t.Comm = string(comm)
	}
}

// Decode parses one ring buffer record into ev. It never panics on any
// input: a malformed record is an error.
func Decode(b []byte, ev *Event) error {
	var hdr bpf.OnceEventHeader
	if err := fixed(&hdr, b); err != nil {
		return err
	}
	ev.Kind = EventKind(hdr.Kind)
	switch ev.Kind {
	case EventOpen:
		var raw bpf.OnceOpenEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		fname, path, err := strs2(b[unsafe.Sizeof(raw):], int(raw.FnameLen), int(raw.PathLen))
		if err != nil {
			return err
		}
		decodeTask(&ev.Task, &raw.Task)
		ev.Open = OpenRecord{
			Syscall: Syscall(raw.Hdr.Syscall), Status: raw.Hdr.Status,
			EnterNs: raw.EnterNs, ExitNs: raw.ExitNs,
			Flags: raw.Flags, Mode: raw.Mode, Resolve: raw.Resolve,
			Dev: userDev(raw.Dev), Ino: raw.Ino,
			Dirfd: raw.Dirfd, Ret: raw.Ret,
			Fname: fname, Path: path, Unsent: raw.Unsent,
		}
	case EventExec, EventExecArgs:
		var raw bpf.OnceExecEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		filename, args, err := strs2(b[unsafe.Sizeof(raw):], int(raw.FnameLen), int(raw.ArgsLen))
		if err != nil {
			return err
		}
		decodeTask(&ev.Task, &raw.Task)
		ev.Exec = ExecRecord{
			Syscall: Syscall(raw.Hdr.Syscall), Status: raw.Hdr.Status,
			EnterNs: raw.EnterNs, ExitNs: raw.ExitNs,
			OldTid: raw.OldTid, Dirfd: raw.Dirfd, Ret: raw.Ret,
			AtFlags: raw.AtFlags, Argc: raw.Argc,
			Filename: filename, Argv: splitArgs(args),
		}
	case EventFork, EventExit, EventImage, EventUnsent:
		var raw bpf.OnceProcEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		exe, _, err := strs2(b[unsafe.Sizeof(raw):], int(raw.PathLen), 0)
		if err != nil {
			return err
		}
		decodeTask(&ev.Task, &raw.Task)
		ev.Proc = ProcRecord{
			Status: raw.Hdr.Status, TsNs: raw.TsNs,
			ExeDev: userDev(raw.ExeDev), ExeIno: raw.ExeIno, Exe: exe,
			ParentPid: raw.ParentPid, ParentStart: raw.ParentStartNs,
			ExitCode: raw.ExitCode, Unsent: raw.Unsent,
		}
	default:
		return fmt.Errorf("unknown event kind %d", hdr.Kind)
	}
	return nil
}

// splitArgs splits the NUL-separated argv bytes the kernel side collected.
// The last argument may lack its NUL when it was cut.
func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	if s[len(s)-1] == 0 {
		s = s[:len(s)-1]
	}
	var out []string
	for {
		i := bytes.IndexByte([]byte(s), 0)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// userDev converts the kernel's internal dev_t (major << 20 | minor, what
// super_block.s_dev holds) to the encoding stat(2) returns in st_dev
// (glibc's makedev: minor's low byte, major, then minor's high bits).
func userDev(kdev uint32) uint64 {
	major := uint64(kdev >> 20)
	minor := uint64(kdev & (1<<20 - 1))
	return (minor & 0xff) | (major&0xfff)<<8 | (minor&^0xff)<<12 | (major&^0xfff)<<32
}

// kernelDev is userDev's inverse.
func kernelDev(dev uint64) uint32 {
	return uint32(unix.Major(dev))<<20 | uint32(unix.Minor(dev))&(1<<20-1)
}
