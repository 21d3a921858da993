package report

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// EventPrinter writes one line per event, in the spirit of opensnoop and
// execsnoop (PID, COMM, FD or RET, ERR, PATH or ARGS), and tags the line
// that completes a finding, from the engine's annotation of it: `DUP 3x`
// on a repeated open of one file, `PROBE 6 failed -> /usr/bin/x` on the
// call that ends a search. Names are escaped and, when they hold a space,
// a quote or a '[', quoted as argv is, so that no file name can pass for
// a tag or for the file another name resolved to. It keeps no state of
// its own beyond its header.
type EventPrinter struct {
	w      io.Writer
	header bool
	wide   bool   // SetWide: the UID, LAT(us) and FLAGS columns too
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

// SetWide adds the columns opensnoop -U -e and strace -T add: UID (the
// task's real uid) before PID, and LAT(us) (the call's latency in µs, "-"
// when untimed) and FLAGS (the open flags and mode, a lookup's AT_* flags
// or access mode, as strace prints them) before PATH / ARGS.
func (p *EventPrinter) SetWide(wide bool) { p.wide = wide }

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
		found = quoteArg(ann.ProbeFound)
	}
	return fmt.Sprintf("  PROBE %d failed -> %s", ann.ProbeFailed, found)
}

// eventHeader lays out the header line, and every line whose columns
// fit their widths (appendHead: one that does not pushes its neighbours,
// not the rest of the line).
const eventHeader = "%-12s %7s %7s %-16s %-10s %4s %-8s %s\n"

// eventHeaderWide is eventHeader with SetWide's columns: TIME, UID, PID,
// PPID, COMM, SYSCALL, FD, ERR, LAT(us), FLAGS, PATH / ARGS.
const eventHeaderWide = "%-12s %6s %7s %7s %-16s %-10s %4s %-8s %8s %-20s %s\n"

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
		if p.wide {
			fmt.Fprintf(p.w, eventHeaderWide, head, "UID", "PID", "PPID", "COMM", "SYSCALL", "FD", "ERR", "LAT(us)", "FLAGS", "PATH / ARGS")
		} else {
			fmt.Fprintf(p.w, eventHeader, head, "PID", "PPID", "COMM", "SYSCALL", "FD", "ERR", "PATH / ARGS")
		}
		p.header = true
	}
	t := &ev.Task
	comm := eventComm(t.Comm)
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
		if tid := e.CallerTid(t); tid != t.Pid && tid != 0 {
			// A thread's call: which one, as strace -f's [pid N].
			tag = "  tid " + strconv.FormatUint(uint64(tid), 10) + tag
		}
		// Quoted like argv in the reports: an empty argument or one
		// with a space must stay visible as one argument.
		args := make([]string, len(e.Argv))
		for i, a := range e.Argv {
			args[i] = quoteArg(a)
		}
		// The name as passed and, as for an open, the file it names
		// when that reads otherwise (a dirfd's directory, fexecve's file).
		line := quoteArg(e.Filename)
		if e.Status.Has(trace.StFnameUnreadable) {
			line = Escape(e.Filename)
		}
		if r := e.Resolved(); r != e.Filename && r != "" {
			line += " -> " + quoteArg(r)
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
		var over int
		p.buf, over = p.appendHead(p.buf[:0], e.ExitNs, t, comm, e.Syscall, []byte(ret), errs)
		if p.wide {
			p.buf = appendWide(p.buf, over, e.EnterNs, e.ExitNs, e.Status, execFlags(e))
		}
		p.buf = append(p.buf, line...)
		p.buf = append(p.buf, tag...)
		p.buf = append(p.buf, where...)
		p.w.Write(append(p.buf, '\n'))
	}
}

// appendOpenLine appends an open's line: eventHeader's columns, then the
// path as passed, what opensnoop shows, and the file the kernel opened
// beside it when that reads otherwise.
func (p *EventPrinter) appendOpenLine(b []byte, o *trace.OpenRecord, t *trace.Task, comm, tag string, dup int, where string) []byte {
	var num [24]byte
	errs := "0"
	var fd []byte
	if o.Ret < 0 {
		fd = append(num[:0], "-1"...)
		errs = ErrnoName(-o.Ret)
	} else {
		fd = strconv.AppendInt(num[:0], int64(o.Ret), 10)
	}
	b, over := p.appendHead(b, o.ExitNs, t, comm, o.Syscall, fd, errs)
	if p.wide {
		b = appendWide(b, over, o.EnterNs, o.ExitNs, o.Status, openFlagsColumn(o))
	}
	switch {
	case o.Status.Has(trace.StFnameUnreadable):
		b = append(b, "<unreadable>"...)
	case o.Fname == "":
		// An empty name, as exec lines show one: not nothing.
		b = append(b, `""`...)
	default:
		b = append(b, quoteArg(o.Fname)...)
	}
	if shown := openTried(o); shown != "" && shown != o.Fname {
		b = append(b, " -> "...)
		b = append(b, quoteArg(shown)...)
	}
	b = append(b, truncMark(o.Status)...)
	if t.Tid != t.Pid && t.Tid != 0 {
		// A thread's call: which one, as strace -f's [pid N].
		b = append(b, "  tid "...)
		b = strconv.AppendUint(b, uint64(t.Tid), 10)
	}
	if o.Ret >= 0 && dup > 1 {
		b = append(b, "  DUP "...)
		b = strconv.AppendInt(b, int64(dup), 10)
		b = append(b, 'x')
	}
	b = append(b, tag...)
	b = append(b, where...)
	return append(b, '\n')
}

// openTried is the file an open's or a lookup's line shows beside the
// name as passed: the file opened or, where the kernel kept the
// directory a name was tried in (StPathIsBase: a failed open's or any
// lookup's relative name, the dirfd's directory or the cwd), the name
// there, as an exec's line shows the file it tried (ExecRecord.Resolved);
// under openat2's RESOLVE_IN_ROOT, below it as below "/". "" when none
// is known: a failed absolute name, or a dirfd that named no file.
func openTried(o *trace.OpenRecord) string {
	switch {
	case o.Path == "":
		return ""
	case !o.Status.Has(trace.StPathIsBase):
		if o.Ret < 0 {
			return ""
		}
		return o.Path
	case o.Resolve&trace.ResolveInRoot != 0:
		return trace.JoinBase(o.Path, path.Clean("/"+o.Fname))
	case strings.HasPrefix(o.Fname, "/"):
		return ""
	}
	return trace.JoinBase(o.Path, o.Fname)
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

// appendHead appends a line's columns before PATH / ARGS, each followed
// by a space, as eventHeader (eventHeaderWide) lays them out, and the
// excess width the last of them could not take back (appendCol).
func (p *EventPrinter) appendHead(b []byte, exitNs uint64, t *trace.Task, comm string, sc trace.Syscall, fd []byte, errs string) ([]byte, int) {
	var num [24]byte
	w := p.appendWhen(num[:0], exitNs)
	b, over := appendCol(b, w, len(w), 12, true, 0)
	if p.wide {
		n := strconv.AppendUint(num[:0], uint64(t.UID), 10)
		b, over = appendCol(b, n, len(n), 6, false, over)
	}
	n := strconv.AppendUint(num[:0], uint64(t.Pid), 10)
	b, over = appendCol(b, n, len(n), 7, false, over)
	n = strconv.AppendUint(num[:0], uint64(t.PPid), 10)
	b, over = appendCol(b, n, len(n), 7, false, over)
	b, over = appendCol(b, comm, narrow.StringWidth(comm), commWidth, true, over)
	sys := sc.String()
	b, over = appendCol(b, sys, len(sys), 10, true, over)
	b, over = appendCol(b, fd, len(fd), 4, false, over)
	return appendCol(b, errs, len(errs), 8, true, over)
}

// commWidth is the COMM column's width: a comm's 15 bytes, and a space.
const commWidth = 16

// eventComm is a comm as the COMM column shows it: escaped and, when it
// is empty or holds a space, a quote or a '[', quoted as a path is
// (quoteArg: a thread named "my worker" must not read as two columns);
// cut with … (fit, between two escapes, inside the quotes) when it is
// wider than the column, as the live screen cuts it: a hostile name
// (PR_SET_NAME "ev\x1b[31mil\nx\x07", 19 columns escaped) must not
// push SYSCALL and the columns after it right on its lines. --format
// json has it whole.
func eventComm(c string) string {
	q := quoteArg(c)
	if narrow.StringWidth(q) <= commWidth || q[0] != '"' {
		return fit(q, commWidth)
	}
	return `"` + fit(q[1:len(q)-1], commWidth-2) + `"`
}

// appendWide appends SetWide's columns after ERR: LAT(us), the call's
// latency ("-" when no entry time was read), and FLAGS, taking back what
// the columns before them were too wide by (over, appendHead's).
func appendWide(b []byte, over int, enterNs, exitNs uint64, status trace.Status, flags string) []byte {
	var num [24]byte
	lat := append(num[:0], '-')
	if status&trace.StUntimed == 0 && exitNs >= enterNs {
		lat = strconv.AppendFloat(num[:0], float64(exitNs-enterNs)/1e3, 'f', 1, 64)
	}
	b, over = appendCol(b, lat, len(lat), 8, false, over)
	b, _ = appendCol(b, flags, len(flags), 20, true, over)
	return b
}

// openFlagsColumn is an open's or a lookup's FLAGS, as strace prints its
// arguments: an open's flags, and its mode when it may create
// ("O_WRONLY|O_CREAT|O_TRUNC,0644"); an access's mode ("R_OK|X_OK"),
// with faccessat2's flags after a comma; a stat's AT_* flags; "-" for a
// call that takes none (stat, lstat).
func openFlagsColumn(o *trace.OpenRecord) string {
	switch sc := o.Syscall; {
	case sc == trace.SysStat || sc == trace.SysLstat:
		return "-"
	case sc == trace.SysAccess || sc == trace.SysFaccessat || sc == trace.SysFaccessat2:
		s := AccessMode(o.Mode)
		if o.Flags != 0 {
			s += "," + AtFlags(o.Flags)
		}
		return s
	case sc.IsLookup():
		return AtFlags(o.Flags)
	case sc.IsMade():
		return "0" + strconv.FormatUint(o.Mode, 8)
	}
	s := OpenFlags(o.Flags)
	if o.Syscall == trace.SysCreat || o.Flags&unix.O_CREAT != 0 || o.Flags&unix.O_TMPFILE == unix.O_TMPFILE {
		s += ",0" + strconv.FormatUint(o.Mode, 8)
	}
	if o.Resolve != 0 {
		s += ",resolve=" + ResolveFlags(o.Resolve)
	}
	return s
}

// execFlags is an exec's FLAGS: execveat's AT_* flags, "-" for execve,
// which takes none.
func execFlags(e *trace.ExecRecord) string {
	if e.Syscall != trace.SysExecveat {
		return "-"
	}
	return AtFlags(uint64(e.AtFlags))
}

// appendCol appends s, n columns wide, padded with spaces to width (on
// the right if left, fmt's %-Ns, else on the left, %Ns), then a space. A
// column wider than its width (a long syscall or comm name, a big pid)
// adds its excess to over (returned), which the padding of the columns
// after it takes back where it can: its neighbours shift, the rest of
// the line stays in its columns, and one space always separates two.
func appendCol[S ~string | ~[]byte](b []byte, s S, n, width int, left bool, over int) ([]byte, int) {
	pad := width - n
	if pad < 0 {
		over -= pad
		pad = 0
	} else if over > 0 {
		take := min(pad, over)
		pad -= take
		over -= take
	}
	if left {
		b = append(b, s...)
	}
	for ; pad > 0; pad-- {
		b = append(b, ' ')
	}
	if !left {
		b = append(b, s...)
	}
	return append(b, ' '), over
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
