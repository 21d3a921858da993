package report

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/trace"

	"github.com/oncetool/once/detect"
)

// TestOpenLineMatchesStruct holds the hand-written open line to the
// encoding/json form of the same fields, hostile strings included.
func TestOpenLineMatchesStruct(t *testing.T) {
	for _, ev := range []trace.Event{
		{Kind: trace.EventOpen, Task: trace.Task{Pid: 1, Tid: 2, PPid: 3, UID: 4, Start: 5, ExecID: 6, CgroupID: 7, Comm: "c\x1b[31m"},
			Open: trace.OpenRecord{Syscall: trace.SysOpenat, EnterNs: 10, ExitNs: 25, Flags: 0x80000, Mode: 0o644,
				Dev: 2049, Ino: 99, Dirfd: -100, Ret: 3, Fname: "a\nb\xff", Path: "/t/a\nb\xff\"\\", Status: trace.StPathTruncated}},
		{Kind: trace.EventOpen, Task: trace.Task{Comm: ""},
			Open: trace.OpenRecord{Syscall: trace.SysOpen, Ret: -2, Fname: "rel", Path: "/cwd",
				Status: trace.StPathIsBase | trace.StFnameTruncated | trace.StFnameUnreadable}},
	} {
		var hand, ref bytes.Buffer
		jh, jr := NewJSONLines(&hand), NewJSONLines(&ref)
		jh.SetClock(1_700_000_000_000_000_000)
		jr.SetClock(1_700_000_000_000_000_000)
		if err := jh.Event(&ev, nil); err != nil {
			t.Fatal(err)
		}
		if err := jr.write(jr.openEvent(&ev, nil)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(hand.Bytes(), ref.Bytes()) {
			var a, b map[string]any
			json.Unmarshal(hand.Bytes(), &a)
			json.Unmarshal(ref.Bytes(), &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("hand-written line differs:\n%s%s", hand.Bytes(), ref.Bytes())
			}
		}
		if !json.Valid(bytes.TrimSpace(hand.Bytes())) {
			t.Errorf("not JSON: %s", hand.Bytes())
		}
	}
}

// TestOpenLineResolve: an openat2 line says how its name was resolved
// (RESOLVE_BENEATH, RESOLVE_IN_ROOT...), as strace's {resolve=...} does:
// without it an EXDEV or ELOOP of openat2 has no cause on its line.
func TestOpenLineResolve(t *testing.T) {
	for _, resolve := range []uint64{0, 0x8, 0x10 | 0x2} {
		ev := trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: 1, Tid: 1, Comm: "o"},
			Open: trace.OpenRecord{Syscall: trace.SysOpenat2, Ret: -18, Fname: "abs/hostname", Path: "/d",
				Dirfd: 3, Resolve: resolve, Status: trace.StPathIsBase}}
		var buf bytes.Buffer
		if err := NewJSONLines(&buf).Event(&ev, nil); err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if got, ok := line["resolve"].(float64); !ok || uint64(got) != resolve {
			t.Errorf("resolve %#x: the line has %v: %s", resolve, line["resolve"], buf.Bytes())
		}
	}
}

// TestOpenLineSequence holds a run of open lines, each made partly from
// the line before, to the encoding/json form of each: what changes from
// one to the next (the time, the call, its result, the thread, the
// container, the file) is never taken from the line before.
func TestOpenLineSequence(t *testing.T) {
	base := trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: 10, Tid: 10, PPid: 1, UID: 1000, Start: 5, ExecID: 2, CgroupID: 7, Comm: "loop"},
		Open: trace.OpenRecord{Syscall: trace.SysOpenat, EnterNs: 1_000, ExitNs: 1_500, Flags: 0x80000,
			Dev: 2049, Ino: 99, FileType: trace.FileReg, Dirfd: -100, Ret: 3, Fname: "/t/f", Path: "/t/f"}}
	web := &trace.Process{Container: &trace.Container{ID: "3a4b", Name: "web", Runtime: "containerd", Cgroup: "/k/3a4b"}}
	type step struct {
		name string
		edit func(*trace.Event)
		proc *trace.Process
	}
	steps := []step{
		{"first", func(*trace.Event) {}, nil},
		{"the same again", func(*trace.Event) {}, nil},
		{"later, on a whole second", func(e *trace.Event) { e.Open.ExitNs = 3_000_000_000 }, nil},
		{"a fraction with trailing zeros", func(e *trace.Event) { e.Open.ExitNs = 3_120_000_000 }, nil},
		{"the next second", func(e *trace.Event) { e.Open.ExitNs = 4_000_000_001 }, nil},
		{"another fd", func(e *trace.Event) { e.Open.Ret = 4 }, nil},
		{"failed", func(e *trace.Event) { e.Open.Ret = -2 }, nil},
		{"open, not openat", func(e *trace.Event) { e.Open.Syscall = trace.SysOpen }, nil},
		{"openat2", func(e *trace.Event) { e.Open.Syscall = trace.SysOpenat2 }, nil},
		{"openat2, RESOLVE_BENEATH", func(e *trace.Event) { e.Open.Resolve = 0x8 }, nil},
		{"openat2, RESOLVE_IN_ROOT", func(e *trace.Event) { e.Open.Resolve = 0x10 }, nil},
		{"other flags", func(e *trace.Event) { e.Open.Flags = 0x241; e.Open.Mode = 0o600 }, nil},
		{"another thread", func(e *trace.Event) { e.Task.Tid = 11 }, nil},
		{"renamed", func(e *trace.Event) { e.Task.Comm = "loop2" }, nil},
		{"in a container", func(*trace.Event) {}, web},
		{"the same container", func(*trace.Event) {}, web},
		{"the container named later", func(*trace.Event) {}, &trace.Process{Container: &trace.Container{ID: "3a4b", Name: "api"}}},
		{"out of it", func(*trace.Event) {}, &trace.Process{}},
		{"another file", func(e *trace.Event) { e.Open.Ino, e.Open.Path, e.Open.Fname = 100, "/t/g", "g" }, nil},
		{"the same name, cut", func(e *trace.Event) { e.Open.Status = trace.StPathTruncated }, nil},
		{"another generation", func(e *trace.Event) { e.Open.Gen = 3 }, nil},
		{"another dirfd", func(e *trace.Event) { e.Open.Dirfd = 5 }, nil},
		{"base only", func(e *trace.Event) { e.Open.Status = trace.StPathIsBase; e.Open.Ret = -2 }, nil},
		{"unreadable", func(e *trace.Event) { e.Open.Status = trace.StFnameUnreadable | trace.StFnameTruncated }, nil},
		{"back to the first", func(e *trace.Event) { *e = base }, nil},
	}
	var hand bytes.Buffer
	jh := NewJSONLines(&hand)
	jh.SetClock(1_700_000_000_000_000_000)
	ev := base
	for _, s := range steps {
		s.edit(&ev)
		hand.Reset()
		if err := jh.Event(&ev, s.proc); err != nil {
			t.Fatal(err)
		}
		var ref bytes.Buffer
		jr := NewJSONLines(&ref)
		jr.SetClock(1_700_000_000_000_000_000)
		if err := jr.write(jr.openEvent(&ev, s.proc)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(hand.Bytes(), ref.Bytes()) {
			t.Errorf("%s: hand-written line differs:\n%s%s", s.name, hand.Bytes(), ref.Bytes())
		}
	}
}

func BenchmarkOpenLine(b *testing.B) {
	ev := trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: 1234, Comm: "cp"},
		Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3, Fname: "/dev/shm/oncebench/w1/file", Path: "/dev/shm/oncebench/w1/file", Flags: 0x80000}}
	j := NewJSONLines(&bytes.Buffer{})
	var buf bytes.Buffer
	j.w = &buf
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		j.Event(&ev, nil)
	}
}

// BenchmarkOpenStruct is the encoding/json form, for comparison.
func BenchmarkOpenStruct(b *testing.B) {
	ev := trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: 1234, Comm: "cp"},
		Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3, Fname: "/dev/shm/oncebench/w1/file", Path: "/dev/shm/oncebench/w1/file", Flags: 0x80000}}
	var buf bytes.Buffer
	j := NewJSONLines(&buf)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		j.write(j.openEvent(&ev, nil))
	}
}

// TestWatchLinesDocumented: every key of every kind of watch JSON line is
// in SCHEMA.md's watch section (a finding's, in its Finding section): a
// field added to a line without its documentation fails here.
func TestWatchLinesDocumented(t *testing.T) {
	schema, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(schema)
	start := strings.Index(doc, "# once watch JSON lines")
	end := strings.Index(doc, "# once compare JSON report")
	if start < 0 || end < start {
		t.Fatal("SCHEMA.md has no watch section before the compare one")
	}
	watch := doc[start:end]

	var buf bytes.Buffer
	j := NewJSONLines(&buf)
	open := trace.Event{Kind: trace.EventOpen, Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3}}
	exec := trace.Event{Kind: trace.EventExec, Exec: trace.ExecRecord{Syscall: trace.SysExecve, Argv: []string{"a"}}}
	found := "x"
	f := trace.Finding{Kind: trace.KindFailedExecProbes, ChainDetail: trace.ChainDetail{Target: "x", Found: &found, Attempts: []trace.Attempt{{Path: "/a/x", Errno: 2}}}}
	snap := detect.Snapshot{Rows: []detect.Row{{Pid: 1, Comm: "c"}}}
	snap.Counters.DroppedByRing = []uint64{1, 2} // shown with several rings only
	for _, err := range []error{j.Event(&open, nil), j.Event(&exec, nil), j.Finding(&f, time.Unix(0, 0)), j.Summary(&snap)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		typ, _ := m["type"].(string)
		in := watch
		if typ == "finding" {
			in = doc // the report's Finding section
		}
		for k, v := range m {
			if !strings.Contains(in, "`"+k+"`") {
				t.Errorf("%s line: key %q not in SCHEMA.md", typ, k)
			}
			if rows, ok := v.([]any); ok && k == "top" {
				for _, r := range rows {
					for rk := range r.(map[string]any) {
						if !strings.Contains(watch, "`"+rk+"`") {
							t.Errorf("summary top row: key %q not in SCHEMA.md", rk)
						}
					}
				}
			}
		}
	}
}

// TestExecLineCallerTid: an exec line's tid is the thread that called
// exec, also when a non-leader thread's exec succeeded and its exit was
// seen under the leader's tid.
func TestExecLineCallerTid(t *testing.T) {
	ev := trace.Event{Kind: trace.EventExec, Task: trace.Task{Pid: 10, Tid: 10, Comm: "true"},
		Exec: trace.ExecRecord{Syscall: trace.SysExecve, Filename: "/usr/bin/true", OldTid: 12}}
	var buf bytes.Buffer
	if err := NewJSONLines(&buf).Event(&ev, nil); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["pid"] != 10.0 || line["tid"] != 12.0 {
		t.Errorf("pid %v tid %v, want 10 12: %s", line["pid"], line["tid"], buf.Bytes())
	}
}

// TestGroupNameExeUnknown: a --group exe row of processes whose exec was
// not seen (they ran before the watch) is named "[comm]", as the engine
// keys it, not a bare comm beside the paths of the other rows.
func TestGroupNameExeUnknown(t *testing.T) {
	for _, tc := range []struct {
		r    detect.Row
		want string
	}{
		{detect.Row{Comm: "go", Exe: "/usr/local/go/bin/go"}, "/usr/local/go/bin/go"},
		{detect.Row{Comm: "go"}, "[go]"},
		{detect.Row{Comm: "a b"}, "[a b]"},
		{detect.Row{Comm: "e\x1bvil"}, `[e\x1bvil]`},
	} {
		if got := groupName(detect.GroupExe, &tc.r); got != tc.want {
			t.Errorf("groupName(exe, %+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestSummaryRowsSayTheirGroup: with --group comm (the DaemonSet's), a
// summary's top row stands for every process of the program, its pid
// and exec_id its first's: the row says how many processes it sums and
// how many run, and the line which grouping it has, or the counts of 301
// cc1s read as one process's (a pid charged with exec probes strace
// shows it never made).
func TestSummaryRowsSayTheirGroup(t *testing.T) {
	for _, tc := range []struct {
		group                  detect.Group
		wantGroup              string
		wantProcs, wantRunning float64
	}{
		{detect.GroupPid, "pid", 1, 1},
		{detect.GroupComm, "comm", 301, 2},
	} {
		t.Run(string(tc.group), func(t *testing.T) {
			var b bytes.Buffer
			if err := NewJSONLines(&b).Summary(sampleSnapshot(tc.group)); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			if m["group"] != tc.wantGroup {
				t.Errorf("group %v, want %q", m["group"], tc.wantGroup)
			}
			top := m["top"].([]any)
			var row map[string]any
			for _, r := range top {
				if r := r.(map[string]any); r["comm"] == "cc1" || tc.group == detect.GroupPid && r["comm"] == "make" {
					row = r
					break
				}
			}
			if row == nil {
				t.Fatalf("no row in %v", top)
			}
			if row["processes"] != tc.wantProcs || row["running"] != tc.wantRunning {
				t.Errorf("row %v: processes %v, running %v; want %v, %v", row["comm"], row["processes"], row["running"], tc.wantProcs, tc.wantRunning)
			}
		})
	}
}

// TestWatchTableBoundsCells: the table on a pipe or in a -o file has no
// terminal to fit: a row's names (WORST, an exe, a container) are cut
// in the middle at maxSubjectWidth, marked with … and a note, so that
// one process failing 4 KB paths does not make a 4,000-column line.
func TestWatchTableBoundsCells(t *testing.T) {
	long := "/nonexist/" + strings.Repeat("a", 4000) + "/\x1bz"
	for _, tc := range []struct {
		name  string
		group detect.Group
		row   detect.Row
		cell  string // a cell the table must show
	}{
		{"a long WORST", detect.GroupPid, detect.Row{Pid: 7, Comm: "longmiss", Processes: 1, Running: 1,
			Waste: detect.Waste{Lookups: 150, LookupNs: 800_000, Worst: "miss " + long}}, `a/\x1bz`},
		{"a long exe", detect.GroupExe, detect.Row{Pid: 7, Comm: "x", Exe: long, Processes: 1, Running: 1,
			Waste: detect.Waste{Lookups: 3, LookupNs: 800, Worst: "miss /x"}}, "miss /x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &detect.Snapshot{Group: tc.group, Sort: "time", Rows: []detect.Row{tc.row}, RowsAll: 1}
			var b strings.Builder
			if err := WatchTable(&b, s); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, l := range strings.Split(out, "\n") {
				if w := Width(l); w > 300 {
					t.Errorf("a line of %d columns: %.120s…", w, l)
				}
			}
			for _, want := range []string{"…", tc.cell, "is cut in the middle with …"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in\n%s", want, out)
				}
			}
		})
	}
}
