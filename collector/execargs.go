package collector

import (
	"bytes"

	"github.com/oncetool/once/trace"
)

// An exec's filename and argv come in their own record, sent at the
// syscall's entry (EventExecArgs), ahead of the exec record its exit sends
// with StArgsSent set (or, when the exit read them again, with the exit's
// record itself). An entry that kept them in a map for the exit would
// allocate and copy their 12 KiB bound at every execve. The ring buffer keeps the two in order (the entry's
// is reserved first, whatever CPU the exit runs on), so the exit's record
// finds its strings here, by the tid that called exec.
//
// The entry's record also carries the caller's stack snapshot (with
// StackSize), taken there because a successful exec replaces the caller's
// image: it is joined the same way, whether or not the exit's record
// brings strings of its own.

// execArgs is the strings of one exec in flight.
type execArgs struct {
	pid      uint32
	filename string
	argv     []string
	path     string
	snap     *trace.StackSnapshot // its Window copied out of the ring record
}

// maxExecArgs bounds the strings kept for execs whose exit was never
// seen: a thread killed inside exec after the point of no return. Those
// are dropped at their process's exit; this is the backstop.
const maxExecArgs = 1 << 14

// keepExecArgs keeps an EventExecArgs record's strings for its exit.
func (t *Tracer) keepExecArgs(ev *trace.Event) {
	if t.execArgs == nil {
		t.execArgs = make(map[uint32]execArgs)
	}
	if len(t.execArgs) >= maxExecArgs {
		clear(t.execArgs)
	}
	a := execArgs{pid: ev.Task.Pid, filename: ev.Exec.Filename, argv: ev.Exec.Argv, path: ev.Exec.Path}
	if s := ev.Snapshot; s != nil {
		// Other records are read before the exit's: the window can't
		// stay in the ring record.
		c := *s
		c.Window = bytes.Clone(s.Window)
		a.snap = &c
	} else if old, ok := t.execArgs[ev.Exec.OldTid]; ok && old.pid == a.pid {
		// A later record for the same exec (the kernel's copies of the
		// strings) has no snapshot: the entry's stays.
		a.snap = old.snap
	}
	ev.Snapshot = nil
	t.execArgs[ev.Exec.OldTid] = a
}

// joinExecArgs completes an exec record with the strings sent at its entry.
// Strings that should be there and are not (only a record that failed to
// decode can lose them) show as unreadable and count as a decode error.
func (t *Tracer) joinExecArgs(ev *trace.Event, c *trace.Counters) {
	e := &ev.Exec
	if e.Status&trace.StArgsSent == 0 {
		// The exit read them again and sent them itself: what the
		// entry sent, if anything, was less; but its snapshot is the
		// one there is.
		if a, ok := t.execArgs[e.OldTid]; ok {
			ev.Snapshot = a.snap
			delete(t.execArgs, e.OldTid)
		}
		return
	}
	e.Status &^= trace.StArgsSent
	a, ok := t.execArgs[e.OldTid]
	if !ok {
		e.Status |= trace.StFnameUnreadable | trace.StArgvUnreadable
		c.DecodeErrors++
		return
	}
	delete(t.execArgs, e.OldTid)
	// The path's status bits came with the strings' record, and the
	// exit's record took them from there (exec_pending.status).
	e.Filename, e.Argv, e.Path = a.filename, a.argv, a.path
	ev.Snapshot = a.snap
}

// dropExecArgs forgets the strings of pid's execs that never completed.
func (t *Tracer) dropExecArgs(pid uint32) {
	for tid, a := range t.execArgs {
		if a.pid == pid {
			delete(t.execArgs, tid)
		}
	}
}
