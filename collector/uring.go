package collector

import (
	"strings"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

// An open through io_uring (IORING_OP_OPENAT, IORING_OP_OPENAT2) is no
// syscall: strace and every syscall tracepoint miss it. Nor is a lookup
// through it (IORING_OP_STATX), which comes the same way, a lookup of
// Syscall SysIoUringStatx: its flags and mask as the statx syscall's, the
// identity read back from its buffer, the directory it was tried in. The kernel side
// sends it in two halves (bpf/uring.bpf.h): the request when it is
// submitted, with its name (the kernel's copy, freed before the request
// completes), and its result when its completion is posted, with the
// file's identity and path, possibly from an io-wq worker thread. The ring
// buffer keeps them in order (the submission is reserved first, whatever
// CPU the completion runs on), so the completion finds its request here,
// by the request's address, and Next returns the two as one EventOpen of
// the submitting thread: Syscall SysIoUringOpenat or SysIoUringOpenat2,
// EnterNs the submission, ExitNs the completion. One request posts one
// completion, however often it was tried (a non-blocking attempt that
// would block is retried in a worker without one): one open.
//
// What is not seen: a request whose prep failed (a bad flag, a name that
// can't be read) posts its failure without a submission, and is dropped;
// a completion that overflows the ring's CQ goes to the overflow list
// without the tracepoint, so its request waits here until its process
// exits or maxUringPending evicts it.

// The halves' kinds, which Decode returns and Next never does.
const (
	uringSubmit   = trace.EventKind(bpf.OnceEventKindEVENT_URING_SUBMIT)
	uringComplete = trace.EventKind(bpf.OnceEventKindEVENT_URING_COMPLETE)
)

// uringHalf is what a half says besides its trace.Event part.
type uringHalf struct {
	req  uint64 // the request's address
	slot uint32 // submission: the fixed-file slot + 1, ~0 for one the kernel picks, or 0
	pid  uint32 // completion: the process of the thread that posted it
	prep bool   // submission: the request failed in its prep (io_uring_req_failed)
	// An open repeat (not io_uring's): the exit_ns of the open it
	// repeats. What a record says besides ev is kept here.
	ref uint64
}

// uringOpen is a submitted request waiting for its completion.
type uringOpen struct {
	task trace.Task
	open trace.OpenRecord
	prep bool // failed in its prep: nothing was looked up
}

// maxUringPending bounds the requests kept for completions not seen; a
// process's are dropped at its exit.
const maxUringPending = 1 << 12

// keepUringSubmit keeps a submitted request for its completion.
func (t *Tracer) keepUringSubmit(ev *trace.Event, h *uringHalf) {
	if t.uring == nil {
		t.uring = make(map[uint64]uringOpen)
	}
	if _, ok := t.uring[h.req]; !ok && len(t.uring) >= maxUringPending {
		for k := range t.uring {
			delete(t.uring, k)
			break
		}
	}
	t.uring[h.req] = uringOpen{task: ev.Task, open: ev.Open, prep: h.prep}
}

// joinUring makes ev, a completion, the open of its request, and reports
// whether it had one (a completion without is dropped: its submission
// was filtered out, or lost, which Counters says).
func (t *Tracer) joinUring(ev *trace.Event, h *uringHalf) bool {
	u, ok := t.uring[h.req]
	if !ok {
		return false
	}
	delete(t.uring, h.req)
	done := &ev.Open
	o := u.open
	o.Status |= done.Status
	o.ExitNs, o.Ret = done.ExitNs, done.Ret
	o.Dev, o.Ino, o.Gen, o.Path = done.Dev, done.Ino, done.Gen, done.Path
	o.FileType = done.FileType
	switch {
	case h.pid != u.task.Pid:
		// Completed by a thread of another process (a ring shared
		// between processes): the fd it read, the directory it walked
		// are that one's.
		o.Dev, o.Ino, o.Gen, o.Path = 0, 0, 0, ""
		o.FileType = 0
		o.Status &^= trace.StPathTruncated | trace.StSeenBefore | trace.StPathIsBase
		if o.Ret >= 0 && !o.Syscall.IsLookup() {
			o.Status |= trace.StPathUnresolved
		}
	case u.prep:
		// Failed in its prep: nothing was looked up, and the
		// completion's directory is read from a request never
		// prepared (a stale dirfd: /dev/null for fd 0).
		o.Dev, o.Ino, o.Gen, o.Path = 0, 0, 0, ""
		o.FileType = 0
		o.Status &^= trace.StPathTruncated | trace.StSeenBefore | trace.StPathIsBase
	case (o.Ret < 0 || o.Syscall.IsLookup()) && strings.HasPrefix(o.Fname, "/") && o.Resolve&trace.ResolveInRoot == 0:
		// The kernel sends the directory a failure (or a statx) was
		// tried in for every one (it no longer has the name): not for
		// this one (but for RESOLVE_IN_ROOT's, whose "/" is its
		// directory).
		o.Path = ""
		o.Status &^= trace.StPathIsBase | trace.StPathTruncated
	}
	ev.Kind, ev.Task, ev.Open = trace.EventOpen, u.task, o
	return true
}

// dropUring forgets pid's requests still waiting.
func (t *Tracer) dropUring(pid uint32) {
	for k, u := range t.uring {
		if u.task.Pid == pid {
			delete(t.uring, k)
		}
	}
}
