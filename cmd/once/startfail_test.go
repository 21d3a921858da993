package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
)

// TestCommandExecFails: the command's own exec is traced like any other.
// When it fails (a script whose #! interpreter is missing, a file that is
// not executable) the report says so, with the failed exec strace shows,
// once exits like a shell (127 not found, 126 not run), and once check
// takes it for the command failing.
func TestCommandExecFails(t *testing.T) {
	testprog.RequireRoot(t)
	strace.Require(t)
	dir := t.TempDir()
	badInterp := filepath.Join(dir, "badinterp")
	os.WriteFile(badInterp, []byte("#!/nonexistent/interp\necho hi\n"), 0o755)
	noExec := filepath.Join(dir, "noexec")
	os.WriteFile(noExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	for _, tc := range []struct {
		name, path string
		code       int
		errno      string
		reason     string // as once run and once check say it
	}{
		{"missing #! interpreter", badInterp, exitNotFound, "ENOENT", "its #! interpreter or ELF loader was not found"},
		{"not executable", noExec, exitNoExec, "EACCES", "permission denied"},
		{"a directory", dir, exitNoExec, "EACCES", "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "trace")
			_ = strace.Command(context.Background(), out, tc.path).Run()
			calls, err := strace.ParseFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) == 0 || !calls[0].IsExec() || calls[0].Errno != tc.errno {
				t.Fatalf("strace: %+v, want the command's execve failing with %s", calls, tc.errno)
			}

			rep := filepath.Join(t.TempDir(), "r.json")
			code, _, stderr := runOnce(t, nil, "run", "--processes", "all", "--format", "json", "-o", rep, "--", tc.path)
			if code != tc.code || !strings.Contains(stderr, tc.reason+" (execve failed with "+tc.errno) {
				t.Errorf("once run: exit %d, stderr %q; want %d and the errno", code, stderr, tc.code)
			}
			r := readReport(t, rep)
			if r.ExitCode != tc.code || len(r.Processes) != 1 || len(r.Processes[0].Execs) != 1 {
				t.Fatalf("report: exit %d, processes %+v; want %d and the process whose execve failed", r.ExitCode, r.Processes, tc.code)
			}

			code, _, stderr = runOnce(t, nil, "check", "--max-opens", "1", "--allow-fail", "--", tc.path)
			if code != checkViolated || !strings.Contains(stderr, "the command never ran: its execve failed ("+tc.reason) {
				t.Errorf("once check: exit %d, stderr %q; want %d, a violation", code, stderr, checkViolated)
			}
		})
	}
}
