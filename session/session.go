// Package session is the one drain loop: a Source's events (the
// collector's) fed to a detect.Engine and what it makes of them fanned
// out to Sinks, for once run (Run) and once watch alike, with the ordered
// shutdown that reads every event the kernel sent before a final report
// (Drain).
package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// Session is one source feeding one engine, and its sinks.
type Session struct {
	src   Source
	eng   *detect.Engine
	c     trace.Counters
	ev    trace.Event
	sinks []Sink
	sel   *Selection
	// Stacks, when set (--stacks), turns each event's snapshot into its
	// stack before the engine sees it.
	Stacks StackResolver
	// Live, when set, gets a beat each time Loop completes a poll (or,
	// under a flood, reads the clock): the reader's liveness, which a
	// health check reads from another goroutine.
	Live *Liveness
	// heldLost: counts held by threads (CollectHeld) that no live image
	// took, part of counts_lost that the kernel's counter, which
	// ReadCounters assigns, does not hold.
	heldLost uint64
	// genDevs: the devices of once's procfs, sysfs, … mounts
	// (generatedDevs), read at the first file finding or the first open
	// of a file on one (genRead), and those the kernel said such a file
	// is on (learnGenerated).
	genDevs map[uint64]string
	genRead bool
}

// StackResolver unwinds the snapshot of an event and interns the stack
// (callstack.Resolver): the call site the engine counts the call under.
type StackResolver interface {
	// Resolve returns the stack of snap, taken in task's process at
	// CLOCK_MONOTONIC time ns; 0 when it cannot be unwound at all.
	Resolve(task *trace.Task, ns uint64, snap *trace.StackSnapshot) trace.StackID
	// Counters adds what resolving counted (stacks kept, cut, lost).
	Counters(c *trace.Counters)
	// Export puts the stacks the result's call sites name in it.
	Export(r *trace.Result)
}

// New returns a session reading src into eng, fanning out to sinks (in
// their order).
func New(src Source, eng *detect.Engine, sinks ...Sink) *Session {
	return &Session{src: src, eng: eng, sinks: sinks}
}

// AddSink adds k after the session's sinks.
func (s *Session) AddSink(k Sink) { s.sinks = append(s.sinks, k) }

// Engine is the session's engine.
func (s *Session) Engine() *detect.Engine { return s.eng }

// Counters is every counter as of the last ReadCounters: the collector's,
// the kernel's and the engine's caps.
func (s *Session) Counters() trace.Counters {
	c := s.c
	t := s.eng.Totals()
	c.Evicted, c.FilesCapped, c.DetailDropped = t.Evicted, t.FilesCapped, t.DetailDropped
	c.StacksFirstLost = t.StacksFirstLost
	if s.Live != nil {
		c.ReaderStalls = s.Live.Stalls()
	}
	if s.Stacks != nil {
		s.Stacks.Counters(&c)
	}
	if s.sel != nil {
		c.UnnamedDropped = s.sel.undecided
	}
	for _, k := range s.sinks {
		if cs, ok := k.(Counting); ok {
			cs.Counters(&c)
		}
	}
	return c
}

// ReadCounters reads the kernel side's counters.
func (s *Session) ReadCounters() error {
	err := s.src.KernelCounters(&s.c)
	s.c.CountsLost += s.heldLost
	return err
}

func (s *Session) handle(now time.Time) {
	if s.sel != nil && !s.sel.accept(&s.ev, now) {
		return
	}
	s.ev.Stack = 0
	// The launcher's exec of the command comes from once's own code:
	// its stack would only cost the unwinding of once (its Go runtime's
	// .debug_frame, read while the command runs).
	if s.ev.Snapshot != nil && s.Stacks != nil && !s.eng.Launcher(&s.ev.Task) {
		s.ev.Stack = s.Stacks.Resolve(&s.ev.Task, snapshotTime(&s.ev), s.ev.Snapshot)
	}
	if (s.ev.Kind == trace.EventOpen || s.ev.Kind == trace.EventKeptStack) && s.ev.Open.FSType != "" {
		s.learnGenerated(s.ev.Open.Dev, s.ev.Open.FSType)
	}
	ann := s.eng.Handle(&s.ev, now)
	for _, k := range s.sinks {
		k.Event(&s.ev, ann)
	}
}

// findings passes the findings the engine completed since the last call
// to every sink.
func (s *Session) findings(now time.Time) error {
	found := s.eng.Drain()
	s.markGenerated(found)
	for i := range found {
		for _, k := range s.sinks {
			if err := k.Finding(&found[i], now); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush flushes every sink.
func (s *Session) flush() error {
	var errs []error
	for _, k := range s.sinks {
		errs = append(errs, k.Flush())
	}
	return errors.Join(errs...)
}

// closeSinks closes every sink, in order, with res.
// finalFlusher is a sink with work to end before a watch's final
// counters are read (the OTLP sink's queue of records): FlushFinal sends
// it, within the sink's own time bound, and counts what it could not.
type finalFlusher interface{ FlushFinal() }

// flushFinal has every finalFlusher sink end its sending.
func (s *Session) flushFinal() {
	for _, k := range s.sinks {
		if f, ok := k.(finalFlusher); ok {
			f.FlushFinal()
		}
	}
}

func (s *Session) closeSinks(res *trace.Result) error {
	var errs []error
	for _, k := range s.sinks {
		errs = append(errs, k.Close(res))
	}
	return errors.Join(errs...)
}

// snapshotTime is when the event's snapshot was taken: the syscall's
// entry (the mappings it was made against were those of that moment).
func snapshotTime(ev *trace.Event) uint64 {
	if ev.Kind == trace.EventExec {
		return ev.Exec.EnterNs
	}
	return ev.Open.EnterNs
}

// SyncTallies brings in the opens the kernel counted without sending, for
// images still alive.
func (s *Session) SyncTallies(now time.Time) {
	for _, t := range s.src.SyncTallies(&s.c) {
		s.ev = t
		s.handle(now)
	}
}

// syncEvery is how often Loop reads long loops' tallies back while they
// run, so that an eviction of one could only lose that much of its count.
const syncEvery = time.Second

// Loop reads events until tick stops it. tick runs every poll interval,
// and at least that often while events keep coming: the reader can't
// also wait on what tick checks (a command, keys, a deadline). The kernel
// side wakes the reader only when a sixteenth of the ring waits (batched
// wakeups), so poll bounds how late an event is seen.
func (s *Session) Loop(poll time.Duration, tick func(now time.Time) (stop bool, err error)) error {
	now := time.Now()
	lastTick, lastSync := now, now
	var armed time.Time // the deadline Next was last given
	for n := uint(1); ; n++ {
		// The deadline is set again only once it has passed.
		if !now.Before(armed) {
			armed = now.Add(poll)
			s.src.SetDeadline(armed)
		}
		err := s.src.Next(&s.ev, &s.c)
		switch {
		case err == nil:
			// Under a flood the clock is read every 256 events, not
			// at each one: a clock read and a deadline update per
			// event were a tenth of the collector's time.
			if n%256 != 0 {
				s.handle(now)
				continue
			}
			now = time.Now()
			s.beat(now)
			s.handle(now)
			if now.Sub(lastTick) < poll {
				continue
			}
		case errors.Is(err, ErrTimeout):
			now = time.Now()
			s.beat(now)
			// Re-armed whatever the clock says: the poller rounds its
			// timeout to milliseconds and may wake a little early, and
			// waiting out the rest of the old deadline would spin.
			armed = time.Time{}
		default:
			return err
		}
		if now.Sub(lastSync) >= syncEvery {
			lastSync = now
			s.SyncTallies(now)
		}
		lastTick = now
		if stop, err := tick(now); err != nil || stop {
			return err
		}
	}
}

// beat tells Live, when set, that the loop is alive at now.
func (s *Session) beat(now time.Time) {
	if s.Live != nil {
		s.Live.beat(now, s.c.EventsReceived)
	}
}

// Drain ends the trace in order: detach every program (so that nothing new
// arrives, however busy the traced processes are), read what is already in
// the ring, then the tallies and the counters. The engine has then seen
// everything; Finish or Result it.
func (s *Session) Drain(now time.Time) error {
	if err := s.src.Detach(); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	// What threads still running counted and hold: taken now that no
	// program runs, given to their images after every event queued.
	var held []trace.Event
	if h, ok := s.src.(HeldCollector); ok {
		held = h.CollectHeld(&s.c)
	}
	if err := s.src.Flush(); err != nil {
		return fmt.Errorf("flush ring buffer: %w", err)
	}
	s.src.SetDeadline(time.Time{})
	for s.src.Next(&s.ev, &s.c) == nil {
		s.handle(now)
	}
	for i := range held {
		ev := &held[i]
		t, ok := s.eng.LiveTask(ev.Task.Pid)
		if !ok {
			// No live image to give them to. A process of the
			// system's (pid known) that sent nothing (a quiet one
			// older than the watch, or whose fork and exec a
			// filter left out: --pid, --uid) has no image: its
			// first opens and lookups go into the totals, which
			// the kernel counted them for, and no finding rests on
			// them alone. The rest, repeats of a failed call sent
			// (a finding's), or any count of a thread no pid names
			// (a pid namespace): said lost, never silent.
			n := uint64(ev.Proc.MissRepeats.N) + uint64(ev.Proc.LookupMissRepeats.N)
			if ev.Task.Pid != 0 {
				s.eng.Unattributed(uint64(ev.Proc.Unsent), uint64(ev.Proc.LookupsUnsent))
			} else {
				n += uint64(ev.Proc.Unsent) + uint64(ev.Proc.LookupsUnsent)
			}
			s.heldLost += n
			s.c.CountsLost += n
			continue
		}
		t.Tid = ev.Task.Tid
		ev.Task = t
		s.ev = *ev
		s.handle(now)
	}
	s.SyncTallies(now)
	return s.ReadCounters()
}
