package report

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/golden"
	"github.com/oncetool/once/trace"
)

// sampleSnapshot is a watch at one moment: rows of each state, a hostile
// comm and worst, and some of every counter.
func sampleSnapshot(group detect.Group) *detect.Snapshot {
	key := func(pid uint32) trace.ImageKey { return trace.ImageKey{Pid: pid, Start: uint64(pid) * 1000, ExecID: 2} }
	rows := []detect.Row{
		{Key: key(4100), Pid: 4100, PPid: 4000, Comm: "make", Exe: "/usr/bin/make", Processes: 1, Running: 1,
			Waste: detect.Waste{ExecProbes: 12, ExecNs: 48_000, Launches: 2, Worst: "launch cc (6 failed)"}},
		{Key: key(4201), Pid: 4201, PPid: 4100, Comm: "cc1", Exe: "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", Processes: 1, Exited: true,
			Waste: detect.Waste{DupFiles: 3, ExtraOpens: 13, DupNs: 26_000, OpenProbes: 40, OpenNs: 30_000,
				Worst: "/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h x13"}},
		{Key: key(4300), Pid: 4300, PPid: 1, Comm: "ev\x1b[31mil", LastComm: "w\x1b[0mrk", Exe: "/tmp/e\nvil", Processes: 1, Replaced: true, Exited: true,
			Waste: detect.Waste{DupFiles: 1, ExtraOpens: 1, DupNs: 900, Worst: "/tmp/\x1b[2Jx2"}},
		{Key: key(4400), Pid: 4400, PPid: 4000, Comm: "bash", Exe: "/usr/bin/bash", Processes: 1, Running: 1,
			Waste: detect.Waste{Lookups: 13, LookupNs: 7_800, Worst: "look up ls (6 failed)"}},
	}
	if group == "pod" {
		rows[1].Container = &trace.Container{ID: "3a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f9012", Name: "web", Pod: "shop-7d9f", Namespace: "prod"}
		group = detect.GroupPid
	}
	if group != detect.GroupPid && group != "" {
		rows = []detect.Row{
			{Key: key(4201), Pid: 4201, Comm: "cc1", Exe: "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", Processes: 301, Running: 2, LookupCalls: 4214,
				Waste: detect.Waste{DupFiles: 903, ExtraOpens: 3913, DupNs: 7_826_000, Worst: "/usr/include/stddef.h x13"}},
			{Key: key(4100), Pid: 4100, Comm: "make", Exe: "/usr/bin/make", Processes: 1, Running: 1, LookupCalls: 36,
				Waste: detect.Waste{ExecProbes: 12, ExecNs: 48_000, Launches: 2, Worst: "launch cc (6 failed)"}},
			{Key: key(4500), Pid: 4500, Comm: "python3", Exe: "/usr/bin/python3.11", Processes: 2, Running: 1,
				Waste: detect.Waste{Lookups: 146, LookupNs: 41_000, Worst: "stat /usr/lib/python3.11 x73"}},
		}
	}
	return &detect.Snapshot{
		Time: time.Date(2026, 12, 1, 21, 3, 50, 0, time.UTC), Uptime: 754 * time.Second, EventsPerSec: 12345,
		Counters: trace.Counters{DroppedEvents: 7, EventsReceived: 999, FilesCapped: 3, DetailDropped: 2, OpensUnsent: 50},
		Totals: detect.Totals{Events: 999, Opens: 5000, FailedOpens: 300, Execs: 40, FailedExecs: 12, DuplicateOpens: 14, ExecProbes: 12, ExecProbeNs: 48_000, OpenProbes: 40,
			Lookups: 800, FailedLookups: 120, LookupWaste: 13, Findings: 10},
		Processes: 57, Sort: detect.SortTime, Group: group, Rows: rows,
	}
}

// checkGolden compares got with testdata/name (see internal/golden: a
// mismatch shows a diff; -update rewrites the file).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Compare(t, filepath.Join("testdata", name), got)
}

func TestWatchGoldens(t *testing.T) {
	var table bytes.Buffer
	if err := WatchTable(&table, sampleSnapshot(detect.GroupPid)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "watch.golden", table.Bytes())
	table.Reset()
	if err := WatchTable(&table, sampleSnapshot(detect.GroupComm)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "watch.group.golden", table.Bytes())
	table.Reset()
	if err := WatchTable(&table, sampleSnapshot("pod")); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "watch.containers.golden", table.Bytes())

	const offset = 1_796_000_000_000_000_000 // the kernel's boot, in wall time
	var jl bytes.Buffer
	j := NewJSONLines(&jl)
	j.SetClock(offset)
	r := sampleResult()
	pod := &trace.Process{Container: &trace.Container{Cgroup: "/kubepods/burstable/pod1f2e/3a4b", Runtime: "containerd",
		ID: "3a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f9012", Name: "web", Pod: "shop-7d9f", Namespace: "prod"}}
	for i, ev := range sampleEvents() {
		var proc *trace.Process
		if i%2 == 1 {
			proc = pod
		}
		if err := j.Event(&ev, proc); err != nil {
			t.Fatal(err)
		}
	}
	for i := range r.Findings {
		for _, p := range r.Processes {
			if p.Key == r.Findings[i].Key {
				r.Findings[i].Proc = p
			}
		}
		if err := j.Finding(&r.Findings[i], time.Date(2026, 12, 1, 21, 3, 50, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Summary(sampleSnapshot(detect.GroupPid)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "watch.jsonl.golden", jl.Bytes())

	var ev bytes.Buffer
	p := NewEventPrinter(&ev)
	p.SetClock(offset)
	for i, e := range sampleEvents() {
		var ann detect.Annotation
		if i == 1 {
			ann.Proc = pod
		}
		switch i {
		case 1:
			ann.Dup = 2
		case 3:
			ann.ProbeFailed, ann.ProbeFound = 1, "/usr/bin/true"
		}
		p.Print(&e, ann)
	}
	checkGolden(t, "events.golden", ev.Bytes())
	ev.Reset()
	p = NewEventPrinter(&ev)
	for _, e := range sampleEvents()[:2] {
		p.Print(&e, detect.Annotation{})
	}
	checkGolden(t, "events.boot.golden", ev.Bytes())

	// --wide: UID, LAT(us) and FLAGS, on the same events and on calls
	// whose flags read otherwise (a mode, access's mode, execveat's
	// flags, an untimed call, a uid wider than its column).
	ev.Reset()
	p = NewEventPrinter(&ev)
	p.SetClock(offset)
	p.SetWide(true)
	for i, e := range append(sampleEvents(), wideEvents()...) {
		var ann detect.Annotation
		switch i {
		case 1:
			ann.Proc, ann.Dup = pod, 2
		case 3:
			ann.ProbeFailed, ann.ProbeFound = 1, "/usr/bin/true"
		}
		p.Print(&e, ann)
	}
	checkGolden(t, "events.wide.golden", ev.Bytes())

	// A tiny terminal: every line still fits (the goldens of the screen
	// are TestWatchScreenGoldens').
	for _, g := range []detect.Group{detect.GroupPid, detect.GroupExe} {
		lines := WatchScreen(sampleSnapshot(g), 40, 10, "keys: d dup, e exec, t time, q quit")
		checkFrame(t, "40x10 "+string(g), Frame{Lines: lines}, 40, 10)
	}
}

// sampleEvents are the event lines of a watch: an open, its repeat, a
// failed open with a hostile name, a failed exec, and the exec that ends
// the search.
// wideEvents are calls whose FLAGS column reads otherwise than an
// open's flags, for the --wide golden.
func wideEvents() []trace.Event {
	sh := trace.Task{Pid: 600, Tid: 600, PPid: 1, UID: 4294967294, Start: 9, ExecID: 1, Comm: "sh"}
	return []trace.Event{
		{Kind: trace.EventOpen, Task: sh, Open: trace.OpenRecord{Syscall: trace.SysOpenat, EnterNs: 1_500_000_000, ExitNs: 1_500_012_345,
			Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC, Mode: 0o644, Dirfd: -100, Ret: 3, Fname: "out", Path: "/tmp/out"}},
		{Kind: trace.EventOpen, Task: sh, Open: trace.OpenRecord{Syscall: trace.SysAccess, EnterNs: 1_500_020_000, ExitNs: 1_500_020_400,
			Mode: unix.R_OK | unix.X_OK, Dirfd: -100, Ret: -2, Fname: "/usr/local/bin/x"}},
		{Kind: trace.EventOpen, Task: sh, Open: trace.OpenRecord{Syscall: trace.SysFaccessat2, EnterNs: 1_500_030_000, ExitNs: 1_500_030_500,
			Mode: unix.F_OK, Flags: unix.AT_EACCESS, Dirfd: -100, Ret: 0, Fname: "/bin/x", Path: "/bin/x"}},
		{Kind: trace.EventOpen, Task: sh, Open: trace.OpenRecord{Syscall: trace.SysLstat, Status: trace.StUntimed, ExitNs: 1_500_040_000,
			Dirfd: -100, Ret: 0, Fname: "/bin", Path: "/usr/bin"}},
		{Kind: trace.EventExec, Task: sh, Exec: trace.ExecRecord{Syscall: trace.SysExecveat, EnterNs: 1_500_050_000, ExitNs: 1_502_050_000,
			AtFlags: unix.AT_EMPTY_PATH, Dirfd: 3, Path: "/usr/bin/true", Argv: []string{"true"}}},
	}
}

func sampleEvents() []trace.Event {
	cat := trace.Task{Pid: 500, Tid: 500, PPid: 1, UID: 1000, Start: 7, ExecID: 2, CgroupID: 1, Comm: "cat"}
	env := trace.Task{Pid: 501, Tid: 501, PPid: 1, UID: 1000, Start: 8, ExecID: 1, Comm: "env"}
	catThread := cat
	catThread.Tid = 503
	open := trace.OpenRecord{Syscall: trace.SysOpenat, EnterNs: 1_000_000_000, ExitNs: 1_000_002_000, Flags: 0x80000,
		Dev: 2049, Ino: 42, Gen: 7, FileType: trace.FileReg, Dirfd: -100, Ret: 3, Fname: "/etc/hostname", Path: "/etc/hostname"}
	again := open
	again.EnterNs, again.ExitNs, again.Ret = 1_000_010_000, 1_000_011_000, 4
	bad := trace.OpenRecord{Syscall: trace.SysOpen, EnterNs: 1_100_000_000, ExitNs: 1_100_001_000, Ret: -2,
		Fname: "e\x1b[31mvil\n", Path: "/home/u", Status: trace.StPathIsBase}
	return []trace.Event{
		{Kind: trace.EventOpen, Task: cat, Open: open},
		{Kind: trace.EventOpen, Task: cat, Open: again},
		{Kind: trace.EventOpen, Task: cat, Open: bad},
		{Kind: trace.EventExec, Task: env, Exec: trace.ExecRecord{Syscall: trace.SysExecve, EnterNs: 1_200_000_000, ExitNs: 1_200_003_000,
			Ret: -2, Filename: "/a/true", Argv: []string{"true", "x y"}}},
		{Kind: trace.EventExec, Task: env, Exec: trace.ExecRecord{Syscall: trace.SysExecve, EnterNs: 1_200_004_000, ExitNs: 1_200_090_000,
			Filename: "/usr/bin/true", Argv: []string{"true", "x y"}}},
		// Lookups: the longest syscall names line up with the rest.
		{Kind: trace.EventOpen, Task: cat, Open: trace.OpenRecord{Syscall: trace.SysNewfstatat, EnterNs: 1_300_000_000, ExitNs: 1_300_001_000,
			Dirfd: -100, Ret: -2, Fname: "lib/x.so", Path: "/home/u", Status: trace.StPathIsBase}},
		{Kind: trace.EventOpen, Task: cat, Open: trace.OpenRecord{Syscall: trace.SysFaccessat2, EnterNs: 1_300_002_000, ExitNs: 1_300_003_000,
			Dirfd: -100, Fname: "/usr/lib/x.so", Path: "/usr/lib/x.so"}},
		// A name too long for its column pushes its neighbours only; a
		// thread's call says which thread; an empty name is "".
		{Kind: trace.EventOpen, Task: catThread, Open: trace.OpenRecord{Syscall: trace.SysIoUringOpenat2, EnterNs: 1_400_000_000, ExitNs: 1_400_001_000,
			Flags: 0x8000, Dev: 2049, Ino: 42, Gen: 7, FileType: trace.FileReg, Dirfd: -100, Ret: 5, Fname: "/etc/hostname", Path: "/etc/hostname"}},
		{Kind: trace.EventOpen, Task: cat, Open: trace.OpenRecord{Syscall: trace.SysOpenat, EnterNs: 1_400_002_000, ExitNs: 1_400_003_000,
			Dirfd: -100, Ret: -2}},
	}
}
