package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// EventPrinter writes one line per event, in the spirit of opensnoop and
// execsnoop (PID, COMM, FD or RET, ERR, PATH or ARGS), and tags the line
// that completes a finding, from the engine's annotation of it: `DUP 3x`
// on a repeated open of one file, `PROBE 6 failed -> /usr/bin/x` on the
// call that ends a search. It keeps no state of its own beyond its header.
type EventPrinter struct {
	w      io.Writer
	header bool
	wall   int64 // SetClock's offset; 0: seconds since boot
}

// SetClock has the TIME column show the wall-clock time (HH:MM:SS.mmm,
// local, like opensnoop -T) of an event: offset turns the kernel's
// CLOCK_MONOTONIC into ns since the Unix epoch.
func (p *EventPrinter) SetClock(offset int64) { p.wall = offset }

func (p *EventPrinter) when(ns uint64) string {
	if p.wall == 0 {
		return secs(ns)
	}
	return time.Unix(0, p.wall+int64(ns)).Format("15:04:05.000")
}

// NewEventPrinter returns a printer writing to w.
func NewEventPrinter(w io.Writer) *EventPrinter {
	return &EventPrinter{w: w}
}

func probeTag(ann detect.Annotation) string {
	if ann.ProbeFailed == 0 {
		return ""
	}
	found := "[none]"
	if ann.ProbeFound != "" {
		found = Escape(ann.ProbeFound)
	}
	return fmt.Sprintf("  PROBE %d failed -> %s", ann.ProbeFailed, found)
}

const eventHeader = "%-12s %7s %7s %-16s %-8s %4s %-8s %s\n"

// Print writes ev, tagged from ann; lifecycle events are skipped.
func (p *EventPrinter) Print(ev *trace.Event, ann detect.Annotation) {
	if ev.Kind == trace.EventKeptStack {
		return // no call: the stack of one printed before
	}
	if !p.header {
		head := "TIME(s)"
		if p.wall != 0 {
			head = "TIME"
		}
		fmt.Fprintf(p.w, eventHeader, head, "PID", "PPID", "COMM", "SYSCALL", "FD", "ERR", "PATH / ARGS")
		p.header = true
	}
	t := &ev.Task
	comm := Escape(t.Comm)
	where := ""
	if ann.Proc != nil && ann.Proc.Container != nil {
		// What a fleet's operator looks for first: which pod.
		where = "  in " + quoteArg(containerLabel(ann.Proc.Container))
	}
	switch ev.Kind {
	case trace.EventOpen:
		o := &ev.Open
		fd, errs, tag := fmt.Sprint(o.Ret), "0", probeTag(ann)
		if o.Ret < 0 {
			fd, errs = "-1", ErrnoName(-o.Ret)
		} else if ann.Dup > 1 {
			tag = fmt.Sprintf("  DUP %dx", ann.Dup) + tag
		}
		// The path as passed, what opensnoop shows, and the file the
		// kernel opened beside it when that reads otherwise.
		name := Escape(o.Fname)
		if o.Status.Has(trace.StFnameUnreadable) {
			name = "<unreadable>"
		}
		if o.Ret >= 0 && o.Path != "" && o.Path != o.Fname {
			name += " -> " + Escape(o.Path)
		}
		fmt.Fprintf(p.w, eventHeader, p.when(o.ExitNs), fmt.Sprint(t.Pid), fmt.Sprint(t.PPid), comm,
			o.Syscall.String(), fd, errs, name+truncMark(o.Status)+tag+where)
	case trace.EventExec:
		e := &ev.Exec
		ret, errs, tag := "0", "0", probeTag(ann)
		if e.Ret < 0 {
			ret, errs = "-1", ErrnoName(-e.Ret)
		}
		// Quoted like argv in the reports: an empty argument or one
		// with a space must stay visible as one argument.
		args := make([]string, len(e.Argv))
		for i, a := range e.Argv {
			args[i] = quoteArg(a)
		}
		// The name as passed and, as for an open, the file it names
		// when that reads otherwise (a dirfd's directory, fexecve's file).
		line := Escape(e.Filename)
		if r := e.Resolved(); r != e.Filename && r != "" {
			if e.Filename == "" {
				line = `""`
			}
			line += " -> " + Escape(r)
		}
		if len(args) > 0 {
			line += " [" + strings.Join(args, " ") + "]"
		}
		if e.Status&trace.StArgvTruncated != 0 {
			line += " [...argv truncated]"
		}
		if e.Status&trace.StFnameUnreadable != 0 {
			line += " [filename unreadable]"
		}
		if e.Status&trace.StArgvUnreadable != 0 {
			line += " [argv unreadable]"
		}
		fmt.Fprintf(p.w, eventHeader, p.when(e.ExitNs), fmt.Sprint(t.Pid), fmt.Sprint(t.PPid), comm,
			e.Syscall.String(), ret, errs, line+tag+where)
	}
}

func truncMark(status trace.Status) string {
	switch {
	case status&trace.StPathTruncated != 0:
		return " [path truncated]"
	case status&trace.StFnameTruncated != 0:
		return " [name truncated]"
	}
	return ""
}

func secs(ns uint64) string {
	return fmt.Sprintf("%.6f", float64(ns)/1e9)
}
