package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// What the live screen keeps of the findings for its rows' detail: the
// latest perRow of each row, under every grouping (g changes it), and
// at most keptFindings in all, the rows seen least recently giving way.
// A single ring of the latest findings lost a row's under a churn of
// others'.
const (
	perRow       = 8
	keptFindings = 8192
)

// WatchFindings keeps the latest findings of each row, for the detail of
// a row (Enter).
type WatchFindings struct {
	// Src gives the stacks the findings' call sites name (--stacks).
	Src trace.StackSource
	by  map[string]*rowFindings
	// order is the keys as they were added to, oldest first; an entry
	// whose seq is not its row's latest is stale (the row was added to
	// again since) and skipped.
	order []keySeq
	seq   uint64
	kept  int
}

type keySeq struct {
	key string
	seq uint64
}

type rowFindings struct {
	latest []*trace.Finding // oldest first
	total  int
	seq    uint64 // of its latest add
}

// Add keeps a copy of f (so that the batch f came in can go) as its
// row's latest under every grouping.
func (w *WatchFindings) Add(f *trace.Finding) {
	c := *f
	f = &c
	if w.by == nil {
		w.by = map[string]*rowFindings{}
	}
	for _, g := range groupCycle {
		key := findingKey(g, f)
		b := w.by[key]
		if b == nil {
			b = &rowFindings{}
			w.by[key] = b
		}
		w.seq++
		b.seq = w.seq
		w.order = append(w.order, keySeq{key, w.seq})
		b.total++
		b.latest = append(b.latest, f)
		w.kept++
		if len(b.latest) > perRow {
			b.latest = append(b.latest[:0], b.latest[1:]...)
			w.kept--
		}
	}
	// The rows added to least recently give way.
	for w.kept > keptFindings && len(w.order) > 0 {
		e := w.order[0]
		w.order = w.order[1:]
		if b := w.by[e.key]; b != nil && b.seq == e.seq {
			w.kept -= len(b.latest)
			delete(w.by, e.key)
		}
	}
	if len(w.order) > 8*keptFindings { // mostly stale: made anew
		live := make([]keySeq, 0, len(w.by))
		for _, e := range w.order {
			if b := w.by[e.key]; b != nil && b.seq == e.seq {
				live = append(live, e)
			}
		}
		w.order = live
	}
}

// of is the findings kept of the row key names, newest first, and how
// many it had.
func (w *WatchFindings) of(key string) ([]*trace.Finding, int) {
	if w == nil || w.by[key] == nil {
		return nil, 0
	}
	b := w.by[key]
	out := make([]*trace.Finding, 0, len(b.latest))
	for i := len(b.latest) - 1; i >= 0; i-- {
		out = append(out, b.latest[i])
	}
	return out, b.total
}

// detailLines is the detail screen of v.Detail's row: its title, then
// its lines from v.DetailOffset (kept within them).
func detailLines(s *detect.Snapshot, v *WatchView, fs *WatchFindings, width, height int) []string {
	all := DetailText(s, v.Detail, fs, width)
	body := all[1:]
	off := max(min(v.DetailOffset, len(body)-(height-1)), 0)
	return append(all[:1], body[off:]...)
}

// DetailText is the detail of the row key names, its first line a title,
// the others wrapped at width:
// what the snapshot says of the row, then the findings kept of it with
// their chains' attempts or their call sites.
func DetailText(s *detect.Snapshot, key string, fs *WatchFindings, width int) []string {
	var out []string
	for i, l := range detailText(s, key, fs) {
		if i == 0 {
			out = append(out, fit(l, width))
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		for j, w := range wrapWords(l, width-indent) {
			if j == 0 {
				w = strings.Repeat(" ", indent) + w
			} else {
				w = strings.Repeat(" ", indent+2) + strings.TrimLeft(w, " ")
			}
			out = append(out, fit(w, width))
		}
	}
	return out
}

func detailText(s *detect.Snapshot, key string, fs *WatchFindings) []string {
	var r *detect.Row
	for i := range s.Rows {
		if RowKey(s.Group, &s.Rows[i]) == key {
			r = &s.Rows[i]
		}
	}
	lines := []string{"detail  (Esc or Enter: back, ↑↓ PgUp PgDn: scroll, q: quit)"}
	if r == nil {
		return append(lines, "", "this row is no longer in the table (its processes ended and expired,", "or it left the rows kept)")
	}
	if grouped(s.Group) {
		lines = append(lines, "", fmt.Sprintf("%s %s: %s (%s); the first pid %d", s.Group, groupName(s.Group, r), plural(r.Processes, "process", "processes"),
			rowState(s, r), r.Pid))
	} else {
		lines = append(lines, "", fmt.Sprintf("%s, pid %d, ppid %d: %s", namesString(r.Comm, r.LastComm), r.Pid, r.PPid, rowState(s, r)))
	}
	if r.Exe != "" {
		lines = append(lines, "executable: "+quoteArg(r.Exe))
	}
	if r.Container != nil {
		lines = append(lines, "container: "+quoteArg(containerLabel(r.Container)))
	}
	waste := []string{Duration(r.WastedNs()) + " wasted in all"}
	if r.ExtraOpens > 0 {
		// A group's row sums its processes' files opened again: a file
		// three of them open again is three.
		files := plural(r.DupFiles, "file", "files")
		if r.Processes > 1 {
			files += " counted per process"
		}
		waste = append(waste, fmt.Sprintf("%s of %s (%s)", plural(r.ExtraOpens, "extra open", "extra opens"), files, Duration(r.DupNs)))
	}
	if r.ExecProbes > 0 {
		waste = append(waste, fmt.Sprintf("%s in %s (%s)", plural(r.ExecProbes, "failed exec probe", "failed exec probes"), plural(r.Launches, "launch", "launches"), Duration(r.ExecNs)))
	}
	if r.OpenProbes > 0 {
		waste = append(waste, fmt.Sprintf("%s (%s)", plural(r.OpenProbes, "failed open probe", "failed open probes"), Duration(r.OpenNs)))
	}
	if r.Lookups > 0 {
		waste = append(waste, fmt.Sprintf("%s (%s)", plural(r.Lookups, "avoidable lookup", "avoidable lookups"), Duration(r.LookupNs)))
	}
	lines = append(lines,
		fmt.Sprintf("calls: %s, %s, %s", plural(r.Opens, "open", "opens"), plural(r.Execs, "exec", "execs"), plural(r.LookupCalls, "lookup", "lookups")),
		"waste: "+strings.Join(waste, "; "),
		fmt.Sprintf("now: %s opens/s, %s lookups/s, %s/s wasted", rate(r.Delta.Opens, s.Interval), rate(r.Delta.Lookups, s.Interval),
			rateDuration(r.Delta.WastedNs, s.Interval)),
		"worst: "+Escape(r.Worst), "")
	found, total := fs.of(key)
	if len(found) == 0 {
		return append(lines, "no finding of this row is complete yet: a process's duplicate opens are",
			"complete when it ends, a search when it finds its file or gives up.")
	}
	if total > len(found) {
		lines = append(lines, fmt.Sprintf("findings: the latest %d of %d, newest first:", len(found), total))
	} else {
		lines = append(lines, fmt.Sprintf("findings: %d, newest first:", total))
	}
	var src trace.StackSource
	if fs != nil {
		src = fs.Src
	}
	for _, f := range found {
		lines = append(lines, findingDetail(f, src)...)
	}
	return lines
}

// findingDetail is a finding's lines on the detail screen.
func findingDetail(f *trace.Finding, src trace.StackSource) []string {
	ki := f.Info()
	var lines []string
	switch ki.Shape {
	case trace.ShapeChain:
		found := "none found"
		if f.Found != nil {
			found = "found " + quoteArg(*f.Found)
		}
		lines = append(lines, fmt.Sprintf("  %s  %s: %d failed, %s, %s wasted  (pid %d)", f.Kind, quoteArg(f.Target), f.Failed, found,
			Duration(f.WastedNs), f.Pid))
		for _, a := range f.Attempts {
			lines = append(lines, "      "+quoteArg(a.Path)+"  "+attemptResult(a.Errno)+"  "+Duration(a.Ns))
		}
		if f.AttemptsOmitted > 0 {
			lines = append(lines, "      "+omittedAttempts(f.AttemptsOmitted))
		}
	default:
		lines = append(lines, fmt.Sprintf("  %s  %s: %d %s, %s wasted  (pid %d)", f.Kind, quoteArg(f.Path), f.Count, ki.Amount,
			Duration(f.WastedNs), f.Pid))
	}
	if len(f.CallSites) > 0 {
		lines = append(lines, "    "+sitesHeadingIn(f, src)+":")
		for _, c := range f.CallSites {
			lines = append(lines, "      "+strconv.Itoa(c.Count)+"× "+siteLine(src, c.Stack))
		}
	}
	return lines
}

// WatchUI is the live screen's state: the latest snapshot, the view the
// keys make of it, and the findings its details show. Its methods are
// what the terminal plumbing calls: Snapshot at a tick, Input with the
// bytes read, Frame to draw.
type WatchUI struct {
	View     WatchView
	Findings WatchFindings
	snap     *detect.Snapshot
	dec      KeyDecoder
	// The size the last frame was drawn at: a key's page.
	width, height int
}

// Snapshot makes s the one shown. The selected row stays selected where
// the new order puts it, as top and htop keep theirs: a tick re-sorts
// the table under the cursor.
func (u *WatchUI) Snapshot(s *detect.Snapshot) {
	w, h := max(u.width, 20), max(u.height, 6)
	selected := ""
	if u.snap != nil && u.snap.Group == s.Group {
		if l := layout(u.snap, &u.View, w, h); u.View.Cursor >= 0 && u.View.Cursor < len(l.keys) {
			selected = l.keys[u.View.Cursor]
		}
	}
	u.snap = s
	if selected == "" {
		return
	}
	l := layout(s, &u.View, w, h)
	for i, k := range l.keys {
		if k == selected {
			// The row keeps its line on the screen when it can.
			u.View.Offset += i - u.View.Cursor
			u.View.Cursor = i
			u.View = u.View.Clamp(len(l.keys), l.page)
			return
		}
	}
}

// Input applies the keys in b (nil at a poll with none: a lone Esc is
// known by the pause after it) and reports whether the screen changed.
func (u *WatchUI) Input(b []byte) bool {
	keys := u.dec.Feed(b)
	if len(keys) == 0 || u.snap == nil {
		return false
	}
	for _, k := range keys {
		l := layout(u.snap, &u.View, max(u.width, 20), max(u.height, 6))
		room := ViewRoom{Keys: l.keys, Page: l.page}
		if u.View.Detail != "" {
			room.DetailLines = len(DetailText(u.snap, u.View.Detail, &u.Findings, max(u.width, 20))) - 1
			room.Page = max(u.height, 6) - 1
		}
		u.View = u.View.Key(k, room)
	}
	return true
}

// Frame draws the screen at width × height.
func (u *WatchUI) Frame(width, height int) Frame {
	u.width, u.height = width, height
	if u.snap == nil {
		return Frame{Lines: []string{"once watch: starting"}, Cursor: -1}
	}
	return WatchFrame(u.snap, &u.View, &u.Findings, width, height)
}

// WatchSummary writes the table of s at the end of a live screen, on the
// terminal's own screen: fitted to width (a line never wraps), with the
// screen's column names, and without the rates (a summary's last
// interval says nothing of the watch).
func WatchSummary(w io.Writer, s *detect.Snapshot, width int) error {
	width = max(width, 20)
	var b strings.Builder
	group := s.Group
	if group == "" {
		group = detect.GroupPid
	}
	lost := plural(s.Counters.Lost(), "event lost", "events lost")
	if s.Counters.StacksMapsLost > 0 {
		lost = plural(s.Counters.Lost(), "event", "events") + " and " + mappingRecords(&s.Counters) + " lost"
	}
	head := []string{fmt.Sprintf("once watch: %s, %s held, %s; rows by %s, sorted by %s",
		s.Uptime.Round(time.Second), plural(s.Processes, "process", "processes"), lost, group, s.Sort)}
	if n := notesLine(&s.Counters); n != "" {
		head = append(head, "notes: "+n)
	}
	for _, h := range head {
		for _, l := range wrapWords(h, width) {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n")
	if len(s.Rows) == 0 {
		b.WriteString("no findings: nothing wasted an open, lookup or exec\n")
	} else {
		rows := make([]*detect.Row, len(s.Rows))
		for i := range s.Rows {
			rows[i] = &s.Rows[i]
		}
		head, cells, num := tableCells(watchColumns(s, false), rows, rows, width)
		for _, l := range fitTable(head, cells, num, width) {
			b.WriteString(l + "\n")
		}
		if s.RowsAll > len(s.Rows) {
			b.WriteString(fit(fmt.Sprintf("… %d more rows past --top %d", s.RowsAll-len(s.Rows), len(s.Rows)), width) + "\n")
		}
	}
	b.WriteString("\n")
	for _, l := range wrapWords(totalLine(s), width) {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapWords breaks s at spaces into lines of at most width columns (a
// word longer than that cut with …).
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case narrow.StringWidth(line)+1+narrow.StringWidth(w) <= width:
			line += " " + w
		default:
			lines = append(lines, fit(line, width))
			line = "  " + w
		}
	}
	return append(lines, fit(line, width))
}
