package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// The live table, fitted to a terminal: what `once watch` draws, like top,
// in an alternate screen. Every line fits the width (cut with …, the
// widest column shrinking first), the rows fit the height.

// narrow measures as a terminal in a non-East-Asian locale does: µ, …
// and box characters are one column.
var narrow = &runewidth.Condition{EastAsianWidth: false}

// watchCells is the table of a snapshot: header, rows, and which columns
// are numbers (aligned right, never cut).
func watchCells(s *detect.Snapshot) ([]string, [][]string, []bool) {
	grouped := s.Group == detect.GroupExe || s.Group == detect.GroupComm || s.Group == detect.GroupContainer
	// A CONTAINER column when any row is in one.
	contained := false
	for i := range s.Rows {
		contained = contained || s.Rows[i].Container != nil
	}
	var head []string
	var num []bool
	if grouped {
		head = []string{strings.ToUpper(string(s.Group)), "PROCS", "DUP FILES", "EXTRA OPENS", "EXEC PROBES", "OPEN PROBES", "WASTED", "WORST", "STATE"}
		num = []bool{false, true, true, true, true, true, true, false, false}
	} else {
		head = []string{"PID", "PPID", "COMM", "DUP FILES", "EXTRA OPENS", "EXEC PROBES", "OPEN PROBES", "WASTED", "WORST", "STATE"}
		num = []bool{true, true, false, true, true, true, true, true, false, false}
		if contained {
			head = append(head[:3], append([]string{"CONTAINER"}, head[3:]...)...)
			num = append(num[:3], append([]bool{false}, num[3:]...)...)
		}
	}
	rows := make([][]string, 0, len(s.Rows))
	for i := range s.Rows {
		r := &s.Rows[i]
		var state string
		switch {
		case grouped:
			state = fmt.Sprintf("%d running", r.Running)
			if r.Processes > r.Running {
				state += fmt.Sprintf(", %d ended", r.Processes-r.Running)
			}
		case r.Replaced:
			state = "exec'd"
		case r.Exited:
			state = fmt.Sprintf("exited %d", r.ExitCode)
		default:
			state = "running"
		}
		waste := []string{strconv.Itoa(r.DupFiles), strconv.Itoa(r.ExtraOpens), strconv.Itoa(r.ExecProbes),
			strconv.Itoa(r.OpenProbes), Duration(r.WastedNs()), Escape(r.Worst), state}
		switch {
		case grouped:
			name := commString(r.Comm)
			switch s.Group {
			case detect.GroupExe:
				if r.Exe != "" {
					name = quoteArg(r.Exe)
				}
			case detect.GroupContainer:
				name = "[host]"
				if r.Container != nil {
					name = quoteArg(containerLabel(r.Container))
				}
			}
			rows = append(rows, append([]string{name, strconv.Itoa(r.Processes)}, waste...))
		case contained:
			ctr := "-"
			if r.Container != nil {
				ctr = quoteArg(containerLabel(r.Container))
			}
			rows = append(rows, append([]string{strconv.Itoa(int(r.Pid)), strconv.Itoa(int(r.PPid)), commString(r.Comm), ctr}, waste...))
		default:
			rows = append(rows, append([]string{strconv.Itoa(int(r.Pid)), strconv.Itoa(int(r.PPid)), commString(r.Comm)}, waste...))
		}
	}
	return head, rows, num
}

// WatchScreen renders s as the lines of a width × height screen (no
// newlines, no control sequences), the last one keys.
func WatchScreen(s *detect.Snapshot, width, height int, keys string) []string {
	width, height = max(width, 20), max(height, 6)
	c := &s.Counters
	lost := fmt.Sprintf("lost %d", c.Lost())
	if c.Lost() > 0 {
		var kinds []string
		for _, sp := range trace.Group(trace.CounterLost) {
			if v := sp.Value(c); v > 0 {
				kinds = append(kinds, sp.Label+" "+strconv.FormatUint(v, 10))
			}
		}
		lost += " (" + strings.Join(kinds, ", ") + ")"
	}
	head := strings.Join([]string{"once watch", s.Time.Format("15:04:05"), "up " + s.Uptime.Round(time.Second).String(),
		fmt.Sprintf("%.0f ev/s", s.EventsPerSec), fmt.Sprintf("%d procs", s.Processes), lost,
		"sort " + string(s.Sort)}, "  ")
	lines := []string{fit(head, width)}
	if n := notesLine(c); n != "" {
		lines = append(lines, fit("notes: "+n, width))
	}
	if c.Lost() > 0 {
		lines = append(lines, fit(fmt.Sprintf("WARNING: %d events were lost; counts are lower bounds", c.Lost()), width))
	}
	if c.CompatImages > 0 {
		lines = append(lines, fit(compatWarning(c.CompatImages), width))
	}
	tt := s.Totals
	total := fit(fmt.Sprintf("total: %d opens (%d failed), %d execs (%d failed), %d lookups (%d failed), %d dup opens, %d exec probes (%s), %d open probes, %d findings",
		tt.Opens, tt.FailedOpens, tt.Execs, tt.FailedExecs, tt.Lookups, tt.FailedLookups, tt.DuplicateOpens, tt.ExecProbes, Duration(tt.ExecProbeNs), tt.OpenProbes, tt.Findings), width)
	// What is left for the table: its header and as many rows as fit.
	room := height - len(lines) - 4 // a blank, the table's header, a blank and the total
	if keys != "" {
		room--
	}
	lines = append(lines, "")
	hd, rows, num := watchCells(s)
	hd, rows, num = screenColumns(hd, rows, num, width)
	if len(rows) == 0 {
		lines = append(lines, fit("no duplicate opens or failed probes yet", width))
	} else {
		shown := rows[:min(len(rows), max(room, 0))]
		lines = append(lines, fitTable(hd, shown, num, width)...)
		if len(shown) < len(rows) && len(lines) > 0 {
			// The last row gives way to saying how many were left out.
			lines[len(lines)-1] = fit(fmt.Sprintf("… %d more rows (taller terminal, or --top)", len(rows)-len(shown)+1), width)
		}
	}
	lines = append(lines, "", total)
	if keys != "" {
		lines = append(lines, fit(keys, width))
	}
	if len(lines) > height {
		lines = lines[:height]
	}
	return lines
}

// screenColumns names the number columns short, as top does, and leaves
// PPID out of a screen under 100 columns: the room goes to WORST, which
// says what the waste is.
func screenColumns(head []string, rows [][]string, num []bool, width int) ([]string, [][]string, []bool) {
	short := map[string]string{"DUP FILES": "DUPS", "EXTRA OPENS": "EXTRA", "EXEC PROBES": "EXECFAIL", "OPEN PROBES": "OPENFAIL"}
	drop := -1
	for i, h := range head {
		if s, ok := short[h]; ok {
			head[i] = s
		}
		if h == "PPID" && width < 100 {
			drop = i
		}
	}
	if drop < 0 {
		return head, rows, num
	}
	cut := func(r []string) []string { return append(append([]string{}, r[:drop]...), r[drop+1:]...) }
	for i := range rows {
		rows[i] = cut(rows[i])
	}
	num = append(append([]bool{}, num[:drop]...), num[drop+1:]...)
	return cut(head), rows, num
}

// fit cuts s to width display columns, ending it with … when cut.
func fit(s string, width int) string {
	if narrow.StringWidth(s) <= width {
		return s
	}
	return narrow.Truncate(s, width, "…")
}

// fitTable lays out a table within width: two spaces between columns;
// while it is too wide the widest text column gives up a column (down to
// four), and a cell too long for its column is cut with ….
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
	for total() > width {
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
		return fit(b.String(), width)
	}
	out := []string{line(head)}
	for _, r := range rows {
		out = append(out, line(r))
	}
	return out
}
