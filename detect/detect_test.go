package detect

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/trace"
)

var (
	cp       = task(10, 10, 500, 3, "cp")
	cpThread = task(10, 11, 500, 3, "cp")
	env      = task(20, 20, 600, 1, "env")
	envAfter = task(20, 20, 600, 2, "true")
	reused   = task(10, 10, 900, 1, "cat") // same pid, later start: another process
)

func TestDetectors(t *testing.T) {
	tests := []struct {
		name  string
		s     *seq
		check func(t *testing.T, r *trace.Result)
	}{
		{"three opens of one file by name, hard link and symlink", (&seq{}).
			open(cp, "src", "/tmp/src", 8, 42, 3).
			open(cp, "/tmp/link", "/tmp/link", 8, 42, 4).
			open(cp, "sym", "/tmp/src", 8, 42, 5).
			open(cp, "dst", "/tmp/dst", 8, 43, 6),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindDuplicateOpen) != 1 {
					t.Fatalf("findings %+v", r.Findings)
				}
				f := r.Findings[0]
				if f.Count != 3 || f.Path != "/tmp/src" || len(f.Paths) != 2 || f.Paths[1] != "/tmp/link" || f.Ino != 42 {
					t.Errorf("finding %+v", f)
				}
			}},
		{"threads count together", (&seq{}).
			open(cp, "a", "/a", 1, 1, 3).open(cpThread, "a", "/a", 1, 1, 3),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindDuplicateOpen) != 1 || len(r.Processes) != 1 || r.Processes[0].Threads != 2 {
					t.Errorf("findings %+v processes %d", r.Findings, len(r.Processes))
				}
			}},
		{"re-exec: the loader reopening libc is not a duplicate", (&seq{}).
			open(env, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3).
			image(envAfter, "/usr/bin/true").
			exec(envAfter, "/usr/bin/true", 0, "true").
			open(envAfter, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindDuplicateOpen) != 0 || len(r.Processes) != 2 {
					t.Errorf("findings %+v, %d processes", r.Findings, len(r.Processes))
				}
				if r.Processes[0].Execs[0].Filename != "/usr/bin/true" || r.Processes[1].Argv[0] != "true" {
					t.Errorf("exec attributed wrongly: %+v / %+v", r.Processes[0].Execs, r.Processes[1].Argv)
				}
			}},
		{"pid reuse is a new process", (&seq{}).
			open(cp, "a", "/a", 1, 1, 3).exit(cp, 0).open(reused, "a", "/a", 1, 1, 3),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindDuplicateOpen) != 0 || len(r.Processes) != 2 {
					t.Errorf("findings %+v, %d processes", r.Findings, len(r.Processes))
				}
			}},
		{"O_PATH opens are listed apart", (&seq{}).
			open(cp, "a", "/a", 1, 1, 3).
			open(cp, "a", "/a", 1, 1, 4).with(func(ev *trace.Event) { ev.Open.Flags = trace.OPath }),
			func(t *testing.T, r *trace.Result) {
				p := r.Processes[0]
				if count(r.Findings, trace.KindDuplicateOpen) != 0 || len(p.Opens) != 1 || len(p.PathOpens) != 1 {
					t.Errorf("findings %+v opens %d path opens %d", r.Findings, len(p.Opens), len(p.PathOpens))
				}
				if p.Totals.Files != 1 || p.Totals.Opens != 2 || p.Totals.DupFiles != 0 {
					t.Errorf("totals %+v", p.Totals)
				}
			}},
		{"PATH probe: six misses then a hit", func() *seq {
			s := &seq{}
			for _, d := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
				s.exec(env, d+"/true", enoent, "true")
			}
			return s.image(envAfter, "/usr/bin/true").exec(envAfter, "/usr/bin/true", 0, "true")
		}(),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindFailedExecProbes) != 1 {
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
				if p := r.Processes[0]; p.Totals.Execs != 7 || p.Totals.FailedExecs != 6 {
					t.Errorf("process totals %+v", p.Totals)
				}
			}},
		{"PATH probe that never finds", (&seq{}).
			exec(env, "/a/nope", enoent).exec(env, "/b/nope", enoent).exit(env, 127<<8),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindFailedExecProbes) != 1 || r.Findings[0].Found != nil || r.Findings[0].Failed != 2 {
					t.Errorf("findings %+v", r.Findings)
				}
				if !r.Processes[0].Exited || r.Processes[0].ExitCode != 127 {
					t.Errorf("exit %+v", r.Processes[0])
				}
			}},
		{"a search for another name ends the chain before it", (&seq{}).
			exec(env, "/a/python3", enoent).exec(env, "/b/python3", enoent).
			exec(env, "/a/python", enoent).
			image(envAfter, "/b/python").exec(envAfter, "/b/python", 0, "python"),
			func(t *testing.T, r *trace.Result) {
				if len(r.Findings) != 2 {
					t.Fatalf("findings %+v", r.Findings)
				}
				for _, f := range r.Findings {
					switch f.Target {
					case "python3":
						if f.Failed != 2 || f.Found != nil {
							t.Errorf("python3 chain %+v", f)
						}
					case "python":
						if f.Failed != 1 || f.Found == nil || *f.Found != "/b/python" {
							t.Errorf("python chain %+v", f)
						}
					default:
						t.Errorf("finding %+v", f)
					}
				}
			}},
		{"ENOEXEC then /bin/sh is one chain, a shell fallback, with every result", (&seq{}).
			exec(env, "/a/script", enoent, "script").
			exec(env, "/b/script", enoexec, "script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/bin/sh", 0, "/bin/sh", "/b/script"),
			func(t *testing.T, r *trace.Result) {
				if len(r.Findings) != 1 || r.Findings[0].Kind != trace.KindExecShellFallback {
					t.Fatalf("findings %+v", r.Findings)
				}
				f := r.Findings[0]
				if f.Failed != 2 || f.Target != "script" || f.Found == nil || *f.Found != "/bin/sh" || len(f.Attempts) != 3 {
					t.Fatalf("finding %+v", f)
				}
				if f.Attempts[0].Errno != -enoent || f.Attempts[1].Errno != -enoexec || f.Attempts[2].Errno != 0 ||
					f.Attempts[1].Fallback || !f.Attempts[2].Fallback {
					t.Errorf("attempts %+v", f.Attempts)
				}
			}},
		{"the shell fallback's own search is part of the chain", (&seq{}).
			exec(env, "/b/script", enoexec, "script").
			exec(env, "/bin/sh", enoent, "sh", "/b/script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/usr/bin/sh", 0, "sh", "/b/script"),
			func(t *testing.T, r *trace.Result) {
				if len(r.Findings) != 1 || r.Findings[0].Kind != trace.KindExecShellFallback {
					t.Fatalf("findings %+v", r.Findings)
				}
				if f := r.Findings[0]; f.Failed != 2 || *f.Found != "/usr/bin/sh" || len(f.Attempts) != 3 {
					t.Errorf("finding %+v", f)
				}
			}},
		{"ENOEXEC then /bin/sh, arguments redacted", (&seq{}).
			exec(env, "/b/script", enoexec, "script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/bin/sh", 0, "/bin/sh", trace.RedactArg("/b/script")),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindExecShellFallback) != 1 {
					t.Fatalf("with --redact-args the shell fallback is missed: %+v", r.Findings)
				}
			}},
		{"a redacted argument that is not the script's is no fallback", (&seq{}).
			exec(env, "/b/script", enoexec, "script").
			image(envAfter, "/usr/bin/dash").
			exec(envAfter, "/bin/sh", 0, "/bin/sh", trace.RedactArg("/c/other")),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindExecShellFallback) != 0 || count(r.Findings, trace.KindFailedExecProbes) != 1 {
					t.Fatalf("findings %+v", r.Findings)
				}
				if f := r.Findings[0]; f.Found != nil || f.Failed != 1 || f.Attempts[0].Errno != -enoexec {
					t.Errorf("an ENOEXEC with no retry is a failed exec: %+v", f)
				}
			}},
		{"open probe chain: one basename in several dirs", (&seq{}).
			open(cp, "/x/hw3/libfoo.so", "", 0, 0, enoent).
			open(cp, "/x/hw2/libfoo.so", "", 0, 0, enoent).
			open(cp, "/x/libfoo.so", "/x/libfoo.so", 1, 9, 3),
			func(t *testing.T, r *trace.Result) {
				if count(r.Findings, trace.KindFailedOpenProbes) != 1 || r.Findings[0].Failed != 2 || *r.Findings[0].Found != "/x/libfoo.so" {
					t.Errorf("findings %+v", r.Findings)
				}
			}},
		{"launcher copy of once is hidden", (&seq{}).
			fork(task(30, 30, 700, 5, "once"), 99, 1).
			image(task(30, 30, 700, 6, "cp"), "/usr/bin/cp").
			exec(task(30, 30, 700, 6, "cp"), "/usr/bin/cp", 0, "cp"),
			func(t *testing.T, r *trace.Result) {
				if len(r.Processes) != 1 || r.Processes[0].Comm != "cp" || r.Execs != 1 {
					t.Errorf("processes %+v execs %d", r.Processes, r.Execs)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, tc.s.run(99)) })
	}
}

// TestCallsCapped: a file opened far more than the calls kept keeps exact
// counts but a bounded list of calls.
func TestCallsCapped(t *testing.T) {
	loop := task(10, 10, 500, 3, "loop")
	s := &seq{}
	for i := 0; i < DefaultMaxCalls+100; i++ {
		s.open(loop, "f", "/f", 1, 1, 3)
	}
	s.evs[0].Open.Syscall = trace.SysOpen
	r := s.run(99)
	fo := r.Processes[0].Opens[0]
	if fo.Count != DefaultMaxCalls+100 || len(fo.Calls) != DefaultMaxCalls || fo.CallsOmitted != 100 {
		t.Errorf("count %d, %d calls kept, %d omitted", fo.Count, len(fo.Calls), fo.CallsOmitted)
	}
	if len(fo.Kinds) != 2 || fo.Kinds[0].Count != 1 || fo.Kinds[1].Count != DefaultMaxCalls+99 {
		t.Errorf("kinds %+v", fo.Kinds)
	}
	f := r.Findings[0]
	if f.Count != DefaultMaxCalls+100 || f.WastedNs != uint64(DefaultMaxCalls+99)*1000 {
		t.Errorf("finding count %d wasted %d", f.Count, f.WastedNs)
	}
}

// TestSpecialOpens: opens of devices, FIFOs and sockets are listed apart
// from files (and from O_PATH opens), counted in the totals, never a
// duplicate, under both policies; a directory's repeats are duplicates.
func TestSpecialOpens(t *testing.T) {
	tests := []struct {
		name    string
		ftype   uint16
		flags   uint64
		opens   int
		tally   uint64 // opens counted in the kernel after the sent ones
		dup     bool   // a duplicate_open finding
		list    string // "opens", "path", "special"
		counted int    // its count in the list
	}{
		{"character device", trace.FileChr, 0, 2, 0, false, "special", 2},
		{"block device", trace.FileBlk, 0, 3, 0, false, "special", 3},
		{"FIFO", trace.FileFIFO, 0, 2, 0, false, "special", 2},
		{"socket", trace.FileSock, 0, 2, 0, false, "special", 2},
		{"device, repeats tallied in the kernel", trace.FileChr, 0, 1, 99, false, "special", 100},
		{"device opened O_PATH", trace.FileChr, trace.OPath, 2, 0, false, "path", 2},
		{"regular file", trace.FileReg, 0, 2, 0, true, "opens", 2},
		{"regular file, repeats tallied", trace.FileReg, 0, 1, 9, true, "opens", 10},
		{"directory", trace.FileDir, 0, 2, 0, true, "opens", 2},
		{"type unknown", 0, 0, 2, 0, true, "opens", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &seq{}
			for i := 0; i < tt.opens; i++ {
				s.open(cp, "x", "/x", 5, 4, 3).with(func(ev *trace.Event) {
					ev.Open.FileType, ev.Open.Flags = tt.ftype, tt.flags
				})
			}
			if tt.tally > 0 {
				s.tally(cp, trace.SysOpenat, tt.flags, 5, 4, tt.tally, 100)
			}
			want := 0
			if tt.dup {
				want = 1
			}
			r := s.run(1)
			if n := count(r.Findings, trace.KindDuplicateOpen); n != want {
				t.Errorf("%d duplicate_open findings, want %d", n, want)
			}
			if n := count(s.bounded(), trace.KindDuplicateOpen); n != want {
				t.Errorf("watch: %d duplicate_open findings, want %d", n, want)
			}
			p := r.Processes[0]
			lists := map[string][]*trace.FileOpens{"opens": p.Opens, "path": p.PathOpens, "special": p.SpecialOpens}
			for name, l := range lists {
				n := 0
				if name == tt.list {
					n = 1
				}
				if len(l) != n {
					t.Errorf("%s: %d files, want %d", name, len(l), n)
				}
			}
			if l := lists[tt.list]; len(l) == 1 && (l[0].Count != tt.counted || l[0].FileType != tt.ftype) {
				t.Errorf("%s: count %d type %o, want %d %o", tt.list, l[0].Count, l[0].FileType, tt.counted, tt.ftype)
			}
			dupFiles := 0
			if tt.dup {
				dupFiles = 1
			}
			if p.Totals.Files != 1 || p.Totals.Opens != tt.counted || p.Totals.DupFiles != dupFiles {
				t.Errorf("totals %+v", p.Totals)
			}
			if r.Opens != tt.counted {
				t.Errorf("opens %d", r.Opens)
			}
		})
	}
	// A device opened both ways is one file, in both lists.
	s := (&seq{}).
		open(cp, "n", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
		open(cp, "n", "/dev/null", 5, 4, 3).with(func(ev *trace.Event) { ev.Open.FileType, ev.Open.Flags = trace.FileChr, trace.OPath })
	p := s.run(1).Processes[0]
	if len(p.SpecialOpens) != 1 || len(p.PathOpens) != 1 || len(p.Opens) != 0 || p.Totals.Files != 1 {
		t.Errorf("special %d path %d opens %d totals %+v", len(p.SpecialOpens), len(p.PathOpens), len(p.Opens), p.Totals)
	}
	// Under --files duplicates, a device opened once is not listed; twice, it is.
	s = (&seq{}).
		open(cp, "n", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
		open(cp, "z", "/dev/zero", 5, 5, 3).with(ftype(trace.FileChr)).
		open(cp, "z", "/dev/zero", 5, 5, 3).with(ftype(trace.FileChr))
	p = s.runPolicy(KeepAll(trace.FilesDuplicates), 1).Processes[0]
	if len(p.SpecialOpens) != 1 || p.SpecialOpens[0].Path != "/dev/zero" || p.SpecialOpens[0].Count != 2 {
		t.Errorf("special opens %+v", p.SpecialOpens)
	}
}

// TestCheckSpecialOpens: --max-opens leaves devices out, --opens counts
// the device it names.
func TestCheckSpecialOpens(t *testing.T) {
	r := (&seq{}).
		open(cp, "n", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
		open(cp, "n", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
		open(cp, "n", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
		exit(cp, 0).
		run(1)
	esc := func(s string) string { return s }
	if v := (&Assertions{MaxOpens: 1, MaxExecProbes: -1}).Check(r, esc); len(v) != 0 {
		t.Errorf("--max-opens 1: %q", v)
	}
	a := &Assertions{MaxOpens: -1, MaxExecProbes: -1, Opens: []OpensAssertion{{Path: "/dev/null", Dev: 5, Ino: 4, Count: 3}}}
	if v := a.Check(r, esc); len(v) != 0 {
		t.Errorf("--opens /dev/null=3: %q", v)
	}
	a.Opens[0].Count = 2
	if v := a.Check(r, esc); len(v) != 1 {
		t.Errorf("--opens /dev/null=2: %q, want one violation", v)
	}
}

// TestCheckOpensEveryWay: --opens counts a process's opens of the file
// whichever list holds them, as strace counts them: an O_PATH open and a
// read-only one are 2 opens, not 1 and 1.
func TestCheckOpensEveryWay(t *testing.T) {
	opath := func(ev *trace.Event) { ev.Open.Flags = trace.OPath }
	r := (&seq{}).
		open(cp, "f", "/tmp/f", 8, 42, 3).with(opath).
		open(cp, "f", "/tmp/f", 8, 42, 4).
		exit(cp, 0).
		run(1)
	esc := func(s string) string { return s }
	for _, tc := range []struct {
		count int
		want  []string
	}{
		{2, nil},
		{1, []string{"cp opened /tmp/f 2 times, expected 1"}},
		{3, []string{"cp opened /tmp/f 2 times, expected 3"}},
	} {
		a := &Assertions{MaxOpens: -1, MaxExecProbes: -1, Opens: []OpensAssertion{{Path: "/tmp/f", Dev: 8, Ino: 42, Count: tc.count}}}
		if v := a.Check(r, esc); !slices.Equal(v, tc.want) {
			t.Errorf("--opens /tmp/f=%d: %q, want %q", tc.count, v, tc.want)
		}
	}
}

// TestCheckOpensGeneration: a file made during the run with the inode
// number of the one --opens names (ext4 gives a freed number to the next
// file: rm and create, or a rename over it) is another file where the
// assertion has the named one's generation; without one, the device and
// number are all there is.
func TestCheckOpensGeneration(t *testing.T) {
	gen := func(g uint32) func(*trace.Event) { return func(ev *trace.Event) { ev.Open.Gen = g } }
	r := (&seq{}).
		open(cp, "f", "/tmp/f", 8, 42, 3).with(gen(7)).
		open(cp, "t", "/tmp/t", 8, 42, 3).with(gen(9)).
		open(cp, "t", "/tmp/t", 8, 42, 3).with(gen(9)).
		exit(cp, 0).
		run(1)
	esc := func(s string) string { return s }
	for _, tc := range []struct {
		name string
		a    OpensAssertion
		want []string
	}{
		{"the named file", OpensAssertion{Path: "/tmp/f", Dev: 8, Ino: 42, Gen: 7, HasGen: true, Count: 1}, nil},
		{"the named file, twice", OpensAssertion{Path: "/tmp/f", Dev: 8, Ino: 42, Gen: 7, HasGen: true, Count: 2}, []string{"cp opened /tmp/f 1 time, expected 2"}},
		{"the file made with its number", OpensAssertion{Path: "/tmp/t", Dev: 8, Ino: 42, Gen: 9, HasGen: true, Count: 2}, nil},
		{"no generation", OpensAssertion{Path: "/tmp/f", Dev: 8, Ino: 42, Count: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Assertions{MaxOpens: -1, MaxExecProbes: -1, Opens: []OpensAssertion{tc.a}}
			if v := a.Check(r, esc); !slices.Equal(v, tc.want) {
				t.Errorf("%q, want %q", v, tc.want)
			}
		})
	}
}

// TestTalliesAddUp: the opens the kernel counted without sending add to
// the sent ones, per kind, under both policies; a tally for a file whose
// sent opens were lost still counts.
func TestTalliesAddUp(t *testing.T) {
	s := (&seq{}).
		open(cp, "src", "/tmp/src", 8, 42, 3).
		open(cp, "src", "/tmp/src", 8, 42, 3).
		tally(cp, trace.SysOpenat, 0, 8, 42, 98, 98_000).
		tally(cp, trace.SysOpen, 0, 8, 42, 10, 5_000).
		tally(cp, trace.SysOpenat, 0, 8, 77, 4, 400). // its sent opens were lost
		tally(cp, trace.SysOpenat, trace.OPath, 8, 42, 7, 700)

	r := s.run(1)
	if len(r.Processes) != 1 {
		t.Fatalf("%d processes", len(r.Processes))
	}
	p := r.Processes[0]
	var src, lost *trace.FileOpens
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
	kinds := map[trace.Syscall]int{}
	for _, k := range src.Kinds {
		kinds[k.Syscall] += k.Count
	}
	if kinds[trace.SysOpenat] != 100 || kinds[trace.SysOpen] != 10 {
		t.Errorf("kinds %+v", src.Kinds)
	}
	if lost == nil || lost.Count != 4 {
		t.Errorf("file with lost sent opens: %+v", lost)
	}
	if len(p.PathOpens) != 1 || p.PathOpens[0].Count != 7 {
		t.Errorf("O_PATH tally: %+v", p.PathOpens)
	}
	if r.Opens != 2+98+10+4+7 || p.Totals.Opens != r.Opens {
		t.Errorf("total opens %d, process %d", r.Opens, p.Totals.Opens)
	}

	e := New(Options{Policy: Bounded(0, 0)})
	feed(e, s, t0)
	rows := e.Rows(SortDup, 0, GroupPid)
	// src: 110 opens, 109 extra; the lost-file tally: 4 opens, 3 extra.
	if len(rows) != 1 || rows[0].DupFiles != 2 || rows[0].ExtraOpens != 109+3 || rows[0].Opens != 2+98+10+4+7 {
		t.Fatalf("live rows %+v", rows)
	}
	feed(e, (&seq{}).exit(cp, 0), t0.Add(time.Second))
	counts := map[uint64]int{}
	for _, f := range e.Drain() {
		if f.Kind == trace.KindDuplicateOpen {
			counts[f.Ino] = f.Count
		}
	}
	if counts[42] != 110 || counts[77] != 4 {
		t.Errorf("live duplicate findings %v", counts)
	}
}

func TestBoundedLive(t *testing.T) {
	s := (&seq{}).
		open(cp, "src", "/tmp/src", 8, 42, 3).
		open(cp, "/tmp/link", "/tmp/link", 8, 42, 4).
		open(cp, "src", "/tmp/src", 8, 42, 5).
		open(cp, "dst", "/tmp/dst", 8, 43, 6)
	for _, d := range []string{"/a", "/b", "/c"} {
		s.exec(env, d+"/true", enoent, "true")
	}
	s.image(envAfter, "/usr/bin/true").exec(envAfter, "/usr/bin/true", 0, "true")
	e := New(Options{Policy: Bounded(0, 0)})
	feed(e, s, t0)

	rows := e.Rows(SortDup, 0, GroupPid)
	if len(rows) != 2 || rows[0].Comm != "cp" || rows[0].DupFiles != 1 || rows[0].ExtraOpens != 2 {
		t.Fatalf("rows by dup: %+v", rows)
	}
	if rows[0].Worst != "/tmp/src x3" {
		t.Errorf("worst %q", rows[0].Worst)
	}
	byExec := e.Rows(SortExec, 1, GroupPid)
	if len(byExec) != 1 || byExec[0].Comm != "env" || byExec[0].ExecProbes != 3 || byExec[0].Launches != 1 {
		t.Fatalf("rows by exec: %+v", byExec)
	}
	f := e.Drain()
	if len(f) != 1 || f[0].Kind != trace.KindFailedExecProbes || f[0].Failed != 3 || *f[0].Found != "/usr/bin/true" {
		t.Fatalf("findings so far %+v", f)
	}
	// The duplicate is reported when the image ends, with its final count.
	feed(e, (&seq{}).exit(cp, 0), t0)
	f = e.Drain()
	if len(f) != 1 || f[0].Kind != trace.KindDuplicateOpen || f[0].Count != 3 || len(f[0].Paths) != 2 {
		t.Fatalf("findings at exit %+v", f)
	}
	if tt := e.Totals(); tt.DuplicateOpens != 2 || tt.ExecProbes != 3 || tt.Opens != 4 {
		t.Errorf("totals %+v", tt)
	}
	// Exited rows stay for the grace period, then go.
	if rows := e.Rows(SortDup, 0, GroupPid); !rows[0].Exited {
		t.Errorf("exited row not marked: %+v", rows[0])
	}
	e.Expire(t0.Add(time.Minute))
	if e.Images() != 1 { // env exec'd: only true is live
		t.Errorf("after expiry %d images, want 1", e.Images())
	}
}

// TestBoundedStaysBounded: a churn of short-lived processes and of files
// never grows the state past its caps, and every eviction of an image
// that had not ended is counted.
func TestBoundedStaysBounded(t *testing.T) {
	p := Bounded(1000, time.Second)
	p.MaxFiles = 50
	e := New(Options{Policy: p})
	for i := 0; i < 100000; i++ {
		pt := task(uint32(1000+i%30000), uint32(1000+i%30000), uint64(i), 1, "churn")
		evs := (&seq{}).open(pt, "/etc/a", "/etc/a", 1, 1, 3).open(pt, "/etc/a", "/etc/a", 1, 1, 3)
		if i%2 == 0 {
			evs.exit(pt, 0) // half exit, half are killed without us seeing an exit
		}
		feed(e, evs, t0.Add(time.Duration(i)*time.Millisecond))
		if e.Images() > 1000 {
			t.Fatalf("%d images after %d processes, cap 1000", e.Images(), i+1)
		}
		e.Drain()
	}
	// The half killed unseen were evicted before they ended; the half
	// that exited ended first, and dropping them lost nothing.
	if got := e.Totals().Evicted; got == 0 || got > 50000 {
		t.Errorf("%d evictions counted, want some, and none of the 50000 processes that exited", got)
	}
	big := task(7, 7, 1, 1, "many")
	s := &seq{}
	for i := 0; i < 200; i++ {
		s.open(big, "/f", "/f", 1, uint64(i), 3)
	}
	feed(e, s, t0)
	im := e.procs[trace.ProcKey{Pid: 7, Start: 1}].cur
	if len(im.live.files) != 50 || e.Totals().FilesCapped != 150 {
		t.Errorf("files not capped: %d, capped count %d", len(im.live.files), e.Totals().FilesCapped)
	}
	if len(e.procs) > 1001 || len(e.byPid) > 1001 {
		t.Errorf("process maps hold %d and %d entries past the image cap", len(e.procs), len(e.byPid))
	}
}

// TestExactForgetsEndedImages: once an image ends, KeepAll holds only what
// its report lists, not its every file.
func TestExactForgetsEndedImages(t *testing.T) {
	e := New(Options{Policy: KeepAll(trace.FilesDuplicates)})
	for i := 0; i < 100; i++ {
		pt := task(uint32(1000+i), uint32(1000+i), uint64(i), 1, "cc1")
		s := &seq{}
		for j := 0; j < 300; j++ {
			s.open(pt, "h", "/inc/h", 1, uint64(j), 3)
		}
		s.open(pt, "h", "/inc/stddef.h", 1, 0, 4) // file 0 again
		s.exit(pt, 0)
		feed(e, s, t0)
	}
	for _, im := range e.order {
		if im.live != nil {
			t.Fatalf("image %v still live after its exit", im.p.Key)
		}
		if len(im.p.Opens) != 1 || im.p.Opens[0].Count != 2 || im.p.Totals.Files != 300 || im.p.Totals.Opens != 301 {
			t.Fatalf("ended image keeps %d files, totals %+v", len(im.p.Opens), im.p.Totals)
		}
	}
	r := e.Result()
	if len(r.Findings) != 100 || r.Files != trace.FilesDuplicates {
		t.Errorf("%d findings, files %q", len(r.Findings), r.Files)
	}
}

func TestKeepFile(t *testing.T) {
	p := KeepAll(trace.FilesDuplicates)
	p.KeepFile = func(dev, ino uint64) bool { return dev == 1 && ino == 5 }
	s := (&seq{}).open(cp, "a", "/a", 1, 4, 3).open(cp, "b", "/b", 1, 5, 3).
		open(cp, "c", "/c", 1, 6, 3).open(cp, "c", "/c", 1, 6, 3).
		open(cp, "x", "/x", 0, 0, enoent).open(cp, "y", "/y", 0, 0, enoent).open(cp, "y", "/y", 0, 0, enoent)
	r := s.runPolicy(p, 0)
	opens := r.Processes[0].Opens
	if len(opens) != 2 || opens[0].Ino != 5 || opens[1].Ino != 6 {
		t.Errorf("kept %+v", opens)
	}
	if f := r.Processes[0].FailedOpens; len(f) != 1 || f[0].Fname != "y" || f[0].Count != 2 {
		t.Errorf("failed opens kept %+v", f)
	}
	if tt := r.Processes[0].Totals; tt.Files != 3 || tt.FailedOpens != 3 || tt.Opens != 7 || tt.DupFiles != 1 {
		t.Errorf("totals %+v", tt)
	}
}

func TestRunningAndExited(t *testing.T) {
	e := New(Options{Policy: KeepAll(""), Spawner: 99})
	launcher := task(30, 30, 700, 5, "once")
	cmd := task(30, 30, 700, 6, "sh")
	child := task(31, 31, 800, 6, "sh")
	feed(e, (&seq{}).fork(launcher, 99, 1), t0)
	if e.Running() != 0 {
		t.Errorf("the launcher copy counts as running: %d", e.Running())
	}
	if !e.Launcher(&launcher) {
		t.Errorf("Launcher(the copy once forked) is false")
	}
	feed(e, (&seq{}).image(cmd, "/bin/sh").exec(cmd, "/bin/sh", 0, "sh").fork(child, 30, 700), t0)
	if e.Running() != 2 {
		t.Errorf("running %d, want 2", e.Running())
	}
	if e.Launcher(&cmd) || e.Launcher(&child) {
		t.Errorf("Launcher true after the command's exec: %v, its child: %v", e.Launcher(&cmd), e.Launcher(&child))
	}
	feed(e, (&seq{}).exit(cmd, 0), t0)
	if !e.Exited(30) || e.Exited(31) || e.Running() != 1 {
		t.Errorf("exited(30) %v exited(31) %v running %d", e.Exited(30), e.Exited(31), e.Running())
	}
	feed(e, (&seq{}).exit(child, 0), t0)
	if e.Running() != 0 {
		t.Errorf("running %d after every exit", e.Running())
	}
}

// TestGoneUnseen: processes whose exit was lost (a full ring buffer) are
// not still running when /proc says they are gone; one /proc still has
// is, and one seen exiting is never asked about.
func TestGoneUnseen(t *testing.T) {
	e := New(Options{Policy: KeepAll("")})
	sh := task(30, 30, 700, 6, "sh")
	lost := task(31, 31, 800, 6, "env")
	alive := task(32, 32, 900, 6, "sleep")
	feed(e, (&seq{}).image(sh, "/bin/sh").exec(sh, "/bin/sh", 0, "sh").fork(lost, 30, 700).fork(alive, 30, 700).
		exec(lost, "/usr/bin/env", 0, "env").exec(alive, "/usr/bin/sleep", 0, "sleep").exit(sh, 0), t0)
	asked := map[uint32]bool{}
	if n := e.GoneUnseen(func(pid uint32, start uint64) bool {
		asked[pid] = true
		if want := map[uint32]uint64{31: 800, 32: 900}[pid]; start != want {
			t.Errorf("asked about pid %d with start %d, want its own, %d (a pid reused is another process)", pid, start, want)
		}
		return pid != 32
	}); n != 1 {
		t.Errorf("GoneUnseen marked %d, want 1", n)
	}
	if asked[30] {
		t.Errorf("asked about pid 30, seen exiting")
	}
	r := e.Result()
	if n := r.StillRunning(); n != 1 {
		t.Errorf("StillRunning %d, want 1 (pid 32)", n)
	}
	for _, p := range r.Processes {
		if p.Key.ExecID != 6 { // the images their execs replaced
			continue
		}
		if p.ExitUnseen != (p.Pid == 31) || p.Exited != (p.Pid == 30) {
			t.Errorf("pid %d exec %d: exited %v, exit unseen %v", p.Pid, p.Key.ExecID, p.Exited, p.ExitUnseen)
		}
	}
}

func TestAnnotations(t *testing.T) {
	e := New(Options{Policy: Bounded(0, 0)})
	s := (&seq{}).open(cp, "a", "/a", 1, 1, 3).open(cp, "a", "/a", 1, 1, 3).open(cp, "a", "/a", 1, 1, 3)
	var dups []int
	for i := range s.evs {
		dups = append(dups, e.Handle(&s.evs[i], t0).Dup)
	}
	if dups[0] != 0 || dups[1] != 2 || dups[2] != 3 {
		t.Errorf("Dup annotations %v", dups)
	}
	s = (&seq{}).exec(env, "/a/true", enoent).exec(env, "/b/true", enoent).image(envAfter, "/b/true")
	feed(e, s, t0)
	ev := trace.Event{Kind: trace.EventExec, Task: envAfter, Exec: trace.ExecRecord{Filename: "/c/true"}}
	if a := e.Handle(&ev, t0); a.ProbeFailed != 2 || a.ProbeFound != "/c/true" {
		t.Errorf("exec annotation %+v", a)
	}
	if a := e.Handle(&trace.Event{Kind: trace.EventTally, Task: cp,
		Tally: trace.TallyRecord{Syscall: trace.SysOpenat, Dev: 1, Ino: 1, Opens: 5}}, t0); a.Extra != 5 || a.Dup != 8 {
		t.Errorf("tally annotation %+v", a)
	}
}

func TestIgnoreGlobs(t *testing.T) {
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"/usr/lib/**", "/usr/lib/x86_64-linux-gnu/libc.so.6", true},
		{"/usr/lib/*", "/usr/lib/x86_64-linux-gnu/libc.so.6", false},
		{"/usr/lib/*", "/usr/lib/os-release", true},
		{"**/*.pyc", "/a/b/__pycache__/x.pyc", true},
		{"/proc/**", "/proc/self/status", true},
		{"/dev/null", "/dev/null", true},
	} {
		ig, err := NewIgnore([]string{tc.glob})
		if err != nil {
			t.Fatal(err)
		}
		if got := ig.Match(tc.path); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.glob, tc.path, got, tc.want)
		}
	}
	if _, err := NewIgnore([]string{"/a/[b"}); err == nil {
		t.Error("a bad glob is accepted")
	}
	// Rules match absolute paths: one that can match none would leave
	// nothing out, silently, and is refused with what to write instead.
	for _, tc := range []struct{ glob, like string }{
		{"f.txt", "**/f.txt"}, {"*.pyc", "**/*.pyc"}, {"**.pyc", "**/*.pyc"}, {"*", "**/*"},
		{"?tmp/x", "**/?tmp/x"}, {"", "**/"}, {"src/**", "**/src/**"},
	} {
		_, err := NewIgnore([]string{tc.glob})
		if err == nil || !strings.Contains(err.Error(), "can match no file") || !strings.Contains(err.Error(), "("+tc.like+")") {
			t.Errorf("NewIgnore(%q): %v, want it refused, suggesting %s", tc.glob, err, tc.like)
		}
	}
	for _, g := range []string{"/x", "**", "**/x", "*/x", "{/a,/b}/**", "[/]tmp", "pipe:*"} {
		if _, err := NewIgnore([]string{g}); err != nil {
			t.Errorf("NewIgnore(%q): %v, want it taken", g, err)
		}
	}
}

// TestProbeErrnos: which failed opens are misses of a search (README's
// findings table says the same).
func TestProbeErrnos(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		miss  bool
	}{
		{syscall.ENOENT, true}, {syscall.ENOTDIR, true}, {syscall.EACCES, true},
		{syscall.ELOOP, true}, {syscall.ENAMETOOLONG, true},
		{syscall.EEXIST, false}, {syscall.EISDIR, false}, {syscall.EMFILE, false},
		{syscall.ENOMEM, false}, {syscall.EINTR, false}, {syscall.EROFS, false},
		{syscall.ETXTBSY, false}, {syscall.EPERM, false}, {syscall.EAGAIN, false},
	} {
		if got := probeErrno(int32(tc.errno)); got != tc.miss {
			t.Errorf("%v: a miss %v, want %v", tc.errno, got, tc.miss)
		}
		s := (&seq{}).
			open(cp, "/a/lib.so", "", 0, 0, -int32(tc.errno)).
			open(cp, "/b/lib.so", "", 0, 0, -int32(tc.errno)).
			open(cp, "/c/lib.so", "/c/lib.so", 1, 2, 3)
		if n := count(s.run(0).Findings, trace.KindFailedOpenProbes); n != map[bool]int{true: 1, false: 0}[tc.miss] {
			t.Errorf("%v: %d probe findings", tc.errno, n)
		}
	}
}

// TestOpenProbeEndedByAFind: an open chain ends where its name opens, not
// where it is made: a file created elsewhere leaves the search going on
// (found later, or never), and one created where a miss was makes the
// chain a check, no search.
func TestOpenProbeEndedByAFind(t *testing.T) {
	misses := func() *seq {
		return (&seq{}).
			open(cp, "/a/app.conf", "", 0, 0, -2).
			open(cp, "/b/app.conf", "", 0, 0, -2)
	}
	for _, tc := range []struct {
		name  string
		seq   *seq
		found string // the finding's winner; "-": no finding
	}{
		{"found", misses().open(cp, "/etc/app.conf", "/etc/app.conf", 1, 2, 3), "/etc/app.conf"},
		// A name relative to a dirfd or the cwd: where the kernel
		// resolved it, absolute as the misses are.
		{"found by a relative name", misses().open(cp, "etc/app.conf", "/srv/etc/app.conf", 1, 2, 3), "/srv/etc/app.conf"},
		{"made elsewhere, never found", misses().created(cp, "/home/app.conf", 1, 2, 3), ""},
		{"made elsewhere, then found", misses().created(cp, "/home/app.conf", 1, 2, 3).
			open(cp, "/etc/app.conf", "/etc/app.conf", 1, 4, 3), "/etc/app.conf"},
		{"made where it missed", misses().created(cp, "/b/app.conf", 1, 2, 3), "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range tc.seq.run(0).Findings {
				if f.Kind != trace.KindFailedOpenProbes {
					continue
				}
				found := ""
				if f.Found != nil {
					found = *f.Found
				}
				got = append(got, found)
			}
			want := []string{tc.found}
			if tc.found == "-" {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("chains found %q, want %q", got, want)
			}
		})
	}
}

// TestRowsGrouped: 50 cat processes that each open a file twice are one
// row of 50 under --group comm and --group exe, 50 rows under pid.
func TestRowsGrouped(t *testing.T) {
	e := New(Options{Policy: Bounded(0, 0)})
	for i := 0; i < 50; i++ {
		pt := task(uint32(100+i), uint32(100+i), uint64(i), 2, "cat")
		feed(e, (&seq{}).image(pt, "/usr/bin/cat").open(pt, "f", "/f", 1, 9, 3).open(pt, "f", "/f", 1, 9, 3), t0)
		if i%2 == 0 {
			feed(e, (&seq{}).exit(pt, 0), t0)
		}
	}
	if rows := e.Rows(SortDup, 0, GroupPid); len(rows) != 50 {
		t.Errorf("by pid: %d rows", len(rows))
	}
	for _, g := range []Group{GroupComm, GroupExe} {
		rows := e.Rows(SortDup, 0, g)
		if len(rows) != 1 || rows[0].Processes != 50 || rows[0].Running != 25 || rows[0].ExtraOpens != 50 || rows[0].Pid != 100 {
			t.Errorf("by %s: %+v", g, rows)
		}
	}

	// The lookups wasted, and their time, add up too.
	e = New(Options{Policy: Bounded(0, 0)})
	var wantNs uint64
	for i, n := range []int{5, 11, 21} {
		pt := task(uint32(300+i), uint32(300+i), uint64(i), 2, "statdup")
		s := (&seq{}).image(pt, "/usr/bin/statdup")
		for range n {
			s.lookup(pt, trace.SysNewfstatat, "/etc/passwd", 1, 7, 0, false)
		}
		feed(e, s.exit(pt, 0), t0)
		rows := e.Rows(SortDup, 0, GroupPid)
		for _, r := range rows {
			if r.Pid == uint32(300+i) {
				wantNs += r.LookupNs
			}
		}
	}
	rows := e.Rows(SortDup, 0, GroupComm)
	if len(rows) != 1 || rows[0].Lookups != 4+10+20 || rows[0].LookupNs != wantNs || wantNs == 0 {
		t.Errorf("by comm: %+v, want 34 lookups wasted in %dns", rows, wantNs)
	}
}

// TestLabels: a process is labelled when first seen and at each exec; a
// forked child is in its parent's container without asking.
func TestLabels(t *testing.T) {
	var asked []uint32
	label := func(pid uint32, cg uint64) *trace.Container {
		asked = append(asked, pid)
		if cg == 77 {
			return &trace.Container{ID: "c77", Pod: "web"}
		}
		return nil
	}
	e := New(Options{Policy: KeepAll(""), Label: label})
	parent := task(10, 10, 1, 1, "sh")
	parent.CgroupID = 77
	child := task(11, 11, 2, 1, "sh")
	child.CgroupID = 77
	childAfter := task(11, 11, 2, 2, "cat")
	childAfter.CgroupID = 77
	s := (&seq{}).open(parent, "a", "/a", 1, 1, 3).fork(child, 10, 1).
		image(childAfter, "/bin/cat").exec(childAfter, "/bin/cat", 0, "cat").exit(childAfter, 0)
	feed(e, s, t0)
	r := e.Result()
	if len(asked) != 2 || asked[0] != 10 || asked[1] != 11 {
		t.Errorf("asked for %v, want the parent's first sight and the child's exec", asked)
	}
	for _, p := range r.Processes {
		if p.Container == nil || p.Container.Pod != "web" {
			t.Errorf("%s (%d): container %+v", p.Comm, p.Pid, p.Container)
		}
	}

	// A child the kernel puts in another cgroup than its parent's (runc
	// forks its init, and moves it into the container's cgroup before
	// the child's first event): asked, not taken from the parent.
	asked = nil
	e = New(Options{Policy: KeepAll(""), Label: label})
	runc := task(20, 20, 1, 1, "runc")
	runc.CgroupID = 1
	initTask := task(21, 21, 2, 1, "runc:[2:INIT]")
	initTask.CgroupID = 77
	feed(e, (&seq{}).open(runc, "a", "/a", 1, 1, 3).fork(initTask, 20, 1).open(initTask, "/", "/", 1, 2, 3).exit(initTask, 0), t0)
	for _, p := range e.Result().Processes {
		if p.Pid == 21 && (p.Container == nil || p.Container.ID != "c77") {
			t.Errorf("runc's init in cgroup 77, forked from cgroup 1: container %+v, want c77 (asked for %v)", p.Container, asked)
		}
	}
}

// TestSortByLookups: --sort lookup ranks images by their avoidable
// lookups, whatever their time.
func TestSortByLookups(t *testing.T) {
	sh := task(30, 30, 700, 1, "sh")
	py := task(31, 31, 710, 1, "python3")
	s := (&seq{}).
		exec(sh, "/a/true", enoent, "true").exec(sh, "/b/true", enoent, "true").exec(sh, "/c/true", enoent, "true").exit(sh, 127)
	for i := 0; i < 4; i++ {
		s.lookup(py, trace.SysNewfstatat, "/etc", 8, 2, 0, false)
	}
	s.exit(py, 0)
	e := New(Options{Policy: Bounded(0, 0)})
	feed(e, s, t0)
	var got []string
	for _, r := range e.Rows(SortLookup, 0, GroupPid) {
		got = append(got, r.Comm)
	}
	if len(got) != 2 || got[0] != "python3" {
		t.Errorf("rows by lookups %v, want python3 first", got)
	}
	if rows := e.Rows(SortExec, 0, GroupPid); len(rows) != 2 || rows[0].Comm != "sh" {
		t.Errorf("rows by exec %+v, want sh first", rows)
	}
}

// TestWorstOfEveryKind: a row's worst is the brief of whatever wasted
// the most, whichever kind: lookups' findings too, not only duplicate
// opens and launches.
func TestWorstOfEveryKind(t *testing.T) {
	sh := task(30, 30, 700, 1, "sh")
	shAfter := task(30, 30, 700, 2, "true")
	tests := []struct {
		name string
		s    *seq
		want string
	}{
		{"a duplicate open, live", (&seq{}).
			open(sh, "/etc/a", "/etc/a", 8, 42, 3).
			open(sh, "/etc/a", "/etc/a", 8, 42, 4), "/etc/a x2"},
		{"a PATH search by stat", (&seq{}).
			lookup(sh, trace.SysNewfstatat, "/a/ls", 0, 0, -2, false).
			lookup(sh, trace.SysNewfstatat, "/b/ls", 0, 0, -2, false).
			lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 8, 44, 0, false).exit(sh, 0), "look up ls (2 failed)"},
		{"a file stat-ed again", (&seq{}).
			lookup(sh, trace.SysNewfstatat, "/etc", 8, 2, 0, false).
			lookup(sh, trace.SysNewfstatat, "/etc", 8, 2, 0, false).
			lookup(sh, trace.SysNewfstatat, "/etc", 8, 2, 0, false).exit(sh, 0), "stat /etc x3"},
		{"a path missed again", (&seq{}).
			lookup(sh, trace.SysAccess, "/etc/app.conf", 0, 0, -2, false).
			lookup(sh, trace.SysAccess, "/etc/app.conf", 0, 0, -2, false).exit(sh, 0), "miss /etc/app.conf x2 (ENOENT)"},
		{"a library search by open", (&seq{}).
			open(sh, "/a/libx.so", "", 0, 0, enoent).
			open(sh, "/b/libx.so", "", 0, 0, enoent).
			open(sh, "/c/libx.so", "/c/libx.so", 8, 45, 3).exit(sh, 0), "open libx.so (2 failed)"},
		{"a PATH search by execve", (&seq{}).
			exec(sh, "/a/true", enoent, "true").
			image(shAfter, "/bin/true").exec(shAfter, "/bin/true", 0, "true"), "launch true (1 failed)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Policy: Bounded(0, 0)})
			feed(e, tc.s, t0)
			var worst []string
			for _, r := range e.Rows(SortTime, 0, GroupPid) {
				if r.Worst != "" {
					worst = append(worst, r.Worst)
				}
			}
			if len(worst) != 1 || worst[0] != tc.want {
				t.Errorf("worst %q, want %q", worst, tc.want)
			}
		})
	}
}

// TestMissRepeatsOfOpens: the kernel's counted repeats of a thread's last
// failed call go to the call they repeat: an open's to the open totals,
// the failed open's count and its repeated_miss, a lookup's to the
// lookups; each as if every repeat had been sent, less its detail.
func TestMissRepeatsOfOpens(t *testing.T) {
	missing := "/etc/missing.conf"
	s := (&seq{}).
		open(cp, missing, "", 0, 0, -int32(syscall.ENOENT)).
		open(cp, missing, "", 0, 0, -int32(syscall.ENOENT)).
		lookup(cp, trace.SysNewfstatat, "/etc/none", 0, 0, -int32(syscall.ENOENT), false).
		with(func(ev *trace.Event) {
			// Sent after 8 repeats of the open, counted in the kernel.
			ev.Open.MissRepeats = trace.Repeats{N: 8, Syscall: trace.SysOpenat}
		}).
		lookup(cp, trace.SysNewfstatat, "/etc/none", 0, 0, -int32(syscall.ENOENT), false)
	s.evs = append(s.evs, trace.Event{Kind: trace.EventUnsent, Task: cp, Proc: trace.ProcRecord{
		MissRepeats: trace.Repeats{N: 5, Syscall: trace.SysNewfstatat}}})
	s.exit(cp, 0)

	r := s.run(1)
	if r.FailedOpens != 10 || r.Opens != 10 || r.FailedLookups != 7 || r.Lookups != 7 {
		t.Errorf("opens %d (%d failed), lookups %d (%d failed); want 10 (10), 7 (7)", r.Opens, r.FailedOpens, r.Lookups, r.FailedLookups)
	}
	p := r.Processes[0]
	if len(p.FailedOpens) != 1 || p.FailedOpens[0].Count != 10 || p.FailedOpens[0].CallsOmitted != 8 || len(p.FailedOpens[0].Calls) != 2 {
		t.Errorf("failed opens %+v, want one of %s: 10, 2 calls listed and 8 omitted", p.FailedOpens, missing)
	}
	misses := map[string]int{}
	for _, f := range r.Findings {
		if f.Kind == trace.KindRepeatedMiss {
			misses[f.Path] = f.Count
		}
	}
	if misses[missing] != 10 || misses["/etc/none"] != 7 {
		t.Errorf("repeated_miss counts %v, want %s 10 and /etc/none 7", misses, missing)
	}
}

// TestMissRepeatsOfTwoKinds: a thread keeps a run of misses of each kind
// in the kernel (its last failed open and its last failed lookup), so the
// repeats of both come in one report: each goes to the call it repeats,
// whichever of the two was sent last.
func TestMissRepeatsOfTwoKinds(t *testing.T) {
	missing, none := "/etc/missing.conf", "/etc/none"
	failedOpen := func(s *seq) *seq { return s.open(cp, missing, "", 0, 0, -int32(syscall.ENOENT)) }
	failedLookup := func(s *seq) *seq {
		return s.lookup(cp, trace.SysNewfstatat, none, 0, 0, -int32(syscall.ENOENT), false)
	}
	for _, tc := range []struct {
		name  string
		first func(*seq) *seq
		last  func(*seq) *seq
	}{
		{"open sent last", failedLookup, failedOpen},
		{"lookup sent last", failedOpen, failedLookup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.last(tc.first(tc.last(tc.first(&seq{}))))
			s.evs = append(s.evs, trace.Event{Kind: trace.EventUnsent, Task: cp, Proc: trace.ProcRecord{
				MissRepeats:       trace.Repeats{N: 8, Syscall: trace.SysOpenat},
				LookupMissRepeats: trace.Repeats{N: 5, Syscall: trace.SysNewfstatat}}})
			s.exit(cp, 0)
			e := New(Options{Policy: KeepAll(trace.FilesAll)})
			feed(e, s, t0)
			e.Finish(t0)
			tot := e.Totals()
			if tot.FailedOpens != 10 || tot.Opens != 10 || tot.FailedLookups != 7 || tot.Lookups != 7 {
				t.Errorf("opens %d (%d failed), lookups %d (%d failed); want 10 (10), 7 (7)", tot.Opens, tot.FailedOpens, tot.Lookups, tot.FailedLookups)
			}
			if tot.FilesCapped != 0 {
				t.Errorf("files_capped %d, want 0: a run's repeats found no miss to go to", tot.FilesCapped)
			}
			misses := map[string]int{}
			for _, f := range e.Drain() {
				if f.Kind == trace.KindRepeatedMiss {
					misses[f.Path] = f.Count
				}
			}
			if misses[missing] != 10 || misses[none] != 7 {
				t.Errorf("repeated_miss counts %v, want %s 10 and %s 7", misses, missing, none)
			}
		})
	}
}

// TestRestartedCallIsNoMiss: an open that blocks (a FIFO with no writer
// yet) and is interrupted by a signal returns ERESTARTSYS to the kernel,
// which restarts it (SA_RESTART) or ends the process (SIGKILL): the
// program saw no failure, and made one call. Counted as strace -f shows
// the calls (each "= ? ERESTARTSYS"), but never a repeated_miss: a timer
// firing every 20ms during a 300ms wait was "fails with E512 every
// time: look it up once", 84% of the run wasted.
func TestRestartedCallIsNoMiss(t *testing.T) {
	fifo := "/tmp/fifo"
	s := &seq{}
	for range 3 {
		s.open(cp, fifo, "", 0, 0, -512)
	}
	s.with(func(ev *trace.Event) {
		ev.Open.MissRepeats = trace.Repeats{N: 5, Syscall: trace.SysOpenat}
	})
	s.open(cp, fifo, fifo, 1, 7, 3).exit(cp, 0)
	for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
		e := New(Options{Policy: pol})
		feed(e, s, t0)
		e.Finish(t0)
		r := &trace.Result{Findings: e.Drain()}
		tot := e.Totals()
		r.Opens, r.FailedOpens = int(tot.Opens), int(tot.FailedOpens)
		if r.Opens != 9 || r.FailedOpens != 8 {
			t.Errorf("bounded %v: opens %d (%d failed), want 9 (8 failed), as strace -f counts them", pol.Bounded, r.Opens, r.FailedOpens)
		}
		if n := count(r.Findings, trace.KindRepeatedMiss); n != 0 {
			t.Errorf("bounded %v: %d repeated_miss findings of a restarted open, want none: %+v", pol.Bounded, n, r.Findings)
		}
		if tot.FilesCapped != 0 {
			t.Errorf("bounded %v: files_capped %d, want 0", pol.Bounded, tot.FilesCapped)
		}
	}
}

// TestCanceledRequestIsNoMiss: io_uring completes a request it never ran
// with ECANCELED (a failed open earlier in its link, an
// IORING_OP_ASYNC_CANCEL): /etc/hostname, which exists, was "fails with
// ECANCELED every time: look it up once and keep the answer". Counted
// among the failed opens and lookups, as the ring's completions say, but
// never a repeated_miss; the failed open before it in the link still is.
func TestCanceledRequestIsNoMiss(t *testing.T) {
	s := &seq{}
	for range 3 {
		s.open(cp, "/nonexistent/a", "", 0, 0, -2).with(func(ev *trace.Event) { ev.Open.Syscall = trace.SysIoUringOpenat })
		s.open(cp, "/etc/hostname", "", 0, 0, -125).with(func(ev *trace.Event) { ev.Open.Syscall = trace.SysIoUringOpenat })
		s.lookup(cp, trace.SysIoUringStatx, "/etc/passwd", 0, 0, -125, false)
	}
	s.exit(cp, 0)
	for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
		e := New(Options{Policy: pol})
		feed(e, s, t0)
		e.Finish(t0)
		fs := e.Drain()
		tot := e.Totals()
		if tot.FailedOpens != 6 || tot.FailedLookups != 3 {
			t.Errorf("bounded %v: failed opens %d, lookups %d, want 6 and 3", pol.Bounded, tot.FailedOpens, tot.FailedLookups)
		}
		var paths []string
		for _, f := range fs {
			if f.Kind == trace.KindRepeatedMiss {
				paths = append(paths, f.Path)
			}
		}
		if len(paths) != 1 || paths[0] != "/nonexistent/a" {
			t.Errorf("bounded %v: repeated_miss of %q, want only /nonexistent/a (no request cancelled is a miss)", pol.Bounded, paths)
		}
	}
}

// TestCheckIncomplete: a run whose processes were still running when the
// trace ended, or that once passed a signal of its own to, is violated
// whatever the command's status and --allow-fail say; --opens counts
// O_PATH opens.
func TestCheckIncomplete(t *testing.T) {
	esc := func(s string) string { return s }
	opens := func() *seq {
		return (&seq{}).open(cp, "f", "/f", 5, 4, 3).open(cp, "f", "/f", 5, 4, 3)
	}
	a := func() *Assertions { return &Assertions{MaxOpens: 2, MaxExecProbes: -1, AllowFail: true} }
	if v := a().Check(opens().exit(cp, 0).run(1), esc); len(v) != 0 {
		t.Errorf("exited: %q", v)
	}
	if v := a().Check(opens().run(1), esc); len(v) != 1 || !strings.Contains(v[0], "1 process was still running") {
		t.Errorf("still running: %q, want that violation", v)
	}
	r := opens().exit(cp, 143).run(1)
	r.Interrupted = "SIGTERM"
	if v := a().Check(r, esc); len(v) != 1 || !strings.Contains(v[0], "once got SIGTERM") {
		t.Errorf("interrupted: %q, want that violation", v)
	}
	// A process replaced by an exec is not running.
	cpAfter := task(10, 10, 500, 4, "true")
	if v := a().Check(opens().exec(cp, "/bin/true", 0).image(cpAfter, "/bin/true").exit(cpAfter, 0).run(1), esc); len(v) != 0 {
		t.Errorf("exec'd, then exited: %q", v)
	}
	// One event lost, one 32-bit image: each violation in the singular.
	lost := opens().exit(cp, 0).run(1)
	lost.Counters.DecodeErrors, lost.Counters.CompatImages = 1, 1
	if v := a().Check(lost, esc); len(v) != 2 || v[0] != "1 event lost: result incomplete" || !strings.HasPrefix(v[1], "1 32-bit program image ran, ") {
		t.Errorf("one event lost, one 32-bit image: %q", v)
	}
	// The command's own exec failed: in once run's words when it has
	// them (a script whose #! interpreter is missing is there: its
	// ENOENT is no "no such file"), else the errno's.
	for _, tc := range []struct {
		errno  int32
		reason string
		want   string
	}{
		{2, "its #! interpreter or ELF loader was not found", "the command never ran: its execve failed (its #! interpreter or ELF loader was not found, exit status 127)"},
		{2, "", "the command never ran: its execve failed (no such file or directory, exit status 127)"},
	} {
		r := (&seq{}).run(1)
		r.StartErrno, r.StartReason, r.ExitCode = tc.errno, tc.reason, 127
		if v := a().Check(r, esc); len(v) != 1 || v[0] != tc.want {
			t.Errorf("start failed (%q): %q, want %q", tc.reason, v, tc.want)
		}
	}
	path := (&seq{}).open(cp, "f", "/f", 5, 4, 3).with(func(ev *trace.Event) { ev.Open.Flags |= unix.O_PATH }).exit(cp, 0).run(1)
	o := &Assertions{MaxOpens: -1, MaxExecProbes: -1, Opens: []OpensAssertion{{Path: "/f", Dev: 5, Ino: 4, Count: 0}}}
	if v := o.Check(path, esc); len(v) != 1 {
		t.Errorf("--opens /f=0 with an O_PATH open of it: %q, want a violation", v)
	}
}

// TestExecCallerTid: an exec that a thread other than the leader made and
// that succeeded is that thread's, as strace -f shows it ("[pid 12]
// execve(...)"), though its exit is seen under the leader's tid, which the
// thread took (de_thread).
func TestExecCallerTid(t *testing.T) {
	leader := task(10, 10, 100, 1, "app")
	after := task(10, 10, 100, 2, "true")
	s := (&seq{}).fork(leader, 1, 1).exec(task(10, 12, 100, 1, "app"), "/a/true", enoent)
	s.evs = append(s.evs, trace.Event{Kind: trace.EventExec, Task: after, Exec: trace.ExecRecord{
		Syscall: trace.SysExecve, Filename: "/usr/bin/true", OldTid: 12, EnterNs: 0, ExitNs: 2000}})
	r := s.run(0)
	var tids []uint32
	for _, p := range r.Processes {
		for _, x := range p.Execs {
			tids = append(tids, x.Tid)
		}
	}
	if len(tids) != 2 || tids[0] != 12 || tids[1] != 12 {
		t.Errorf("exec tids %v, want [12 12] (the calling thread's)", tids)
	}
}

// TestInRootMissNamesItsDirectory: openat2(dirfd, "/etc/hostname",
// RESOLVE_IN_ROOT) that fails missed DIR/etc/hostname, not the host's
// /etc/hostname (which may well exist): the kernel sends DIR as its base.
//
// Below that root, ".." stops at it: "../etc/hostname" and
// "/../etc/hostname" are DIR/etc/hostname too, not a lexical join's
// /etc/hostname (openat2(2)). With /etc as DIR, strace -f showed
// openat2(3, "../etc/passwd", {resolve=RESOLVE_IN_ROOT}) fail with ENOENT
// twice, and once said "/etc/passwd fails with ENOENT every time".
func TestInRootMissNamesItsDirectory(t *testing.T) {
	for _, fname := range []string{"/etc/hostname", "../etc/hostname", "/../etc/hostname", "../../etc/./hostname"} {
		app := task(20, 20, 200, 1, "app")
		s := &seq{}
		for i := 0; i < 3; i++ {
			s.evs = append(s.evs, trace.Event{Kind: trace.EventOpen, Task: app, Open: trace.OpenRecord{
				Syscall: trace.SysOpenat2, Fname: fname, Path: "/srv/root", Status: trace.StPathIsBase,
				Resolve: trace.ResolveInRoot, Ret: -2, Dirfd: 3, EnterNs: 100, ExitNs: 1100}})
		}
		r := s.run(0)
		var paths []string
		for _, f := range r.Findings {
			paths = append(paths, f.Path)
		}
		if len(paths) != 1 || paths[0] != "/srv/root/etc/hostname" {
			t.Errorf("%s: findings' paths %q, want [/srv/root/etc/hostname]", fname, paths)
		}
	}
}

// TestExecFailuresThatAreNoMiss: an exec that fails with an errno that
// says nothing about where the name is (E2BIG: the arguments; EFAULT: the
// name unreadable; ETXTBSY: the file is there) is no attempt of a search,
// nor is a failed AT_EMPTY_PATH exec (fexecve: it names no file to look
// for). Such a failure starts no chain: a report once gave `/bin/true`
// failing with E2BIG the advice to "put /bin before 1 entry (/bin)". One
// that ends a search is the search's last attempt, as before.
func TestExecFailuresThatAreNoMiss(t *testing.T) {
	e2big, efault, etxtbsy := -int32(syscall.E2BIG), -int32(syscall.EFAULT), -int32(syscall.ETXTBSY)
	emptyPath := func(ev *trace.Event) {
		ev.Exec.Syscall, ev.Exec.AtFlags, ev.Exec.Filename, ev.Exec.Path = trace.SysExecveat, 0x1000, "", "/usr/bin"
	}
	for _, tc := range []struct {
		name   string
		s      *seq
		failed []int    // the chains' failures, in order
		found  []string // what they found ("": nothing)
	}{
		{"E2BIG, then the same file with fewer arguments", (&seq{}).
			exec(env, "/bin/true", e2big, "true").
			image(envAfter, "/usr/bin/true").exec(envAfter, "/bin/true", 0, "true"), nil, nil},
		{"EFAULT, the name unreadable", (&seq{}).
			exec(env, "", efault).with(func(ev *trace.Event) { ev.Exec.Status |= trace.StFnameUnreadable }).
			exit(env, 1<<8), nil, nil},
		{"a search that ends in ETXTBSY", (&seq{}).
			exec(env, "/a/tool", enoent, "tool").exec(env, "/b/tool", etxtbsy, "tool").
			exit(env, 126<<8), []int{2}, []string{""}},
		{"a failed fexecve", (&seq{}).
			exec(env, "", enoent, "tool").with(emptyPath).
			exec(env, "", enoent, "tool").with(emptyPath).
			exit(env, 1<<8), nil, nil},
		{"a failed fexecve ends a search", (&seq{}).
			exec(env, "/a/tool", enoent, "tool").
			exec(env, "", enoent, "tool").with(emptyPath).
			exec(env, "/b/tool", enoent, "tool").
			exit(env, 1<<8), []int{1, 1}, []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.s.run(0)
			var failed []int
			var found []string
			for _, f := range r.Findings {
				if f.Kind == trace.KindFailedExecProbes || f.Kind == trace.KindExecShellFallback {
					failed = append(failed, f.Failed)
					if f.Found == nil {
						found = append(found, "")
						continue
					}
					found = append(found, *f.Found)
				}
			}
			if !slices.Equal(failed, tc.failed) || !slices.Equal(found, tc.found) {
				t.Errorf("exec chains with %v failures, found %q, want %v, %q: %+v", failed, found, tc.failed, tc.found, r.Findings)
			}
			if r.FailedExecs == 0 {
				t.Errorf("the failed execs are not counted")
			}
		})
	}
}

// TestUnreadableNameIsNoRepeatedMiss: a failed call whose name could not
// be read (EFAULT: a bad pointer, or a name that runs into an unmapped
// page) has no path to repeat. Three such failures of openat and
// newfstatat, each with its own pointer in strace -f, were one
// repeated_miss of `""`, "fails with EFAULT every time: look it up once".
// They are counted, as strace counts them, and listed, but no finding.
func TestUnreadableNameIsNoRepeatedMiss(t *testing.T) {
	efault := -int32(syscall.EFAULT)
	unreadable := func(ev *trace.Event) { ev.Open.Status |= trace.StFnameUnreadable }
	s := (&seq{}).
		open(cp, "", "", 0, 0, efault).with(unreadable).
		open(cp, "", "", 0, 0, efault).with(unreadable).
		lookup(cp, trace.SysNewfstatat, "", 0, 0, efault, false).with(unreadable).
		lookup(cp, trace.SysNewfstatat, "", 0, 0, efault, false).with(unreadable).
		exit(cp, 0)
	for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
		e := New(Options{Policy: pol})
		feed(e, s, t0)
		e.Finish(t0)
		findings := e.Drain()
		tot := e.Totals()
		if tot.FailedOpens != 2 || tot.FailedLookups != 2 {
			t.Errorf("bounded %v: %d failed opens, %d failed lookups, want 2 and 2", pol.Bounded, tot.FailedOpens, tot.FailedLookups)
		}
		if n := count(findings, trace.KindRepeatedMiss); n != 0 {
			t.Errorf("bounded %v: %d repeated_miss findings of names never read: %+v", pol.Bounded, n, findings)
		}
		if tot.FilesCapped != 0 {
			t.Errorf("bounded %v: files_capped %d, want 0", pol.Bounded, tot.FilesCapped)
		}
	}
}

// TestLabelCloneIntoCgroup: a child made with clone3(CLONE_INTO_CGROUP)
// starts in another cgroup than its parent's (systemd, crun starting a
// container's init): its forked image is labelled by its own cgroup, not
// given its parent's container.
func TestLabelCloneIntoCgroup(t *testing.T) {
	label := func(pid uint32, cg uint64) *trace.Container {
		if cg == 88 {
			return &trace.Container{ID: "c88", Pod: "db"}
		}
		return nil
	}
	for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
		e := New(Options{Policy: pol, Label: label})
		parent := task(10, 10, 1, 1, "crun")
		parent.CgroupID = 77
		child := task(11, 11, 2, 1, "crun")
		child.CgroupID = 88
		sibling := task(12, 12, 3, 1, "crun")
		sibling.CgroupID = 77
		s := (&seq{}).open(parent, "a", "/a", 1, 1, 3).
			fork(child, 10, 1).open(child, "/b", "/b", 1, 2, 3).open(child, "/b", "/b", 1, 2, 3).exit(child, 0).
			fork(sibling, 10, 1).open(sibling, "/b", "/b", 1, 2, 3).open(sibling, "/b", "/b", 1, 2, 3).exit(sibling, 0)
		feed(e, s, t0)
		e.Finish(t0)
		got := map[uint32]*trace.Container{}
		for _, f := range e.Drain() {
			got[f.Pid] = f.Proc.Container
		}
		if c := got[11]; c == nil || c.Pod != "db" {
			t.Errorf("bounded %v: the child cloned into cgroup 88: container %+v, want pod db", pol.Bounded, c)
		}
		if c, ok := got[12]; !ok || c != nil {
			t.Errorf("bounded %v: the child forked in its parent's cgroup: container %+v (found %v), want none", pol.Bounded, c, ok)
		}
	}
}

// TestThreadsCapped: an image remembers up to maxThreads thread ids; one
// thread more is said (ThreadsCapped), not passed over, and a thread seen
// again is no new one.
func TestThreadsCapped(t *testing.T) {
	for _, tc := range []struct {
		threads    int
		want       int
		wantCapped bool
	}{{maxThreads, maxThreads, false}, {maxThreads + 1, maxThreads, true}, {3, 3, false}} {
		t.Run(strconv.Itoa(tc.threads), func(t *testing.T) {
			e := New(Options{Policy: KeepAll("")})
			s := &seq{}
			for i := 0; i < tc.threads; i++ {
				th := task(70, 70+uint32(i), 900, 1, "pool")
				s.open(th, "/etc/hosts", "/etc/hosts", 1, 5, 3)
				if i == 0 {
					// The first thread again: seen already.
					s.open(th, "/etc/hosts", "/etc/hosts", 1, 5, 3)
				}
			}
			feed(e, s, t0)
			e.Finish(t0)
			r := e.Result()
			if len(r.Processes) != 1 {
				t.Fatalf("%d processes, want 1", len(r.Processes))
			}
			p := r.Processes[0]
			if p.Threads != tc.want || p.ThreadsCapped != tc.wantCapped {
				t.Errorf("threads %d capped %v, want %d %v", p.Threads, p.ThreadsCapped, tc.want, tc.wantCapped)
			}
		})
	}
}

// TestEndGoneRowsEnded: an image EndGone ends (its exit lost, or left out
// by the kernel's filters) is shown ended in the live table, its exit
// code unknown: not "running" until it leaves the engine.
func TestEndGoneRowsEnded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		gone        bool
		wantExited  bool
		wantUnseen  bool
		wantRunning int
	}{
		{"process gone", true, true, true, 0},
		{"process alive", false, false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Policy: Bounded(0, 0)})
			pt := task(40, 40, 900, 1, "renamed")
			feed(e, (&seq{}).open(pt, "/f", "/f", 1, 1, 3).open(pt, "/f", "/f", 1, 1, 3), t0)
			e.Drain()
			e.EndGone(t0.Add(time.Hour), t0.Add(time.Hour), time.Second, 8, func(pid uint32, start uint64) bool {
				if pid != 40 || start != 900 {
					t.Errorf("asked about pid %d start %d, want pid 40 start 900 (a pid reused is another process)", pid, start)
				}
				return tc.gone
			})
			rows := e.Rows(SortTime, 5, GroupPid)
			if len(rows) != 1 {
				t.Fatalf("%d rows, want 1", len(rows))
			}
			r := rows[0]
			if r.Exited != tc.wantExited || r.ExitUnseen != tc.wantUnseen || r.Running != tc.wantRunning {
				t.Errorf("row: exited %v, exit unseen %v, running %d; want %v, %v, %d", r.Exited, r.ExitUnseen, r.Running, tc.wantExited, tc.wantUnseen, tc.wantRunning)
			}
		})
	}
}

// TestCheckExecProbesWording: --max-exec-probes's violation counts its
// probes in the number's grammar: "1 failed exec probe", "2 ... probes".
func TestCheckExecProbesWording(t *testing.T) {
	esc := func(s string) string { return s }
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{"/a"}, "env made 1 failed exec probe for true, expected at most 0"},
		{[]string{"/a", "/b"}, "env made 2 failed exec probes for true, expected at most 0"},
	} {
		s := &seq{}
		for _, d := range tc.dirs {
			s.exec(env, d+"/true", enoent, "true")
		}
		r := s.image(envAfter, "/usr/bin/true").exec(envAfter, "/usr/bin/true", 0, "true").exit(envAfter, 0).run(1)
		v := (&Assertions{MaxOpens: -1, MaxExecProbes: 0}).Check(r, esc)
		if !slices.Equal(v, []string{tc.want}) {
			t.Errorf("%d misses: %q, want %q", len(tc.dirs), v, tc.want)
		}
	}
}

// TestExecEndsUnforkedImage: once watch gets no fork records (only a
// run's, or --tree's, followed processes send them), so a forked child's
// first event is its exec: the image that made the exec (the parent's
// copy) is first seen there, after the image the exec made. It is ended
// by that exec all the same, not held live until evicted: each fork+exec
// of a churn left one such image, which filled the table, counted
// evictions and pushed out quiet processes that still ran.
func TestExecEndsUnforkedImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		fork bool
	}{
		{"fork seen (once run)", true},
		{"no fork record (once watch)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Policy: Bounded(8, time.Second)})
			sh := task(50, 50, 700, 5, "sh")
			feed(e, (&seq{}).open(sh, "/etc/profile", "/etc/profile", 1, 9, 3), t0)
			for i := range uint32(20) {
				pid := 100 + i
				copyOf := task(pid, pid, 1000+uint64(i), 5, "sh")
				child := task(pid, pid, 1000+uint64(i), 6, "cat")
				s := &seq{}
				if tc.fork {
					s.fork(copyOf, 50, 700)
				}
				s.exec(child, "/bin/cat", 0, "cat", "/f").
					open(child, "/f", "/f", 1, 2, 3).open(child, "/f", "/f", 1, 2, 3).exit(child, 0)
				feed(e, s, t0)
			}
			if n := len(e.Drain()); n != 20 {
				t.Errorf("%d findings, want 20", n)
			}
			if got := e.Totals().Evicted; got != 0 {
				t.Errorf("%d images evicted before they ended, want 0 (only sh runs)", got)
			}
			if got := e.Running(); got != 1 {
				t.Errorf("%d processes running, want 1 (sh)", got)
			}
			e.Expire(t0.Add(time.Minute))
			if got := e.Images(); got != 1 {
				t.Errorf("%d images held past the grace, want 1 (sh's): the children's copies of sh were not ended by their exec", got)
			}
		})
	}
}

// TestCheckOrderStable: --max and --max-exec-probes list their
// violations in the same order whichever finding wasted more time (the
// ranking, which differs from run to run): by image, in the order the
// images started, then by subject.
func TestCheckOrderStable(t *testing.T) {
	dup := func(pid uint32, start uint64, path string, wasted uint64) trace.Finding {
		return trace.Finding{Kind: trace.KindDuplicateOpen, Key: trace.ImageKey{Pid: pid, Start: start, ExecID: 1}, Pid: pid, Comm: "cat",
			WastedNs: wasted, FileDetail: trace.FileDetail{Path: path, Count: 3}}
	}
	probe := func(pid uint32, start uint64, wasted uint64) trace.Finding {
		return trace.Finding{Kind: trace.KindFailedExecProbes, Key: trace.ImageKey{Pid: pid, Start: start, ExecID: 1}, Pid: pid, Comm: "launch",
			WastedNs: wasted, ChainDetail: trace.ChainDetail{Target: "tgt", Failed: 6 + int(pid)%2}}
	}
	fs := []trace.Finding{
		dup(20, 200, "/etc/passwd", 9000), dup(10, 100, "/etc/passwd", 8000), dup(10, 100, "/etc/group", 7000),
		probe(31, 300, 6000), dup(10, 100, "/etc/hostname", 5000), probe(30, 310, 4000),
	}
	want := []string{
		"cat: duplicate_open /etc/group: 3 opens, expected at most 2",
		"cat: duplicate_open /etc/hostname: 3 opens, expected at most 2",
		"cat: duplicate_open /etc/passwd: 3 opens, expected at most 2",
		"cat: duplicate_open /etc/passwd: 3 opens, expected at most 2",
		"launch made 7 failed exec probes for tgt, expected at most 5",
		"launch made 6 failed exec probes for tgt, expected at most 5",
	}
	esc := func(s string) string { return s }
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 4, 0, 5, 1, 3}} {
		r := (&seq{}).run(1)
		for _, i := range order {
			r.Findings = append(r.Findings, fs[i])
		}
		a := &Assertions{MaxOpens: -1, MaxExecProbes: 5, Max: map[trace.FindingKind]int{trace.KindDuplicateOpen: 2}}
		if v := a.Check(r, esc); !slices.Equal(v, want) {
			t.Errorf("findings ranked %v:\n got %q\nwant %q", order, v, want)
		}
	}
}

// TestCheckEmptyName: python's zipimport stats "" (the dirname of a
// PYTHONPATH entry like /a) once per entry; --max repeated_miss=1 names
// that path as "", not as nothing ("repeated_miss : 3 misses").
func TestCheckEmptyName(t *testing.T) {
	f := trace.Finding{Kind: trace.KindRepeatedMiss, Key: trace.ImageKey{Pid: 10, Start: 100, ExecID: 1}, Pid: 10, Comm: "python3",
		FileDetail: trace.FileDetail{Path: "", Count: 3, Errno: 2}}
	r := (&seq{}).run(1)
	r.Findings = append(r.Findings, f)
	a := &Assertions{MaxOpens: -1, MaxExecProbes: -1, Max: map[trace.FindingKind]int{trace.KindRepeatedMiss: 1}}
	want := []string{`python3: repeated_miss "": 3 misses, expected at most 1`}
	if v := a.Check(r, func(s string) string { return s }); !slices.Equal(v, want) {
		t.Errorf("got %q\nwant %q", v, want)
	}
}

// TestViolationsFinding: a violation of --opens, --max-opens and --max
// carries the duplicate whose opens broke it (its call sites say where in
// the code, with --stacks); a file opened once has none.
func TestViolationsFinding(t *testing.T) {
	esc := func(s string) string { return s }
	r := (&seq{}).
		open(cp, "f", "/f", 5, 4, 3).open(cp, "f", "/f", 5, 4, 3).
		open(cp, "g", "/g", 5, 6, 3).
		exit(cp, 1).run(1)
	for _, tc := range []struct {
		name string
		a    Assertions
		want []string // the path of each violation's finding, "" for none
	}{
		{"--opens /f=1", Assertions{MaxOpens: -1, MaxExecProbes: -1, AllowFail: true, Opens: []OpensAssertion{{Path: "/f", Dev: 5, Ino: 4, Count: 1}}}, []string{"/f"}},
		{"--opens /g=2", Assertions{MaxOpens: -1, MaxExecProbes: -1, AllowFail: true, Opens: []OpensAssertion{{Path: "/g", Dev: 5, Ino: 6, Count: 2}}}, []string{""}},
		{"--max-opens 1", Assertions{MaxOpens: 1, MaxExecProbes: -1, AllowFail: true}, []string{"/f"}},
		{"--max duplicate_open=1", Assertions{MaxOpens: -1, MaxExecProbes: -1, AllowFail: true, Max: map[trace.FindingKind]int{trace.KindDuplicateOpen: 1}}, []string{"/f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := tc.a.Violations(r, esc)
			var got []string
			for _, v := range vs {
				p := ""
				if v.Finding != nil {
					p = v.Finding.Path
					if v.Finding.Kind != trace.KindDuplicateOpen {
						t.Errorf("%q: finding of kind %s", v.Text, v.Finding.Kind)
					}
				}
				got = append(got, p)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %q, want %q (violations %+v)", got, tc.want, vs)
			}
		})
	}
}

// TestCheckKilled: a command a signal killed is said to be, with its
// shell-style status; one that exited with that status is not.
func TestCheckKilled(t *testing.T) {
	esc := func(s string) string { return s }
	a := &Assertions{MaxOpens: 5, MaxExecProbes: -1}
	for _, tc := range []struct {
		code   int
		signal string
		want   string
	}{
		{137, "SIGKILL", "the command was killed by SIGKILL (exit status 137; use --allow-fail if that is expected)"},
		{139, "SIGSEGV", "the command was killed by SIGSEGV (exit status 139; use --allow-fail if that is expected)"},
		{137, "", "the command failed with exit status 137 (use --allow-fail if that is expected)"},
	} {
		r := (&seq{}).open(cp, "f", "/f", 5, 4, 3).exit(cp, 0).run(1)
		r.ExitCode, r.ExitSignal = tc.code, tc.signal
		if v := a.Check(r, esc); !slices.Equal(v, []string{tc.want}) {
			t.Errorf("exit %d, signal %q: %q, want %q", tc.code, tc.signal, v, tc.want)
		}
	}
	allow := &Assertions{MaxOpens: 5, MaxExecProbes: -1, AllowFail: true}
	r := (&seq{}).open(cp, "f", "/f", 5, 4, 3).exit(cp, 0).run(1)
	r.ExitCode, r.ExitSignal = 137, "SIGKILL"
	if v := allow.Check(r, esc); len(v) != 0 {
		t.Errorf("--allow-fail, killed: %q", v)
	}
}
