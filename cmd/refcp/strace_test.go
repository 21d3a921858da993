package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/refcopy/opencount"
	"github.com/oncetool/once/internal/strace"
)

// TestStraceOpensEachSourceOnce checks refcp's promise with strace as the
// witness, without BPF: every source file is opened exactly once (a file
// inside a tree by its name relative to its directory's descriptor), every
// source directory once, a symbolic link never, and every destination file
// is created once, after at most one failed lookup of its name (two would
// be a repeated miss), and none in a directory refcp created.
func TestStraceOpensEachSourceOnce(t *testing.T) {
	strace.Require(t)
	bin := opencount.Build(t, ".")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	makeSources(t, src)

	t.Run("file", func(t *testing.T) {
		from, to := filepath.Join(src, "big"), filepath.Join(dir, "big.copy")
		tr := opencount.MustRun(t, dir, bin, from, to)
		tr.Check(t, tr.Expect(from, 1), tr.ExpectReadOnly(from), tr.Expect(to, 1))
		// The command line's look at DST is the copy's: one miss, not
		// a repeated one.
		if n := tr.MissesOf(to); n != 1 {
			t.Errorf("%s looked up and missed %d times; want once", to, n)
		}
		// Onto the copy, now an existing file: one stat of it.
		tr = opencount.MustRun(t, dir, bin, from, to)
		tr.Check(t, tr.Expect(from, 1), tr.Expect(to, 1))
		lookedUpOnce(t, tr)
	})

	t.Run("files into a directory", func(t *testing.T) {
		out := filepath.Join(dir, "out")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		names := []string{"small", "big", "sparse", "empty"}
		args := []string{bin}
		for _, n := range names {
			args = append(args, filepath.Join(src, n))
		}
		tr := opencount.MustRun(t, dir, append(args, out)...)
		for _, n := range names {
			tr.Check(t, tr.Expect(filepath.Join(src, n), 1), tr.Expect(filepath.Join(out, n), 1))
		}
	})

	t.Run("tree", func(t *testing.T) {
		to := filepath.Join(dir, "tree.copy")
		tr := opencount.MustRun(t, dir, bin, "-r", src, to)
		files, dirs, links := opencount.Tree(t, src)
		for _, f := range files {
			tr.Check(t, tr.Expect(f, 1), tr.ExpectReadOnly(f), tr.Expect(to+strings.TrimPrefix(f, src), 1))
			// Opened by name, relative to the directory's descriptor.
			for _, o := range tr.Of(f) {
				if o.Dirfd == strace.AtFDCWD || o.Call.Path != filepath.Base(f) {
					t.Errorf("%s opened as %s(%d, %q); want its name relative to the directory's descriptor", f, o.Syscall, o.Dirfd, o.Call.Path)
				}
			}
		}
		// The destination tree is new: every directory of it is one
		// refcp made, so a name in it is free and is created without a
		// lookup first (as cp does); a failed stat per file would be a
		// wasted lookup once counts.
		for _, f := range files {
			if dst := to + strings.TrimPrefix(f, src); tr.MissesOf(dst) != 0 {
				t.Errorf("%s looked up and missed %d times before its create, inside a directory refcp created; want no lookup", dst, tr.MissesOf(dst))
			}
		}
		// The climb that refuses a copy into itself must not stat the
		// root again to find its end (once would report a duplicate
		// stat of /).
		lookedUpOnce(t, tr)
		for _, d := range dirs {
			tr.Check(t, tr.Expect(d, 1))
		}
		for _, l := range links {
			tr.Check(t, tr.Expect(l, 0))
		}
		if len(files) < 5 || len(dirs) < 3 || len(links) < 1 {
			t.Fatalf("the source tree is smaller than intended: %d files, %d dirs, %d links", len(files), len(dirs), len(links))
		}
	})

	t.Run("tree into a directory", func(t *testing.T) {
		// DST is an existing directory: the command line stat'ed it to
		// find that out, and the copy into DST/src must not again (its
		// check against a copy into itself climbs through it).
		into := filepath.Join(dir, "into")
		if err := os.Mkdir(into, 0o755); err != nil {
			t.Fatal(err)
		}
		tr := opencount.MustRun(t, dir, bin, "-r", src, into)
		lookedUpOnce(t, tr)
		files, _, _ := opencount.Tree(t, src)
		for _, f := range files {
			tr.Check(t, tr.Expect(f, 1), tr.Expect(into+"/src"+strings.TrimPrefix(f, src), 1))
		}
		if len(files) < 5 {
			t.Fatalf("the source tree is smaller than intended: %d files", len(files))
		}
	})
}

// lookedUpOnce fails the test if the trace looked any file up (a stat,
// an access) successfully more than once, by the same absolute path: once
// would report a duplicate_stat of it.
func lookedUpOnce(t *testing.T, tr *opencount.Trace) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range tr.Lookups {
		if !l.Failed() {
			seen[l.Path]++
		}
	}
	for p, n := range seen {
		if n > 1 {
			t.Errorf("%s looked up %d times; want once", p, n)
		}
	}
}

// makeSources creates the source tree: files of several kinds at the top
// and nested directories with a file each, an empty directory and a link.
func makeSources(t *testing.T, src string) {
	t.Helper()
	for _, d := range []string{"", "sub", "sub/deeper", "emptydir"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("small", []byte("small\n"))
	write("big", []byte(strings.Repeat("0123456789abcdef", 200_000)))
	write("empty", nil)
	write("sub/b", []byte("b"))
	write("sub/deeper/c", []byte("c"))
	// A hole, then data at 1 MiB: the sparse probe must use the same fd.
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("data"), 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Symlink("sub/b", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
}
