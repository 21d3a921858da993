package refcopy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMoveSameFilesystem checks renames: a file, a tree, a link, and a
// file replacing an existing one. The moved tree must be the very same
// inodes (a rename, not a copy).
func TestMoveSameFilesystem(t *testing.T) {
	dir := tempDir(t)
	src := filepath.Join(dir, "tree")
	buildTree(t, src)
	want := treeSnapshot(t, src)
	var before unix.Stat_t
	if err := unix.Stat(filepath.Join(src, "sub/b.bin"), &before); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "moved")
	if err := Move(src, dst); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, src)
	diffSnapshots(t, treeSnapshot(t, dst), want)
	var after unix.Stat_t
	if err := unix.Stat(filepath.Join(dst, "sub/b.bin"), &after); err != nil {
		t.Fatal(err)
	}
	if idOf(&after) != idOf(&before) {
		t.Error("the moved file is a different inode: copied, not renamed")
	}

	old := filepath.Join(dir, "old")
	writeFile(t, old, []byte("old"), 0o644)
	if err := Move(filepath.Join(dst, "a.txt"), old); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, old)); got != "hello\n" {
		t.Errorf("replaced file contains %q", got)
	}
	if err := Move(filepath.Join(dst, "link-dangling"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "does/not/exist" {
		t.Errorf("moved link: %q, %v", target, err)
	}
}

// TestMoveErrors checks the messages for failed renames, and that the
// source survives each of them.
func TestMoveErrors(t *testing.T) {
	dir := tempDir(t)
	t.Chdir(dir)
	writeFile(t, "file", []byte("data"), 0o644)
	if err := os.MkdirAll("dir/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("full/x", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ src, dst, want string }{
		{"missing", "x", "cannot stat 'missing': No such file or directory"},
		{"dir", "dir/sub/inside", "cannot move 'dir' to a subdirectory of itself, 'dir/sub/inside'"},
		{"file", "dir", "cannot overwrite directory 'dir' with non-directory"},
		{"dir", "full", "cannot move 'dir' to 'full': Directory not empty"},
		{"file", "nodir/x", "cannot move 'file' to 'nodir/x': No such file or directory"},
	} {
		if got := errLines(Move(c.src, c.dst)); !slices.Equal(got, []string{c.want}) {
			t.Errorf("Move(%s, %s): errors %q, want %q", c.src, c.dst, got, c.want)
		}
	}
	if got := string(readFile(t, "file")); got != "data" {
		t.Errorf("source file now contains %q", got)
	}
	if _, err := os.Stat("dir/sub"); err != nil {
		t.Errorf("source directory damaged: %v", err)
	}
}

// TestMoveAcrossKeepsTimesAndOwner moves a file and a directory holding
// one to another filesystem: as with mv, each keeps its modification time
// and (as root) its owner, where a plain copy would make them now's and
// the mover's.
func TestMoveAcrossKeepsTimesAndOwner(t *testing.T) {
	other := otherFSDir(t)
	dir := tempDir(t)
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	root := os.Geteuid() == 0
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tree, "file")
	writeFile(t, file, []byte("data"), 0o644)
	for _, p := range []string{file, tree} {
		if root {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := Move(tree, filepath.Join(other, "tree")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"tree", "tree/file"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(other, rel), &st); err != nil {
			t.Fatal(err)
		}
		if got := time.Unix(st.Mtim.Unix()); !got.Equal(old) {
			t.Errorf("%s: modification time %v, want %v", rel, got.UTC(), old)
		}
		if root && (st.Uid != 65534 || st.Gid != 65534) {
			t.Errorf("%s: owner %d:%d, want 65534:65534", rel, st.Uid, st.Gid)
		}
	}
}

// TestMoveAcrossMissingSource moves a source that does not exist to
// another filesystem, where rename fails with EXDEV before it looks the
// source up: the one line is mv's, with no summary about a copy that
// never started and a source that is not there to be "unchanged".
func TestMoveAcrossMissingSource(t *testing.T) {
	other := otherFSDir(t)
	t.Chdir(tempDir(t))
	want := []string{"cannot stat 'missing': No such file or directory"}
	if got := errLines(Move("missing", filepath.Join(other, "x"))); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
	noTemporaries(t, other)
}

// TestMoveAcrossFilesystems moves a file, a tree and a link from the
// temporary directory to tmpfs: everything arrives with its modes and link
// targets, and the source is gone afterwards.
func TestMoveAcrossFilesystems(t *testing.T) {
	other := otherFSDir(t)
	dir := tempDir(t)

	src := filepath.Join(dir, "tree")
	buildTree(t, src)
	want := treeSnapshot(t, src)
	dst := filepath.Join(other, "tree")
	if err := Move(src, dst); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, src)
	diffSnapshots(t, treeSnapshot(t, dst), want)

	file := filepath.Join(dir, "file")
	writeFile(t, file, randomBytes(1<<20, 9), 0o751)
	wantData := readFile(t, file)
	existing := filepath.Join(other, "existing")
	writeFile(t, existing, []byte("replaced"), 0o644)
	if err := Move(file, existing); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, file)
	equalBytes(t, "moved file", readFile(t, existing), wantData)
	if m := modeOf(t, existing); m != 0o751 {
		t.Errorf("moved file has mode %o, want 751", m)
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink("some/target", link); err != nil {
		t.Fatal(err)
	}
	if err := Move(link, filepath.Join(other, "link")); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, link)
	if target, err := os.Readlink(filepath.Join(other, "link")); err != nil || target != "some/target" {
		t.Errorf("moved link: %q, %v", target, err)
	}
	noTemporaries(t, other)
}

// TestMoveAcrossFilesystemsFails makes cross-device moves fail part way,
// after some of the destination was written: the source must be intact and
// nothing left at the destination, neither dst nor a temporary copy, and an
// existing destination must be untouched.
func TestMoveAcrossFilesystemsFails(t *testing.T) {
	other := otherFSDir(t)
	dir := tempDir(t)

	// A special file in the middle of the tree: refused after the files
	// sorted before it were copied.
	src := filepath.Join(dir, "tree")
	buildTree(t, src)
	if err := unix.Mkfifo(filepath.Join(src, "sub/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := treeSnapshot(t, src)
	dst := filepath.Join(other, "tree")
	got := errLines(Move(src, dst))
	wantErrs := []string{
		"skipping special file '" + src + "/sub/fifo'",
		"cannot move '" + src + "' to '" + dst + "': the copy across filesystems failed; '" + src + "' is unchanged",
	}
	if !slices.Equal(got, wantErrs) {
		t.Errorf("errors %q, want %q", got, wantErrs)
	}
	diffSnapshots(t, treeSnapshot(t, src), want)
	mustNotExist(t, dst)
	noTemporaries(t, other)

	// An existing destination file survives a failed move onto it.
	file := filepath.Join(dir, "file")
	writeFile(t, file, randomBytes(1<<20, 10), 0o644)
	existing := filepath.Join(other, "existing")
	writeFile(t, existing, []byte("keep"), 0o644)
	err := withFileSizeLimit(t, 64<<10, func() error { return Move(file, existing) })
	if got := errLines(err); len(got) != 2 || !strings.HasSuffix(got[0], "File too large") {
		t.Errorf("errors %q; want a write error and the summary", got)
	}
	if got := string(readFile(t, existing)); got != "keep" {
		t.Errorf("existing destination now contains %q", got)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("source removed after a failed move: %v", err)
	}
	noTemporaries(t, other)
}

// TestMoveToFullFilesystem moves a tree onto a small tmpfs that cannot hold
// it. Root only.
func TestMoveToFullFilesystem(t *testing.T) {
	small := mountTmpfs(t, 0, "size=256k")
	src := filepath.Join(tempDir(t), "tree")
	buildTree(t, src)
	writeFile(t, filepath.Join(src, "sub/huge"), randomBytes(1<<20, 11), 0o644)
	want := treeSnapshot(t, src)
	dst := filepath.Join(small, "tree")
	got := errLines(Move(src, dst))
	if len(got) != 2 || !strings.HasSuffix(got[0], "': No space left on device") {
		t.Errorf("errors %q; want no space, then the summary", got)
	}
	diffSnapshots(t, treeSnapshot(t, src), want)
	mustNotExist(t, dst)
	noTemporaries(t, small)
}

// noTemporaries fails if Move left a temporary copy in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".refcopy-") {
			t.Errorf("temporary %s left in %s", e.Name(), dir)
		}
	}
}
