package report

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// TestWatchKeyDecoder: a terminal's bytes, in reads as they may come,
// give the keys pressed: escape sequences split across reads, a lone Esc
// known by the read with nothing after it, UTF-8 typed into the filter.
func TestWatchKeyDecoder(t *testing.T) {
	r := func(c rune) Key { return Key{Kind: KeyRune, Rune: c} }
	k := func(kind KeyKind) Key { return Key{Kind: kind} }
	for _, tc := range []struct {
		name  string
		reads []string // "" is a poll with nothing read
		want  []Key
	}{
		{"runes", []string{"jkq"}, []Key{r('j'), r('k'), r('q')}},
		{"arrows", []string{"\x1b[A\x1b[B\x1bOA"}, []Key{k(KeyUp), k(KeyDown), k(KeyUp)}},
		{"pages and ends", []string{"\x1b[5~\x1b[6~\x1b[H\x1b[F\x1b[1~\x1b[4~\x1b[7~\x1b[8~"},
			[]Key{k(KeyPgUp), k(KeyPgDn), k(KeyHome), k(KeyEnd), k(KeyHome), k(KeyEnd), k(KeyHome), k(KeyEnd)}},
		{"split sequence", []string{"\x1b", "[", "5", "~"}, []Key{k(KeyPgUp)}},
		{"lone esc after a pause", []string{"\x1b", ""}, []Key{k(KeyEsc)}},
		{"esc then a key", []string{"\x1bq"}, []Key{k(KeyEsc), r('q')}},
		{"esc waits one poll only", []string{"a\x1b", "", ""}, []Key{r('a'), k(KeyEsc)}},
		{"enter and backspace", []string{"\r\n\x7f\x08"}, []Key{k(KeyEnter), k(KeyEnter), k(KeyBackspace), k(KeyBackspace)}},
		{"ctrl-c", []string{"\x03"}, []Key{k(KeyInterrupt)}},
		{"other controls ignored", []string{"\x01\x1a\x00x"}, []Key{r('x')}},
		{"unknown sequences ignored, modified arrows kept", []string{"\x1b[C\x1b[15~\x1b[1;5Ay"}, []Key{k(KeyUp), r('y')}},
		{"utf-8 split", []string{"\xc3", "\xa9"}, []Key{r('é')}},
		{"bad utf-8 dropped", []string{"\xff!"}, []Key{r('!')}},
		{"cut utf-8 dropped after a pause", []string{"\xe2\x82", "", "z"}, []Key{r('z')}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d KeyDecoder
			var got []Key
			for _, b := range tc.reads {
				got = append(got, d.Feed([]byte(b))...)
			}
			got = append(got, d.Feed(nil)...) // polls with nothing
			got = append(got, d.Feed(nil)...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWatchViewKeys: what each key does to the view, from a given one,
// on a table of 30 rows with pages of 10.
func TestWatchViewKeys(t *testing.T) {
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = "comm:c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	room := ViewRoom{Keys: keys, Page: 10, DetailLines: 25}
	r := func(c rune) Key { return Key{Kind: KeyRune, Rune: c} }
	k := func(kind KeyKind) Key { return Key{Kind: kind} }
	base := WatchView{Sort: detect.SortTime, Group: detect.GroupComm}
	with := func(f func(v *WatchView)) WatchView { v := base; f(&v); return v }
	for _, tc := range []struct {
		name string
		from WatchView
		keys []Key
		want WatchView
	}{
		{"down", base, []Key{k(KeyDown), r('j')}, with(func(v *WatchView) { v.Cursor = 2 })},
		{"up stops at the top", base, []Key{k(KeyUp), r('k')}, base},
		{"down past the page scrolls", base, []Key{k(KeyPgDn), k(KeyDown)}, with(func(v *WatchView) { v.Cursor, v.Offset = 11, 10 })},
		{"end", base, []Key{k(KeyEnd)}, with(func(v *WatchView) { v.Cursor, v.Offset = 29, 20 })},
		{"page down stops at the end", base, []Key{k(KeyPgDn), k(KeyPgDn), k(KeyPgDn), k(KeyPgDn)}, with(func(v *WatchView) { v.Cursor, v.Offset = 29, 20 })},
		{"home", with(func(v *WatchView) { v.Cursor, v.Offset = 29, 20 }), []Key{k(KeyHome)}, base},
		{"page up", with(func(v *WatchView) { v.Cursor, v.Offset = 25, 20 }), []Key{k(KeyPgUp)}, with(func(v *WatchView) { v.Cursor, v.Offset = 15, 10 })},
		{"filter typed and applied", base, []Key{r('/'), r('c'), r('c'), k(KeyBackspace), r('b'), k(KeyEnter)},
			with(func(v *WatchView) { v.Filter = "cb" })},
		{"filter keys are text", base, []Key{r('/'), r('q'), r('?'), r('j')}, with(func(v *WatchView) { v.Editing, v.Edit = true, "q?j" })},
		{"esc while typing clears", with(func(v *WatchView) { v.Filter = "old" }), []Key{r('/'), r('x'), k(KeyEsc)}, base},
		{"edit starts from the filter", with(func(v *WatchView) { v.Filter = "old" }), []Key{r('/')},
			with(func(v *WatchView) { v.Filter, v.Editing, v.Edit = "old", true, "old" })},
		{"esc clears the filter", with(func(v *WatchView) { v.Filter, v.Cursor = "x", 3 }), []Key{k(KeyEsc)}, base},
		{"help", base, []Key{r('?')}, with(func(v *WatchView) { v.Help = true })},
		{"help closes with esc", with(func(v *WatchView) { v.Help = true }), []Key{k(KeyEsc)}, base},
		{"help ignores moves", with(func(v *WatchView) { v.Help = true }), []Key{k(KeyDown)}, with(func(v *WatchView) { v.Help = true })},
		{"q quits", base, []Key{r('q')}, with(func(v *WatchView) { v.Quit = true })},
		{"q quits from help", with(func(v *WatchView) { v.Help = true }), []Key{r('q')}, with(func(v *WatchView) { v.Help, v.Quit = true, true })},
		{"ctrl-c quits while typing", with(func(v *WatchView) { v.Editing = true }), []Key{k(KeyInterrupt)},
			with(func(v *WatchView) { v.Editing, v.Quit = true, true })},
		{"enter opens the selected row", base, []Key{k(KeyDown), k(KeyDown), k(KeyEnter)},
			with(func(v *WatchView) { v.Cursor, v.Detail = 2, "comm:cc" })},
		{"detail scrolls within its lines", with(func(v *WatchView) { v.Detail = "comm:ca" }), []Key{k(KeyPgDn), k(KeyPgDn), r('j')},
			with(func(v *WatchView) { v.Detail, v.DetailOffset = "comm:ca", 15 })},
		{"detail closes", with(func(v *WatchView) { v.Detail, v.DetailOffset = "comm:ca", 3 }), []Key{k(KeyEsc)}, base},
		{"enter on no row", base, []Key{k(KeyEnter)}, base},
		{"sort keys", base, []Key{r('d')}, with(func(v *WatchView) { v.Sort = detect.SortDup })},
		{"sort keys exec, time", base, []Key{r('e'), r('t'), r('e')}, with(func(v *WatchView) { v.Sort = detect.SortExec })},
		{"sort key lookup", base, []Key{r('e'), r('l')}, with(func(v *WatchView) { v.Sort = detect.SortLookup })},
		{"group cycles", base, []Key{r('g'), r('g')}, with(func(v *WatchView) { v.Group = detect.GroupPid })},
		{"group cycles round", base, []Key{r('g'), r('g'), r('g'), r('g')}, base},
		{"ended rows", base, []Key{r('a')}, with(func(v *WatchView) { v.AllEnded = true })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rm := room
			if tc.name == "enter on no row" {
				rm.Keys = nil
			}
			v := tc.from
			for _, key := range tc.keys {
				v = v.Key(key, rm)
			}
			if v != tc.want {
				t.Errorf("got  %+v\nwant %+v", v, tc.want)
			}
		})
	}
}

// TestWatchUIInput: keys through the UI reach the view with the page the
// last frame had, and a lone Esc closes the detail after a pause.
func TestWatchUIInput(t *testing.T) {
	var u WatchUI
	u.View = WatchView{Sort: detect.SortTime, Group: detect.GroupComm}
	u.Snapshot(screenSnapshot(detect.GroupComm))
	u.Frame(80, 24)
	if !u.Input([]byte("\x1b[6~")) || u.View.Cursor != 15 {
		t.Errorf("PgDn: cursor %d, want 15 (a page of the 80x24 screen)", u.View.Cursor)
	}
	u.Input([]byte("\x1b[H\r"))
	if u.View.Detail != "comm:cc1" {
		t.Errorf("Home, Enter: detail %q, want comm:cc1", u.View.Detail)
	}
	f := u.Frame(80, 24)
	if !strings.HasPrefix(f.Lines[0], "detail") {
		t.Errorf("the detail screen starts %q", f.Lines[0])
	}
	u.Input([]byte("\x1b"))
	if u.View.Detail == "" {
		t.Error("an Esc closed the detail before the pause that tells it from an arrow")
	}
	u.Input(nil)
	if u.View.Detail != "" {
		t.Error("a lone Esc did not close the detail")
	}
}

// TestWatchFindingsKeepEachRow: a row's latest findings stay for its
// detail while a churn of other rows' findings goes through, and every
// grouping finds them.
func TestWatchFindingsKeepEachRow(t *testing.T) {
	var w WatchFindings
	for i := 0; i < 20; i++ {
		w.Add(&trace.Finding{Kind: trace.KindDuplicateOpen, Key: trace.ImageKey{Pid: 7}, Comm: "cat", Proc: &trace.Process{Exe: "/usr/bin/cat"},
			FileDetail: trace.FileDetail{Path: fmt.Sprint("/f", i), Count: 2}})
	}
	for i := 0; i < 3*keptFindings; i++ { // a churn of short processes
		w.Add(&trace.Finding{Kind: trace.KindDuplicateOpen, Key: trace.ImageKey{Pid: uint32(1000 + i)}, Comm: fmt.Sprint("churn", i%50),
			FileDetail: trace.FileDetail{Path: "/g", Count: 2}})
		if i%1000 == 0 { // the cat row looked at now and then keeps its place
			w.Add(&trace.Finding{Kind: trace.KindDuplicateOpen, Key: trace.ImageKey{Pid: 7}, Comm: "cat", Proc: &trace.Process{Exe: "/usr/bin/cat"},
				FileDetail: trace.FileDetail{Path: "/late", Count: 2}})
		}
	}
	for _, key := range []string{"comm:cat", "exe:/usr/bin/cat", "pid:7:0:0", "container:"} {
		got, total := w.of(key)
		if len(got) == 0 || len(got) > perRow || total < 20 {
			t.Errorf("%s: %d kept of %d", key, len(got), total)
		}
	}
	if w.kept > keptFindings+4*perRow || len(w.order) > 8*keptFindings+4 {
		t.Errorf("%d findings and %d order entries kept; the bound is %d", w.kept, len(w.order), keptFindings)
	}
}

// TestWatchScreenRandomKeys: any bytes typed at any size leave a screen
// that fits, without a control byte, and never a panic.
func TestWatchScreenRandomKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"j", "k", "\x1b[A", "\x1b[B", "\x1b[5~", "\x1b[6~", "\x1b[H", "\x1b[F", "\r", "\x1b", "/", "c", "a", "t",
		"\x7f", "?", "g", "d", "e", "\xff", "\x1b[", "é", "\x00", "\x1b[2J"}
	for run := 0; run < 100; run++ {
		w, h := 20+rng.IntN(200), 6+rng.IntN(60)
		var u WatchUI
		g := groupCycle[rng.IntN(len(groupCycle))]
		s := screenSnapshot(g)
		u.View = WatchView{Sort: s.Sort, Group: g}
		u.Snapshot(s)
		u.Findings = *screenFindings()
		u.Frame(w, h)
		for i := 0; i < 40; i++ {
			var b []byte
			for j := rng.IntN(4); j > 0; j-- {
				b = append(b, alphabet[rng.IntN(len(alphabet))]...)
			}
			u.Input(b)
			if u.View.Quit {
				break
			}
			checkFrame(t, fmt.Sprintf("%dx%d after %q", w, h, b), u.Frame(w, h), w, h)
		}
	}
}

// TestWatchUIFollowsSelection: a tick that re-sorts the table keeps the
// selected row selected, wherever it went.
func TestWatchUIFollowsSelection(t *testing.T) {
	var u WatchUI
	s := screenSnapshot(detect.GroupComm)
	u.View = WatchView{Sort: s.Sort, Group: s.Group}
	u.Snapshot(s)
	u.Frame(80, 24)
	u.Input([]byte("jj")) // cat, the third row
	next := screenSnapshot(detect.GroupComm)
	next.Rows[0], next.Rows[2] = next.Rows[2], next.Rows[0] // cat first now
	u.Snapshot(next)
	if u.View.Cursor != 0 {
		t.Errorf("after the re-sort the cursor is on row %d, want 0 (cat)", u.View.Cursor)
	}
	gone := screenSnapshot(detect.GroupComm)
	gone.Rows = gone.Rows[1:2]
	u.Snapshot(gone)
	if u.View.Cursor != 0 {
		t.Errorf("the selected row gone, one row left: cursor %d", u.View.Cursor)
	}
}
