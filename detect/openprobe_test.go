package detect

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// TestOpenEveryPlace: a name opened in one directory and then missed in
// others that search did not try is opened in every place (vim's
// runtimepath: pack/ and plugin/ of each entry, its after/ entries
// past the one that held them): the chain says where it was
// found (also_found), and no order of the list is to be suggested,
// when it finds the name nowhere. A later chain that finds it is
// another search (the same again, include_next's past the file that
// includes it), and one that tries the first one's places side by side,
// a sibling or subdirectory of each, another name of the same basename
// (sys/types.h, then asm/types.h).
func TestOpenEveryPlace(t *testing.T) {
	vim := task(60, 60, 960, 1, "vim")
	miss := func(s *seq, name string) *seq { return s.open(vim, name, "", 0, 0, -2) }
	hit := func(s *seq, name string, ino uint64) *seq { return s.open(vim, name, name, 1, ino, 3) }
	tests := []struct {
		name string
		seq  func(s *seq)
		want []string // per chain: failures, where found, also_found
	}{
		{"missed past a find, never found", func(s *seq) {
			s = hit(miss(miss(s, "/home/.vim/pack/"), "/etc/vim/pack/"), "/usr/share/vim/vim90/pack/", 7)
			miss(miss(s, "/etc/vim/after/pack/"), "/home/.vim/after/pack/")
		}, []string{"2 /usr/share/vim/vim90/pack/ ", "2 never /usr/share/vim/vim90"}},
		{"the same search again", func(s *seq) {
			s = hit(miss(miss(s, "/a/x.mo"), "/b/x.mo"), "/c/x.mo", 7)
			hit(miss(miss(s, "/a/x.mo"), "/b/x.mo"), "/c/x.mo", 7)
		}, []string{"2 /c/x.mo ", "2 /c/x.mo "}},
		{"begun elsewhere, found where it was", func(s *seq) {
			s = hit(miss(miss(s, "/a/x.mo"), "/b/x.mo"), "/c/x.mo", 7)
			hit(miss(miss(s, "/d/x.mo"), "/e/x.mo"), "/c/x.mo", 7)
		}, []string{"2 /c/x.mo ", "2 /c/x.mo "}},
		{"missed past a find, found elsewhere", func(s *seq) {
			// include_next: limits.h of gcc's directory includes the
			// next one on the list.
			s = hit(miss(miss(s, "/i1/limits.h"), "/i2/limits.h"), "/gcc/include/limits.h", 7)
			hit(miss(miss(s, "/usr/local/include/limits.h"), "/usr/include/x86_64-linux-gnu/limits.h"), "/usr/include/limits.h", 8)
		}, []string{"2 /gcc/include/limits.h ", "2 /usr/include/limits.h "}},
		{"missed past a find, never found, places side by side", func(s *seq) {
			s = hit(miss(miss(s, "/i1/sys/types.h"), "/i2/sys/types.h"), "/usr/include/sys/types.h", 7)
			miss(miss(s, "/i1/asm/types.h"), "/i2/asm/types.h")
		}, []string{"2 /usr/include/sys/types.h ", "2 never "}},
		{"a subdirectory's name of the basename, below the same places", func(s *seq) {
			s = hit(miss(miss(s, "/i1/limits.h"), "/i2/limits.h"), "/gcc/include/limits.h", 7)
			miss(miss(miss(s, "/i1/linux/limits.h"), "/i2/linux/limits.h"), "/gcc/include/linux/limits.h")
		}, []string{"2 /gcc/include/limits.h ", "3 never "}},
		{"another name of the basename, below the same places", func(s *seq) {
			s = hit(miss(miss(s, "/i1/sys/types.h"), "/i2/sys/types.h"), "/usr/include/sys/types.h", 7)
			hit(miss(miss(s, "/i1/linux/types.h"), "/i2/linux/types.h"), "/usr/include/linux/types.h", 8)
		}, []string{"2 /usr/include/linux/types.h ", "2 /usr/include/sys/types.h "}},
	}
	for _, pol := range []Policy{KeepAll(""), Bounded(100, time.Minute)} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/bounded=%v", tc.name, pol.Bounded), func(t *testing.T) {
				s := &seq{}
				tc.seq(s)
				e := New(Options{Policy: pol})
				feed(e, s, t0)
				e.Finish(t0)
				var got []string
				for _, f := range e.Drain() {
					if f.Kind != trace.KindFailedOpenProbes {
						continue
					}
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
}

// TestOpenPycNoSearch: Python opens the cached bytecode of each source it
// imports, PKG/__pycache__/NAME.TAG.pyc (PEP 3147), and reads the source
// when that is missing (PYTHONDONTWRITEBYTECODE, a directory it cannot
// write): one package's __init__.cpython-311.pyc, missing, then another
// package's, then a third's, found, is no search of one name through
// three places, whatever their order.
func TestOpenPycNoSearch(t *testing.T) {
	py := task(70, 70, 970, 1, "python3.11")
	for _, pol := range []Policy{KeepAll(""), Bounded(100, time.Minute)} {
		s := &seq{}
		s.open(py, "/p/mypkg/__pycache__/__init__.cpython-311.pyc", "", 0, 0, -2).
			open(py, "/p/mypkg/__init__.py", "/p/mypkg/__init__.py", 1, 5, 3).
			open(py, "/p/mypkg/sub/__pycache__/__init__.cpython-311.pyc", "", 0, 0, -2).
			open(py, "/p/mypkg/sub/__init__.py", "/p/mypkg/sub/__init__.py", 1, 6, 3).
			open(py, "/usr/lib/python3.11/json/__pycache__/__init__.cpython-311.pyc", "/usr/lib/python3.11/json/__pycache__/__init__.cpython-311.pyc", 1, 7, 3)
		e := New(Options{Policy: pol})
		feed(e, s, t0)
		e.Finish(t0)
		for _, f := range e.Drain() {
			if f.Info().Shape == trace.ShapeChain {
				t.Errorf("bounded=%v: %s of %s: %d failed, want no chain", pol.Bounded, f.Kind, f.Target, f.Failed)
			}
		}
	}
}
