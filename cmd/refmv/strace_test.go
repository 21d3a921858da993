package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/refcopy/opencount"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"golang.org/x/sys/unix"
)

// TestStraceSameFilesystemOpensNothing checks, with strace as the witness
// and no BPF, that a move within one filesystem is a rename: neither the
// source nor the destination is opened at all.
func TestStraceSameFilesystemOpensNothing(t *testing.T) {
	strace.Require(t)
	bin := opencount.Build(t, ".")
	dir := realTempDir(t)
	src := filepath.Join(dir, "src")
	makeSources(t, src)
	files, dirs, links := opencount.Tree(t, src)

	// One file, then the whole tree.
	file, fileDst := filepath.Join(src, "big"), filepath.Join(dir, "big.moved")
	tr := opencount.MustRun(t, dir, bin, file, fileDst)
	tr.Check(t, tr.Expect(file, 0), tr.Expect(fileDst, 0))

	dst := filepath.Join(dir, "moved")
	tr = opencount.MustRun(t, dir, bin, src, dst)
	for _, p := range append(append(files, dirs...), links...) {
		tr.Check(t, tr.Expect(p, 0), tr.Expect(dst+strings.TrimPrefix(p, src), 0))
	}
	if opens := tr.Under(dir); len(opens) != 0 {
		t.Errorf("%d opens under the test directory, want none:\n%s", len(opens), tr)
	}
}

// TestStraceCrossDeviceOpensEachSourceOnce moves a tree from the temporary
// directory to tmpfs (/dev/shm): each source file and directory must be
// opened exactly once, links never, and the source must be gone afterwards.
func TestStraceCrossDeviceOpensEachSourceOnce(t *testing.T) {
	strace.Require(t)
	dir := realTempDir(t)
	other, err := os.MkdirTemp("/dev/shm", "refmv-test-")
	if err != nil {
		testprog.Skipf(t, "the cross-device test cannot use /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	if devOf(t, dir) == devOf(t, other) {
		testprog.Skipf(t, "the cross-device test: %s and %s are on the same filesystem, so refmv would only rename", dir, other)
	}
	bin := opencount.Build(t, ".")
	src := filepath.Join(dir, "src")
	makeSources(t, src)
	files, dirs, links := opencount.Tree(t, src)

	tr := opencount.MustRun(t, dir, bin, src, other)
	for _, f := range files {
		tr.Check(t, tr.Expect(f, 1), tr.ExpectReadOnly(f))
	}
	for _, d := range dirs {
		tr.Check(t, tr.Expect(d, 1))
	}
	for _, l := range links {
		tr.Check(t, tr.Expect(l, 0))
	}
	// Each file is created once at the destination (under the temporary
	// name that is then renamed into place).
	creates := 0
	for _, o := range tr.Under(other) {
		if bits, err := o.FlagBits(); err == nil && bits&unix.O_CREAT != 0 {
			creates++
		}
	}
	if creates != len(files) {
		t.Errorf("%d files created at the destination, want %d:\n%s", creates, len(files), tr)
	}
	// No file is looked up twice: the copy and the removal of the
	// source share what they learnt (once would report a duplicate
	// stat, of a link or of /).
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
	if _, err := os.Lstat(src); !os.IsNotExist(err) {
		t.Errorf("the source is still there after the move (%v)", err)
	}
	moved, _, _ := opencount.Tree(t, filepath.Join(other, "src"))
	if len(moved) != len(files) {
		t.Errorf("%d files arrived, want %d", len(moved), len(files))
	}
}

func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// makeSources creates the source tree: files at the top and in nested
// directories, an empty directory and a link.
func makeSources(t *testing.T, src string) {
	t.Helper()
	for _, d := range []string{"", "sub", "sub/deeper", "emptydir"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		"small":        "small\n",
		"big":          strings.Repeat("0123456789abcdef", 200_000),
		"empty":        "",
		"sub/b":        "b",
		"sub/deeper/c": "c",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub/b", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
}
