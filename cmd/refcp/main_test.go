package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/refcopy/opencount"
)

// refcp runs the command in-process in dir and returns its exit status and
// standard error.
func refcp(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	t.Chdir(dir)
	var stderr strings.Builder
	status := run(args, &stderr)
	return status, stderr.String()
}

func setup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"a": "A", "b": "B", "d/f": "F", "d/e/g": "G"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func contents(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUsage(t *testing.T) {
	dir := setup(t)
	for _, c := range []struct {
		args   []string
		status int
		stderr string // a line the output must start with
	}{
		{nil, 2, "refcp: missing file operand\n"},
		{[]string{"a"}, 2, "refcp: missing destination file operand after 'a'\n"},
		{[]string{"-x", "a", "b"}, 2, "flag provided but not defined: -x\n"},
		{[]string{"-h"}, 0, "usage: refcp [-r] SRC DST\n"},
	} {
		status, stderr := refcp(t, dir, c.args...)
		if status != c.status || !strings.HasPrefix(stderr, c.stderr) {
			t.Errorf("refcp %q: status %d, stderr %q; want %d, %q...", c.args, status, stderr, c.status, c.stderr)
		}
	}
}

func TestCopies(t *testing.T) {
	dir := setup(t)
	if status, stderr := refcp(t, dir, "a", "a2"); status != 0 || stderr != "" {
		t.Fatalf("refcp a a2: %d %q", status, stderr)
	}
	if got := contents(t, filepath.Join(dir, "a2")); got != "A" {
		t.Errorf("a2 = %q", got)
	}
	// SRC DIR: into the directory, under the source's name.
	if status, stderr := refcp(t, dir, "a", "out"); status != 0 || stderr != "" {
		t.Fatalf("refcp a out: %d %q", status, stderr)
	}
	if got := contents(t, filepath.Join(dir, "out/a")); got != "A" {
		t.Errorf("out/a = %q", got)
	}
	// -r with a trailing slash on the source: still DIR/basename.
	if status, stderr := refcp(t, dir, "-r", "d/", "out"); status != 0 || stderr != "" {
		t.Fatalf("refcp -r d/ out: %d %q", status, stderr)
	}
	if got := contents(t, filepath.Join(dir, "out/d/e/g")); got != "G" {
		t.Errorf("out/d/e/g = %q", got)
	}
}

// TestFailuresContinue checks that a failing source does not stop the
// others, that every failure gets one line, and that the status is 1.
func TestFailuresContinue(t *testing.T) {
	dir := setup(t)
	status, stderr := refcp(t, dir, "missing", "a", "d", "b", "out")
	want := "refcp: cannot stat 'missing': No such file or directory\n" +
		"refcp: -r not specified; omitting directory 'd'\n"
	if status != 1 || stderr != want {
		t.Errorf("status %d, stderr %q; want 1, %q", status, stderr, want)
	}
	for _, n := range []string{"a", "b"} {
		if got := contents(t, filepath.Join(dir, "out", n)); got != strings.ToUpper(n) {
			t.Errorf("out/%s = %q", n, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out/d")); err == nil {
		t.Error("out/d was created without -r")
	}

	status, stderr = refcp(t, dir, "a", "b", "a")
	if want := "refcp: target 'a': Not a directory\n"; status != 1 || stderr != want {
		t.Errorf("several sources to a file: status %d, stderr %q; want 1, %q", status, stderr, want)
	}
	status, stderr = refcp(t, dir, "a", "a/x")
	if want := "refcp: cannot create regular file 'a/x': Not a directory\n"; status != 1 || stderr != want {
		t.Errorf("destination under a file: status %d, stderr %q; want 1, %q", status, stderr, want)
	}
}

// TestFailedCopyExitsCleanly runs the binary with a file size limit below
// the source size, so that writing fails after the destination was
// created: the status is 1, the message one line, and the half-written
// destination is gone.
func TestFailedCopyExitsCleanly(t *testing.T) {
	bin := opencount.Build(t, ".")
	dir := setup(t)
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// ulimit -f counts 512- or 1024-byte blocks depending on the shell;
	// either way 64 is far below 4 MiB.
	cmd := exec.Command("sh", "-c", `ulimit -f 64 && exec "$0" big big.copy`, bin)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("refcp under ulimit -f: %v; want exit status 1\n%s", err, out)
	}
	if want := "refcp: error writing 'big.copy': File too large\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "big.copy")); !os.IsNotExist(err) {
		t.Errorf("the partial destination is still there (%v)", err)
	}
}
