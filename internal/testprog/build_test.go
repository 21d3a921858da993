package testprog_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// run executes a helper and returns its exit code and output, failing the
// test only if it could not be started at all.
func run(t *testing.T, dir string, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("running %s: %v", name, err)
	}
	return code, out.String(), errb.String()
}

func TestBuildIsCached(t *testing.T) {
	a := testprog.Build(t, testprog.Exitonly)
	b := testprog.Build(t, testprog.Exitonly)
	if a != b || !filepath.IsAbs(a) {
		t.Fatalf("Build returned %q then %q; want the same absolute path", a, b)
	}
}

func TestOpener(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	// A name with a newline and a colon checks that paths reach the kernel
	// byte for byte, colons after the action keyword included.
	odd := "odd\nna:me"
	for _, name := range []string{"f", odd} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	actions := []string{
		"openat:f", "openat2:f", "opath:f", "openat:" + odd,
		"dirfd:.:f", "fail:missing", "repeat:3:openat:f",
		"threads:4:openat:f", "child:openat:f",
		"chdir:" + dir, "openat:f",
	}
	if runtime.GOARCH == "amd64" {
		actions = append(actions, "open:f", "creat:created")
	}
	code, stdout, stderr := run(t, dir, opener, actions...)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("opener %q: exit %d, stdout %q, stderr %q; want 0 and no output", actions, code, stdout, stderr)
	}
	if runtime.GOARCH == "amd64" {
		if _, err := os.Stat(filepath.Join(dir, "created")); err != nil {
			t.Errorf("creat: did not create the file: %v", err)
		}
	}

	// -v reports the errno of an expected failure.
	code, stdout, _ = run(t, dir, opener, "-v", "fail:missing")
	if code != 0 || !strings.Contains(stdout, "ENOENT") {
		t.Errorf("opener -v fail:missing: exit %d, stdout %q; want 0 and ENOENT", code, stdout)
	}

	// Unexpected outcomes exit 1 with exactly one line on stderr.
	for _, args := range [][]string{
		{"openat:missing"},
		{"fail:f"},
		{"nosuch:action"},
		{"exec:/bin/true", "openat:f"}, // exec must be last
		{"repeat:2:exec:/bin/true"},
	} {
		code, stdout, stderr := run(t, dir, opener, args...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("opener %q: exit %d, stdout %q, stderr %q; want exit 1 and one stderr line", args, code, stdout, stderr)
		}
	}

	// A failing child fails the parent.
	if code, _, _ := run(t, dir, opener, "child:openat:missing"); code != 1 {
		t.Errorf("opener child:openat:missing: exit %d, want 1", code)
	}
}

func TestOpenerWaitStdin(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(opener, "-wait-stdin", "-v", "openat:f")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("g")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `openat "f"`) {
		t.Fatalf("opener -wait-stdin: %v, output %q", err, out)
	}
}

func TestExecTargets(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	exitonly := testprog.Build(t, testprog.Exitonly)
	dir := t.TempDir()

	if code, _, stderr := run(t, dir, exitonly); code != 0 {
		t.Errorf("exitonly: exit %d, stderr %q; want 0", code, stderr)
	}
	for _, action := range []string{"exec:" + exitonly, "execveat-empty:" + exitonly, "child:exec:" + exitonly} {
		if code, _, stderr := run(t, dir, opener, action); code != 0 {
			t.Errorf("opener %s: exit %d, stderr %q; want 0", action, code, stderr)
		}
	}
	// exec: passes the remaining fields as arguments.
	if code, _, _ := run(t, dir, opener, "exec:/bin/sh:-c:exit 7"); code != 7 {
		t.Errorf("opener exec:/bin/sh:-c:exit 7: exit %d, want 7", code)
	}
}

func TestSpawnp(t *testing.T) {
	spawnp := testprog.Build(t, testprog.Spawnp)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"true"}, 0},
		{[]string{"nonexistent-xyz"}, 127},
		{[]string{"-fork", "true"}, 0},
		{[]string{"-fork", "nonexistent-xyz"}, 127},
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"-fork", "sh", "-c", "exit 4"}, 4},
	} {
		if code, _, stderr := run(t, dir, spawnp, tc.args...); code != tc.want {
			t.Errorf("spawnp %q: exit %d (stderr %q), want %d", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBuildUnknown(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		// Fatalf ends the goroutine via runtime.Goexit in a real test;
		// the recorder panics instead so that the outcome can be checked.
		defer func() { recover() }()
		testprog.Build(ft, "no-such-helper")
	}()
	if !ft.failed {
		t.Fatal("Build of an unknown helper did not fail the test")
	}
}

// fatalRecorder captures Fatalf without stopping the enclosing test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.failed = true
	panic("fatal")
}
