package detect

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// TestHeldChainsUnderWatch: once watch holds a found lookup chain for
// HeldFor, not until its image ends (a shell lives for hours): released by
// Expire past it, and dropped before it when the name is made where it
// was missing.
func TestHeldChainsUnderWatch(t *testing.T) {
	sh := task(50, 50, 950, 1, "bash")
	search := (&seq{}).
		lookup(sh, trace.SysNewfstatat, "/a/ls", 0, 0, -2, false).
		lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 1, 7, 0, false)
	check := (&seq{}).
		lookup(sh, trace.SysStatx, "/dst/f", 0, 0, -2, false).
		lookup(sh, trace.SysStatx, "/src/f", 1, 8, 0, false)
	made := (&seq{}).open(sh, "/dst/f", "/dst/f", 1, 9, 3)
	for _, tc := range []struct {
		name   string
		seqs   []*seq
		expire time.Duration // when Expire runs, after the events
		want   int           // findings drained, the image still live
	}{
		{"a search, within HeldFor", []*seq{search}, HeldFor / 2, 0},
		{"a search, past HeldFor", []*seq{search}, 2 * HeldFor, 1},
		{"a check, its name made at once", []*seq{check, made}, 2 * HeldFor, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Policy: Bounded(0, 0)})
			for _, s := range tc.seqs {
				feed(e, s, t0)
			}
			e.Expire(t0.Add(tc.expire))
			if got := e.Drain(); len(got) != tc.want {
				t.Errorf("%d findings, want %d: %+v", len(got), tc.want, got)
			}
			e.Finish(t0.Add(tc.expire))
			if n := len(e.Drain()); tc.want == 0 && tc.name != "a check, its name made at once" && n != 1 {
				t.Errorf("at the image's end %d findings, want the held one", n)
			}
		})
	}
}

// TestRepeatedMissNotCountedTwice: a path missed again in each of several
// searches is a repeated_miss of its exact count, but its repeats' time
// is the searches' (chain findings), not added again: the findings'
// wasted times sum to what the failed calls cost, each counted once.
func TestRepeatedMissNotCountedTwice(t *testing.T) {
	sh := task(50, 50, 950, 1, "bash")
	s := &seq{}
	for range 3 { // each lookup takes 1000 ns (seq.lookup)
		s.lookup(sh, trace.SysNewfstatat, "/a/ls", 0, 0, -2, false).
			lookup(sh, trace.SysNewfstatat, "/b/ls", 0, 0, -2, false).
			lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 1, 7, 0, false)
	}
	// A path missed 3 times in no search: its repeats are its own waste.
	for range 3 {
		s.lookup(sh, trace.SysNewfstatat, "/etc/app.conf", 0, 0, -2, false)
	}
	e := New(Options{})
	feed(e, s, t0)
	e.Finish(t0)
	var wasted uint64
	got := map[string]string{}
	for _, f := range e.Drain() {
		wasted += f.WastedNs
		got[string(f.Kind)+" "+f.Subject()] += fmt.Sprintf("[%d avoidable %d %dns]", f.Amount(), f.Avoidable(), f.WastedNs)
	}
	want := map[string]string{
		"duplicate_stat /usr/bin/ls":  "[3 avoidable 2 2000ns]",
		"failed_stat_probes ls":       "[2 avoidable 2 2000ns][2 avoidable 2 2000ns][2 avoidable 2 2000ns]",
		"repeated_miss /a/ls":         "[3 avoidable 0 0ns]",
		"repeated_miss /b/ls":         "[3 avoidable 0 0ns]",
		"repeated_miss /etc/app.conf": "[3 avoidable 2 2000ns]",
	}
	if !maps.Equal(got, want) {
		t.Errorf("findings:\n%v\nwant:\n%v", got, want)
	}
	// 6 failed lookups in searches, 2 repeats of app.conf, 2 repeated
	// stats of the winner.
	if wasted != 10000 {
		t.Errorf("findings waste %d ns in all, want 10000: each avoidable call once", wasted)
	}
}

// TestHeldChainsDroppedWhereMade: a found chain is dropped when its name
// is made in a directory it missed in, and only then: of two searches of
// f, the one that missed in /c goes when /c/f is made; and of 50 searches
// that each missed in /a, all go when /a/f is.
func TestHeldChainsDroppedWhereMade(t *testing.T) {
	sh := task(50, 50, 950, 1, "bash")
	tests := []struct {
		name string
		seq  func(s *seq)
		want map[string]int // chain findings by target: their failures
	}{
		{"two searches, one missed where made", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/f", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/f", 1, 7, 0, false).
				lookup(sh, trace.SysNewfstatat, "/c/f", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/f", 1, 7, 0, false).
				open(sh, "/c/f", "/c/f", 1, 9, 3)
		}, map[string]int{"f": 2}},
		{"50 searches, all missed where made", func(s *seq) {
			for range 50 {
				s.lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
					lookup(sh, trace.SysNewfstatat, "/usr/bin/f", 1, 7, 0, false)
			}
			s.open(sh, "/a/f", "/a/f", 1, 9, 3)
		}, map[string]int{}},
		{"50 searches, made elsewhere", func(s *seq) {
			for range 50 {
				s.lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
					lookup(sh, trace.SysNewfstatat, "/usr/bin/f", 1, 7, 0, false)
			}
			s.open(sh, "/d/f", "/d/f", 1, 9, 3)
		}, map[string]int{"f": 50}},
		// A directory: made (mkdir, not traced) where it was missing, as
		// something found inside it shows.
		{"a directory checked, then made and copied into", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/dst/hooks", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/tmpl/hooks", 1, 7, 0, false).
				open(sh, "/dst/hooks/x/y.sample", "/dst/hooks/x/y.sample", 1, 9, 3)
		}, map[string]int{}},
		{"a directory missed in two places, made in one: pending no more", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/lib", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/lib", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/lib/z", 1, 9, 0, false)
		}, map[string]int{}},
		{"a directory found elsewhere than it was missing", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/dst/hooks", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/tmpl/hooks", 1, 7, 0, false).
				open(sh, "/tmpl/hooks/y.sample", "/tmpl/hooks/y.sample", 1, 9, 3)
		}, map[string]int{"hooks": 1}},
		// A file made is no file found: where the chain missed it, the
		// chain was a check; elsewhere, the search goes on.
		{"a name missed, then made elsewhere", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/home/u/.app.conf", 0, 0, -2, false).
				created(sh, "/tmp/app/.app.conf", 1, 9, 3)
		}, map[string]int{}},
		{"a name missed twice, made elsewhere, then found", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/f", 0, 0, -2, false).
				created(sh, "/c/f", 1, 9, 3).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/f", 1, 7, 0, false)
		}, map[string]int{"f": 2}},
		{"a name missed, then made where it missed", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
				created(sh, "/a/f", 1, 9, 3).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/f", 1, 7, 0, false)
		}, map[string]int{}},
		// An empty directory, made: only the mkdir shows it (git init's
		// .git/branches from an empty template directory).
		{"a directory checked, then made empty", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/dst/branches", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/tmpl/branches", 1, 7, 0, false).
				made(sh, trace.SysMkdir, "/dst/branches/", "")
		}, map[string]int{}},
		{"a directory checked, then made by a relative name", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/dst/branches", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/tmpl/branches", 1, 7, 0, false).
				made(sh, trace.SysMkdirat, "branches", "/dst")
		}, map[string]int{}},
		{"a directory searched, then made elsewhere", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/lib", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/usr/lib", 1, 7, 0, false).
				made(sh, trace.SysMkdir, "/c/lib", "")
		}, map[string]int{"lib": 1}},
		{"a directory missed twice, made where missed: no search left", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/lib", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/lib", 0, 0, -2, false).
				made(sh, trace.SysMkdir, "/b/lib", "")
		}, map[string]int{}},
		// gcc checks which of its candidate directories exist, each as
		// "dir/.": different directories, no name searched.
		{"directories checked as dir/.", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/opt/x/bin/12/.", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/opt/x/bin/.", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/opt/x/lib/..", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/usr/lib/.", 1, 7, 0, false).
				lookup(sh, trace.SysNewfstatat, "/lib/12/.", 0, 0, -2, false)
		}, map[string]int{}},
		{"a directory missed in two places, never found", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/a/lib", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/lib", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/c/libz", 1, 9, 0, false)
		}, map[string]int{"lib": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]int{}
			for _, f := range statChains(tc.seq) {
				got[f.Subject()] += f.Failed
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("chains %v, want %v", got, tc.want)
			}
		})
	}
}

// statChains runs the events build makes through an exact engine to the
// end and returns the failed_stat_probes findings it leaves.
func statChains(build func(*seq)) []trace.Finding {
	s := &seq{}
	build(s)
	e := New(Options{})
	feed(e, s, t0)
	e.Finish(t0)
	var out []trace.Finding
	for _, f := range e.Drain() {
		if f.Kind == trace.KindFailedStatProbes {
			out = append(out, f)
		}
	}
	return out
}

// TestSplitClean: splitClean is path.Dir and path.Base on every clean
// path, and on each directory above it.
func TestSplitClean(t *testing.T) {
	for _, p := range []string{"/", ".", "a", "/a", "a/b", "/a/b/c", "..", "../..", "../a", "../../a/b",
		"a//b/", "/a/./b/../c/", "x/../../y", "/.hidden/.x", "a/..."} {
		for d := path.Clean(p); d != "/" && d != "."; d = path.Dir(d) {
			dir, base := splitClean(d)
			if dir != path.Dir(d) || base != path.Base(d) {
				t.Errorf("splitClean(%q) = %q, %q; path: %q, %q", d, dir, base, path.Dir(d), path.Base(d))
			}
		}
	}
}

// TestLookupWonAgain: an open repeated in a loop is checked against the
// pending chains once while nothing changes between (liveState.won), and
// again as soon as something does: a search begun between two of the
// loop's opens, a directory missed, the call's own arguments.
func TestLookupWonAgain(t *testing.T) {
	sh := task(50, 50, 950, 1, "app")
	pending := func(s *seq) *seq { // a name never found: a chain pends throughout
		return s.lookup(sh, trace.SysNewfstatat, "/x/never", 0, 0, -2, false)
	}
	tests := []struct {
		name string
		seq  func(s *seq)
		want map[string]string // chain findings by target: failures, where found
	}{
		{"a search begun between two opens", func(s *seq) {
			pending(s).open(sh, "/usr/bin/f", "/usr/bin/f", 1, 7, 3).
				open(sh, "/usr/bin/f", "/usr/bin/f", 1, 7, 3).
				lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/f", 0, 0, -2, false).
				open(sh, "/usr/bin/f", "/usr/bin/f", 1, 7, 3)
		}, map[string]string{"f": "2 /usr/bin/f"}},
		{"a directory above the file missed between two opens", func(s *seq) {
			pending(s).open(sh, "/d/sub/f", "/d/sub/f", 1, 7, 3).
				open(sh, "/d/sub/f", "/d/sub/f", 1, 7, 3).
				lookup(sh, trace.SysNewfstatat, "/d/sub", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/e/sub", 0, 0, -2, false).
				open(sh, "/d/sub/f", "/d/sub/f", 1, 7, 3)
		}, map[string]string{}},
		{"made elsewhere, then opened there", func(s *seq) {
			pending(s).lookup(sh, trace.SysNewfstatat, "/a/f", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/b/f", 0, 0, -2, false).
				created(sh, "/c/f", 1, 9, 3).
				open(sh, "/c/f", "/c/f", 1, 9, 3)
		}, map[string]string{"f": "2 /c/f"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, f := range statChains(tc.seq) {
				found := "never"
				if f.Found != nil {
					found = *f.Found
				}
				got[f.Subject()] = fmt.Sprintf("%d %s", f.Failed, found)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("chains %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMayName: a name pending is never missed in a path that has it as a
// component, clean or not, and a path without one names nothing pending.
func TestMayName(t *testing.T) {
	ls := &liveState{}
	for _, n := range []string{"ld.so.preload", "ls", ".."} {
		ls.nameMask |= nameBit(n)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/usr/bin/ls", true},
		{"ls", true},
		{"ls/", true},
		{"/etc/ld.so.preload/x", true},
		{"./a/../ls", true},
		{"/", true}, // no component: taken to name anything
		{"", true},
		{"//", true},
		{"/dev/shm/w1f", false},
		{"src/d1/f2", false},
		{"/usr/bin/lsblk", false},
	} {
		if got := ls.mayName(tc.path); got != tc.want && tc.want {
			t.Errorf("mayName(%q) = %v, want %v", tc.path, got, tc.want)
		} else if got != tc.want {
			t.Logf("mayName(%q) = %v: a collision of bits, not a miss", tc.path, got)
		}
	}
}

// TestStatIdentityFileType: a stat's buffer has no generation, so its
// file type is part of a looked-up file's identity, sent or tallied: a
// regular file and a symlink made later with its inode number (git
// init's symlink check on ext4) are two files. And tracefs's, which
// share a number, are told apart by their paths' hash.
func TestStatIdentityFileType(t *testing.T) {
	g := task(60, 60, 960, 1, "git")
	const reg, lnk = trace.FileReg, trace.FileLnk
	tests := []struct {
		name string
		seq  func(s *seq)
		want string // duplicate_stat findings: subject and count
	}{
		{"same number, same type", func(s *seq) {
			s.lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/tX", 1, 7, 0, false).with(ftype(reg))
		}, "/r/config 3;"},
		{"same number, a symlink", func(s *seq) {
			s.lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/tX", 1, 7, 0, false).with(ftype(lnk))
		}, "/r/config 2;"},
		// tracefs's files share one number: the collector sets gen
		// to a hash of each one's path.
		{"same number, tracefs paths", func(s *seq) {
			for _, f := range []struct {
				name string
				gen  uint32
			}{{"/t/a/id", 11}, {"/t/b/id", 13}, {"/t/a/id", 11}} {
				s.lookup(g, trace.SysNewfstatat, f.name, 1, 7, 0, false).with(ftype(reg)).
					with(func(ev *trace.Event) { ev.Open.Gen = f.gen })
			}
		}, "/t/a/id 2;"},
		{"tallied, same type", func(s *seq) {
			s.lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				tally(g, trace.SysNewfstatat, 0, 1, 7, 4, 400).with(func(ev *trace.Event) { ev.Tally.FileType = reg })
		}, "/r/config 6;"},
		{"tallied, another type", func(s *seq) {
			s.lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/config", 1, 7, 0, false).with(ftype(reg)).
				lookup(g, trace.SysNewfstatat, "/r/tX", 1, 7, 0, false).with(ftype(lnk)).
				lookup(g, trace.SysNewfstatat, "/r/tX", 1, 7, 0, false).with(ftype(lnk)).
				tally(g, trace.SysNewfstatat, 0, 1, 7, 4, 400).with(func(ev *trace.Event) { ev.Tally.FileType = lnk })
		}, "/r/config 2;/r/tX 6;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &seq{}
			tc.seq(s)
			var got []string
			for _, f := range s.run(0).Findings {
				if f.Kind == trace.KindDuplicateStat {
					got = append(got, fmt.Sprintf("%s %d;", f.Subject(), f.Amount()))
				}
			}
			slices.Sort(got)
			if g := strings.Join(got, ""); g != tc.want {
				t.Errorf("duplicate_stat: %q, want %q", g, tc.want)
			}
		})
	}
}

// TestLookupEveryPlace: a name found in one directory and then in
// another, or missed past a find, is looked for in every place (make's
// include directories, man's manual paths): the chains say where else.
// The same search made again is no such thing.
func TestLookupEveryPlace(t *testing.T) {
	sh := task(50, 50, 950, 1, "make")
	miss := func(s *seq, name string) *seq { return s.lookup(sh, trace.SysNewfstatat, name, 0, 0, -2, false) }
	hit := func(s *seq, name string, ino uint64) *seq {
		return s.lookup(sh, trace.SysNewfstatat, name, 1, ino, 0, false)
	}
	tests := []struct {
		name string
		seq  func(s *seq)
		want []string // per chain: failures, where found, also_found
	}{
		{"found, then found elsewhere", func(s *seq) {
			hit(hit(miss(s, "/usr/gnu/include"), "/usr/local/include", 7), "/usr/include", 8)
		}, []string{"1 /usr/local/include /usr"}},
		{"missed past a find, then found", func(s *seq) {
			hit(miss(hit(miss(s, "/a/man"), "/b/man", 7), "/c/man"), "/d/man", 8)
		}, []string{"1 /b/man /d", "1 /d/man /b"}},
		{"missed past a find, never found", func(s *seq) {
			miss(miss(hit(miss(s, "/a/man"), "/b/man", 7), "/c/man"), "/e/man")
		}, []string{"1 /b/man ", "2 never /b"}},
		{"the same search again", func(s *seq) {
			hit(miss(hit(miss(s, "/a/ls"), "/usr/bin/ls", 7), "/a/ls"), "/usr/bin/ls", 7)
		}, []string{"1 /usr/bin/ls ", "1 /usr/bin/ls "}},
		{"missed past a find, then found where it was", func(s *seq) {
			hit(miss(hit(miss(s, "/a/ls"), "/usr/bin/ls", 7), "/b/ls"), "/usr/bin/ls", 7)
		}, []string{"1 /usr/bin/ls ", "1 /usr/bin/ls "}},
		{"found again where it was found", func(s *seq) {
			hit(hit(miss(s, "/a/ls"), "/usr/bin/ls", 7), "/usr/bin/ls", 7)
		}, []string{"1 /usr/bin/ls "}},
		// perl's require stats each @INC entry for the module's
		// relative name: Exporter/Heavy.pm, then Carp/Heavy.pm, two
		// names of one basename searched along one list, each found
		// in its own place: no look in every place (an entry first
		// saves both searches' misses).
		{"another name of the basename along the same list", func(s *seq) {
			s = hit(miss(miss(s, "/i1/Exporter/Heavy.pm"), "/i2/Exporter/Heavy.pm"), "/i3/Exporter/Heavy.pm", 7)
			hit(miss(miss(s, "/i1/Carp/Heavy.pm"), "/i2/Carp/Heavy.pm"), "/i3/Carp/Heavy.pm", 8)
		}, []string{"2 /i3/Carp/Heavy.pm ", "2 /i3/Exporter/Heavy.pm "}},
		{"another name of the basename along the same list, found sooner", func(s *seq) {
			s = hit(miss(miss(s, "/i1/Heavy.pm"), "/i2/Heavy.pm"), "/i3/Heavy.pm", 7)
			hit(miss(s, "/i1/Carp/Heavy.pm"), "/i2/Carp/Heavy.pm", 8)
		}, []string{"1 /i2/Carp/Heavy.pm ", "2 /i3/Heavy.pm "}},
		{"another name of the basename along the same list, never found", func(s *seq) {
			s = hit(miss(miss(s, "/i1/Exporter/Heavy.pm"), "/i2/Exporter/Heavy.pm"), "/i3/Exporter/Heavy.pm", 7)
			miss(miss(miss(s, "/i1/Foo/Heavy.pm"), "/i2/Foo/Heavy.pm"), "/i3/Foo/Heavy.pm")
		}, []string{"2 /i3/Exporter/Heavy.pm ", "3 never "}},
		// A search along PATH (Go's exec.LookPath stats each entry),
		// then a file of the same basename opened elsewhere: the
		// program reads /etc/hostname, it does not look for the
		// command there; putting /usr/bin first still saves the misses.
		{"found, then another file of the name opened", func(s *seq) {
			hit(miss(miss(s, "/a/hostname"), "/b/hostname"), "/usr/bin/hostname", 7).
				open(sh, "/etc/hostname", "/etc/hostname", 1, 8, 3)
		}, []string{"2 /usr/bin/hostname "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range statChains(tc.seq) {
				found := "never"
				if f.Found != nil {
					found = *f.Found
				}
				got = append(got, fmt.Sprintf("%d %s %s", f.Failed, found, f.AlsoFound))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("chains %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRepeatedMissOfCutName: a name past PATH_MAX, cut by the kernel
// side, fails with ENAMETOOLONG; what is left of it ("./" repeated) is
// not its directory, which the same image opens without error: the
// repeated miss names the cut name, marked, not the directory.
func TestRepeatedMissOfCutName(t *testing.T) {
	e := New(Options{Policy: KeepAll("")})
	pt := task(10, 10, 1, 1, "longp")
	cut := strings.Repeat("./", 2047) + "."
	s := &seq{}
	for i := 0; i < 2; i++ {
		s.evs = append(s.evs, trace.Event{Kind: trace.EventOpen, Task: pt, Open: trace.OpenRecord{
			Syscall: trace.SysOpenat, Fname: cut, Path: "/deep/dir", Ret: -36, Dirfd: -100,
			Status: trace.StFnameTruncated | trace.StPathIsBase, EnterNs: 100, ExitNs: 1100}})
	}
	s.open(pt, ".", "/deep/dir", 1, 5, 3).open(pt, ".", "/deep/dir", 1, 5, 3)
	feed(e, s.exit(pt, 0), t0)
	var miss string
	for _, f := range e.Drain() {
		if f.Kind == trace.KindRepeatedMiss {
			miss = f.Path
		}
	}
	if miss == "/deep/dir" || !strings.HasSuffix(miss, trace.PathCut) {
		t.Errorf("repeated_miss of the cut name: %q, want it marked cut (ending in %q), not the directory", miss, trace.PathCut)
	}
}

// TestDirCheckAfterMiss: ld.so stats the directory of each failed open of
// a library (to skip it next time when it is missing): those stats are
// part of the library's search, counted in its chain's time and
// DirChecks, not searches of their own for the directories' names
// (x86-64-v3, tls). A stat of another directory, or of the directory
// after a miss of another thread, stays a lookup of its own.
func TestDirCheckAfterMiss(t *testing.T) {
	ld := task(60, 60, 960, 1, "main")
	other := ld
	other.Tid = 61
	ldso := func(s *seq, tk trace.Task, dir string) {
		s.open(ld, dir+"/glibc-hwcaps/x86-64-v3/libz.so", dir+"/glibc-hwcaps/x86-64-v3/libz.so", 0, 0, -2).
			lookup(tk, trace.SysNewfstatat, dir+"/glibc-hwcaps/x86-64-v3", 0, 0, -2, false).
			open(ld, dir+"/tls/libz.so", dir+"/tls/libz.so", 0, 0, -2).
			lookup(tk, trace.SysNewfstatat, dir+"/tls", 0, 0, -2, false).
			open(ld, dir+"/libz.so", dir+"/libz.so", 0, 0, -2).
			lookup(tk, trace.SysNewfstatat, dir, 1, 5, 0, false)
	}
	tests := []struct {
		name string
		seq  func(s *seq)
		want map[string]string // kind and subject: failed, dir checks, ns
	}{
		{"ld.so's directory checks", func(s *seq) {
			ldso(s, ld, "/a")
			ldso(s, ld, "/b")
			s.open(ld, "/lib/libz.so", "/lib/libz.so", 1, 9, 3)
		}, map[string]string{"failed_open_probes libz.so": "6 failed, 4 dir checks, 10000ns"}},
		{"checks by another thread", func(s *seq) {
			ldso(s, other, "/a")
			ldso(s, other, "/b")
			s.open(ld, "/lib/libz.so", "/lib/libz.so", 1, 9, 3)
		}, map[string]string{"failed_open_probes libz.so": "6 failed, 0 dir checks, 6000ns",
			"failed_stat_probes x86-64-v3": "2 failed, 0 dir checks, 2000ns",
			"failed_stat_probes tls":       "2 failed, 0 dir checks, 2000ns"}},
		{"a stat of another directory", func(s *seq) {
			s.open(ld, "/a/libz.so", "/a/libz.so", 0, 0, -2).
				lookup(ld, trace.SysNewfstatat, "/a/sub/tls", 0, 0, -2, false).
				open(ld, "/b/libz.so", "/b/libz.so", 0, 0, -2).
				lookup(ld, trace.SysNewfstatat, "/b/sub/tls", 0, 0, -2, false).
				open(ld, "/lib/libz.so", "/lib/libz.so", 1, 9, 3)
		}, map[string]string{"failed_open_probes libz.so": "2 failed, 0 dir checks, 2000ns",
			"failed_stat_probes tls": "2 failed, 0 dir checks, 2000ns"}},
	}
	for _, pol := range []Policy{KeepAll(""), Bounded(0, 0)} {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s := &seq{}
				tc.seq(s)
				got := searches(pol, s, func(f trace.Finding) string {
					return fmt.Sprintf("%d failed, %d dir checks, %dns", f.Failed, f.DirChecks, f.WastedNs)
				})
				if !maps.Equal(got, tc.want) {
					t.Errorf("chains:\n%v\nwant:\n%v", got, tc.want)
				}
			})
		}
	}
}

// TestLookupRejectedByAccess: a shell's PATH search stats each entry's
// name and, where it is found, checks it is executable (faccessat2 X_OK):
// a file there that is not executable is no find, and the search goes on
// (dash, bash). strace shows one search: /nope1 ENOENT, /a/tool found by
// the stat but EACCES to the check, /nope2 ENOENT, /c/tool found.
func TestLookupRejectedByAccess(t *testing.T) {
	sh := task(50, 50, 950, 1, "sh")
	xok := func(ev *trace.Event) { ev.Open.Mode = 1 }
	wok := func(ev *trace.Event) { ev.Open.Mode = 2 }
	tests := []struct {
		name string
		seq  func(s *seq)
		want []string // per chain: failures, where found
	}{
		{"found, not executable, found further on", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/nope1/tool", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/a/tool", 1, 7, 0, false).
				lookup(sh, trace.SysFaccessat2, "/a/tool", 0, 0, -13, false).with(xok).
				lookup(sh, trace.SysNewfstatat, "/nope2/tool", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/c/tool", 1, 8, 0, false).
				exec(sh, "/c/tool", 0, "tool")
		}, []string{"3 /c/tool"}},
		// bash stats the file it refused again and checks it
		// readable (its fallback should nothing better be found).
		{"found, not executable, looked at again, found further on", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/nope1/tool", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/a/tool", 1, 7, 0, false).
				lookup(sh, trace.SysNewfstatat, "/a/tool", 1, 7, 0, false).
				lookup(sh, trace.SysAccess, "/a/tool", 0, 0, -13, false).with(xok).
				lookup(sh, trace.SysNewfstatat, "/a/tool", 1, 7, 0, false).
				lookup(sh, trace.SysAccess, "/a/tool", 0, 0, 0, false).
				lookup(sh, trace.SysNewfstatat, "/nope2/tool", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/c/tool", 1, 8, 0, false).
				exec(sh, "/c/tool", 0, "tool")
		}, []string{"3 /c/tool"}},
		{"two searches past a file not executable", func(s *seq) {
			for range 2 {
				s.lookup(sh, trace.SysNewfstatat, "/nope1/tool", 0, 0, -2, false).
					lookup(sh, trace.SysNewfstatat, "/a/tool", 1, 7, 0, false).
					lookup(sh, trace.SysFaccessat2, "/a/tool", 0, 0, -13, false).with(xok).
					lookup(sh, trace.SysNewfstatat, "/nope2/tool", 0, 0, -2, false).
					lookup(sh, trace.SysNewfstatat, "/c/tool", 1, 8, 0, false)
			}
		}, []string{"3 /c/tool", "3 /c/tool"}},
		{"found, not executable, found nowhere else", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/nope1/tool", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/a/tool", 1, 7, 0, false).
				lookup(sh, trace.SysFaccessat2, "/a/tool", 0, 0, -13, false).with(xok).
				lookup(sh, trace.SysNewfstatat, "/nope2/tool", 0, 0, -2, false)
		}, []string{"3 never"}},
		// Not writable is no rejection of the find: the file is there,
		// and read (a configuration file found, then checked W_OK).
		{"found, then not writable", func(s *seq) {
			s.lookup(sh, trace.SysNewfstatat, "/home/u/app.conf", 0, 0, -2, false).
				lookup(sh, trace.SysNewfstatat, "/etc/app.conf", 1, 7, 0, false).
				lookup(sh, trace.SysFaccessat2, "/etc/app.conf", 0, 0, -13, false).with(wok)
		}, []string{"1 /etc/app.conf"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range statChains(tc.seq) {
				found := "never"
				if f.Found != nil {
					found = *f.Found
				}
				got = append(got, fmt.Sprintf("%d %s", f.Failed, found))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("chains %q, want %q", got, tc.want)
			}
		})
	}
}
