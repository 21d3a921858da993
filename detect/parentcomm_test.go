package detect

import (
	"testing"

	"github.com/oncetool/once/trace"
)

// TestParentCommOfAnUnknownParent: a process whose parent the engine
// never saw (a shell that predates once) gets its parent's comm from
// Options.ParentComm; a parent the engine knows is named by the engine,
// without asking; without the option the name stays empty.
func TestParentCommOfAnUnknownParent(t *testing.T) {
	shell := task(100, 100, 5, 1, "bash")
	child := task(200, 200, 7, 1, "cat")
	child.PPid = 100
	for _, tc := range []struct {
		name   string
		s      *seq
		lookup bool
		want   string
		asked  int
	}{
		{"parent unseen", new(seq).open(child, "/a", "/a", 1, 1, 3).open(child, "/a", "/a", 1, 1, 3), true, "bash (from /proc)", 1},
		{"parent unseen, no lookup", new(seq).open(child, "/a", "/a", 1, 1, 3).open(child, "/a", "/a", 1, 1, 3), false, "", 0},
		{"parent seen", new(seq).open(shell, "/b", "/b", 1, 2, 3).open(child, "/a", "/a", 1, 1, 3).open(child, "/a", "/a", 1, 1, 3), true, "bash", 0},
		{"forked by an unseen parent", new(seq).fork(child, 100, 5).open(child, "/a", "/a", 1, 1, 3).open(child, "/a", "/a", 1, 1, 3), true, "bash (from /proc)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			o := Options{Policy: Bounded(0, 0)}
			if tc.lookup {
				o.ParentComm = func(pid uint32) string {
					switch pid {
					case 100:
						asked++
						return "bash (from /proc)"
					case 1: // the shell's own parent, unseen too
						return "init"
					}
					t.Errorf("asked the comm of pid %d, want 100's (or 1's)", pid)
					return ""
				}
			}
			e := New(o)
			feed(e, tc.s, t0)
			e.Finish(t0)
			var got []trace.Finding
			for _, f := range e.Drain() {
				if f.Kind == trace.KindDuplicateOpen {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].ParentComm != tc.want {
				t.Fatalf("duplicate findings %+v; want one with parent comm %q", got, tc.want)
			}
			if asked != tc.asked {
				t.Errorf("ParentComm asked %d times for pid 100, want %d", asked, tc.asked)
			}
		})
	}
}

// TestThreadNameIsNotTheProcesss: comm is per thread. A process older
// than the trace whose first event seen is a named worker thread's
// (pthread_setname_np "worker-thr") takes its leader's name at the
// leader's first event, as ps and /proc/PID/comm say; the process's
// findings and its row are the leader's program. once run names it so
// from the fork; watch named it after the worker.
func TestThreadNameIsNotTheProcesss(t *testing.T) {
	for _, pol := range []Policy{Bounded(0, 0), KeepAll("")} {
		e := New(Options{Policy: pol})
		worker := task(10, 11, 1, 1, "worker-thr")
		leader := task(10, 10, 1, 1, "thr")
		feed(e, (&seq{}).open(worker, "/f", "/f", 1, 1, 3).open(worker, "/f", "/f", 1, 1, 3).
			open(leader, "/g", "/g", 1, 2, 3).open(leader, "/g", "/g", 1, 2, 3), t0)
		if rows := e.Rows(SortTime, 10, GroupPid); len(rows) != 1 || rows[0].Comm != "thr" {
			t.Errorf("bounded %v: rows %+v, want one, thr", pol.Bounded, rows)
		}
		feed(e, (&seq{}).exit(leader, 0), t0)
		for _, f := range e.Drain() {
			if f.Comm != "thr" {
				t.Errorf("bounded %v: %s of %s: comm %q, want thr", pol.Bounded, f.Kind, f.Subject(), f.Comm)
			}
		}
	}
}

// TestThreadNameWhenTheLeaderIsSilent: a process older than the trace
// (or evicted and seen again) whose leader makes no call the trace sees
// (a JVM's main thread, parked in pthread_join) is first seen from a
// named worker thread. Until its leader says, it is named by its
// leader's comm from Options.ParentComm (/proc/PID/comm, what ps says),
// not by the worker's own name: its findings, its row and the metrics'
// comm label are the program's, not "wrk-0". Without the option the
// worker's name is all there is.
func TestThreadNameWhenTheLeaderIsSilent(t *testing.T) {
	worker := task(10, 11, 1, 1, "wrk-0")
	other := task(10, 12, 1, 1, "wrk-1")
	s := (&seq{}).open(worker, "/f", "/f", 1, 1, 3).open(worker, "/f", "/f", 1, 1, 3).
		open(other, "/g", "/g", 1, 2, 3).open(other, "/g", "/g", 1, 2, 3)
	for _, tc := range []struct {
		name   string
		lookup bool
		want   string
	}{
		{"leader's comm from /proc", true, "javaish"},
		{"no lookup", false, "wrk-0"},
	} {
		for _, pol := range []Policy{Bounded(0, 0), KeepAll("")} {
			o := Options{Policy: pol}
			if tc.lookup {
				o.ParentComm = func(pid uint32) string {
					if pid == 10 {
						return "javaish"
					}
					return ""
				}
			}
			e := New(o)
			feed(e, s, t0)
			if rows := e.Rows(SortTime, 10, GroupPid); len(rows) != 1 || rows[0].Comm != tc.want {
				t.Errorf("%s, bounded %v: rows %+v, want one, %s", tc.name, pol.Bounded, rows, tc.want)
			}
			if c, ok := e.Comm(worker.Image()); !ok || c != tc.want {
				t.Errorf("%s, bounded %v: Comm = %q, %v; want %q", tc.name, pol.Bounded, c, ok, tc.want)
			}
			e.Finish(t0)
			for _, f := range e.Drain() {
				if f.Comm != tc.want {
					t.Errorf("%s, bounded %v: %s of %s: comm %q, want %s", tc.name, pol.Bounded, f.Kind, f.Subject(), f.Comm, tc.want)
				}
			}
		}
	}
}

// TestParentCommAfterReparent: a daemon's grandchild, forked by "tt"
// (pid 20), outlives it and is reparented (to init, or to a subreaper)
// before it execs cat. The cat image's ppid is its parent then, as the
// kernel gives it; its parent_comm must name that parent, not the one
// that forked it: "ppid 1 (tt)" named a pid 1 that is no tt. An exec
// that keeps the parent keeps its name.
func TestParentCommAfterReparent(t *testing.T) {
	tt := task(20, 20, 5, 1, "tt")
	reaper := task(10, 10, 3, 1, "reaper")
	child := task(30, 30, 7, 1, "tt")
	child.PPid = 20
	for _, tc := range []struct {
		name     string
		newPPid  uint32
		s        *seq
		wantComm string
	}{
		{"reparented to init, unseen", 1, new(seq).open(tt, "/b", "/b", 1, 2, 3), "init (from /proc)"},
		{"reparented to a subreaper in the trace", 10, new(seq).open(reaper, "/r", "/r", 1, 3, 3).open(tt, "/b", "/b", 1, 2, 3), "reaper"},
		{"parent kept", 20, new(seq).open(tt, "/b", "/b", 1, 2, 3), "tt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := task(30, 30, 7, 2, "cat")
			cat.PPid = tc.newPPid
			s := tc.s.fork(child, 20, 5).open(child, "/a", "/a", 1, 1, 3).
				exit(tt, 0).
				exec(child, "/bin/cat", 0, "cat").image(cat, "/usr/bin/cat").
				open(cat, "/a", "/a", 1, 1, 3).open(cat, "/a", "/a", 1, 1, 3).exit(cat, 0)
			for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
				e := New(Options{Policy: pol, ParentComm: func(pid uint32) string {
					if pid == 1 {
						return "init (from /proc)"
					}
					return "?"
				}})
				feed(e, s, t0)
				e.Finish(t0)
				var got []trace.Finding
				for _, f := range e.Drain() {
					if f.Kind == trace.KindDuplicateOpen && f.Comm == "cat" {
						got = append(got, f)
					}
				}
				if len(got) != 1 || got[0].PPid != tc.newPPid || got[0].ParentComm != tc.wantComm {
					t.Fatalf("bounded %v: cat's findings %+v; want one, ppid %d (%s)", pol.Bounded, got, tc.newPPid, tc.wantComm)
				}
			}
		})
	}
}

// TestParentCommCloneParent: a child made with CLONE_PARENT (runc's
// nsexec) is its caller's sibling: the fork record's parent is the
// caller, whose image it copies, but its parent, as getppid and the
// kernel's ppid say, is the caller's. Its forked image names that parent,
// as its image after an exec does.
func TestParentCommCloneParent(t *testing.T) {
	top := task(10, 10, 3, 1, "runc")
	caller := task(20, 20, 5, 1, "runc:[1:CHILD]")
	caller.PPid = 10
	child := task(30, 30, 7, 1, "runc:[1:CHILD]")
	child.PPid = 10 // CLONE_PARENT: the caller's parent
	s := new(seq).open(top, "/t", "/t", 1, 3, 3).open(caller, "/c", "/c", 1, 2, 3).
		fork(child, 20, 5).open(child, "/a", "/a", 1, 1, 3).open(child, "/a", "/a", 1, 1, 3).exit(child, 0)
	for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
		e := New(Options{Policy: pol})
		feed(e, s, t0)
		e.Finish(t0)
		var got []trace.Finding
		for _, f := range e.Drain() {
			if f.Kind == trace.KindDuplicateOpen && f.Pid == 30 {
				got = append(got, f)
			}
		}
		if len(got) != 1 || got[0].PPid != 10 || got[0].ParentComm != "runc" {
			t.Fatalf("bounded %v: the child's findings %+v; want one, ppid 10 (runc)", pol.Bounded, got)
		}
	}
}
