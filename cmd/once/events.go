package main

import (
	"io"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// eventLines writes the --events lines of run and watch: JSON lines
// (--format json) or text event lines, timed by the wall clock or since
// boot (--time).
type eventLines struct {
	jl *report.JSONLines
	ep *report.EventPrinter
}

func newEventLines(w io.Writer, format, clock string) *eventLines {
	offset := collector.WallOffset()
	if format == "json" {
		jl := report.NewJSONLines(w)
		jl.SetClock(offset)
		return &eventLines{jl: jl}
	}
	ep := report.NewEventPrinter(w)
	if clock == "wall" {
		ep.SetClock(offset)
	}
	return &eventLines{ep: ep}
}

// event writes one event's line, with what the engine made of it.
func (l *eventLines) event(ev *trace.Event, ann detect.Annotation) {
	if l.jl != nil {
		_ = l.jl.Event(ev, ann.Proc)
		return
	}
	l.ep.Print(ev, ann)
}
