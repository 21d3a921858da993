package session

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// fakeSource is a Source without a kernel: events pushed ready are read
// at once; events pushed pending stay in the "ring" until Flush, as
// records the kernel has not woken the reader for (batched wakeups) do.
// After Detach nothing new gets in.
type fakeSource struct {
	mu       sync.Mutex
	log      *callLog
	ready    []trace.Event
	pending  []trace.Event
	more     chan struct{}
	deadline time.Time
	detached bool
	flushed  bool
	sent     uint64 // events accepted: the kernel's events_sent
	refused  uint64 // pushed after Detach
	dropped  uint64 // the kernel's ringbuf_full
	tallies  []trace.Event
	readErr  error // returned by Next once the ready events are read
	onDetach func()
	// launcher
	followed bool
}

func newFake(log *callLog) *fakeSource {
	return &fakeSource{log: log, more: make(chan struct{}, 1)}
}

// push queues evs, ready to read or pending until Flush.
func (f *fakeSource) push(pending bool, evs ...trace.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.detached {
		f.refused += uint64(len(evs))
		return
	}
	f.sent += uint64(len(evs))
	if pending {
		f.pending = append(f.pending, evs...)
		return
	}
	f.ready = append(f.ready, evs...)
	select {
	case f.more <- struct{}{}:
	default:
	}
}

func (f *fakeSource) SetDeadline(t time.Time) {
	f.mu.Lock()
	f.deadline = t
	f.mu.Unlock()
}

func (f *fakeSource) Next(ev *trace.Event, c *trace.Counters) error {
	for {
		f.mu.Lock()
		if len(f.ready) > 0 {
			*ev = f.ready[0]
			f.ready = f.ready[1:]
			c.EventsReceived++
			f.mu.Unlock()
			return nil
		}
		if err := f.readErr; err != nil {
			f.mu.Unlock()
			return err
		}
		if f.flushed {
			f.mu.Unlock()
			return ErrClosed
		}
		wait := time.Until(f.deadline)
		f.mu.Unlock()
		if wait <= 0 {
			return ErrTimeout
		}
		select {
		case <-f.more:
		case <-time.After(wait):
		}
	}
}

func (f *fakeSource) SyncTallies(c *trace.Counters) []trace.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tallies
	f.tallies = nil
	if f.detached {
		f.log.add("tallies")
	}
	return t
}

func (f *fakeSource) KernelCounters(c *trace.Counters) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.EventsSent, c.DroppedEvents = f.sent, f.dropped
	if f.detached {
		f.log.add("counters")
	}
	return nil
}

func (f *fakeSource) Detach() error {
	f.log.add("detach")
	f.mu.Lock()
	f.detached = true
	f.mu.Unlock()
	if f.onDetach != nil {
		f.onDetach() // a process still running: what it does is refused
	}
	return nil
}

func (f *fakeSource) Flush() error {
	f.log.add("flush")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = true
	f.ready = append(f.ready, f.pending...)
	f.pending = nil
	return nil
}

func (f *fakeSource) Close() error { f.log.add("close source"); return nil }

func (f *fakeSource) FollowChildren(int) error { f.followed = true; return nil }
func (f *fakeSource) Unfollow(int) error       { f.followed = false; return nil }
func (f *fakeSource) RedactsArgs() bool        { return false }
func (f *fakeSource) DiscardCachedLink() bool  { return false }

// callLog is the order things happened in, across the source and the
// sinks.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Runs of the same call are one entry: the order is what counts.
	if n := len(l.calls); n > 0 && l.calls[n-1] == s {
		return
	}
	l.calls = append(l.calls, s)
}

func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.calls, " ")
}

// recSink records what a session gave it.
type recSink struct {
	log      *callLog
	name     string
	events   []trace.Event
	findings []trace.Finding
	ticks    []*detect.Snapshot
	finals   int
	closed   []*trace.Result
	closes   int
	dropped  uint64 // what it says it could not deliver (Counting)
	tickErr  error
}

func (r *recSink) Event(ev *trace.Event, _ detect.Annotation) {
	r.log.add(r.name + " event")
	r.events = append(r.events, *ev)
}

func (r *recSink) Finding(f *trace.Finding, _ time.Time) error {
	r.log.add(r.name + " finding")
	r.findings = append(r.findings, *f)
	return nil
}

func (r *recSink) Tick(snap *detect.Snapshot, final bool) error {
	if final {
		r.finals++
		r.log.add(r.name + " final tick")
	} else {
		r.log.add(r.name + " tick")
	}
	r.ticks = append(r.ticks, snap)
	return r.tickErr
}

func (r *recSink) Flush() error { return nil }

func (r *recSink) Close(res *trace.Result) error {
	r.log.add(r.name + " close")
	r.closes++
	r.closed = append(r.closed, res)
	return nil
}

func (r *recSink) Counters(c *trace.Counters) { c.OutputDropped += r.dropped }

// proc is one process image's events: pid's opens of path (each after
// the first a duplicate), then its exit.
func proc(pid uint32, path string, opens int) []trace.Event {
	t := trace.Task{Pid: pid, Tid: pid, PPid: 1, Start: uint64(pid) * 10, ExecID: 1, Comm: fmt.Sprintf("p%d", pid)}
	var evs []trace.Event
	for range opens {
		evs = append(evs, trace.Event{Kind: trace.EventOpen, Task: t, Open: trace.OpenRecord{
			Syscall: trace.SysOpenat, Fname: path, Path: path, Dev: 1, Ino: uint64(pid), Ret: 3, Dirfd: -100,
			EnterNs: 100, ExitNs: 1100}})
	}
	return append(evs, trace.Event{Kind: trace.EventExit, Task: t})
}

var errRead = errors.New("read ring buffer: injected")
