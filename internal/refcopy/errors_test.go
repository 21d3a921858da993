package refcopy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// TestCopyErrors checks the one-line messages for the usual mistakes, and
// that none of them leaves anything at the destination.
func TestCopyErrors(t *testing.T) {
	dir := tempDir(t)
	t.Chdir(dir) // relative names, as a user would type them
	writeFile(t, "file", []byte("data"), 0o644)
	writeFile(t, "other", []byte("other"), 0o644)
	if err := os.Mkdir("dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", "dangling"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo("fifo", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		src, dst  string
		recursive bool
		want      string
		errno     error
		absent    string // must not exist afterwards
	}{
		{"missing source", "missing", "x", false,
			"cannot stat 'missing': No such file or directory", unix.ENOENT, "x"},
		{"missing source -r", "missing", "x", true,
			"cannot stat 'missing': No such file or directory", unix.ENOENT, "x"},
		{"missing parent", "no/such/file", "x", false,
			"cannot stat 'no/such/file': No such file or directory", unix.ENOENT, "x"},
		{"directory without -r", "dir", "x", false,
			"-r not specified; omitting directory 'dir'", nil, "x"},
		{"destination under a file", "file", "other/x", false,
			"cannot create regular file 'other/x': Not a directory", unix.ENOTDIR, ""},
		{"destination directory missing", "file", "nodir/x", false,
			"cannot create regular file 'nodir/x': No such file or directory", unix.ENOENT, "nodir"},
		{"same file", "file", "./file", false,
			"'file' and './file' are the same file", nil, ""},
		{"directory over file", "dir", "file", true,
			"cannot overwrite non-directory 'file' with directory 'dir'", nil, ""},
		{"file over directory", "file", "dir", false,
			"cannot overwrite directory 'dir' with non-directory", nil, ""},
		{"through dangling link", "file", "dangling", false,
			"not writing through dangling symlink 'dangling'", nil, "nowhere"},
		{"special file with -r", "fifo", "x", true,
			"skipping special file 'fifo'", nil, "x"},
		{"unwritable destination", "file", "/proc/x", false,
			"cannot create regular file '/proc/x': No such file or directory", unix.ENOENT, ""},
		{"odd name", "new\nline", "x", false,
			`cannot stat "new\nline": No such file or directory`, unix.ENOENT, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CopyFile(c.src, c.dst, Options{Recursive: c.recursive})
			if got := errLines(err); !slices.Equal(got, []string{c.want}) {
				t.Errorf("errors %q, want %q", got, c.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not an *Error", err)
			} else if e.Err != c.errno {
				t.Errorf("system error %v, want %v", e.Err, c.errno)
			}
			if c.absent != "" {
				mustNotExist(t, c.absent)
			}
		})
	}
	if got := string(readFile(t, "file")); got != "data" {
		t.Errorf("the source changed to %q", got)
	}
	if got := string(readFile(t, "other")); got != "other" {
		t.Errorf("an unrelated file changed to %q", got)
	}
}

// TestFailedCopyRemovesDestination makes a copy fail after the destination
// was created, for real, by setting a file size limit (RLIMIT_FSIZE) below
// the source size: writes past it fail with EFBIG (the Go runtime ignores
// SIGXFSZ). A new destination must be gone afterwards; an existing one is
// truncated by then, and the error must say so.
func TestFailedCopyRemovesDestination(t *testing.T) {
	dir := tempDir(t)
	src := filepath.Join(dir, "src")
	writeFile(t, src, randomBytes(1<<20, 3), 0o644)
	sparse := filepath.Join(dir, "sparse")
	makeSparse(t, sparse, 4<<20, map[int64][]byte{2 << 20: []byte("beyond the limit")})

	for _, m := range []method{copyFileRange, sendFile, readWrite} {
		t.Run(methodNames[m], func(t *testing.T) {
			withMethod(t, m)
			for _, from := range []string{src, sparse} {
				dst := filepath.Join(dir, "new-"+methodNames[m])
				err := withFileSizeLimit(t, 64<<10, func() error { return CopyFile(from, dst, Options{}) })
				// For the sparse source, the ftruncate to its full size is
				// what fails; for the other, writing the data.
				want := "error writing '" + dst + "': File too large"
				if got := errLines(err); !slices.Equal(got, []string{want}) {
					t.Errorf("copy of %s: errors %q, want %q", from, got, want)
				}
				mustNotExist(t, dst)

				existing := filepath.Join(dir, "existing-"+methodNames[m])
				writeFile(t, existing, []byte("precious"), 0o644)
				err = withFileSizeLimit(t, 64<<10, func() error { return CopyFile(from, existing, Options{}) })
				want = "error writing '" + existing + "': File too large; '" + existing + "' was truncated and left incomplete"
				if got := errLines(err); !slices.Equal(got, []string{want}) {
					t.Errorf("copy of %s over an existing file: errors %q, want %q", from, got, want)
				}
			}
		})
	}
}

// withFileSizeLimit runs f with the soft file size limit set to limit.
// The limit is process-wide, so f must be the only thing writing files.
func withFileSizeLimit(t *testing.T, limit uint64, f func() error) error {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}()
	return f()
}

// TestFailedCopyOnFullFilesystem fills a small tmpfs mounted for the test:
// the kind of failure that happens to real copies. Root only.
func TestFailedCopyOnFullFilesystem(t *testing.T) {
	small := mountTmpfs(t, 0, "size=256k")
	src := filepath.Join(tempDir(t), "src")
	writeFile(t, src, randomBytes(1<<20, 4), 0o644)
	dst := filepath.Join(small, "dst")
	err := CopyFile(src, dst, Options{})
	want := "error writing '" + dst + "': No space left on device"
	if got := errLines(err); !slices.Equal(got, []string{want}) {
		t.Errorf("errors %q, want %q", got, want)
	}
	mustNotExist(t, dst)

	// A tree: the file that does not fit is removed; the error is reported.
	tree := filepath.Join(tempDir(t), "tree")
	buildTree(t, tree)
	writeFile(t, filepath.Join(tree, "sub/huge"), randomBytes(1<<20, 5), 0o644)
	err = CopyTree(tree, filepath.Join(small, "tree"))
	if got := errLines(err); len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "sub/huge': No space left on device") {
		t.Errorf("tree copy errors %q; want the huge file to fail for lack of space", got)
	}
	mustNotExist(t, filepath.Join(small, "tree/sub/huge"))
}

// TestCopyToReadOnlyFilesystem checks the message for a destination that
// cannot be written at all, on a read-only tmpfs mounted for the test.
func TestCopyToReadOnlyFilesystem(t *testing.T) {
	ro := mountTmpfs(t, unix.MS_RDONLY, "")
	src := filepath.Join(tempDir(t), "src")
	writeFile(t, src, []byte("data"), 0o644)
	dst := filepath.Join(ro, "dst")
	want := "cannot create regular file '" + dst + "': Read-only file system"
	if got := errLines(CopyFile(src, dst, Options{})); !slices.Equal(got, []string{want}) {
		t.Errorf("errors %q, want %q", got, want)
	}
	want = "cannot create directory '" + dst + "': Read-only file system"
	if got := errLines(CopyTree(filepath.Dir(src), dst)); !slices.Equal(got, []string{want}) {
		t.Errorf("tree: errors %q, want %q", got, want)
	}
}

// mountTmpfs mounts a tmpfs with the given flags and options for the test and returns
// its path. Without the privilege to mount, the test is skipped, except in
// CI, which runs as root.
func mountTmpfs(t *testing.T, flags uintptr, options string) string {
	t.Helper()
	dir := tempDir(t)
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, options); err != nil {
		testprog.Skipf(t, "cannot mount a tmpfs (CI runs as root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "'plain'",
		"with space":   "'with space'",
		"ünïcode":      "'ünïcode'",
		"it's":         `"it's"`,
		"new\nline":    `"new\nline"`,
		"esc\x1b[31m":  `"esc\x1b[31m"`,
		"bad\xffutf-8": `"bad\xffutf-8"`,
		"":             "''",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestTargets(t *testing.T) {
	dir := tempDir(t)
	t.Chdir(dir)
	writeFile(t, "file", nil, 0o644)
	if err := os.Mkdir("dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir", "dirlink"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []Pair
		err  string
	}{
		{[]string{"a", "new"}, []Pair{{"a", "new"}}, ""},
		{[]string{"a", "file"}, []Pair{{"a", "file"}}, ""},
		{[]string{"x/a", "dir"}, []Pair{{"x/a", "dir/a"}}, ""},
		{[]string{"x/a/", "dir/"}, []Pair{{"x/a/", "dir/a"}}, ""},
		{[]string{"a", "dirlink"}, []Pair{{"a", "dirlink/a"}}, ""},
		{[]string{"a", "b", "dir"}, []Pair{{"a", "dir/a"}, {"b", "dir/b"}}, ""},
		{[]string{"a", "b", "file"}, nil, "target 'file': Not a directory"},
		{[]string{"a", "b", "new"}, nil, "target 'new': No such file or directory"},
	} {
		last := len(c.args) - 1
		got, err := Targets(c.args[:last], c.args[last])
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Targets(%q): error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Targets(%q) = %v, %v; want %v", c.args, got, err, c.want)
		}
	}
}
