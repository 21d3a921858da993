package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refmv runs the command in-process in dir and returns its exit status and
// standard error.
func refmv(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	t.Chdir(dir)
	var stderr strings.Builder
	status := run(args, &stderr)
	return status, stderr.String()
}

func setup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"a": "A", "b": "B", "d/f": "F"} {
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

func TestUsage(t *testing.T) {
	dir := setup(t)
	for _, c := range []struct {
		args   []string
		status int
		stderr string // what the output must start with
	}{
		{nil, 2, "refmv: missing file operand\n"},
		{[]string{"a"}, 2, "refmv: missing destination file operand after 'a'\n"},
		{[]string{"-r", "a", "b"}, 2, "flag provided but not defined: -r\n"},
		{[]string{"-h"}, 0, "usage: refmv SRC DST\n"},
	} {
		status, stderr := refmv(t, dir, c.args...)
		if status != c.status || !strings.HasPrefix(stderr, c.stderr) {
			t.Errorf("refmv %q: status %d, stderr %q; want %d, %q...", c.args, status, stderr, c.status, c.stderr)
		}
	}
}

// TestMoves checks the operand forms, and that a failing source does not
// stop the others.
func TestMoves(t *testing.T) {
	dir := setup(t)
	if status, stderr := refmv(t, dir, "a", "a2"); status != 0 || stderr != "" {
		t.Fatalf("refmv a a2: %d %q", status, stderr)
	}
	status, stderr := refmv(t, dir, "a2", "missing", "d", "out")
	if want := "refmv: cannot stat 'missing': No such file or directory\n"; status != 1 || stderr != want {
		t.Errorf("status %d, stderr %q; want 1, %q", status, stderr, want)
	}
	for _, p := range []string{"out/a2", "out/d/f"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s not moved: %v", p, err)
		}
	}
	for _, p := range []string{"a", "a2", "d"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	status, stderr = refmv(t, dir, "b", "out", "b")
	if want := "refmv: target 'b': Not a directory\n"; status != 1 || stderr != want {
		t.Errorf("several sources to a file: status %d, stderr %q; want 1, %q", status, stderr, want)
	}
}
