package sink

import (
	"fmt"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// Events writes the --events lines of run and watch: JSON lines (JL) or
// text event lines (EP).
type Events struct {
	session.NopSink
	JL *report.JSONLines
	EP *report.EventPrinter
	W  Records
	// CallsOnly leaves out what is no call of its own (a kernel's tally,
	// a kept stack): watch's lines.
	CallsOnly bool
	// Failed leaves out the calls that succeeded (--failed).
	Failed bool
	// LossLine: Close ends text lines with the loss warning when events
	// were lost (run's --events-o FILE, which is read without the
	// report or stderr: it must say it lacks calls).
	LossLine bool
	// EndLine: Close ends JSON lines with an end line, the run's
	// counters (run's and check's --events: watch's last line is its
	// summary).
	EndLine bool
}

// NewEvents returns event lines to w: JSON lines for format json, else
// text, timed by the wall clock (wall, offset: collector.WallOffset) or
// since boot.
func NewEvents(w Records, format string, wall bool, offset int64) *Events {
	if format == "json" {
		jl := report.NewJSONLines(w)
		jl.SetClock(offset)
		return &Events{JL: jl, W: w}
	}
	ep := report.NewEventPrinter(w)
	if wall {
		ep.SetClock(offset)
	}
	return &Events{EP: ep, W: w}
}

// Event writes ev's line, with what the engine made of it.
func (e *Events) Event(ev *trace.Event, ann detect.Annotation) {
	if e.CallsOnly && (ev.Kind == trace.EventTally || ev.Kind == trace.EventKeptStack) {
		return
	}
	if e.Failed {
		switch {
		case ev.Kind == trace.EventOpen && ev.Open.Ret >= 0, ev.Kind == trace.EventExec && ev.Exec.Ret >= 0:
			return
		}
	}
	if e.JL != nil {
		// A line the output can't take is Dropped's to count.
		_ = e.JL.Event(ev, ann.Proc)
		return
	}
	e.EP.Print(ev, ann)
}

// Flush writes the buffered lines.
func (e *Events) Flush() error { return e.W.Flush() }

// Close writes what is left, with LossLine the loss warning, and with
// EndLine the end line.
func (e *Events) Close(res *trace.Result) error {
	if e.LossLine && e.EP != nil && res != nil && res.Counters.Lost() > 0 {
		_, _ = e.W.WriteString(LossMessage(&res.Counters) + "\n")
	}
	if e.LossLine && e.EP != nil && res != nil {
		if n := res.StillRunning(); n > 0 {
			// As the report's header says it: calls made after the
			// trace ended, which the lines do not hold either.
			its, procs := "its", "process"
			if n > 1 {
				its, procs = "their", "processes"
			}
			fmt.Fprintf(e.W, "once: WARNING: %d %s still running past --linger: %s later calls are not in these lines\n", n, procs, its)
		}
	}
	if e.EndLine && e.JL != nil && res != nil {
		_ = e.JL.End(&res.Counters, res.StillRunning(), time.Now())
	}
	return e.W.Flush()
}
