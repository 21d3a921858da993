package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/oncetool/once/internal/testprog"
)

// TestColdMapping checks the premise of the cold actions in-process: the
// strings' pages are unmapped after newColdMap, hold the strings, and
// requireCold notices once they are mapped.
func TestColdMapping(t *testing.T) {
	strs := []string{"/some/path", "", strings.Repeat("x", 5000)} // the last spans pages
	m, err := newColdMap(strs)
	if err != nil {
		t.Fatal(err)
	}
	defer m.unmap()
	pm, err := openPagemap()
	if err != nil {
		t.Fatal(err)
	}
	defer pm.close()
	if err := m.requireCold(pm); err != nil {
		t.Fatalf("fresh mapping: %v", err)
	}
	for i, s := range strs {
		// Touching the mapping is fine now: this is the check.
		got := unsafe.String((*byte)(unsafe.Add(m.base, m.ptrs[i]-uintptr(m.base))), len(s)+1)
		if got != s+"\x00" {
			t.Errorf("string %d reads back as %q, want %q", i, got, s)
		}
	}
	if err := m.requireCold(pm); err == nil {
		t.Fatal("requireCold passes on pages just read")
	}
}

// TestColdActions runs the cold actions for real (without a tracer).
func TestColdActions(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	exitonly := testprog.Build(t, testprog.Exitonly)
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(opener, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}

	args := []string{"-v", "coldopen:" + f, "repeat:2:coldopen:" + f, "threads:2:coldopen:" + f,
		"coldexecfail:/nonexistent/x", "coldexec:" + exitonly + ":a:b c"}
	code, out, errs := run(args...)
	if code != 0 || errs != "" {
		t.Fatalf("opener %q: exit %d, stderr %q", args, code, errs)
	}
	// Every call found its strings unmapped and faulted them in.
	if n := strings.Count(out, "unmapped before, 1 mapped after"); n != 6 {
		t.Errorf("%d calls faulted their page in, want 6:\n%s", n, out)
	}
	for _, want := range []string{`coldopen "` + f + `" = `, `coldexecfail "/nonexistent/x" = ENOENT`,
		`coldexec "` + exitonly + `" ["` + exitonly + `" "a" "b c"]`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	for _, args := range [][]string{
		{"coldopen:" + f + ".missing"},
		{"coldexecfail:" + f},                   // exists
		{"coldexec:" + exitonly, "openat:" + f}, // must be last
		{"coldexec:"},
	} {
		code, out, errs := run(args...)
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("opener %q: exit %d, stdout %q, stderr %q; want exit 1 and one stderr line", args, code, out, errs)
		}
	}
}
