package session

import (
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// Sink is one output of a session: the screen, JSON lines, event lines,
// metrics. The session calls its methods from the drain loop, one at a
// time, so a Sink must never block there: one that writes to a file or a
// pipe buffers whole records and drops (and counts) what the file can't
// take; one that talks to the network hands records to a bounded queue of
// its own and counts what the queue can't hold (Counting).
type Sink interface {
	// Event sees every event with what the engine made of it, after
	// the engine (an EventKeptStack and EventTally too).
	Event(ev *trace.Event, ann detect.Annotation)
	// Finding is a finding the engine completed (watch: at every poll,
	// not only at a tick), drained at now.
	Finding(f *trace.Finding, now time.Time) error
	// Tick is the watch's state every interval, and once more, final,
	// after the drain and the engine's Finish.
	Tick(snap *detect.Snapshot, final bool) error
	// Flush writes what the sink buffered: at every poll of Run (lines
	// as they happen), after every tick of Watch, and after the final
	// drain, before the counters are read.
	Flush() error
	// Close ends the sink: res is Run's result, its counters complete
	// (nil for Watch, whose findings and counters went out as they
	// came).
	Close(res *trace.Result) error
}

// Counting is a Sink that counts what it could not deliver (records an
// output file could not take): Session.Counters adds its counts, so they
// are shown like every other counter.
type Counting interface {
	Counters(c *trace.Counters)
}

// NopSink does nothing: embedded, a sink implements only what it uses.
type NopSink struct{}

func (NopSink) Event(*trace.Event, detect.Annotation)   {}
func (NopSink) Finding(*trace.Finding, time.Time) error { return nil }
func (NopSink) Tick(*detect.Snapshot, bool) error       { return nil }
func (NopSink) Flush() error                            { return nil }
func (NopSink) Close(*trace.Result) error               { return nil }

// EventFunc is a Sink of events only.
type EventFunc func(*trace.Event, detect.Annotation)

func (f EventFunc) Event(ev *trace.Event, ann detect.Annotation) { f(ev, ann) }
func (EventFunc) Finding(*trace.Finding, time.Time) error        { return nil }
func (EventFunc) Tick(*detect.Snapshot, bool) error              { return nil }
func (EventFunc) Flush() error                                   { return nil }
func (EventFunc) Close(*trace.Result) error                      { return nil }
