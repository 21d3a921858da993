package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// screenNow is the moment of the screen's sample snapshots.
var screenNow = time.Date(2026, 12, 1, 21, 3, 50, 0, time.UTC)

// screenSnapshot is a watch of a build, grouped by g: more rows than a
// 24-line screen holds, fifty short-lived cats, rows that ended 4 s ago
// (dimmed) and a minute ago (faded out), a hostile comm and worst, and
// the last second's rates.
func screenSnapshot(g detect.Group) *detect.Snapshot {
	s := sampleSnapshot(g)
	s.Time, s.Interval = screenNow, time.Second
	s.Delta = detect.Delta{Opens: 4210, Lookups: 312, WastedNs: 1_234_000}
	key := func(pid uint32) trace.ImageKey { return trace.ImageKey{Pid: pid, Start: uint64(pid) * 1000, ExecID: 1} }
	if g == detect.GroupPid {
		for i := range s.Rows {
			s.Rows[i].LastSeen = screenNow.Add(-4 * time.Second)
			s.Rows[i].Delta = detect.Delta{Opens: uint64(10 * i), Lookups: uint64(i), WastedNs: uint64(1000 * i)}
		}
	} else {
		s.Rows[0].Delta = detect.Delta{Opens: 1300, Lookups: 40, WastedNs: 640_000}
		s.Rows = append(s.Rows,
			detect.Row{Key: key(5000), Pid: 5000, Comm: "cat", Exe: "/usr/bin/cat", Processes: 50, LastSeen: screenNow.Add(-4 * time.Second), Exited: true,
				Waste: detect.Waste{DupFiles: 50, ExtraOpens: 50, DupNs: 95_000, Worst: "/tmp/f x2"},
				Delta: detect.Delta{Opens: 150, WastedNs: 95_000}},
			detect.Row{Key: key(5100), Pid: 5100, Comm: "ev\x1b[31mil", Exe: "/tmp/e\nvil", Processes: 1, Running: 1,
				Waste: detect.Waste{DupFiles: 1, ExtraOpens: 9, DupNs: 30_000, Worst: "/tmp/\x1b[2J x10"}})
		for i := 0; i < 30; i++ {
			r := detect.Row{Key: key(6000 + uint32(i)), Pid: 6000 + uint32(i), Comm: fmt.Sprintf("tool%02d", i), Exe: fmt.Sprintf("/opt/bin/tool%02d", i),
				Processes: 1 + i%3, Running: 1,
				Waste: detect.Waste{OpenProbes: 30 - i, OpenNs: uint64(30-i) * 700, Worst: fmt.Sprintf("libtool%02d.so (%d failed)", i, 30-i)},
				Delta: detect.Delta{Opens: uint64(i), WastedNs: uint64(i) * 100}}
			if i%10 == 9 { // ended a minute ago: faded out
				r.Running, r.Exited, r.LastSeen = 0, true, screenNow.Add(-time.Minute)
			}
			s.Rows = append(s.Rows, r)
		}
	}
	s.RowsAll = len(s.Rows)
	return s
}

// screenFindings are findings of the cc1 and make rows, for their detail.
func screenFindings() *WatchFindings {
	var fs WatchFindings
	cc1 := &trace.Process{Exe: "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"}
	fs.Add(&trace.Finding{Kind: trace.KindDuplicateOpen, Key: trace.ImageKey{Pid: 4201}, Pid: 4201, Comm: "cc1", Proc: cc1, WastedNs: 24_000,
		FileDetail: trace.FileDetail{Path: "/usr/include/stddef.h", Count: 13},
		CallSites:  []trace.CallSite{{Stack: 7, Count: 12}, {Stack: 0, Count: 1}}})
	found := "/usr/bin/cc"
	fs.Add(&trace.Finding{Kind: trace.KindFailedExecProbes, Key: trace.ImageKey{Pid: 4100, Start: 4100000, ExecID: 2}, Pid: 4100, Comm: "make", WastedNs: 48_000,
		Proc: &trace.Process{Exe: "/usr/bin/make"},
		ChainDetail: trace.ChainDetail{Target: "cc", Failed: 2, Found: &found, Attempts: []trace.Attempt{
			{Path: "/usr/local/sbin/cc", Errno: 2, Ns: 20_000}, {Path: "/usr/local/bin/c\x1bc", Errno: 2, Ns: 28_000}, {Path: found, Ns: 90_000}}}})
	return &fs
}

// frameText is a frame as a golden file holds it: its lines, then which
// are dim and which is selected.
func frameText(f Frame) []byte {
	var b bytes.Buffer
	for _, l := range f.Lines {
		b.WriteString(l + "\n")
	}
	var dim []int
	for i, d := range f.Dim {
		if d {
			dim = append(dim, i)
		}
	}
	fmt.Fprintf(&b, "-- dim lines %v, selected line %d\n", dim, f.Cursor)
	return b.Bytes()
}

// checkFrame holds a frame to the screen's contract: within the size,
// no control byte.
func checkFrame(t *testing.T, name string, f Frame, w, h int) {
	t.Helper()
	if len(f.Lines) > h {
		t.Errorf("%s: %d lines on a %d-line screen", name, len(f.Lines), h)
	}
	for _, l := range f.Lines {
		if n := narrow.StringWidth(l); n > w {
			t.Errorf("%s: a line of %d columns on a %d-column screen: %q", name, n, w, l)
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("%s: a control byte in %q", name, l)
		}
	}
}

// TestWatchScreenGoldens: the main screen, help, a detail and a filtered
// screen at 80×24 and 200×50, the rows grouped by comm and by pid.
func TestWatchScreenGoldens(t *testing.T) {
	views := []struct {
		name  string
		group detect.Group
		view  WatchView
		empty bool // no row yet
	}{
		{"main", detect.GroupComm, WatchView{Cursor: 1}, false},
		{"pid", detect.GroupPid, WatchView{}, false},
		{"help", detect.GroupComm, WatchView{Help: true}, false},
		{"detail", detect.GroupComm, WatchView{Detail: "comm:cc1"}, false},
		{"detail.make", detect.GroupPid, WatchView{Detail: "pid:4100:4100000:2"}, false},
		{"filter", detect.GroupComm, WatchView{Filter: "TOOL1"}, false},
		{"editing", detect.GroupComm, WatchView{Filter: "tool", Editing: true, Edit: "tool2"}, false},
		{"ended", detect.GroupComm, WatchView{AllEnded: true, Offset: 20, Cursor: 30}, false},
		{"empty", detect.GroupComm, WatchView{}, true},
	}
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 50}} {
		for _, tc := range views {
			s := screenSnapshot(tc.group)
			if tc.empty {
				s.Rows, s.RowsAll = nil, 0
			}
			v := tc.view
			v.Sort, v.Group = s.Sort, s.Group
			f := WatchFrame(s, &v, screenFindings(), size.w, size.h)
			name := fmt.Sprintf("watch.screen.%s.%dx%d.golden", tc.name, size.w, size.h)
			checkFrame(t, name, f, size.w, size.h)
			checkGolden(t, name, frameText(f))
		}
	}
}

// TestWatchScreenFillsHeight: every row the screen has room for is
// shown: at 200×50 the table takes every line the head, the status, the
// totals and the keys leave (20 rows was --top's default before).
func TestWatchScreenFillsHeight(t *testing.T) {
	s := screenSnapshot(detect.GroupComm)
	for i := 0; i < 100; i++ {
		s.Rows = append(s.Rows, detect.Row{Pid: uint32(9000 + i), Comm: fmt.Sprintf("more%03d", i), Processes: 1, Running: 1,
			Waste: detect.Waste{ExtraOpens: 1, DupNs: 10}})
	}
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 50}, {120, 40}} {
		v := WatchView{Sort: s.Sort, Group: s.Group}
		f := WatchFrame(s, &v, nil, size.w, size.h)
		checkFrame(t, "fill", f, size.w, size.h)
		if len(f.Lines) != size.h {
			t.Errorf("%dx%d: %d lines, want the screen's %d", size.w, size.h, len(f.Lines), size.h)
		}
		rows := 0
		for _, l := range f.Lines {
			if strings.HasPrefix(l, "tool") || strings.HasPrefix(l, "more") || strings.HasPrefix(l, "cc1") ||
				strings.HasPrefix(l, "make") || strings.HasPrefix(l, "cat") || strings.HasPrefix(l, `ev\x1b`) ||
				strings.HasPrefix(l, "python3") {
				rows++
			}
		}
		// Head (4 lines: header, rates, notes, warning), a blank, the
		// table's header, then status, totals and keys.
		if want := size.h - 4 - 2 - 3; rows != want {
			t.Errorf("%dx%d: %d rows shown, want %d:\n%s", size.w, size.h, rows, want, strings.Join(f.Lines, "\n"))
		}
	}
}

// TestWatchSummaryGoldens: the summary at the end fits 80, 120 and 200
// columns, with the screen's column names.
func TestWatchSummaryGoldens(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		for _, g := range []detect.Group{detect.GroupComm, detect.GroupPid} {
			var b bytes.Buffer
			if err := WatchSummary(&b, screenSnapshot(g), w); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if n := narrow.StringWidth(l); n > w {
					t.Errorf("%d columns, --group %s: a line of %d: %q", w, g, n, l)
				}
				if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("a control byte in %q", l)
				}
			}
			for _, name := range []string{"DUP FILES", "EXTRA OPENS", "EXEC PROBES", "OPEN PROBES"} {
				if strings.Contains(out, name) {
					t.Errorf("%d columns: the summary names a column %q, not as the screen does", w, name)
				}
			}
			if w != 120 {
				checkGolden(t, fmt.Sprintf("watch.summary.%s.%d.golden", g, w), b.Bytes())
			}
		}
	}
}

// TestWatchRates: a row's and the whole watch's rates are their
// interval's counts over its length.
func TestWatchRates(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		d    time.Duration
		want string
	}{
		{0, 0, "-"}, {5, 0, "-"}, {0, time.Second, "0"}, {3, 2 * time.Second, "1.5"}, {4210, time.Second, "4210"},
		{4210, 500 * time.Millisecond, "8420"}, {1, 3 * time.Second, "0.3"},
	} {
		if got := rate(tc.n, tc.d); got != tc.want {
			t.Errorf("rate(%d, %v) = %q, want %q", tc.n, tc.d, got, tc.want)
		}
	}
	if got := rateDuration(1_234_000, 2*time.Second); got != "617µs" {
		t.Errorf("rateDuration = %q, want 617µs", got)
	}
	s := screenSnapshot(detect.GroupComm)
	if got := rateLine(s); !strings.Contains(got, "4210 opens/s, 312 lookups/s, 1.2ms/s wasted") {
		t.Errorf("rate line %q", got)
	}
}

// TestDetailDupFilesPerProcess: a group's row sums each process's files
// opened again, so one file three processes open again is 3: the detail
// says the files are counted per process, not "of 3 files" alone.
func TestDetailDupFilesPerProcess(t *testing.T) {
	for _, tc := range []struct {
		group detect.Group
		procs int
		want  string
	}{
		{detect.GroupComm, 3, "waste: 1.5µs wasted in all; 147 extra opens of 3 files counted per process (1.5µs)"},
		{detect.GroupComm, 1, "waste: 1.5µs wasted in all; 147 extra opens of 3 files (1.5µs)"},
		{detect.GroupPid, 1, "waste: 1.5µs wasted in all; 147 extra opens of 3 files (1.5µs)"},
	} {
		r := detect.Row{Pid: 7, Comm: "dup", Processes: tc.procs, Waste: detect.Waste{DupFiles: 3, ExtraOpens: 147, DupNs: 1500}}
		s := &detect.Snapshot{Group: tc.group, Rows: []detect.Row{r}}
		lines := detailText(s, RowKey(tc.group, &r), nil)
		if !slices.Contains(lines, tc.want) {
			t.Errorf("%s, %d processes: no line %q in\n%s", tc.group, tc.procs, tc.want, strings.Join(lines, "\n"))
		}
	}
}

// TestWatchFrameTinyTerminal: a terminal smaller than the layout's least
// (20 columns, 6 lines: a tmux pane, a split window) gets a frame within
// it, cut, never one that wraps or scrolls the screen at every refresh:
// 6 lines on a 4-line terminal scrolled its first lines off each time.
func TestWatchFrameTinyTerminal(t *testing.T) {
	s := screenSnapshot(detect.GroupComm)
	for _, size := range []struct{ w, h int }{{80, 5}, {80, 1}, {10, 24}, {8, 3}, {1, 1}, {300, 4}} {
		for _, v := range []WatchView{{Sort: s.Sort, Group: s.Group, Cursor: 0}, {Help: true}, {Detail: RowKey(s.Group, &s.Rows[0])}} {
			f := WatchFrame(s, &v, nil, size.w, size.h)
			checkFrame(t, fmt.Sprintf("%dx%d help %v detail %q", size.w, size.h, v.Help, v.Detail), f, size.w, size.h)
			if f.Cursor >= len(f.Lines) || len(f.Dim) > len(f.Lines) {
				t.Errorf("%dx%d: cursor %d, %d dim marks for %d lines", size.w, size.h, f.Cursor, len(f.Dim), len(f.Lines))
			}
		}
	}
}
