package report

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// The live table, fitted to a terminal: what `once watch` draws, like top,
// in an alternate screen. Every line fits the width (cut with …, columns
// of least use left out first, then the widest text column shrinking),
// the rows fill the height and scroll. Every string from the traced
// system goes through Escape: names are hostile input.

// narrow measures as a terminal in a non-East-Asian locale does: µ, …
// and box characters are one column.
var narrow = &runewidth.Condition{EastAsianWidth: false}

// watchCol is one column of the table.
type watchCol struct {
	head string
	num  bool // a number: aligned right, never cut
	// drop orders the columns left out when the width runs out: the
	// highest first; 0 is never left out.
	drop int
	// least is a text column's least width before columns are left
	// out (8 when 0).
	least int
	cell  func(r *detect.Row) string
}

// grouped reports whether the rows of s stand for groups of processes.
func grouped(g detect.Group) bool {
	return g == detect.GroupExe || g == detect.GroupComm || g == detect.GroupContainer
}

// watchColumns are the columns of s's table; rates adds the per-second
// ones (a live table; the summary at the end has none).
func watchColumns(s *detect.Snapshot, rates bool) []watchCol {
	num := func(f func(r *detect.Row) int) func(r *detect.Row) string {
		return func(r *detect.Row) string { return strconv.Itoa(f(r)) }
	}
	var cols []watchCol
	if grouped(s.Group) {
		cols = append(cols,
			watchCol{head: strings.ToUpper(string(s.Group)), drop: 0, cell: func(r *detect.Row) string { return groupName(s.Group, r) }},
			watchCol{head: "PROCS", num: true, drop: 2, cell: num(func(r *detect.Row) int { return r.Processes })})
	} else {
		cols = append(cols,
			watchCol{head: "PID", num: true, drop: 0, cell: num(func(r *detect.Row) int { return int(r.Pid) })},
			watchCol{head: "PPID", num: true, drop: 11, cell: num(func(r *detect.Row) int { return int(r.PPid) })},
			watchCol{head: "COMM", drop: 0, cell: func(r *detect.Row) string { return commString(r.Comm) }})
		for i := range s.Rows {
			if s.Rows[i].Container != nil {
				cols = append(cols, watchCol{head: "CONTAINER", drop: 8, cell: func(r *detect.Row) string {
					if r.Container == nil {
						return "-"
					}
					return quoteArg(containerLabel(r.Container))
				}})
				break
			}
		}
	}
	cols = append(cols,
		watchCol{head: "DUPS", num: true, drop: 9, cell: num(func(r *detect.Row) int { return r.DupFiles })},
		watchCol{head: "EXTRA", num: true, drop: 4, cell: num(func(r *detect.Row) int { return r.ExtraOpens })},
		watchCol{head: "EXECFAIL", num: true, drop: 5, cell: num(func(r *detect.Row) int { return r.ExecProbes })},
		watchCol{head: "OPENFAIL", num: true, drop: 6, cell: num(func(r *detect.Row) int { return r.OpenProbes })},
		watchCol{head: "LOOKWASTE", num: true, drop: 6, cell: num(func(r *detect.Row) int { return r.Lookups })},
		watchCol{head: "WASTED", num: true, drop: 0, cell: func(r *detect.Row) string { return Duration(r.WastedNs()) }})
	if rates {
		cols = append(cols,
			watchCol{head: "WASTED/S", num: true, drop: 1, cell: func(r *detect.Row) string { return rateDuration(r.Delta.WastedNs, s.Interval) }},
			watchCol{head: "OPENS/S", num: true, drop: 7, cell: func(r *detect.Row) string { return rate(r.Delta.Opens, s.Interval) }},
			watchCol{head: "LOOKUPS/S", num: true, drop: 10, cell: func(r *detect.Row) string { return rate(r.Delta.Lookups, s.Interval) }})
	}
	cols = append(cols,
		watchCol{head: "WORST", drop: 3, least: 12, cell: func(r *detect.Row) string { return Escape(r.Worst) }},
		watchCol{head: "STATE", drop: 0, least: 9, cell: func(r *detect.Row) string { return rowState(s, r) }})
	return cols
}

// groupName is a group row's name: its comm, executable ("[comm]" when
// unknown) or container.
func groupName(g detect.Group, r *detect.Row) string {
	switch g {
	case detect.GroupExe:
		if r.Exe != "" {
			return quoteArg(r.Exe)
		}
		// No exec seen (it ran before the watch): its comm in
		// brackets, as the engine keys the row and as ps shows a
		// process without a command line, never a bare name that
		// reads as an executable's path.
		return "[" + commString(r.Comm) + "]"
	case detect.GroupContainer:
		if r.Container != nil {
			return quoteArg(containerLabel(r.Container))
		}
		return "[host]"
	}
	return commString(r.Comm)
}

// rowState says whether the row's processes run, and since when the
// ended ones ended.
func rowState(s *detect.Snapshot, r *detect.Row) string {
	ago := ""
	if !r.LastSeen.IsZero() && !s.Time.IsZero() && r.Exited {
		ago = " " + s.Time.Sub(r.LastSeen).Round(time.Second).String() + " ago"
	}
	switch {
	case grouped(s.Group):
		if r.Running == 0 {
			return "ended" + ago
		}
		st := fmt.Sprintf("%d running", r.Running)
		if r.Processes > r.Running {
			st += fmt.Sprintf(", %d ended", r.Processes-r.Running)
		}
		return st
	case r.Replaced:
		return "exec'd" + ago
	case r.ExitUnseen: // gone from /proc, its exit event not seen: no code
		return "ended" + ago
	case r.Exited:
		return fmt.Sprintf("exited %d", r.ExitCode) + ago
	}
	return "running"
}

// rate is n per second over d, "-" before a first interval.
func rate(n uint64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	v := float64(n) / d.Seconds()
	if v > 0 && v < 10 && v != float64(int(v)) {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// rateDuration is ns of time per second over d: "340µs" wasted each
// second.
func rateDuration(ns uint64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	if ns == 0 {
		return "0"
	}
	return Duration(uint64(float64(ns) / d.Seconds()))
}

// faded reports whether r's processes all ended over FadeAfter before
// the snapshot: a row the live table leaves out.
func faded(s *detect.Snapshot, r *detect.Row) bool {
	return r.Exited && !r.LastSeen.IsZero() && s.Time.Sub(r.LastSeen) > FadeAfter
}

// RowKey names a row across snapshots: its process image, or its group.
func RowKey(g detect.Group, r *detect.Row) string {
	switch g {
	case detect.GroupComm:
		return "comm:" + r.Comm
	case detect.GroupExe:
		if r.Exe == "" {
			return "exe:[" + r.Comm + "]"
		}
		return "exe:" + r.Exe
	case detect.GroupContainer:
		return "container:" + containerKey(r.Container)
	}
	return fmt.Sprintf("pid:%d:%d:%d", r.Key.Pid, r.Key.Start, r.Key.ExecID)
}

// findingKey is RowKey of the row a finding belongs to.
func findingKey(g detect.Group, f *trace.Finding) string {
	p := f.Proc
	if p == nil {
		p = &trace.Process{}
	}
	r := detect.Row{Key: f.Key, Comm: f.Comm, Exe: p.Exe, Container: p.Container}
	return RowKey(g, &r)
}

func containerKey(c *trace.Container) string {
	if c == nil {
		return ""
	}
	return c.Runtime + "/" + c.ID + "/" + c.Namespace + "/" + c.Pod
}

// matches reports whether a row holds the filter's text: in its name
// (or the one its process renamed itself to, as top shows it), pid, executable, container or worst waste, escaped as shown,
// case-insensitive.
func matches(g detect.Group, r *detect.Row, filter string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	for _, s := range []string{commString(r.Comm), commString(r.LastComm), Escape(r.Exe), Escape(r.Worst), strconv.Itoa(int(r.Pid)),
		containerLabel(r.Container), groupName(g, r)} {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

// watchLayout is what a screen shows of a snapshot with a view: the rows
// left after the filter and the fade, and how many fit.
type watchLayout struct {
	head    []string // the lines above the table
	rows    []*detect.Row
	keys    []string // RowKey of each of rows
	hidden  int      // rows left out by the fade
	page    int      // rows that fit under the table's header
	filterN int      // rows the filter left out
}

func layout(s *detect.Snapshot, v *WatchView, width, height int) *watchLayout {
	l := &watchLayout{head: screenHead(s, v, width)}
	for i := range s.Rows {
		r := &s.Rows[i]
		switch {
		case !v.AllEnded && faded(s, r):
			l.hidden++
		case !matches(s.Group, r, v.Filter):
			l.filterN++
		default:
			l.rows = append(l.rows, r)
			l.keys = append(l.keys, RowKey(s.Group, r))
		}
	}
	// Under the head: a blank, the table's header, the rows, a status
	// line, the totals and the keys.
	l.page = max(height-len(l.head)-5, 1)
	return l
}

// screenHead is the lines above the table: who, when, how fast, and the
// warnings.
func screenHead(s *detect.Snapshot, v *WatchView, width int) []string {
	c := &s.Counters
	lost := fmt.Sprintf("lost %d", c.Lost())
	if c.StacksMapsLost > 0 {
		lost += " events"
	}
	if c.Lost() > 0 {
		var kinds []string
		for _, sp := range trace.Group(trace.CounterLost) {
			if v := sp.Value(c); v > 0 {
				kinds = append(kinds, sp.Label+" "+strconv.FormatUint(v, 10))
			}
		}
		lost += " (" + strings.Join(kinds, ", ") + ")"
	}
	if c.StacksMapsLost > 0 {
		lost += ", " + mappingRecords(c)
	}
	group := s.Group
	if group == "" {
		group = detect.GroupPid
	}
	head := strings.Join([]string{"once watch", s.Time.Format("15:04:05"), "up " + s.Uptime.Round(time.Second).String(),
		fmt.Sprintf("%.0f ev/s", s.EventsPerSec), fmt.Sprintf("%d procs", s.Processes),
		"sort " + string(s.Sort), "group " + string(group), lost}, "  ")
	lines := []string{fit(head, width), fit(rateLine(s), width)}
	if n := notesLine(c); n != "" {
		lines = append(lines, fit("notes: "+n, width))
	}
	if c.Lost() > 0 {
		lines = append(lines, fit(lostLine(c), width))
	}
	if c.StacksMapsLost > 0 {
		lines = append(lines, fit(mapsLostLine(c), width))
	}
	if c.CompatImages > 0 {
		lines = append(lines, fit(compatWarning(c.CompatImages), width))
	}
	return lines
}

// rateLine is the whole watch's rates over the last interval.
func rateLine(s *detect.Snapshot) string {
	if s.Interval <= 0 {
		return "now: rates from the next refresh"
	}
	return fmt.Sprintf("now: %s opens/s, %s lookups/s, %s/s wasted (the last %s)", rate(s.Delta.Opens, s.Interval),
		rate(s.Delta.Lookups, s.Interval), rateDuration(s.Delta.WastedNs, s.Interval), s.Interval.Round(time.Millisecond))
}

// totalLine is the totals since the start.
func totalLine(s *detect.Snapshot) string {
	tt := s.Totals
	return fmt.Sprintf("total: %s (%d failed), %s (%d failed), %s (%d failed), %s, %s (%s), %s, %s wasted, %s",
		plural(tt.Opens, "open", "opens"), tt.FailedOpens, plural(tt.Execs, "exec", "execs"), tt.FailedExecs,
		plural(tt.Lookups, "lookup", "lookups"), tt.FailedLookups, plural(tt.DuplicateOpens, "dup open", "dup opens"),
		plural(tt.ExecProbes, "exec probe", "exec probes"), Duration(tt.ExecProbeNs), plural(tt.OpenProbes, "open probe", "open probes"),
		plural(tt.LookupWaste, "lookup", "lookups"), plural(tt.Findings, "finding", "findings"))
}

// Frame is one drawing of the live screen: lines without control
// characters, each within the width, at most the height of them.
type Frame struct {
	Lines []string
	// Dim marks the lines of rows whose processes have ended (drawn
	// dim); Cursor is the line of the selected row, -1 for none (drawn
	// in reverse).
	Dim    []bool
	Cursor int
}

// KeysLine is the last line of the main screen.
const KeysLine = "keys: ? help  / filter  Enter detail  ↑↓ PgUp PgDn scroll  d e l t sort  g group  a ended  q quit"

// WatchScreen renders s as the lines of a width × height screen (no
// newlines, no control sequences), the last one keys: the main screen
// of a view of s as it is.
func WatchScreen(s *detect.Snapshot, width, height int, keys string) []string {
	v := WatchView{Sort: s.Sort, Group: s.Group, Cursor: -1}
	f := watchMain(s, &v, width, height, keys)
	return f.Lines
}

// WatchFrame draws s as v shows it: help, a row's detail, or the table.
func WatchFrame(s *detect.Snapshot, v *WatchView, fs *WatchFindings, width, height int) Frame {
	// Laid out at 20 × 6 at least, then cut to the terminal: a line
	// past its width would wrap, one past its height scroll the screen.
	tw, th := max(width, 1), max(height, 1)
	width, height = max(width, 20), max(height, 6)
	var f Frame
	switch {
	case v.Help:
		f = Frame{Lines: helpLines(width, height)}
	case v.Detail != "":
		f = Frame{Lines: detailLines(s, v, fs, width, height)}
	default:
		f = watchMain(s, v, width, height, "")
		return clipFrame(f, tw, th)
	}
	f.Cursor = -1
	if len(f.Lines) > height {
		f.Lines = f.Lines[:height]
	}
	return clipFrame(f, tw, th)
}

// clipFrame cuts f to a width × height terminal.
func clipFrame(f Frame, width, height int) Frame {
	if len(f.Lines) > height {
		f.Lines = f.Lines[:height]
	}
	if len(f.Dim) > len(f.Lines) {
		f.Dim = f.Dim[:len(f.Lines)]
	}
	if f.Cursor >= len(f.Lines) {
		f.Cursor = -1
	}
	for i, l := range f.Lines {
		f.Lines[i] = fit(l, width)
	}
	return f
}

// watchMain is the main screen: the head, the table from v's offset, a
// status line, the totals and the keys (keys, when not empty, in place
// of the keys line).
func watchMain(s *detect.Snapshot, v *WatchView, width, height int, keys string) Frame {
	width, height = max(width, 20), max(height, 6)
	l := layout(s, v, width, height)
	lines := append([]string{}, l.head...)
	lines = append(lines, "")
	dim := make([]bool, height)
	cursor := -1
	cols := watchColumns(s, true)
	if len(l.rows) == 0 {
		switch {
		case len(s.Rows) == 0:
			lines = append(lines, fit("no findings yet: nothing wasted an open, lookup or exec", width))
		case v.Filter != "":
			lines = append(lines, fit(fmt.Sprintf("no row matches %q", Escape(v.Filter)), width))
		default:
			lines = append(lines, fit("every row's processes ended over "+FadeAfter.String()+" ago (a shows them)", width))
		}
	} else {
		vv := v.Clamp(len(l.rows), l.page)
		if v.Cursor < 0 {
			vv.Cursor = -1
		}
		shown := l.rows[vv.Offset:min(len(l.rows), vv.Offset+l.page)]
		head, cells, num := tableCells(cols, shown, l.rows, width)
		table := fitTable(head, cells, num, width)
		for i, r := range shown {
			at := len(lines) + 1 + i
			if at < height {
				dim[at] = r.Exited
				if vv.Offset+i == vv.Cursor {
					cursor = at
				}
			}
		}
		lines = append(lines, table...)
	}
	if keys == "" {
		keys = editLine(v)
	}
	lines = append(lines, fit(statusLine(s, v, l), width), fit(totalLine(s), width), fit(keys, width))
	if len(lines) > height {
		lines = lines[:height]
	}
	return Frame{Lines: lines, Dim: dim[:len(lines)], Cursor: cursor}
}

// tableCells makes the cells of the rows shown, with the columns that fit
// the width: those of least use left out first, the widths measured over
// every row (all) so that scrolling does not move the columns.
func tableCells(cols []watchCol, shown, all []*detect.Row, width int) ([]string, [][]string, []bool) {
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = narrow.StringWidth(c.head)
		for _, r := range all {
			widths[i] = max(widths[i], narrow.StringWidth(c.cell(r)))
		}
	}
	keep := fitColumns(cols, widths, width)
	var head []string
	var num []bool
	for _, i := range keep {
		head, num = append(head, cols[i].head), append(num, cols[i].num)
	}
	cells := make([][]string, len(shown))
	for j, r := range shown {
		for _, i := range keep {
			cells[j] = append(cells[j], cols[i].cell(r))
		}
	}
	return head, cells, num
}

// fitColumns is the indexes of the columns kept within width (0: all):
// while the numbers at their width and the text at its least (its
// least, or its own width) don't fit, the column with the highest drop
// goes.
func fitColumns(cols []watchCol, widths []int, width int) []int {
	keep := make([]int, len(cols))
	for i := range cols {
		keep[i] = i
	}
	for width > 0 {
		need := 2 * (len(keep) - 1)
		worst := -1
		for j, i := range keep {
			w := widths[i]
			if !cols[i].num {
				w = min(w, cmp.Or(cols[i].least, 8))
			}
			need += w
			if cols[i].drop > 0 && (worst < 0 || cols[i].drop > cols[keep[worst]].drop) {
				worst = j
			}
		}
		if need <= width || worst < 0 {
			break
		}
		keep = append(keep[:worst], keep[worst+1:]...)
	}
	return keep
}

// statusLine says which rows are on the screen, and why others are not.
func statusLine(s *detect.Snapshot, v *WatchView, l *watchLayout) string {
	var parts []string
	if n := len(l.rows); n > 0 {
		vv := v.Clamp(n, l.page)
		parts = append(parts, fmt.Sprintf("rows %d-%d of %d", vv.Offset+1, min(n, vv.Offset+l.page), n))
	}
	if v.Filter != "" {
		parts = append(parts, fmt.Sprintf("filter %q hides %d (Esc clears)", Escape(v.Filter), l.filterN))
	}
	if l.hidden > 0 {
		parts = append(parts, fmt.Sprintf("%d ended over %s ago hidden (a shows)", l.hidden, FadeAfter))
	} else if v.AllEnded {
		parts = append(parts, "ended rows shown (a hides)")
	}
	if s.RowsAll > len(s.Rows) {
		parts = append(parts, fmt.Sprintf("%d more past --top %d", s.RowsAll-len(s.Rows), len(s.Rows)))
	}
	return strings.Join(parts, " · ")
}

// editLine is the keys line, or the filter being typed.
func editLine(v *WatchView) string {
	if v.Editing {
		return "filter: " + Escape(v.Edit) + "_   (Enter applies, Esc clears)"
	}
	return KeysLine
}

// helpText is the help screen (?).
var helpText = []string{
	"once watch: help  (? or Esc to go back, q quits)",
	"",
	"  ↑ ↓  j k        select a row            Enter      the selected row's detail",
	"  PgUp PgDn       a page up or down       Home End   the first or the last row",
	"  /               filter: type, Enter applies, Esc clears (name, pid, exe, worst)",
	"  d  e  l  t      sort by extra opens, exec probes, lookups wasted, time wasted",
	"  g               group rows by comm, exe, pid, container in turn",
	"  a               show or hide the rows that ended long ago",
	"  q  Ctrl-C       quit; the summary is printed on the shell's screen",
	"  Ctrl-Z          stop once as a job of the shell; fg resumes it and redraws",
	"",
	"Columns: DUPS files opened more than once, EXTRA opens beyond each file's",
	"first, EXECFAIL failed exec attempts of PATH searches, OPENFAIL failed opens",
	"of searches, LOOKWASTE lookups that could have been left out, WASTED their",
	"time since the row appeared; WASTED/S, OPENS/S and LOOKUPS/S the last",
	"interval's, per second. Totals count from the start.",
	"A narrow terminal leaves out PPID, LOOKUPS/S, DUPS, OPENS/S, OPENFAIL first.",
	"",
	"Ended processes: a row whose processes have all ended is dimmed and says",
	"when it ended; " + FadeAfter.String() + " after, it leaves the table (a brings it back). Their",
	"counts stay in the totals; the rows themselves go 30s after the end.",
	"",
	"Grouping: by comm by default, so fifty short-lived `cat`s make one row",
	"that ranks by what they wasted together; --group pid shows each process.",
}

func helpLines(width, height int) []string {
	var out []string
	for _, l := range helpText {
		out = append(out, fit(l, width))
	}
	return out[:min(len(out), height)]
}

// Width is how many columns s takes on a terminal.
func Width(s string) int { return narrow.StringWidth(s) }

// fit cuts s to width display columns, ending it with … when cut. The
// cut falls between two escapes of Escape's (or %q's), never inside one:
// `ev\x1b[31m` cut inside its `\x1b` would leave a lone backslash that
// reads as a literal one, or a "x1" that reads as text.
func fit(s string, width int) string {
	if narrow.StringWidth(s) <= width {
		return s
	}
	if width < 1 {
		return narrow.Truncate(s, width, "…")
	}
	head := narrow.Truncate(s, width-1, "")
	return head[:escFloor(s, len(head))] + "…"
}

// escUnit is how many bytes the unit of escaped text s starts with
// takes: a whole backslash escape as Escape, quoteEscaped or %q write it
// (`\\`, `\n`, `\"`, `\xNN`, `\u{XXXX}`, `\uXXXX`, `\UXXXXXXXX`), else
// one rune. Escape writes every backslash of its input as `\\`, so read
// from the start every backslash begins an escape.
func escUnit(s string) int {
	if s == "" {
		return 0
	}
	if s[0] != '\\' || len(s) < 2 {
		_, n := utf8.DecodeRuneInString(s)
		return n
	}
	switch s[1] {
	case 'x':
		return min(len(s), 4)
	case 'u':
		if len(s) > 2 && s[2] == '{' {
			if j := strings.IndexByte(s[:min(len(s), 12)], '}'); j > 0 {
				return j + 1
			}
		}
		return min(len(s), 6)
	case 'U':
		return min(len(s), 10)
	}
	return 2
}

// escFloor is the last boundary between escUnits of s at or before byte
// i: where a cut at i must move back to so as not to split an escape.
func escFloor(s string, i int) int {
	j := 0
	for j < i {
		k := strings.IndexByte(s[j:i], '\\')
		if k < 0 {
			return i // no escape begins before i
		}
		j += k
		n := escUnit(s[j:])
		if j+n > i {
			return j
		}
		j += n
	}
	return j
}

// escCeil is the first boundary between escUnits of s at or after byte
// i: where the kept tail of a string cut in its middle may begin.
func escCeil(s string, i int) int {
	if f := escFloor(s, i); f < i {
		return f + escUnit(s[f:])
	}
	return i
}

// fitTable lays out a table within width (0: as wide as it takes): two
// spaces between columns; while it is too wide the widest text column
// gives up a column (down to four), and a cell too long for its column
// is cut with ….
func fitTable(head []string, rows [][]string, num []bool, width int) []string {
	w := make([]int, len(head))
	for i, h := range head {
		w[i] = narrow.StringWidth(h)
	}
	for _, r := range rows {
		for i, c := range r {
			w[i] = max(w[i], narrow.StringWidth(c))
		}
	}
	total := func() int {
		n := 2 * (len(w) - 1)
		for _, x := range w {
			n += x
		}
		return n
	}
	for width > 0 && total() > width {
		widest := -1
		for i := range w {
			if !num[i] && w[i] > 4 && (widest < 0 || w[i] > w[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break // only numbers left: the line is cut at the end
		}
		w[widest]--
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			c = fit(c, w[i])
			pad := strings.Repeat(" ", w[i]-narrow.StringWidth(c))
			if num[i] {
				b.WriteString(pad + c)
			} else if i < len(cells)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		if width <= 0 {
			return b.String()
		}
		return fit(b.String(), width)
	}
	out := []string{line(head)}
	for _, r := range rows {
		out = append(out, line(r))
	}
	return out
}
