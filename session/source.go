package session

import (
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/trace"
)

// Source is what a session reads its events from: a *collector.Tracer, or
// a fake in tests. Its methods are called from the drain loop only.
type Source interface {
	// SetDeadline bounds how long Next waits for an event; the zero
	// time, after Flush, reads what is queued without waiting.
	SetDeadline(t time.Time)
	// Next reads the next event into ev and counts what reading it
	// cost into c. It returns ErrTimeout when the deadline passed with
	// none, ErrClosed after Flush once everything queued was read.
	Next(ev *trace.Event, c *trace.Counters) error
	// SyncTallies returns what the kernel counted without sending (the
	// opens of images still alive), as tally events.
	SyncTallies(c *trace.Counters) []trace.Event
	// KernelCounters reads the kernel side's counters into c.
	KernelCounters(c *trace.Counters) error
	// Detach stops every new event; what is queued stays readable.
	Detach() error
	// Flush makes Next return what is queued, then ErrClosed.
	Flush() error
	// Close releases the source: whoever opened it closes it, after
	// the session has ended.
	Close() error
}

// HeldCollector is a Source whose threads may hold counts not reported
// when the trace ends (collector.Tracer.CollectHeld): Drain collects
// them, once every program is detached.
type HeldCollector interface {
	CollectHeld(c *trace.Counters) []trace.Event
}

// Launcher is a Source that can trace a command from its first
// instruction (Run): what once forks is followed while it starts it.
type Launcher interface {
	Source
	FollowChildren(pid int) error
	Unfollow(pid int) error
	// RedactsArgs: the command's arguments are to be reported redacted.
	RedactsArgs() bool
	// DiscardCachedLink drops a link cache that may have made a
	// tracer that saw nothing; true when there was one.
	DiscardCachedLink() bool
}

// CgroupFilter is a Source that filters by cgroup id in the kernel and
// leaves cgroups made since it started to be decided on in user space
// (container selection).
type CgroupFilter interface {
	CgroupPending(id uint64) bool
	SelectCgroup(id uint64) error
	DropCgroup(id uint64) error
}

// The errors of Source.Next: the collector's, which a fake source returns
// too.
var (
	ErrTimeout = collector.ErrTimeout
	ErrClosed  = collector.ErrClosed
)

var (
	_ Launcher     = (*collector.Tracer)(nil)
	_ CgroupFilter = (*collector.Tracer)(nil)
)
