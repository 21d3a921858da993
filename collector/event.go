package collector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

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

func decodeTask(t *trace.Task, ti *bpf.OnceTaskInfo) {
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

// stStack is ST_STACK of bpf/once.h: a stack snapshot follows the
// record's strings. The decoder takes it off: it is the record's layout,
// not a fact about the call (ev.Snapshot says it).
const stStack = trace.Status(bpf.OnceEventStatusST_STACK)

// The flags of struct stack_tail (enum stack_flags in bpf/once.h).
const (
	stkWindowCut   = uint16(bpf.OnceStackFlagsSTK_WINDOW_CUT)
	stkWindowFault = uint16(bpf.OnceStackFlagsSTK_WINDOW_FAULT)
)

// Bounds of a snapshot, the kernel side's (enum stack_bounds): a record
// claiming more is malformed.
const (
	MaxStackSize   = int(bpf.OnceStackBoundsONCE_STACK_MAX)
	maxStackFrames = int(bpf.OnceStackBoundsONCE_STACK_FRAMES)
)

// decodeSnapshot parses the stack snapshot at the start of b (what
// follows a record's strings when its status has ST_STACK). Window aliases
// b; the rest is copied.
func decodeSnapshot(b []byte) (*trace.StackSnapshot, error) {
	var tail bpf.OnceStackTail
	if err := fixed(&tail, b); err != nil {
		return nil, fmt.Errorf("stack snapshot: %w", err)
	}
	b = b[unsafe.Sizeof(tail):]
	nfp, wlen := int(tail.NrFp), int(tail.WindowLen)
	if nfp > maxStackFrames || wlen > MaxStackSize {
		return nil, fmt.Errorf("stack snapshot of %d frames and %d bytes: past the kernel's bounds", nfp, wlen)
	}
	if len(b) != nfp*8+wlen {
		return nil, fmt.Errorf("%w: stack snapshot wants %d frames and %d bytes, %d left", errShort, nfp, wlen, len(b))
	}
	snap := &trace.StackSnapshot{
		IP: tail.Ip, SP: tail.Sp, BP: tail.Bp, BX: tail.Bx,
		R12: tail.R12, R13: tail.R13, R14: tail.R14, R15: tail.R15,
		WindowCut: tail.Flags&stkWindowCut != 0,
	}
	if nfp > 0 {
		snap.FP = make([]uint64, nfp)
		for i := range snap.FP {
			snap.FP[i] = binary.NativeEndian.Uint64(b[8*i:])
		}
	}
	if wlen > 0 {
		snap.Window = b[8*nfp : 8*nfp+wlen : 8*nfp+wlen]
	}
	return snap, nil
}

// strsSnap is strs2 for a record that may carry a stack snapshot behind
// its strings: then they must end where the snapshot starts, and the
// record where the snapshot does.
func strsSnap(b []byte, n1, n2 int, st uint16, ev *trace.Event) (string, string, error) {
	if trace.Status(st)&stStack == 0 {
		return strs2(b, n1, n2)
	}
	if n1+n2 > len(b) {
		return "", "", fmt.Errorf("%w: strings want %d+%d bytes, %d left", errShort, n1, n2, len(b))
	}
	snap, err := decodeSnapshot(b[n1+n2:])
	if err != nil {
		return "", "", err
	}
	s1, s2, err := strs2(b[:n1+n2], n1, n2)
	if err != nil {
		return "", "", err
	}
	ev.Snapshot = snap
	return s1, s2, nil
}

// Decode parses one ring buffer record into ev. It never panics on any
// input: a malformed record is an error. The two halves of an io_uring
// open come out as kinds of the collector's own (uringSubmit,
// uringComplete), which Next joins into one EventOpen.
func Decode(b []byte, ev *trace.Event) error {
	var h uringHalf
	return decode(b, ev, &h)
}

// decode is Decode, with what an io_uring half says besides ev in h.
func decode(b []byte, ev *trace.Event, h *uringHalf) error {
	var hdr bpf.OnceEventHeader
	if err := fixed(&hdr, b); err != nil {
		return err
	}
	ev.Kind = trace.EventKind(hdr.Kind)
	// Every record says whether it has a snapshot: none from before.
	ev.Snapshot = nil
	switch ev.Kind {
	case openRepeat:
		var raw bpf.OnceOpenRepeatEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		// The rest is the open's it repeats (repeats.expand).
		ev.Task.Pid, ev.Task.Tid = raw.Pid, raw.Tid
		ev.Open = trace.OpenRecord{
			Syscall: trace.Syscall(raw.Hdr.Syscall), Status: trace.Status(raw.Hdr.Status),
			EnterNs: raw.EnterNs, ExitNs: raw.ExitNs, Dirfd: raw.Dirfd, Ret: raw.Ret,
		}
		h.ref = raw.RefNs
	case trace.EventOpen, trace.EventKeptStack:
		var raw bpf.OnceOpenEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		fname, path, err := strsSnap(b[unsafe.Sizeof(raw):], int(raw.FnameLen), int(raw.PathLen), raw.Hdr.Status, ev)
		if err != nil {
			return err
		}
		decodeTask(&ev.Task, &raw.Task)
		ev.Open = trace.OpenRecord{
			Syscall: trace.Syscall(raw.Hdr.Syscall), Status: trace.Status(raw.Hdr.Status) &^ stStack,
			EnterNs: raw.EnterNs, ExitNs: raw.ExitNs,
			Flags: raw.Flags, Mode: raw.Mode, Resolve: raw.Resolve,
			Dev: userDev(raw.Dev), Ino: raw.Ino, Gen: raw.Gen, FileType: raw.Ftype,
			Created:   raw.Xstatus&uint16(bpf.OnceOpenXstatusXST_CREATED) != 0,
			FSType:    generatedFS(raw.Xstatus),
			FirstCall: ev.Kind == trace.EventKeptStack && raw.Xstatus&uint16(bpf.OnceOpenXstatusXST_FIRST_CALL) != 0,
			Dirfd:     raw.Dirfd, Ret: raw.Ret,
			Fname: fname, Path: path, Unsent: raw.Unsent, LookupsUnsent: raw.LookupsUnsent,
			MissRepeats: trace.Repeats{N: raw.MissRepeats, Timed: raw.MissTimed, TimedNs: raw.MissNs, Syscall: trace.Syscall(raw.MissSys)},
			LookupMissRepeats: trace.Repeats{N: raw.LookupMissRepeats, Timed: raw.LookupMissTimed, TimedNs: raw.LookupMissNs,
				Syscall: trace.Syscall(raw.LookupMissSys)},
		}
		if ev.Open.Status.Has(trace.StPathTruncated) && path != "" {
			// The walk kept the path's last components: marked, so that
			// it can't pass for an absolute path that exists.
			ev.Open.Path = trace.PathCut + path
		}
		if ev.Kind == trace.EventOpen && ev.Open.Syscall.IsMade() {
			ev.Kind = trace.EventMade
		}
	case trace.EventExec, trace.EventExecArgs:
		var raw bpf.OnceExecEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		// filename and argv, then the path: the three strings are
		// sliced from one allocation.
		strs, path, err := strsSnap(b[unsafe.Sizeof(raw):], int(raw.FnameLen)+int(raw.ArgsLen), int(raw.PathLen), raw.Hdr.Status, ev)
		if err != nil {
			return err
		}
		filename, args := strs[:raw.FnameLen], strs[raw.FnameLen:]
		decodeTask(&ev.Task, &raw.Task)
		ev.Exec = trace.ExecRecord{
			Syscall: trace.Syscall(raw.Hdr.Syscall), Status: trace.Status(raw.Hdr.Status) &^ stStack,
			EnterNs: raw.EnterNs, ExitNs: raw.ExitNs,
			OldTid: raw.OldTid, Dirfd: raw.Dirfd, Ret: raw.Ret,
			AtFlags: raw.AtFlags, Argc: raw.Argc,
			Filename: filename, Argv: splitArgs(args), Path: path,
		}
		if ev.Exec.Status.Has(trace.StPathTruncated) && path != "" {
			ev.Exec.Path = trace.PathCut + path
		}
	case trace.EventFork, trace.EventExit, trace.EventImage, trace.EventUnsent:
		var raw bpf.OnceProcEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		exe, _, err := strs2(b[unsafe.Sizeof(raw):], int(raw.PathLen), 0)
		if err != nil {
			return err
		}
		decodeTask(&ev.Task, &raw.Task)
		ev.Proc = trace.ProcRecord{
			Status: trace.Status(raw.Hdr.Status), TSNs: raw.TsNs,
			ExeDev: userDev(raw.ExeDev), ExeIno: raw.ExeIno, Exe: exe,
			ParentPid: raw.ParentPid, ParentStart: raw.ParentStartNs,
			ExitCode: raw.ExitCode, Unsent: raw.Unsent, LookupsUnsent: raw.LookupsUnsent,
			MissRepeats: trace.Repeats{N: raw.MissRepeats, Timed: raw.MissTimed, TimedNs: raw.MissNs, Syscall: trace.Syscall(raw.MissSys)},
			LookupMissRepeats: trace.Repeats{N: raw.LookupMissRepeats, Timed: raw.LookupMissTimed, TimedNs: raw.LookupMissNs,
				Syscall: trace.Syscall(raw.LookupMissSys)},
		}
		if ev.Kind == trace.EventExit {
			ev.Proc.ParentPid, ev.Proc.ThreadsLeft = 0, raw.ParentPid
		}
	case uringSubmit:
		var raw bpf.OnceUringSubmitEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		fname, _, err := strs2(b[unsafe.Sizeof(raw):], int(raw.FnameLen), 0)
		if err != nil {
			return err
		}
		decodeTask(&ev.Task, &raw.Task)
		ev.Open = trace.OpenRecord{
			Syscall: trace.Syscall(raw.Hdr.Syscall), Status: trace.Status(raw.Hdr.Status),
			EnterNs: raw.EnterNs, Flags: raw.Flags, Mode: raw.Mode, Resolve: raw.Resolve,
			Dirfd: raw.Dirfd, Fname: fname,
		}
		*h = uringHalf{req: raw.Req, slot: raw.FileSlot, prep: raw.PrepFailed != 0}
	case uringComplete:
		var raw bpf.OnceUringCompleteEvent
		if err := fixed(&raw, b); err != nil {
			return err
		}
		path, _, err := strs2(b[unsafe.Sizeof(raw):], int(raw.PathLen), 0)
		if err != nil {
			return err
		}
		ev.Open = trace.OpenRecord{
			Syscall: trace.Syscall(raw.Hdr.Syscall), Status: trace.Status(raw.Hdr.Status),
			ExitNs: raw.ExitNs, Dev: userDev(raw.Dev), Ino: raw.Ino, Gen: raw.Gen,
			FileType: raw.Ftype, Ret: raw.Ret, Path: path,
		}
		if ev.Open.Status.Has(trace.StPathTruncated) && path != "" {
			ev.Open.Path = trace.PathCut + path
		}
		*h = uringHalf{req: raw.Req, pid: raw.Pid}
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

// generatedFSNames are the file systems of bpf/once.h's enum
// generated_fs as mountinfo names them (trace.GeneratedFS).
var generatedFSNames = map[bpf.OnceGeneratedFs]string{
	bpf.OnceGeneratedFsGEN_FS_PROC: "proc", bpf.OnceGeneratedFsGEN_FS_SYSFS: "sysfs",
	bpf.OnceGeneratedFsGEN_FS_CGROUP: "cgroup", bpf.OnceGeneratedFsGEN_FS_CGROUP2: "cgroup2",
	bpf.OnceGeneratedFsGEN_FS_DEBUGFS: "debugfs", bpf.OnceGeneratedFsGEN_FS_TRACEFS: "tracefs",
	bpf.OnceGeneratedFsGEN_FS_SECURITYFS: "securityfs",
}

// generatedFS is the file system an open event's XST_FS bits name, ""
// for none.
func generatedFS(xstatus uint16) string {
	return generatedFSNames[bpf.OnceGeneratedFs((xstatus&uint16(bpf.OnceOpenXstatusXST_FS_MASK))>>bpf.OnceOpenXstatusXST_FS_SHIFT)]
}

// kernelDev is userDev's inverse.
func kernelDev(dev uint64) uint32 {
	return uint32(unix.Major(dev))<<20 | uint32(unix.Minor(dev))&(1<<20-1)
}

// sharedIno names a lookup of a file on tracefs, whose files share one
// inode number (all a stat buffer gives), by its path: Gen, which a
// lookup otherwise leaves 0, gets a hash of the name as looked up,
// made absolute against the directory it was tried in. Two spellings of
// one file are two files then; two files are never one.
func sharedIno(o *trace.OpenRecord) {
	name := o.Fname
	if o.Status.Has(trace.StPathIsBase) && !strings.HasPrefix(name, "/") {
		name = o.Path + "/" + name
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	o.Gen = h.Sum32() | 1
}
