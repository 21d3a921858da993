package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestCompareFailingRun: like hyperfine, a run that exits non-zero stops
// the comparison with exit 1 and one line naming the side and the run;
// --ignore-failure (-i) compares anyway and warns in the report.
func TestCompareFailingRun(t *testing.T) {
	testprog.RequireRoot(t)
	tests := []struct {
		name string
		args []string
		code int
		// wantErr: the one stderr line holds these; wantOut: stdout does.
		wantErr, wantOut []string
	}{
		{"after fails its traced run", []string{"--runs", "3", "--baseline", "true", "--", "false"}, 1,
			[]string{"after", "traced run", "exited 1", "--ignore-failure"}, nil},
		{"before fails its traced run", []string{"--runs", "3", "--baseline", "false", "--", "true"}, 1,
			[]string{"before", "traced run", "exited 1"}, nil},
		{"untraced: the first warm-up run", []string{"--no-trace", "--runs", "3", "--baseline", "true", "--", "false"}, 1,
			[]string{"after", "warm-up run 1", "exited 1"}, nil},
		{"untraced: the first timed run", []string{"--no-trace", "--runs", "3", "--warmup", "0", "--baseline", "true", "--", "sh", "-c", "exit 3"}, 1,
			[]string{"after", "timed run 1 of 3", "exited 3"}, nil},
		// A signal death is said to be one, not an exit(137).
		{"killed in its traced run", []string{"--runs", "3", "--baseline", "true", "--", "sh", "-c", "kill -KILL $$"}, 1,
			[]string{"after", "traced run was killed by SIGKILL (exit 137)"}, nil},
		{"untraced: killed in a timed run", []string{"--no-trace", "--runs", "2", "--warmup", "0", "--baseline", "true", "--", "sh", "-c", "kill -SEGV $$"}, 1,
			[]string{"after", "timed run 1 of 2 was killed by SIGSEGV (exit 139)"}, nil},
		{"-i: killed runs named", []string{"-i", "--runs", "2", "--baseline", "true", "--", "sh", "-c", "kill -KILL $$"}, 0,
			nil, []string{"WARNING: after: 2 of 2 timed runs exited non-zero (exit 137: SIGKILL)", "WARNING: after: the traced run was killed by SIGKILL (exit 137)"}},
		{"--ignore-failure goes on", []string{"--ignore-failure", "--runs", "3", "--baseline", "true", "--", "false"}, 0,
			nil, []string{"WARNING: after: 3 of 3 timed runs exited non-zero (exit 1)", "WARNING: after: the traced run exited 1"}},
		{"-i goes on", []string{"-i", "--no-trace", "--runs", "2", "--baseline", "false", "--", "true"}, 0,
			nil, []string{"WARNING: before: 2 of 2 timed runs exited non-zero (exit 1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runOnce(t, nil, append([]string{"compare"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if tc.code != 0 {
				if strings.Count(stderr, "\n") != 1 || stdout != "" {
					t.Errorf("want one line on stderr and nothing on stdout; got stderr %q, stdout %q", stderr, stdout)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestCompareHelp: the help names what the timed runs are (untraced) and
// how the placeholders reach a command that names none.
func TestCompareHelp(t *testing.T) {
	code, stdout, _ := runOnce(t, nil, "compare", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"untraced", "--ignore-failure", "appended"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("help lacks %q:\n%s", w, stdout)
		}
	}
	if strings.Contains(stdout, "untimed-interleaved") {
		t.Errorf("help says untimed-interleaved of the timed runs:\n%s", stdout)
	}
}

// TestCompareRings: compare's traced run takes once run's --rings and
// --ring-size, and counts the same on one ring and on two.
func TestCompareRings(t *testing.T) {
	testprog.RequireRoot(t)
	type side struct {
		Opens            int             `json:"opens"`
		DuplicateOpens   int             `json:"duplicate_opens"`
		DuplicateFiles   int             `json:"duplicate_files"`
		FailedExecProbes int             `json:"failed_exec_probes"`
		Patterns         json.RawMessage `json:"patterns"`
		EventsLost       uint64          `json:"events_lost"`
	}
	var got [2][2]side
	for i, rings := range []string{"1", "2"} {
		code, stdout, stderr := runOnce(t, nil, "compare", "--rings", rings, "--ring-size", "1048576", "--runs", "1", "--warmup", "0",
			"--baseline", "cp -r {src} {dst}", "--files", "200", "--format", "json", "--", "cp", "-r", "{src}", "{dst}")
		if code != 0 {
			t.Fatalf("--rings %s: exit %d\nstderr:\n%s", rings, code, stderr)
		}
		var r struct{ Before, After side }
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("--rings %s: %v\n%s", rings, err, stdout)
		}
		got[i] = [2]side{r.Before, r.After}
		for j, s := range got[i] {
			if s.Opens < 400 || s.EventsLost != 0 {
				t.Errorf("--rings %s, side %d: %d opens, %d lost; want at least 400 (200 files read and written) and none lost", rings, j, s.Opens, s.EventsLost)
			}
		}
	}
	for j := range 2 {
		a, b := got[0][j], got[1][j]
		if a.Opens != b.Opens || a.DuplicateOpens != b.DuplicateOpens || a.DuplicateFiles != b.DuplicateFiles ||
			a.FailedExecProbes != b.FailedExecProbes || string(a.Patterns) != string(b.Patterns) {
			t.Errorf("side %d: --rings 1 counted %+v, --rings 2 %+v", j, a, b)
		}
	}
}

// TestCompareNotRunnable: a command that is there but cannot run (a
// directory, a file without the execute bit) is told apart from one that
// is not there, as once run and a shell do: 126 and why, not 127 and
// "command not found".
func TestCompareNotRunnable(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inpath"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	for _, tc := range []struct {
		name, after string
		code        int
		msg         string
	}{
		{"a directory", dir, exitNoExec, dir + ": is a directory"},
		{"not executable", plain, exitNoExec, plain + ": permission denied"},
		{"not executable, in PATH", "inpath", exitNoExec, "inpath: permission denied"},
		{"missing path", filepath.Join(dir, "nosuch"), exitNotFound, filepath.Join(dir, "nosuch") + ": command not found"},
		{"missing name", "once-no-such-command", exitNotFound, "once-no-such-command: command not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "--", tc.after}, &stdout, &stderr)
			if code != tc.code || strings.TrimSpace(stderr.String()) != "once: "+tc.msg {
				t.Errorf("exit %d, stderr %q; want exit %d, %q", code, stderr.String(), tc.code, "once: "+tc.msg)
			}
		})
	}
}

// TestCompareRelativePath: a command found through a relative PATH entry
// (".") runs, as once run and a shell run it, where compare said
// "command not found".
func TestCompareRelativePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relexe"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("PATH", ".:"+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	code := run([]string{"compare", "--baseline", "relexe", "--no-trace", "--runs", "1", "--warmup", "0", "--", "relexe"}, &stdout, &stderr)
	if code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestCompareWorkloadSpace: a cp/mv workload larger than the file system
// that holds it (--files 1000000 --size 1G: 2 PiB) is refused before a
// byte is written, where compare filled the disk, others' work on it
// too, until a write failed (exit 4).
func TestCompareWorkloadSpace(t *testing.T) {
	testprog.RequireRoot(t)
	tmp := t.TempDir()
	testprog.Mount(t, tmp, "-t", "tmpfs", "-o", "size=64k", "tmpfs")
	t.Setenv("TMPDIR", tmp)
	for _, tc := range []struct {
		name      string
		args, cmd []string
		code      int
		msg       string
	}{
		{"more than is free", []string{"--baseline", "cp -r {src} {dst}", "--files", "10", "--size", "4096"}, []string{"cp", "-r"}, exitUsage,
			"compare: the cp/mv workload needs 80 KiB (--files 10 × --size 4096, twice: a source and a copy) in "},
		{"fits", []string{"--baseline", "cp -r {src} {dst}", "--files", "2", "--size", "4096"}, []string{"cp", "-r"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"compare", "--no-trace", "--runs", "1", "--warmup", "0"}, tc.args...)
			code := run(append(append(args, "--"), tc.cmd...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d, %q", code, stderr.String(), tc.code, tc.msg)
			}
		})
	}
}
