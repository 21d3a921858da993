package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// special makes, at path, a file of a kind once must not write to.
var special = []struct {
	name string
	make func(t *testing.T, path string)
}{
	{"FIFO", func(t *testing.T, path string) {
		if err := unix.Mkfifo(path, 0o666); err != nil {
			t.Fatal(err)
		}
	}},
	{"socket", func(t *testing.T, path string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}},
	{"device", func(t *testing.T, path string) {
		testprog.RequireRoot(t)
		if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatal(err)
		}
	}},
	{"symlink", func(t *testing.T, path string) {
		if err := os.Symlink(filepath.Join(filepath.Dir(path), "elsewhere"), path); err != nil {
			t.Fatal(err)
		}
	}},
	{"directory", func(t *testing.T, path string) {
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}},
	{"another user's file", func(t *testing.T, path string) {
		testprog.RequireRoot(t)
		if err := os.WriteFile(path, []byte("theirs"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}},
}

// bounded runs f, failing the test if it has not returned in 10s: a
// FIFO opened for writing with no reader blocks for good.
func bounded(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("hung")
		return nil
	}
}

// TestRefusedAtWriteTime: what Check refuses up front, WriteReport and
// OpenStream refuse too when called on it directly (the name may change
// between the check and the write): without writing, hanging, or
// replacing anything.
func TestRefusedAtWriteTime(t *testing.T) {
	for _, sp := range special {
		t.Run(sp.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out")
			sp.make(t, path)
			var before unix.Stat_t
			unix.Lstat(path, &before)
			if err := Check(path); err == nil {
				t.Errorf("Check: accepted")
			}
			wrote := false
			err := bounded(t, func() error {
				return WriteReport(path, io.Discard, Std{}, func(w io.Writer) error {
					wrote = true
					_, err := io.WriteString(w, "report")
					return err
				})
			})
			if err == nil || wrote {
				t.Errorf("WriteReport: err %v, rendered %v; want refused before rendering", err, wrote)
			}
			if _, err := bounded2(t, path); err == nil {
				t.Errorf("OpenStream: accepted")
			}
			var after unix.Stat_t
			unix.Lstat(path, &after)
			if after.Ino != before.Ino || after.Mode != before.Mode || after.Size != before.Size || after.Uid != before.Uid {
				t.Errorf("changed: %+v, was %+v", after, before)
			}
		})
	}
}

// TestCheckMakesAFile: a directory whose permission bits let root write
// but where no file can be made is refused up front, and the check leaves
// nothing behind where a file can be made.
func TestCheckMakesAFile(t *testing.T) {
	testprog.RequireRoot(t)
	if err := Check("/proc/once-out"); err == nil || !strings.Contains(err.Error(), "cannot make a file there") {
		t.Errorf("Check(/proc/once-out): %v, want refused: no file can be made in /proc", err)
	}
	dir := t.TempDir()
	if err := Check(filepath.Join(dir, "out")); err != nil {
		t.Errorf("Check in a writable directory: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("Check left %v behind", left)
	}
}

func bounded2(t *testing.T, path string) (s *Stream, err error) {
	t.Helper()
	bounded(t, func() error {
		s, err = OpenStream(path)
		return err
	})
	if s != nil {
		s.Close()
	}
	return s, err
}

// TestFIFOWithReader: a FIFO whose reader waits gets nothing.
func TestFIFOWithReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	err = bounded(t, func() error {
		return WriteReport(path, io.Discard, Std{}, func(w io.Writer) error { _, err := io.WriteString(w, "secret"); return err })
	})
	buf := make([]byte, 64)
	n, _ := unix.Read(fd, buf)
	if err == nil || n > 0 {
		t.Errorf("err %v, the reader got %q", err, buf[:max(n, 0)])
	}
}

// TestCreatedMeanwhile: a name that was free when the output was opened
// and taken before it was committed (a FIFO, another user's file) is not
// replaced: the rename refuses to replace anything.
func TestCreatedMeanwhile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := Create(path, Std{})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "report")
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), "appeared") {
		t.Errorf("Commit: %v, want a refusal", err)
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("the FIFO was replaced: mode %o", st.Mode)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".once-*")); len(m) != 0 {
		t.Errorf("temp files left: %q", m)
	}
}

// TestAccepted: the names and files once writes to.
func TestAccepted(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	os.WriteFile(own, []byte("old report"), 0o644)
	var stdout, stderr, def bytes.Buffer
	std := Std{Stdout: &stdout, Stderr: &stderr}
	for _, tc := range []struct {
		path string
		got  func() string
	}{
		{"", def.String},
		{"-", stdout.String},
		{"/dev/stdout", stdout.String},
		{"/dev/stderr", stderr.String},
		{os.DevNull, func() string { return "report" }},
		{own, func() string { b, _ := os.ReadFile(own); return string(b) }},
		{filepath.Join(dir, "new"), func() string { b, _ := os.ReadFile(filepath.Join(dir, "new")); return string(b) }},
	} {
		stdout.Reset()
		stderr.Reset()
		def.Reset()
		if err := Check(tc.path); err != nil {
			t.Errorf("Check(%q): %v", tc.path, err)
		}
		err := WriteReport(tc.path, &def, std, func(w io.Writer) error { _, err := io.WriteString(w, "report"); return err })
		if err != nil || tc.got() != "report" {
			t.Errorf("WriteReport(%q): %v, wrote %q", tc.path, err, tc.got())
		}
	}
	if st, _ := os.Stat(own); st.Mode().Perm() != 0o600 {
		t.Errorf("a replaced report is %v, want 0600", st.Mode().Perm())
	}
	// A failed render keeps the old report whole, and leaves no temp file.
	err := WriteReport(own, nil, std, func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("boom") })
	if b, _ := os.ReadFile(own); err == nil || string(b) != "report" {
		t.Errorf("a failed write: %v, file now %q", err, b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".once-*")); len(m) != 0 {
		t.Errorf("temp files left: %q", m)
	}
	// The null device is a sink for streams too.
	s, err := OpenStream(os.DevNull)
	if err != nil {
		t.Fatalf("OpenStream(%s): %v", os.DevNull, err)
	}
	if _, err := s.WriteString("line\n"); err != nil {
		t.Error(err)
	}
	s.Close()
}

// TestStreamRefusesHardLink: a stream is never appended to a file with
// another name elsewhere. Where fs.protected_hardlinks is 0 (the
// kernel's own default, left so without systemd's sysctl), a user can
// link a root-owned file into /tmp under the name root's once watch -o
// appends to: owned by root, mode 0600, a regular file, it passed every
// other check.
func TestStreamRefusesHardLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "events.jsonl")
	if err := os.Link(victim, path); err != nil {
		t.Fatal(err)
	}
	if s, err := bounded2(t, path); err == nil || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("OpenStream on a hard link: %v, want refused", err)
		if s != nil {
			s.WriteString("appended\n")
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's\n" {
		t.Errorf("the linked file now holds %q", b)
	}
}

// TestDirectorySwappedMidRun: the report lands in the directory that was
// there when its output was created, under its name, although whoever
// owns that directory moved it and put a link to another in its place
// while once ran: the temp file and the rename are relative to the
// directory opened at Create, never resolved through its path again.
func TestDirectorySwappedMidRun(t *testing.T) {
	for _, existed := range []bool{false, true} {
		t.Run(fmt.Sprintf("report there before: %v", existed), func(t *testing.T) {
			root := t.TempDir()
			dir, moved, other := filepath.Join(root, "out"), filepath.Join(root, "moved"), filepath.Join(root, "other")
			for _, d := range []string{dir, other} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "r.json")
			if existed {
				if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Create(path, Std{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("report")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, dir); err != nil {
				t.Fatal(err)
			}
			if err := f.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(moved, "r.json")); err != nil || string(b) != "report" {
				t.Errorf("the directory once created in holds %q (%v), want the report", b, err)
			}
			for _, d := range []string{moved, other} {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					if d == other || e.Name() != "r.json" {
						t.Errorf("%s left in %s", e.Name(), d)
					}
				}
			}
		})
	}
}
