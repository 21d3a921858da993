package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	wall   int64  // SetClock's offset; 0: seconds since boot
	buf    []byte // an open's line, reused
	// sec is the second secPart ("15:04:05", local) was made for: a
	// busy stream formats the clock once a second, not once a line.
	sec     int64
	secPart []byte
}

// SetClock has the TIME column show the wall-clock time (HH:MM:SS.mmm,
// local, like opensnoop -T) of an event: offset turns the kernel's
// CLOCK_MONOTONIC into ns since the Unix epoch.
func (p *EventPrinter) SetClock(offset int64) { p.wall = offset }

func (p *EventPrinter) when(ns uint64) string { return string(p.appendWhen(nil, ns)) }

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

const eventHeader = "%-12s %7s %7s %-16s %-10s %4s %-8s %s\n"

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
		// The hot path of --events in text: appended into one buffer,
		// as eventHeader would lay it out, without fmt's boxing and
		// the strings it made per line. TestOpenLineMatchesFormat
		// holds it to eventHeader.
		p.buf = p.appendOpenLine(p.buf[:0], &ev.Open, t, comm, probeTag(ann), ann.Dup, where)
		p.w.Write(p.buf)
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

// appendOpenLine appends an open's line: eventHeader's columns, then the
// path as passed, what opensnoop shows, and the file the kernel opened
// beside it when that reads otherwise.
func (p *EventPrinter) appendOpenLine(b []byte, o *trace.OpenRecord, t *trace.Task, comm, tag string, dup int, where string) []byte {
	var num [24]byte
	b = appendPadded(b, p.appendWhen(num[:0], o.ExitNs), 12, true)
	b = append(b, ' ')
	b = appendPadded(b, strconv.AppendUint(num[:0], uint64(t.Pid), 10), 7, false)
	b = append(b, ' ')
	b = appendPadded(b, strconv.AppendUint(num[:0], uint64(t.PPid), 10), 7, false)
	b = append(b, ' ')
	b = appendPaddedString(b, comm, 16)
	b = append(b, ' ')
	b = appendPaddedString(b, o.Syscall.String(), 10)
	b = append(b, ' ')
	errs := "0"
	if o.Ret < 0 {
		b = appendPadded(b, append(num[:0], "-1"...), 4, false)
		errs = ErrnoName(-o.Ret)
	} else {
		b = appendPadded(b, strconv.AppendInt(num[:0], int64(o.Ret), 10), 4, false)
	}
	b = append(b, ' ')
	b = appendPaddedString(b, errs, 8)
	b = append(b, ' ')
	if o.Status.Has(trace.StFnameUnreadable) {
		b = append(b, "<unreadable>"...)
	} else {
		b = append(b, Escape(o.Fname)...)
	}
	if o.Ret >= 0 && o.Path != "" && o.Path != o.Fname {
		b = append(b, " -> "...)
		b = append(b, Escape(o.Path)...)
	}
	b = append(b, truncMark(o.Status)...)
	if o.Ret >= 0 && dup > 1 {
		b = append(b, "  DUP "...)
		b = strconv.AppendInt(b, int64(dup), 10)
		b = append(b, 'x')
	}
	b = append(b, tag...)
	b = append(b, where...)
	return append(b, '\n')
}

// appendWhen appends the TIME column: seconds since boot, or the wall
// clock's HH:MM:SS.mmm (SetClock).
func (p *EventPrinter) appendWhen(b []byte, ns uint64) []byte {
	if p.wall == 0 {
		return strconv.AppendFloat(b, float64(ns)/1e9, 'f', 6, 64)
	}
	t := p.wall + int64(ns)
	if t < 0 {
		return time.Unix(0, t).AppendFormat(b, "15:04:05.000")
	}
	if sec := t / 1e9; p.secPart == nil || sec != p.sec {
		p.sec = sec
		p.secPart = time.Unix(sec, 0).AppendFormat(p.secPart[:0], "15:04:05")
	}
	ms := t % 1e9 / 1e6
	b = append(b, p.secPart...)
	return append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
}

// appendPadded appends s (ASCII) padded with spaces to width, on the
// right if left (fmt's %-Ns), else on the left (%Ns).
func appendPadded(b, s []byte, width int, left bool) []byte {
	if left {
		b = append(b, s...)
	}
	for n := len(s); n < width; n++ {
		b = append(b, ' ')
	}
	if !left {
		b = append(b, s...)
	}
	return b
}

// appendPaddedString is fmt's %-Ns: width counts runes.
func appendPaddedString(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b = append(b, ' ')
	}
	return b
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
