package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// WatchTable writes the live table of `once watch`: a header line with
// rates, loss and uptime, one row per process image that wasted
// something, and a totals line. It writes no terminal control sequences:
// the caller clears the screen when it draws on a terminal.
func WatchTable(w io.Writer, s *detect.Snapshot) error {
	bw := bufio.NewWriter(w)
	c := &s.Counters
	lost := fmt.Sprintf("lost %d (%s)", c.Lost(), groupList(c, trace.CounterLost))
	if c.StacksMapsLost > 0 {
		lost = fmt.Sprintf("lost %d events (%s), %s", c.Lost(), groupList(c, trace.CounterLost), mappingRecords(c))
	}
	fmt.Fprintf(bw, "once watch  %s  up %s  %.0f events/s  %s (%d evicted)  %s  sort: %s\n",
		s.Time.Format("15:04:05"), s.Uptime.Round(time.Second), s.EventsPerSec, plural(s.Processes, "process", "processes"), c.Evicted,
		lost, s.Sort)
	fmt.Fprintln(bw, rateLine(s))
	if n := notesLine(c); n != "" {
		fmt.Fprintf(bw, "notes: %s\n", n)
	}
	if c.Lost() > 0 {
		fmt.Fprintln(bw, lostLine(c))
	}
	if c.StacksMapsLost > 0 {
		fmt.Fprintln(bw, mapsLostLine(c))
	}
	if c.CompatImages > 0 {
		fmt.Fprintln(bw, compatWarning(c.CompatImages))
	}
	fmt.Fprintln(bw)
	if len(s.Rows) == 0 {
		fmt.Fprintln(bw, "  no findings yet: nothing wasted an open, lookup or exec")
	} else {
		// The screen's columns, rates included, at their full width.
		rows := make([]*detect.Row, len(s.Rows))
		for i := range s.Rows {
			rows[i] = &s.Rows[i]
		}
		hd, cells, num := tableCells(watchColumns(s, true), rows, rows, 0)
		// No terminal bounds the width: a name is cut, as the
		// findings table's SUBJECT is, at maxSubjectWidth, lest one
		// row failing 4 KB paths make its WORST 4,000 columns.
		cut := false
		for _, r := range cells {
			for i, c := range r {
				if k := cutMiddle(c, maxSubjectWidth); !num[i] && k != c {
					r[i], cut = k, true
				}
			}
		}
		for _, l := range fitTable(hd, cells, num, 0) {
			fmt.Fprintln(bw, "  "+strings.TrimRight(l, " "))
		}
		if cut {
			fmt.Fprintf(bw, "  a cell wider than %d columns is cut in the middle with …; --format json has it whole\n", maxSubjectWidth)
		}
	}
	tt := s.Totals
	fmt.Fprintf(bw, "\ntotal: %s, %s (%d failed), %s (%d failed), %s (%d failed), %s, %s (%s), %s, %s wasted, %s\n",
		plural(tt.Events, "event", "events"), plural(tt.Opens, "open", "opens"), tt.FailedOpens, plural(tt.Execs, "exec", "execs"), tt.FailedExecs,
		plural(tt.Lookups, "lookup", "lookups"), tt.FailedLookups, plural(tt.DuplicateOpens, "duplicate open", "duplicate opens"),
		plural(tt.ExecProbes, "failed exec probe", "failed exec probes"), Duration(tt.ExecProbeNs), plural(tt.OpenProbes, "failed open probe", "failed open probes"),
		plural(tt.LookupWaste, "lookup", "lookups"), plural(tt.Findings, "finding", "findings"))
	return bw.Flush()
}

// JSONLines writes `once watch --format json`: one JSON object per line,
// each with a "type": "open", "exec", "finding" or "summary". Strings from
// the traced system use the same byte-preserving encoding as JSON.
type JSONLines struct {
	w    io.Writer
	buf  []byte
	wall int64             // SetClock's offset
	src  trace.StackSource // SetStacks's
	// The last open line's flags_text and what it was made of: a loop's
	// lines repeat it.
	flagsSys  trace.Syscall
	flags     uint64
	flagsText string
	// A loop's lines repeat the one before but for the time, the call
	// and its result: the last line's task part and file part, each with
	// what it was made of, are copied when the next has the same.
	memo openLineMemo
}

// openLineMemo is what JSONLines keeps of its last open line.
type openLineMemo struct {
	task     trace.Task
	cont     trace.Container
	taskPart []byte // ,"pid" … "start_ns":N
	file     openLineFile
	filePart []byte // ,"fname" … "path_truncated":B
	// sec is the second the RFC 3339 prefix secPart ("2006-01-02T15:04:05")
	// was made for.
	sec     int64
	secPart []byte
}

// openLineFile is what an open line's file part is made of.
type openLineFile struct {
	fname, path string
	status      trace.Status
	dev, ino    uint64
	gen         uint32
	fileType    uint16
	dirfd       int32
	flags, mode uint64
	resolve     uint64
	sys         trace.Syscall // flags_text depends on it
}

// SetStacks has finding lines carry their calls' stacks (--stacks): each
// call and attempt its "stack", the line the "stacks" its call sites
// name.
func (j *JSONLines) SetStacks(src trace.StackSource) { j.src = src }

// SetClock gives event lines a "ts" of wall-clock time beside ts_ns:
// offset turns the kernel's CLOCK_MONOTONIC into ns since the Unix epoch.
func (j *JSONLines) SetClock(offset int64) { j.wall = offset }

func (j *JSONLines) ts(ns uint64) string {
	if j.wall == 0 {
		return ""
	}
	return time.Unix(0, j.wall+int64(ns)).UTC().Format(time.RFC3339Nano)
}

// NewJSONLines returns a writer of JSON lines to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

func (j *JSONLines) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	j.buf = append(append(j.buf[:0], b...), '\n')
	_, err = j.w.Write(j.buf)
	return err
}

type jsonEventHead struct {
	Type     string `json:"type"`
	TS       string `json:"ts"`
	TsNs     uint64 `json:"ts_ns"`
	Pid      uint32 `json:"pid"`
	Tid      uint32 `json:"tid"`
	PPid     uint32 `json:"ppid"`
	UID      uint32 `json:"uid"`
	Comm     jstr   `json:"comm"`
	CgroupID uint64 `json:"cgroup_id"`
	jsonContainer
	ExecID  uint64 `json:"exec_id"`
	StartNs uint64 `json:"start_ns"`
	Syscall string `json:"syscall"`
	Ret     int32  `json:"ret"`
	Errno   int32  `json:"errno"`
	Error   string `json:"error"`
	Ns      uint64 `json:"ns"`
}

type jsonOpenEvent struct {
	jsonEventHead
	Fname           jstr   `json:"fname"`
	Path            jstr   `json:"path"`
	PathIsBase      bool   `json:"path_is_base"`
	Dev             uint64 `json:"dev"`
	Ino             uint64 `json:"ino"`
	Generation      uint32 `json:"generation"`
	FileType        string `json:"file_type"`
	Dirfd           int32  `json:"dirfd"`
	Flags           uint64 `json:"flags"`
	FlagsText       string `json:"flags_text"`
	Mode            uint64 `json:"mode"`
	Resolve         uint64 `json:"resolve"` // openat2's RESOLVE_* flags, 0 for other calls
	FnameTruncated  bool   `json:"fname_truncated"`
	FnameUnreadable bool   `json:"fname_unreadable"`
	PathTruncated   bool   `json:"path_truncated"`
}

type jsonExecEvent struct {
	jsonEventHead
	Filename           jstr   `json:"filename"`
	Argv               []jstr `json:"argv"`
	Argc               uint32 `json:"argc"`
	ArgvTruncated      bool   `json:"argv_truncated"`
	FilenameTruncated  bool   `json:"filename_truncated"`
	FilenameUnreadable bool   `json:"filename_unreadable"`
	ArgvUnreadable     bool   `json:"argv_unreadable"`
	Dirfd              int32  `json:"dirfd"`
	AtFlags            uint32 `json:"at_flags"`
	// Path and PathIsBase as an open event's: where filename was looked up.
	Path       jstr `json:"path"`
	PathIsBase bool `json:"path_is_base"`
}

func (j *JSONLines) eventHead(typ string, ev *trace.Event, proc *trace.Process, sys trace.Syscall, ret int32, enter, exit uint64) jsonEventHead {
	t := &ev.Task
	h := jsonEventHead{Type: typ, TS: j.ts(exit), TsNs: exit, Pid: t.Pid, Tid: t.Tid, PPid: t.PPid, UID: t.UID, Comm: jstr(t.Comm),
		CgroupID: t.CgroupID, jsonContainer: containerOf(proc), ExecID: t.ExecID, StartNs: t.Start, Syscall: sys.String(), Ret: ret, Ns: exit - enter}
	if ret < 0 {
		h.Errno, h.Error = -ret, ErrnoName(-ret)
	}
	return h
}

// Event writes one open or exec event; other kinds are skipped.
func (j *JSONLines) Event(ev *trace.Event, proc *trace.Process) error {
	switch ev.Kind {
	case trace.EventOpen:
		// The hot path of --events: appended by hand, no reflection and
		// no allocation (encoding/json was most of the collector's time
		// per event). TestOpenLineMatchesStruct holds it to openEvent's
		// encoding/json form.
		j.buf = j.appendOpenLine(j.buf[:0], ev, proc)
		_, err := j.w.Write(j.buf)
		return err
	case trace.EventExec:
		e := &ev.Exec
		head := j.eventHead("exec", ev, proc, e.Syscall, e.Ret, e.EnterNs, e.ExitNs)
		head.Tid = e.CallerTid(&ev.Task)
		return j.write(jsonExecEvent{
			jsonEventHead: head,
			Filename:      jstr(e.Filename), Argv: jstrs(e.Argv), Argc: e.Argc,
			ArgvTruncated:      e.Status&trace.StArgvTruncated != 0,
			FilenameTruncated:  e.Status&trace.StFnameTruncated != 0,
			FilenameUnreadable: e.Status&trace.StFnameUnreadable != 0,
			ArgvUnreadable:     e.Status&trace.StArgvUnreadable != 0,
			Dirfd:              e.Dirfd, AtFlags: e.AtFlags,
			Path: jstr(e.Path), PathIsBase: e.Status&trace.StPathIsBase != 0,
		})
	}
	return nil
}

// openEvent is the encoding/json form of an open line: the reference
// appendOpenLine must match.
func (j *JSONLines) openEvent(ev *trace.Event, proc *trace.Process) jsonOpenEvent {
	o := &ev.Open
	return jsonOpenEvent{
		jsonEventHead: j.eventHead("open", ev, proc, o.Syscall, o.Ret, o.EnterNs, o.ExitNs),
		Fname:         jstr(o.Fname), Path: jstr(o.Path), PathIsBase: o.Status&trace.StPathIsBase != 0,
		Dev: o.Dev, Ino: o.Ino, Generation: o.Gen, FileType: trace.FileTypeName(o.FileType), Dirfd: o.Dirfd, Flags: o.Flags, FlagsText: CallFlags(o.Syscall, o.Flags), Mode: o.Mode,
		Resolve:         o.Resolve,
		FnameTruncated:  o.Status&trace.StFnameTruncated != 0,
		FnameUnreadable: o.Status&trace.StFnameUnreadable != 0,
		PathTruncated:   o.Status&trace.StPathTruncated != 0,
	}
}

func appendKey(b []byte, key string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendBool(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(appendKey(b, key), v)
}

// appendOpenLine appends an open event as one JSON line, with the fields
// of jsonOpenEvent in its order.
func (j *JSONLines) appendOpenLine(b []byte, ev *trace.Event, proc *trace.Process) []byte {
	t, o := &ev.Task, &ev.Open
	m := &j.memo
	b = append(b, `{"type":"open"`...)
	b = appendKey(b, "ts")
	if j.wall == 0 {
		b = append(b, '"', '"')
	} else {
		// RFC 3339 has nothing to escape.
		b = append(b, '"')
		b = j.appendRFC3339(b, j.wall+int64(o.ExitNs))
		b = append(b, '"')
	}
	b = strconv.AppendUint(appendKey(b, "ts_ns"), o.ExitNs, 10)
	var cont trace.Container
	if proc != nil && proc.Container != nil {
		cont = *proc.Container
	}
	if m.taskPart == nil || m.task != *t || m.cont != cont {
		m.task, m.cont = *t, cont
		m.taskPart = appendOpenTask(m.taskPart[:0], t, proc)
	}
	b = append(b, m.taskPart...)
	b = appendJSONString(appendKey(b, "syscall"), o.Syscall.String())
	b = strconv.AppendInt(appendKey(b, "ret"), int64(o.Ret), 10)
	var errno int32
	errName := ""
	if o.Ret < 0 {
		errno, errName = -o.Ret, ErrnoName(-o.Ret)
	}
	b = strconv.AppendInt(appendKey(b, "errno"), int64(errno), 10)
	b = appendJSONString(appendKey(b, "error"), errName)
	b = strconv.AppendUint(appendKey(b, "ns"), o.ExitNs-o.EnterNs, 10)
	f := openLineFile{fname: o.Fname, path: o.Path, status: o.Status & (trace.StPathIsBase | trace.StFnameTruncated | trace.StFnameUnreadable | trace.StPathTruncated),
		dev: o.Dev, ino: o.Ino, gen: o.Gen, fileType: o.FileType, dirfd: o.Dirfd, flags: o.Flags, mode: o.Mode, resolve: o.Resolve, sys: o.Syscall}
	if m.filePart == nil || m.file != f {
		m.file = f
		m.filePart = j.appendOpenFile(m.filePart[:0], o)
	}
	b = append(b, m.filePart...)
	return append(b, '}', '\n')
}

// appendOpenTask appends an open line's fields from pid to start_ns.
func appendOpenTask(b []byte, t *trace.Task, proc *trace.Process) []byte {
	b = strconv.AppendUint(appendKey(b, "pid"), uint64(t.Pid), 10)
	b = strconv.AppendUint(appendKey(b, "tid"), uint64(t.Tid), 10)
	b = strconv.AppendUint(appendKey(b, "ppid"), uint64(t.PPid), 10)
	b = strconv.AppendUint(appendKey(b, "uid"), uint64(t.UID), 10)
	b = appendJSONString(appendKey(b, "comm"), t.Comm)
	b = strconv.AppendUint(appendKey(b, "cgroup_id"), t.CgroupID, 10)
	b = appendContainer(b, proc)
	b = strconv.AppendUint(appendKey(b, "exec_id"), t.ExecID, 10)
	return strconv.AppendUint(appendKey(b, "start_ns"), t.Start, 10)
}

// appendOpenFile appends an open line's fields from fname to the end.
func (j *JSONLines) appendOpenFile(b []byte, o *trace.OpenRecord) []byte {
	b = appendJSONString(appendKey(b, "fname"), o.Fname)
	b = appendJSONString(appendKey(b, "path"), o.Path)
	b = appendBool(b, "path_is_base", o.Status&trace.StPathIsBase != 0)
	b = strconv.AppendUint(appendKey(b, "dev"), o.Dev, 10)
	b = strconv.AppendUint(appendKey(b, "ino"), o.Ino, 10)
	b = strconv.AppendUint(appendKey(b, "generation"), uint64(o.Gen), 10)
	b = appendJSONString(appendKey(b, "file_type"), trace.FileTypeName(o.FileType))
	b = strconv.AppendInt(appendKey(b, "dirfd"), int64(o.Dirfd), 10)
	b = strconv.AppendUint(appendKey(b, "flags"), o.Flags, 10)
	if j.flagsText == "" || j.flagsSys != o.Syscall || j.flags != o.Flags {
		j.flagsSys, j.flags, j.flagsText = o.Syscall, o.Flags, CallFlags(o.Syscall, o.Flags)
	}
	b = appendJSONString(appendKey(b, "flags_text"), j.flagsText)
	b = strconv.AppendUint(appendKey(b, "mode"), o.Mode, 10)
	b = strconv.AppendUint(appendKey(b, "resolve"), o.Resolve, 10)
	b = appendBool(b, "fname_truncated", o.Status&trace.StFnameTruncated != 0)
	b = appendBool(b, "fname_unreadable", o.Status&trace.StFnameUnreadable != 0)
	return appendBool(b, "path_truncated", o.Status&trace.StPathTruncated != 0)
}

// appendRFC3339 appends ns since the Unix epoch as time.RFC3339Nano in
// UTC would: the date and time formatted once per second, the fraction
// with its trailing zeros cut.
func (j *JSONLines) appendRFC3339(b []byte, ns int64) []byte {
	if ns < 0 {
		return time.Unix(0, ns).UTC().AppendFormat(b, time.RFC3339Nano)
	}
	m := &j.memo
	sec, frac := ns/1e9, ns%1e9
	if m.secPart == nil || m.sec != sec {
		m.sec = sec
		m.secPart = time.Unix(sec, 0).UTC().AppendFormat(m.secPart[:0], "2006-01-02T15:04:05")
	}
	b = append(b, m.secPart...)
	if frac != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i >= 1; i-- {
			d[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, 'Z')
}

// Finding writes one finding, in the shape of the run report's findings[]
// plus "type": "finding" and the time.
func (j *JSONLines) Finding(f *trace.Finding, now time.Time) error {
	b, err := marshalRaw(jsonFinding(f, j.src))
	if err != nil {
		return err
	}
	if j.src != nil {
		stacks := []jsonStackEntry{}
		for _, st := range findingStacks(f, j.src) {
			stacks = append(stacks, jsonStack(st))
		}
		sb, err := marshalRaw(struct {
			Stacks []jsonStackEntry `json:"stacks"`
		}{stacks})
		if err != nil {
			return err
		}
		b = append(append(b[:len(b)-1], ','), sb[1:]...)
	}
	// What the run report's process list says, here on the line itself.
	p := f.Proc
	if p == nil {
		p = &trace.Process{}
	}
	proc, err := marshalRaw(jsonFindingProc{UID: p.UID, CgroupID: p.CgroupID, jsonContainer: containerOf(p), Exe: jstr(p.Exe),
		Argv: jstrs(p.Argv), ArgvTruncated: p.ArgvTruncated})
	if err != nil {
		return err
	}
	// {"type":"finding","time":"...",<the finding's fields>,<its process's>}
	head := fmt.Sprintf(`{"type":"finding","time":%q,`, now.UTC().Format(time.RFC3339Nano))
	j.buf = append(append(j.buf[:0], head...), b[1:len(b)-1]...)
	j.buf = append(append(append(j.buf, ','), proc[1:]...), '\n')
	_, err = j.w.Write(j.buf)
	return err
}

// jsonFindingProc is what a finding line says of its process.
type jsonFindingProc struct {
	UID      uint32 `json:"uid"`
	CgroupID uint64 `json:"cgroup_id"`
	jsonContainer
	Exe           jstr   `json:"exe"`
	Argv          []jstr `json:"argv"`
	ArgvTruncated bool   `json:"argv_truncated"`
}

type jsonRow struct {
	Pid        uint32 `json:"pid"`
	PPid       uint32 `json:"ppid"`
	Comm       jstr   `json:"comm"`
	LastComm   jstr   `json:"last_comm"`
	Exe        jstr   `json:"exe"`
	ExecID     uint64 `json:"exec_id"`
	StartNs    uint64 `json:"start_ns"`
	DupFiles   int    `json:"duplicate_files"`
	ExtraOpens int    `json:"extra_opens"`
	ExecProbes int    `json:"failed_exec_probes"`
	OpenProbes int    `json:"failed_open_probes"`
	// Lookups: its avoidable lookups (trace.Finding.Avoidable of its
	// failed stat probes, duplicate stats and repeated misses).
	Lookups  int    `json:"lookups_wasted"`
	WastedNs uint64 `json:"wasted_ns"`
	Worst    jstr   `json:"worst"`
	Exited   bool   `json:"exited"`
	Execd    bool   `json:"execd"`
	// Processes: the images the row sums (1 under --group pid; else
	// pid, ppid, exe, exec_id and start_ns are its first's), Running:
	// how many of them run.
	Processes int `json:"processes"`
	Running   int `json:"running"`
}

// A summary line is jsonSummaryHead's fields, every counter of
// trace.Shown (and events_lost), then the top rows.
type jsonSummaryHead struct {
	Type           string  `json:"type"`
	Time           string  `json:"time"`
	UptimeNs       int64   `json:"uptime_ns"`
	EventsPerSec   float64 `json:"events_per_sec"`
	Events         uint64  `json:"events"`
	Opens          uint64  `json:"opens"`
	FailedOpens    uint64  `json:"failed_opens"`
	Execs          uint64  `json:"execs"`
	FailedExecs    uint64  `json:"failed_execs"`
	Lookups        uint64  `json:"lookups"`
	FailedLookups  uint64  `json:"failed_lookups"`
	DuplicateOpens uint64  `json:"duplicate_opens"`
	ExecProbes     uint64  `json:"failed_exec_probes"`
	ExecProbeNs    uint64  `json:"exec_probe_wasted_ns"`
	OpenProbes     uint64  `json:"failed_open_probes"`
	LookupsWasted  uint64  `json:"lookups_wasted"`
	Findings       uint64  `json:"findings"`
	Processes      int     `json:"processes"`
	Group          string  `json:"group"`
	LinesRepaired  int     `json:"lines_repaired"`
}

type jsonSummaryTail struct {
	Top []jsonRow `json:"top"`
}

// Summary writes one summary line: totals, every counter, and the top
// rows of the table.
func (j *JSONLines) Summary(s *detect.Snapshot) error {
	t := s.Totals
	head := jsonSummaryHead{
		Type: "summary", Time: s.Time.UTC().Format(time.RFC3339Nano), UptimeNs: int64(s.Uptime), EventsPerSec: s.EventsPerSec,
		Events: t.Events, Opens: t.Opens, FailedOpens: t.FailedOpens, Execs: t.Execs, FailedExecs: t.FailedExecs,
		Lookups: t.Lookups, FailedLookups: t.FailedLookups,
		DuplicateOpens: t.DuplicateOpens, ExecProbes: t.ExecProbes, ExecProbeNs: t.ExecProbeNs, OpenProbes: t.OpenProbes,
		LookupsWasted: t.LookupWaste, Findings: t.Findings, Processes: s.Processes, Group: string(cmp.Or(s.Group, detect.GroupPid)),
		LinesRepaired: s.LinesRepaired,
	}
	tail := jsonSummaryTail{Top: []jsonRow{}}
	for _, r := range s.Rows {
		tail.Top = append(tail.Top, jsonRow{Pid: r.Pid, PPid: r.PPid, Comm: jstr(r.Comm), LastComm: jstr(cmp.Or(r.LastComm, r.Comm)), Exe: jstr(r.Exe), ExecID: r.Key.ExecID,
			StartNs: r.Key.Start, DupFiles: r.DupFiles, ExtraOpens: r.ExtraOpens, ExecProbes: r.ExecProbes,
			OpenProbes: r.OpenProbes, Lookups: r.Lookups, WastedNs: r.WastedNs(), Worst: jstr(r.Worst), Exited: r.Exited, Execd: r.Replaced,
			Processes: max(r.Processes, 1), Running: r.Running})
	}
	b, err := spliceCounters(head, &s.Counters, tail)
	if err != nil {
		return err
	}
	j.buf = append(append(j.buf[:0], b...), '\n')
	_, err = j.w.Write(j.buf)
	return err
}

// jsonEndHead is an end line's fields before the counters.
type jsonEndHead struct {
	Type string `json:"type"`
	Time string `json:"time"`
}

// jsonEndTail is an end line's fields after the counters.
type jsonEndTail struct {
	// StillRunning is the report's still_running: process images alive
	// past --linger, whose later calls the lines do not hold, whether
	// or not events were lost.
	StillRunning int `json:"still_running"`
}

// End writes once run's last --events JSON line: every counter of the
// run (trace.Shown, then events_lost) and still_running (the process
// images alive when the trace ended), so that the stream, read without
// the report, says whether it holds every call, and a stream that lacks
// the line was cut short.
func (j *JSONLines) End(c *trace.Counters, stillRunning int, now time.Time) error {
	b, err := spliceCounters(jsonEndHead{Type: "end", Time: now.UTC().Format(time.RFC3339Nano)}, c, jsonEndTail{StillRunning: stillRunning})
	if err != nil {
		return err
	}
	j.buf = append(append(j.buf[:0], b...), '\n')
	_, err = j.w.Write(j.buf)
	return err
}

// trimRight is used by tests.
var _ = strings.TrimRight
