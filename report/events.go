package report

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/trace"
)

// EventPrinter writes one line per event, in the spirit of opensnoop and
// execsnoop (PID, COMM, FD or RET, ERR, PATH or ARGS), and tags the line
// that completes a finding: `DUP 3x` on a repeated open of one file,
// `PROBE 6 failed -> /usr/bin/x` on the exec that ends a PATH search.
type EventPrinter struct {
	w        io.Writer
	header   bool
	opens    map[dupKey]int
	failures map[trace.ImageKey]int
}

type dupKey struct {
	img      trace.ImageKey
	dev, ino uint64
}

// NewEventPrinter returns a printer writing to w.
func NewEventPrinter(w io.Writer) *EventPrinter {
	return &EventPrinter{w: w, opens: map[dupKey]int{}, failures: map[trace.ImageKey]int{}}
}

const eventHeader = "%-15s %7s %7s %-16s %-8s %4s %-8s %s\n"

// Print writes ev; lifecycle events other than exec images are skipped.
func (p *EventPrinter) Print(ev *trace.Event) {
	if !p.header {
		fmt.Fprintf(p.w, eventHeader, "TIME(s)", "PID", "PPID", "COMM", "SYSCALL", "FD", "ERR", "PATH / ARGS")
		p.header = true
	}
	t := &ev.Task
	switch ev.Kind {
	case trace.EventOpen:
		o := &ev.Open
		fd, errs, tag := fmt.Sprint(o.Ret), "0", ""
		if o.Ret < 0 {
			fd, errs = "-1", ErrnoName(-o.Ret)
		} else if o.Flags&unix.O_PATH == 0 {
			k := dupKey{t.Image(), o.Dev, o.Ino}
			p.opens[k]++
			if n := p.opens[k]; n > 1 {
				tag = fmt.Sprintf("  DUP %dx", n)
			}
		}
		name := o.Path
		if name == "" || o.Ret < 0 {
			name = o.Fname
		}
		if o.Status&trace.StFnameUnreadable != 0 && o.Ret < 0 {
			name = "<unreadable>"
		}
		fmt.Fprintf(p.w, eventHeader, secs(o.ExitNs), fmt.Sprint(t.Pid), fmt.Sprint(t.PPid), Escape(t.Comm),
			o.Syscall.String(), fd, errs, Escape(name)+truncMark(o.Status)+tag)
	case trace.EventExec:
		e := &ev.Exec
		ret, errs, tag := "0", "0", ""
		img := t.Image()
		if e.Ret < 0 {
			ret, errs = "-1", ErrnoName(-e.Ret)
			p.failures[img]++
		} else {
			img.ExecID-- // the failures were counted against the old image
			if n := p.failures[img]; n > 0 {
				tag = fmt.Sprintf("  PROBE %d failed -> %s", n, Escape(e.Filename))
			}
			delete(p.failures, img)
		}
		// Quoted like argv in the reports: an empty argument or one
		// with a space must stay visible as one argument.
		args := make([]string, len(e.Argv))
		for i, a := range e.Argv {
			args[i] = quoteArg(a)
		}
		line := Escape(e.Filename)
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
		fmt.Fprintf(p.w, eventHeader, secs(e.ExitNs), fmt.Sprint(t.Pid), fmt.Sprint(t.PPid), Escape(t.Comm),
			e.Syscall.String(), ret, errs, line+tag)
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
