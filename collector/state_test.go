package collector

import (
	"syscall"
	"testing"
	"time"
)

// seq builds synthetic event sequences for the detectors.
type seq struct{ evs []Event }

func task(pid, tid uint32, start, execID uint64, comm string) Task {
	return Task{Pid: pid, Tid: tid, PPid: 1, Start: start, ExecID: execID, Comm: comm}
}

func (s *seq) open(t Task, fname, path string, dev, ino uint64, ret int32) *seq {
	s.evs = append(s.evs, Event{Kind: EventOpen, Task: t, Open: OpenRecord{
		Syscall: SysOpenat, Fname: fname, Path: path, Dev: dev, Ino: ino, Ret: ret, Dirfd: -100,
		EnterNs: 100, ExitNs: 1100,
	}})
	return s
}

func (s *seq) exec(t Task, filename string, ret int32, argv ...string) *seq {
	s.evs = append(s.evs, Event{Kind: EventExec, Task: t, Exec: ExecRecord{
		Syscall: SysExecve, Filename: filename, Ret: ret, Argv: argv, EnterNs: 0, ExitNs: 2000,
	}})
	return s
}

func (s *seq) image(t Task, exe string) *seq {
	s.evs = append(s.evs, Event{Kind: EventImage, Task: t, Proc: ProcRecord{Exe: exe}})
	return s
}

func (s *seq) fork(child Task, parent uint32, parentStart uint64) *seq {
	s.evs = append(s.evs, Event{Kind: EventFork, Task: child, Proc: ProcRecord{ParentPid: parent, ParentStart: parentStart}})
	return s
}

func (s *seq) exit(t Task, code int32) *seq {
	s.evs = append(s.evs, Event{Kind: EventExit, Task: t, Proc: ProcRecord{ExitCode: code}})
	return s
}

func (s *seq) run(spawner int) *Result {
	st := NewState(spawner, nil)
	for i := range s.evs {
		st.Handle(&s.evs[i])
	}
	return st.Result()
}

func count(r *Result, kind FindingKind) int {
	n := 0
	for _, f := range r.Findings {
		if f.Kind == kind {
			n++
		}
	}
	return n
}

const enoent = -int32(syscall.ENOENT)

func TestDetectors(t *testing.T) {
	cp := task(10, 10, 500, 3, "cp")
	cpThread := task(10, 11, 500, 3, "cp")
	env := task(20, 20, 600, 1, "env")
	envAfter := task(20, 20, 600, 2, "true")
	reused := task(10, 10, 900, 1, "cat") // same pid, later start: another process
	tests := []struct {
		name  string
		s     *seq
		check func(t *testing.T, r *Result)
	}{
		{"three opens of one file by name, hard link and symlink", (&seq{}).
			open(cp, "src", "/tmp/src", 8, 42, 3).
			open(cp, "/tmp/link", "/tmp/link", 8, 42, 4).
			open(cp, "sym", "/tmp/src", 8, 42, 5).
			open(cp, "dst", "/tmp/dst", 8, 43, 6),
			func(t *testing.T, r *Result) {
				if count(r, KindDuplicateOpen) != 1 {
					t.Fatalf("findings %+v", r.Findings)
				}
				f := r.Findings[0]
				if f.Count != 3 || f.Path != "/tmp/src" || len(f.Paths) != 2 || f.Paths[1] != "/tmp/link" || f.Ino != 42 {
					t.Errorf("finding %+v", f)
				}
			}},
		{"threads count together", (&seq{}).
			open(cp, "a", "/a", 1, 1, 3).open(cpThread, "a", "/a", 1, 1, 3),
			func(t *testing.T, r *Result) {
				if count(r, KindDuplicateOpen) != 1 || len(r.Processes) != 1 || r.Processes[0].Threads != 2 {
					t.Errorf("findings %+v processes %d", r.Findings, len(r.Processes))
				}
			}},
		{"re-exec: the loader reopening libc is not a duplicate", (&seq{}).
			open(env, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3).
			image(envAfter, "/usr/bin/true").
			exec(envAfter, "/usr/bin/true", 0, "true").
			open(envAfter, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3),
			func(t *testing.T, r *Result) {
				if count(r, KindDuplicateOpen) != 0 || len(r.Processes) != 2 {
					t.Errorf("findings %+v, %d processes", r.Findings, len(r.Processes))
				}
				if r.Processes[0].Execs[0].Filename != "/usr/bin/true" || r.Processes[1].Argv[0] != "true" {
					t.Errorf("exec attributed wrongly: %+v / %+v", r.Processes[0].Execs, r.Processes[1].Argv)
				}
			}},
		{"pid reuse is a new process", (&seq{}).
			open(cp, "a", "/a", 1, 1, 3).exit(cp, 0).open(reused, "a", "/a", 1, 1, 3),
			func(t *testing.T, r *Result) {
				if count(r, KindDuplicateOpen) != 0 || len(r.Processes) != 2 {
					t.Errorf("findings %+v, %d processes", r.Findings, len(r.Processes))
				}
			}},
		{"O_PATH opens are listed apart", func() *seq {
			s := (&seq{}).open(cp, "a", "/a", 1, 1, 3).open(cp, "a", "/a", 1, 1, 4)
			s.evs[1].Open.Flags = oPath
			return s
		}(),
			func(t *testing.T, r *Result) {
				p := r.Processes[0]
				if count(r, KindDuplicateOpen) != 0 || len(p.Opens) != 1 || len(p.PathOpens) != 1 {
					t.Errorf("findings %+v opens %d path opens %d", r.Findings, len(p.Opens), len(p.PathOpens))
				}
			}},
		{"PATH probe: six misses then a hit", func() *seq {
			s := &seq{}
			for _, d := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
				s.exec(env, d+"/true", enoent, "true")
			}
			return s.image(envAfter, "/usr/bin/true").exec(envAfter, "/usr/bin/true", 0, "true")
		}(),
			func(t *testing.T, r *Result) {
				if count(r, KindFailedExecProbes) != 1 {
					t.Fatalf("findings %+v", r.Findings)
				}
				f := r.Findings[0]
				if f.Failed != 6 || f.Found == nil || *f.Found != "/usr/bin/true" || f.Target != "true" ||
					f.WastedNs != 6*2000 || len(f.Attempts) != 7 || f.Pid != 20 || f.Comm != "env" {
					t.Errorf("finding %+v", f)
				}
				if r.Execs != 7 || r.FailedExecs != 6 {
					t.Errorf("execs %d failed %d", r.Execs, r.FailedExecs)
				}
			}},
		{"PATH probe that never finds", (&seq{}).
			exec(env, "/a/nope", enoent).exec(env, "/b/nope", enoent).exit(env, 127<<8),
			func(t *testing.T, r *Result) {
				if count(r, KindFailedExecProbes) != 1 || r.Findings[0].Found != nil || r.Findings[0].Failed != 2 {
					t.Errorf("findings %+v", r.Findings)
				}
				if !r.Processes[0].Exited || r.Processes[0].ExitCode != 127 {
					t.Errorf("exit %+v", r.Processes[0])
				}
			}},
		{"ENOEXEC then /bin/sh is a shell fallback", (&seq{}).
			exec(env, "/a/script", enoent, "script").
			exec(env, "/b/script", -int32(syscall.ENOEXEC), "script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/bin/sh", 0, "/bin/sh", "/b/script"),
			func(t *testing.T, r *Result) {
				if count(r, KindExecShellFallback) != 1 || count(r, KindFailedExecProbes) != 1 {
					t.Fatalf("findings %+v", r.Findings)
				}
				for _, f := range r.Findings {
					if f.Kind == KindFailedExecProbes && (f.Failed != 1 || *f.Found != "/b/script") {
						t.Errorf("probe finding %+v", f)
					}
				}
			}},
		{"ENOEXEC then /bin/sh, arguments redacted", (&seq{}).
			exec(env, "/b/script", -int32(syscall.ENOEXEC), "script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/bin/sh", 0, "/bin/sh", RedactArg("/b/script")),
			func(t *testing.T, r *Result) {
				if count(r, KindExecShellFallback) != 1 {
					t.Fatalf("with --redact-args the shell fallback is missed: %+v", r.Findings)
				}
			}},
		{"a redacted argument that is not the script's is no fallback", (&seq{}).
			exec(env, "/b/script", -int32(syscall.ENOEXEC), "script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/bin/sh", 0, "/bin/sh", RedactArg("/c/other")),
			func(t *testing.T, r *Result) {
				if count(r, KindExecShellFallback) != 0 {
					t.Fatalf("findings %+v", r.Findings)
				}
			}},
		{"open probe chain: one basename in several dirs", (&seq{}).
			open(cp, "/x/hw3/libfoo.so", "", 0, 0, enoent).
			open(cp, "/x/hw2/libfoo.so", "", 0, 0, enoent).
			open(cp, "/x/libfoo.so", "/x/libfoo.so", 1, 9, 3),
			func(t *testing.T, r *Result) {
				if count(r, KindFailedOpenProbes) != 1 || r.Findings[0].Failed != 2 || *r.Findings[0].Found != "/x/libfoo.so" {
					t.Errorf("findings %+v", r.Findings)
				}
			}},
		{"launcher copy of once is hidden", (&seq{}).
			fork(task(30, 30, 700, 5, "once"), 99, 1).
			image(task(30, 30, 700, 6, "cp"), "/usr/bin/cp").
			exec(task(30, 30, 700, 6, "cp"), "/usr/bin/cp", 0, "cp"),
			func(t *testing.T, r *Result) {
				if len(r.Processes) != 1 || r.Processes[0].Comm != "cp" || r.Execs != 1 {
					t.Errorf("processes %+v execs %d", r.Processes, r.Execs)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, tc.s.run(99)) })
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		code int32
		want int
	}{{0, 0}, {1 << 8, 1}, {127 << 8, 127}, {9, 137}, {15 | 0x80, 143}} {
		if got := exitStatus(tc.code); got != tc.want {
			t.Errorf("exitStatus(%#x) = %d, want %d", tc.code, got, tc.want)
		}
	}
}

// TestCallsCapped: a file opened far more than MaxCalls times keeps exact
// counts but a bounded list of calls.
func TestCallsCapped(t *testing.T) {
	cp := task(10, 10, 500, 3, "loop")
	s := &seq{}
	for i := 0; i < MaxCalls+100; i++ {
		s.open(cp, "f", "/f", 1, 1, 3)
	}
	s.evs[0].Open.Syscall = SysOpen
	r := s.run(99)
	fo := r.Processes[0].Opens[0]
	if fo.Count != MaxCalls+100 || len(fo.Calls) != MaxCalls || fo.CallsOmitted != 100 {
		t.Errorf("count %d, %d calls kept, %d omitted", fo.Count, len(fo.Calls), fo.CallsOmitted)
	}
	if len(fo.Kinds) != 2 || fo.Kinds[0].Count != 1 || fo.Kinds[1].Count != MaxCalls+99 {
		t.Errorf("kinds %+v", fo.Kinds)
	}
	f := r.Findings[0]
	if f.Count != MaxCalls+100 || f.WastedNs != uint64(MaxCalls+99)*1000 {
		t.Errorf("finding count %d wasted %d", f.Count, f.WastedNs)
	}
}

func (s *seq) tally(t Task, sc Syscall, flags, dev, ino, opens, ns uint64) *seq {
	s.evs = append(s.evs, Event{Kind: EventTally, Task: t, Tally: TallyRecord{
		Syscall: sc, Flags: flags, Dev: dev, Ino: ino, Opens: opens, Ns: ns}})
	return s
}

// TestTalliesAddUp: the opens the kernel counted without sending add to
// the sent ones, per kind, in once run's state and in watch's aggregator
// alike; a tally for a file whose sent opens were lost still counts.
func TestTalliesAddUp(t *testing.T) {
	cp := task(10, 10, 500, 3, "cp")
	s := (&seq{}).
		open(cp, "src", "/tmp/src", 8, 42, 3).
		open(cp, "src", "/tmp/src", 8, 42, 3).
		tally(cp, SysOpenat, 0, 8, 42, 98, 98_000).
		tally(cp, SysOpen, 0, 8, 42, 10, 5_000).
		tally(cp, SysOpenat, 0, 8, 77, 4, 400). // its sent opens were lost
		tally(cp, SysOpenat, oPath, 8, 42, 7, 700)

	r := s.run(1)
	if len(r.Processes) != 1 {
		t.Fatalf("%d processes", len(r.Processes))
	}
	p := r.Processes[0]
	var src, lost *FileOpens
	for _, fo := range p.Opens {
		switch fo.Ino {
		case 42:
			src = fo
		case 77:
			lost = fo
		}
	}
	if src == nil || src.Count != 110 || src.CallsOmitted != 108 || src.ExtraNs != 1000+98_000+5_000 {
		t.Fatalf("src %+v", src)
	}
	kinds := map[Syscall]int{}
	for _, k := range src.Kinds {
		kinds[k.Syscall] += k.Count
	}
	if kinds[SysOpenat] != 100 || kinds[SysOpen] != 10 {
		t.Errorf("kinds %+v", src.Kinds)
	}
	if lost == nil || lost.Count != 4 {
		t.Errorf("file with lost sent opens: %+v", lost)
	}
	if len(p.PathOpens) != 1 || p.PathOpens[0].Count != 7 {
		t.Errorf("O_PATH tally: %+v", p.PathOpens)
	}
	if r.Opens != 2+98+10+4+7 {
		t.Errorf("total opens %d", r.Opens)
	}

	l := NewLive(LiveOptions{})
	feed(l, s, time.Unix(1000, 0))
	rows := l.Rows(SortDup, 0)
	// src: 110 opens, 109 extra; the lost-file tally: 4 opens, 3 extra.
	if len(rows) != 1 || rows[0].DupFiles != 2 || rows[0].ExtraOpens != 109+3 || rows[0].Opens != 2+98+10+4+7 {
		t.Fatalf("live rows %+v", rows)
	}
	feed(l, (&seq{}).exit(cp, 0), time.Unix(1001, 0))
	counts := map[uint64]int{}
	for _, f := range l.Drain() {
		if f.Kind == KindDuplicateOpen {
			counts[f.Ino] = f.Count
		}
	}
	if counts[42] != 110 || counts[77] != 4 {
		t.Errorf("live duplicate findings %v", counts)
	}
}
