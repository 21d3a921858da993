package refcopy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// buildTree creates a source tree with nested directories, files of
// assorted sizes and modes, an empty file and directory, and links:
// relative, absolute, to a directory, and dangling. Directory modes include
// a read-only one with contents.
func buildTree(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"", "sub", "sub/deeper", "sub/deeper/deepest", "emptydir"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644)
	writeFile(t, filepath.Join(root, "empty"), nil, 0o600)
	writeFile(t, filepath.Join(root, "sub/b.bin"), randomBytes(700_000, 1), 0o755)
	writeFile(t, filepath.Join(root, "sub/deeper/c"), []byte("c"), 0o400)
	writeFile(t, filepath.Join(root, "sub/deeper/deepest/d"), randomBytes(5000, 2), 0o640)
	writeFile(t, filepath.Join(root, "name with 'quote'\n"), []byte("odd"), 0o644)
	for link, target := range map[string]string{
		"link-rel":      "sub/b.bin",
		"link-abs":      "/etc/hostname",
		"link-dir":      "sub",
		"sub/link-up":   "../a.txt",
		"link-dangling": "does/not/exist",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for d, mode := range map[string]os.FileMode{"sub/deeper": 0o555, "sub": 0o750, "emptydir": 0o700} {
		if err := os.Chmod(filepath.Join(root, d), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopyTree copies a tree to a new destination and compares everything:
// types, modes, contents and link targets.
func TestCopyTree(t *testing.T) {
	for _, cross := range []bool{false, true} {
		name := "same-fs"
		if cross {
			name = "cross-fs"
		}
		t.Run(name, func(t *testing.T) {
			dir := tempDir(t)
			src := filepath.Join(dir, "src")
			buildTree(t, src)
			dstDir := dir
			if cross {
				dstDir = otherFSDir(t)
			}
			dst := filepath.Join(dstDir, "dst")
			if err := CopyTree(src, dst); err != nil {
				t.Fatal(err)
			}
			diffSnapshots(t, treeSnapshot(t, dst), treeSnapshot(t, src))
		})
	}
}

// TestCopyTreeMerge copies onto an existing tree, as cp -r does when the
// destination directory exists: files and links are replaced, unrelated
// entries stay, and existing directories keep their own mode.
func TestCopyTreeMerge(t *testing.T) {
	dir := tempDir(t)
	src := filepath.Join(dir, "src")
	buildTree(t, src)
	dst := filepath.Join(dir, "dst")
	if err := os.MkdirAll(filepath.Join(dst, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dst, "a.txt"), []byte("old and longer contents"), 0o666)
	writeFile(t, filepath.Join(dst, "unrelated"), []byte("keep me"), 0o644)
	if err := os.Symlink("elsewhere", filepath.Join(dst, "link-rel")); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	want := treeSnapshot(t, src)
	got := treeSnapshot(t, dst)
	if got["unrelated"] == "" {
		t.Error("an unrelated file in the destination was removed")
	}
	delete(got, "unrelated")
	if m := modeOf(t, filepath.Join(dst, "sub")); m != 0o700 {
		t.Errorf("existing directory mode changed to %o", m)
	}
	delete(got, ".")
	delete(got, "sub")
	delete(want, ".")
	delete(want, "sub")
	diffSnapshots(t, got, want)
}

// TestCopyTreeSymlinkOperand checks that with -r a link named as the source
// is copied as a link, as cp -r does, while the same link with a trailing
// slash names the directory it points to.
func TestCopyTreeSymlinkOperand(t *testing.T) {
	dir := tempDir(t)
	src := filepath.Join(dir, "src")
	buildTree(t, src)
	dst := filepath.Join(dir, "copied-link")
	if err := CopyTree(filepath.Join(src, "link-dir"), dst); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(dst); err != nil || target != "sub" {
		t.Errorf("copy of a link operand: Readlink = %q, %v; want the link \"sub\"", target, err)
	}
	dst2 := filepath.Join(dir, "copied-dir")
	if err := CopyTree(filepath.Join(src, "link-dir")+"/", dst2); err != nil {
		t.Fatal(err)
	}
	diffSnapshots(t, treeSnapshot(t, dst2), treeSnapshot(t, filepath.Join(src, "sub")))
}

// TestCopyTreeSpecialFiles checks that FIFOs and sockets are skipped with an
// error, without being opened, while the rest of the tree is copied.
func TestCopyTreeSpecialFiles(t *testing.T) {
	dir := tempDir(t)
	src := filepath.Join(dir, "src")
	buildTree(t, src)
	if err := unix.Mkfifo(filepath.Join(src, "sub/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(src, "sock")}); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	err = CopyTree(src, dst)
	want := []string{
		"skipping special file '" + src + "/sock'",
		"skipping special file '" + src + "/sub/fifo'",
	}
	if got := errLines(err); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
	snap := treeSnapshot(t, src)
	delete(snap, "sock")
	delete(snap, "sub/fifo")
	diffSnapshots(t, treeSnapshot(t, dst), snap)
}

// TestCopyTreeIntoItself checks that copying a directory into itself is
// refused before anything is copied, however it is spelled.
func TestCopyTreeIntoItself(t *testing.T) {
	dir := tempDir(t)
	src := filepath.Join(dir, "src")
	buildTree(t, src)
	before := treeSnapshot(t, src)
	for _, c := range []struct{ src, dst, msg string }{
		{src, src + "/new", "cannot copy a directory, '" + src + "', into itself, '" + src + "/new'"},
		{src, src + "/sub/deeper/new", "cannot copy a directory, '" + src + "', into itself, '" + src + "/sub/deeper/new'"},
		{src + "/.", src, "cannot copy a directory, '" + src + "/.', into itself, '" + src + "'"},
		{src, src + "/link-dir/new", "cannot copy a directory, '" + src + "', into itself, '" + src + "/link-dir/new'"},
	} {
		if got := errLines(CopyTree(c.src, c.dst)); !slices.Equal(got, []string{c.msg}) {
			t.Errorf("CopyTree(%s, %s): errors %q, want %q", c.src, c.dst, got, c.msg)
		}
		if c.dst != src {
			mustNotExist(t, c.dst)
		}
	}
	diffSnapshots(t, treeSnapshot(t, src), before)
}
