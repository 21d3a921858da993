package stack

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func lookupAll(segs []perfSeg, addr uint64) string {
	p := &PerfMap{segs: segs}
	name, _ := p.find(addr)
	return name
}

func TestParsePerfMapLines(t *testing.T) {
	text := strings.Join([]string{
		"1000 10 JS:~ok /x.js:1:1",
		"0x2000 0x10 py::f:/p/x.py",
		"zz 10 bad start",
		"3000 yy bad size",
		"3000 10",          // no name
		"3000 0 zero size", // no code
		"ffffffffffffffff 10 wraps",
		"4000  two spaces", // empty size field
		"",                 // empty line
		"5000 10 crlf\r",
		"6000 10 name with  spaces\tand tab",
		"7000 8 partial, no newline",
	}, "\n")
	es, n, st := parsePerfMap(strings.NewReader(text), 1<<20, 100)
	if st.Cut {
		t.Errorf("cut, want not")
	}
	if want := int64(strings.LastIndexByte(text, '\n') + 1); n != want {
		t.Errorf("consumed %d, want %d (the last line, with no newline, left for later)", n, want)
	}
	got := map[uint64]string{}
	for _, e := range es {
		got[e.start] = e.name
	}
	want := map[uint64]string{0x1000: "JS:~ok /x.js:1:1", 0x2000: "py::f:/p/x.py", 0x5000: "crlf", 0x6000: "name with  spaces\tand tab"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	if st.Bad != 7 {
		t.Errorf("%d bad lines, want 7", st.Bad)
	}
}

// A line of megabytes: its name is cut at MaxNameBytes, the lines after it
// are read, and what is kept of it is bounded.
func TestParsePerfMapHugeLine(t *testing.T) {
	huge := "8000 10 " + strings.Repeat("n", 3<<20)
	text := "1000 10 a\n" + huge + "\n9000 10 b\n"
	es, n, st := parsePerfMap(strings.NewReader(text), 8<<20, 100)
	if n != int64(len(text)) || st.Cut || len(es) != 3 {
		t.Fatalf("%d entries, consumed %d of %d, cut %v", len(es), n, len(text), st.Cut)
	}
	if name := es[1].name; len(name) > MaxNameBytes+len(NameCut) || !strings.HasSuffix(name, NameCut) {
		t.Errorf("huge name: %d bytes, suffix %q", len(name), name[len(name)-8:])
	}
	if es[2].name != "b" {
		t.Errorf("line after the huge one: %q", es[2].name)
	}
	// A huge line with no newline before the cap: cut, and not consumed.
	es, n, st = parsePerfMap(strings.NewReader("1000 10 a\n"+huge), 1<<20, 100)
	if !st.Cut || n != 10 || len(es) != 1 {
		t.Errorf("unended huge line: %d entries, consumed %d, cut %v; want 1, 10, cut", len(es), n, st.Cut)
	}
}

// A file larger than the byte cap is read to the cap, and counted cut; so
// is one of more lines than the entry cap.
func TestParsePerfMapCaps(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "%x 10 f%d\n", 0x10000+i*0x10, i)
	}
	text := b.String()
	es, n, st := parsePerfMap(strings.NewReader(text), 4096, 1<<20)
	if !st.Cut || n > 4096 || len(es) == 0 || len(es) >= 10000 {
		t.Errorf("byte cap: %d entries, consumed %d, cut %v", len(es), n, st.Cut)
	}
	es, _, st = parsePerfMap(strings.NewReader(text), 1<<20, 100)
	if !st.Cut || len(es) != 100 {
		t.Errorf("entry cap: %d entries, cut %v; want 100, cut", len(es), st.Cut)
	}
	// An endless reader: stops at the cap.
	es, _, st = parsePerfMap(io.MultiReader(strings.NewReader(text), zeros{}), 1<<20, 1<<20)
	if !st.Cut || len(es) != 10000 {
		t.Errorf("endless file: %d entries, cut %v", len(es), st.Cut)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Overlapping lines: the later names the addresses it covers (JIT memory
// freed and reused); the earlier keeps the rest of its range.
func TestPerfMapOverlaps(t *testing.T) {
	text := "1000 100 A\n1050 30 B\n1000 10 C\n2000 10 D\n2000 10 E\n1fff 2 F\n"
	es, _, _ := parsePerfMap(strings.NewReader(text), 1<<20, 100)
	segs := paint(es)
	for addr, want := range map[uint64]string{
		0xfff: "", 0x1000: "C", 0x100f: "C", 0x1010: "A", 0x1049: "A", 0x1050: "B", 0x107f: "B",
		0x1080: "A", 0x10ff: "A", 0x1100: "", 0x1fff: "F", 0x2000: "F", 0x2001: "E", 0x200f: "E", 0x2010: "",
	} {
		if got := lookupAll(segs, addr); got != want {
			t.Errorf("%#x: %q, want %q", addr, got, want)
		}
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].start < segs[i-1].end || segs[i].start >= segs[i].end {
			t.Errorf("segments overlap or are empty: %+v", segs)
		}
	}
}

// Many nested and overlapping lines paint in n log n: a file of the entry
// cap of lines, each covering all the ones before, takes well under a
// second.
func TestPerfMapPaintBound(t *testing.T) {
	es := make([]perfEntry, MaxPerfMapEntries)
	for i := range es {
		es[i] = perfEntry{start: uint64(1<<30 - i), end: uint64(1<<30 + i + 1), name: "x"}
	}
	start := time.Now()
	segs := paint(es)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("paint of %d nested entries took %v", len(es), d)
	}
	if got := lookupAll(segs, 1<<30); got != "x" {
		t.Errorf("%q", got)
	}
}

// writePerfMap puts a perf map of the test's own process at the name a
// process's perf map has, and removes it at the end.
func perfMapPath(t *testing.T, pid int) string {
	t.Helper()
	p := fmt.Sprintf("/tmp/perf-%d.map", pid)
	if _, err := os.Lstat(p); err == nil {
		t.Skipf("%s exists", p)
	}
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// The test process's own perf map is read, re-read as it grows, and
// names a frame in anonymous executable memory.
func TestPerfMapOwnProcess(t *testing.T) {
	pid := os.Getpid()
	p := perfMapPath(t, pid)
	if err := os.WriteFile(p, []byte("7f0000001000 100 JS:~first /a.js:1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewCache(Options{})
	defer c.Close()
	pm := c.PerfMap(Proc{Pid: pid})
	if pm == nil {
		t.Fatalf("no perf map; stats %+v", c.Stats())
	}
	if name, ok := pm.Lookup(0x7f0000001010); !ok || name != "JS:~first /a.js:1:1" {
		t.Errorf("lookup: %q %v", name, ok)
	}
	old := perfMapRereadEvery
	perfMapRereadEvery = 0
	defer func() { perfMapRereadEvery = old }()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "7f0000002000 100 JS:~second /a.js:9:1\n")
	f.Close()
	if name, ok := pm.Lookup(0x7f0000002000); !ok || name != "JS:~second /a.js:9:1" {
		t.Errorf("lookup after growth: %q %v", name, ok)
	}
	// Symbolize: a frame in anonymous executable memory gets the name.
	maps := []Mapping{{Start: 0x7f0000000000, End: 0x7f0000010000, Perms: "rwxp"}}
	st := c.SymbolizeIn(Unwound{PCs: []PC{{0x7f0000001020, ViaRegs}, {0x7f0000002001, ViaFP}}}, maps, pm, time.Time{})
	if len(st.Frames) != 2 || st.Frames[0].Func != "JS:~first /a.js:1:1" || st.Frames[1].Func != "JS:~second /a.js:9:1" ||
		st.Frames[0].Module != "" {
		t.Errorf("frames %+v", st.Frames)
	}
	// Not in executable memory: not named.
	maps[0].Perms = "rw-p"
	if st := c.SymbolizeIn(Unwound{PCs: []PC{{0x7f0000001020, ViaRegs}}}, maps, pm, time.Time{}); st.Frames[0].Func != "" {
		t.Errorf("frame in non-executable memory named %q", st.Frames[0].Func)
	}
}

// What is refused: a symlink at the name (to a good map), a FIFO (the open
// does not wait for a writer), a file of another user, a directory. Each
// is counted, and not tried again.
func TestPerfMapRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown")
	}
	pid := os.Getpid()
	good := filepath.Join(t.TempDir(), "good.map")
	if err := os.WriteFile(good, []byte("1000 10 planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func(p string) error
	}{
		{"symlink", func(p string) error { return os.Symlink(good, p) }},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }},
		{"other owner", func(p string) error {
			if err := os.WriteFile(p, []byte("1000 10 planted\n"), 0o644); err != nil {
				return err
			}
			return os.Chown(p, 12345, 12345)
		}},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := perfMapPath(t, pid)
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			c := NewCache(Options{})
			defer c.Close()
			start := time.Now()
			if pm := c.PerfMap(Proc{Pid: pid}); pm != nil {
				t.Errorf("perf map taken")
			}
			if d := time.Since(start); d > openTimeout/2 {
				t.Errorf("took %v", d)
			}
			if n := c.Stats().PerfMapsRefused; n != 1 {
				t.Errorf("refused %d, want 1", n)
			}
			c.PerfMap(Proc{Pid: pid})
			if n := c.Stats().PerfMapsRefused; n != 1 {
				t.Errorf("tried again: refused %d, want 1", n)
			}
		})
	}
}

// A process that has exited: the host's /tmp/perf-PID.map is taken only
// if its owner is the process's uid (or root) and it was written after
// the process started.
func TestPerfMapExited(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown")
	}
	pid := 1<<22 + 4321 // above pid_max's default: no such process
	if err := unix.Kill(pid, 0); err != unix.ESRCH {
		t.Skipf("pid %d: %v", pid, err)
	}
	p := perfMapPath(t, pid)
	if err := os.WriteFile(p, []byte("1000 10 JS:~gone /g.js:1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Minute)
	c := NewCache(Options{})
	defer c.Close()
	pm := c.PerfMap(Proc{Pid: pid, UID: 1000, Start: started})
	if pm == nil {
		t.Fatal("the exited process's map was not taken")
	}
	if name, _ := pm.Lookup(0x1000); name != "JS:~gone /g.js:1:1" {
		t.Errorf("lookup %q", name)
	}
	for _, tc := range []struct {
		name string
		proc Proc
		// refused: counted as refused, else as gone
		refused bool
	}{
		{"another uid", Proc{Pid: pid, UID: 1001, Start: started}, true},
		{"older than the process", Proc{Pid: pid, UID: 1000, Start: time.Now().Add(time.Hour)}, false},
		{"start unknown", Proc{Pid: pid, UID: 1000}, false},
	} {
		c := NewCache(Options{})
		if pm := c.PerfMap(tc.proc); pm != nil {
			t.Errorf("%s: taken", tc.name)
		}
		if n := c.Stats().PerfMapsRefused; (n == 1) != tc.refused {
			t.Errorf("%s: refused %d", tc.name, n)
		}
		c.Close()
	}
}

// The maps' parsed lines are kept within maxPerfMapsHeld: a lookup in
// one map forgets the least recently used other's, which a lookup there
// reads again.
func TestPerfMapsHeld(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, n int) *PerfMap {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%x 10 %s%d\n", 0x1000+i*0x10, name, i)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		return &PerfMap{file: f}
	}
	old := maxPerfMapsHeld
	maxPerfMapsHeld = 100 << 10
	defer func() { maxPerfMapsHeld = old }()
	c := NewCache(Options{})
	defer c.Close()
	a, b := open("a", 1000), open("b", 1000)
	c.perf = map[int]*perfMapState{1: {pm: a}, 2: {pm: b}}
	mp := &Mapping{Start: 0, End: 1 << 40, Perms: "r-xp"}
	if got := c.perfName(a, mp, 0x1000); got != "a0" {
		t.Fatalf("a: %q", got)
	}
	if got := c.perfName(b, mp, 0x1010); got != "b1" {
		t.Fatalf("b: %q", got)
	}
	if a.held() != 0 || b.held() == 0 {
		t.Errorf("held: a %d, b %d; want a forgotten", a.held(), b.held())
	}
	if got := c.perfName(a, mp, 0x1020); got != "a2" || b.held() != 0 {
		t.Errorf("a again: %q, b held %d", got, b.held())
	}
}
