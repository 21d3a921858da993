package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestCheckExample runs the shipped example guard: it must pass on a copy
// that opens its source once and fail, with the exact message, on one that
// opens it three times.
func TestCheckExample(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	threeOpens := filepath.Join(dir, "threeopen")
	script := "#!/bin/sh\n# Opens its source three times, like uutils cp did.\nexec " + opener + ` repeat:3:openat:"$1"` + "\n"
	if err := os.WriteFile(threeOpens, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	example, _ := filepath.Abs("../../examples/check-open-once/check-open-once.sh")
	run := func(cp string) (int, string) {
		cmd := exec.Command(example)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "CP="+cp)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	if code, out := run("cp"); code != 0 {
		t.Errorf("GNU cp: exit %d, want 0:\n%s", code, out)
	}
	code, out := run(threeOpens)
	if code != 1 {
		t.Errorf("three-open helper: exit %d, want 1:\n%s", code, out)
	}
	want := regexp.MustCompile(`(?m)^once check: opener opened /tmp/[^ ]+/src 3 times, expected 1$`)
	if !want.MatchString(out) {
		t.Errorf("three-open helper: output lacks the violation line:\n%s", out)
	}
}

func TestCheckExitCodes(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"holds", []string{"check", "--opens", src + "=1", "--", "cat", src}, 0, "once check: 1 assertion holds; traced 1 process image, "},
		{"violated", []string{"check", "--opens", src + "=1", "--", "cat", src, src}, 1, "cat opened " + src + " 2 times, expected 1"},
		{"zero opens holds", []string{"check", "--opens", src + "=0", "--", "true"}, 0, ""},
		{"zero opens but the command failed", []string{"check", "--opens", src + "=0", "--", "false"}, 1, "the command failed with exit status 1"},
		{"allow-fail", []string{"check", "--allow-fail", "--opens", src + "=0", "--", "false"}, 0, ""},
		{"killed by a signal", []string{"check", "--max-opens", "100", "--", "sh", "-c", "kill -KILL $$"}, 1, "the command was killed by SIGKILL (exit status 137;"},
		{"exited 137", []string{"check", "--max-opens", "100", "--", "sh", "-c", "exit 137"}, 1, "the command failed with exit status 137 ("},
		{"missing file is a violation", []string{"check", "--opens", dir + "/nope=0", "--", "true"}, 1, "does not exist before the run"},
		{"no process opened it", []string{"check", "--opens", src + "=1", "--", "true"}, 1, "no process opened " + src + ", expected 1 time"},
		{"max-opens", []string{"check", "--max-opens", "1", "--", "cat", src, src}, 1, "cat opened " + src + " 2 times, expected at most 1"},
		{"max-opens ignored", []string{"check", "--max-opens", "1", "--ignore", src, "--", "cat", src, src}, 0, ""},
		{"max-exec-probes", []string{"check", "--max-exec-probes", "1", "--", "env", "PATH=/nonexistent/a:/nonexistent/b:/usr/bin", "true"}, 1, "env made 2 failed exec probes for true, expected at most 1"},
		{"max a kind", []string{"check", "--max", "failed_stat_probes=2", "--", "env", "-i", "PATH=/nonexistent/a:/nonexistent/b:/nonexistent/c:/usr/bin", "bash", "-c", "ls / >/dev/null"},
			1, "bash: failed_stat_probes ls: 3 failed, expected at most 2"},
		{"max a kind holds", []string{"check", "--max", "failed_stat_probes=3", "--max", "repeated_miss=0", "--", "env", "-i", "PATH=/nonexistent/a:/nonexistent/b:/nonexistent/c:/usr/bin", "bash", "-c", "ls / >/dev/null"},
			0, "once check: 2 assertions hold; traced "},
		{"max repeated misses", []string{"check", "--max", "repeated_miss=1", "--", "cat", dir + "/nope", dir + "/nope"}, 1, "cat: repeated_miss " + dir + "/nope: 2 misses, expected at most 1"},
		{"max an unknown kind", []string{"check", "--max", "slow_opens=1", "--", "true"}, 2, `no finding kind "slow_opens"`},
		{"max without a count", []string{"check", "--max", "duplicate_stat", "--", "true"}, 2, "want KIND=N"},
		{"timed out", []string{"check", "--max-opens", "100", "--timeout", "200ms", "--linger", "0", "--", "sleep", "10"}, 1, "the command timed out after 200ms: the run is incomplete"},
		{"negative timeout", []string{"check", "--max-opens", "1", "--timeout", "-1s", "--", "true"}, 2, "--timeout -1s: must not be negative"},
		{"no assertion", []string{"check", "--", "true"}, 2, "no assertion given"},
		{"missing --", []string{"check", "--opens", src + "=1", "cat"}, 2, "missing --"},
		{"bad count", []string{"check", "--opens", src + "=-1", "--", "true"}, 2, "N a count"},
		{"command not found", []string{"check", "--opens", src + "=1", "--", "no-such-cmd-xyz"}, 2, "command not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.msg != "" && !bytes.Contains(stderr.Bytes(), []byte(tc.msg)) {
				t.Errorf("stderr lacks %q:\n%s", tc.msg, stderr.String())
			}
		})
	}
}

// TestCheckReportViolations: the -o report carries check's verdict, so
// that a CI job reading it need not parse stderr: in JSON the violations
// (none: []), in text and Markdown under the header.
func TestCheckReportViolations(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "cat opened " + src + " 2 times, expected at most 1"
	for _, tc := range []struct {
		format, max string
		code        int
		has         []string
	}{
		{"json", "1", 1, []string{`"violations": [` + "\n" + `    "` + want + `"` + "\n  ]"}},
		{"json", "2", 0, []string{`"violations": []`}},
		{"text", "1", 1, []string{"check: 1 violation\n  " + want + "\n"}},
		{"text", "2", 0, []string{"check: every assertion holds\n"}},
		{"markdown", "1", 1, []string{"Check: 1 violation\n\n- " + want + "\n"}},
	} {
		t.Run(tc.format+" max "+tc.max, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			var stdout, stderr bytes.Buffer
			code := run([]string{"check", "--max-opens", tc.max, "--format", tc.format, "-o", out, "--", "cat", src, src}, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.has {
				if !strings.Contains(string(b), h) {
					t.Errorf("report lacks %q:\n%s", h, b)
				}
			}
		})
	}
}

// TestCheckHelpReport: check writes its report only with -o, and its help
// says so at -o and at the flags that shape that report; run's report goes
// to stderr, as its help says.
func TestCheckHelpReport(t *testing.T) {
	help := func(cmd string) string {
		var stdout, stderr bytes.Buffer
		if code := run([]string{cmd, "-h"}, &stdout, &stderr); code != 0 {
			t.Fatalf("once %s -h: exit %d, stderr %q", cmd, code, stderr.String())
		}
		return stdout.String()
	}
	check := help("check")
	if strings.Contains(check, "(created 0600; - for stdout) instead of stderr") {
		t.Errorf("check's -o says the report goes to stderr without it:\n%s", check)
	}
	for _, w := range []string{"without -o check writes no report", "or CMD not found", "found but could not run", "(in the -o report)", "(of the -o report and the --events lines)", "only with -o FILE"} {
		if !strings.Contains(check, w) {
			t.Errorf("check -h lacks %q:\n%s", w, check)
		}
	}
	if r := help("run"); !strings.Contains(r, "(created 0600; - for stdout) instead of stderr") || strings.Contains(r, "the -o report") {
		t.Errorf("run -h changed:\n%s", r)
	}
}

// TestCheckStacksSites: with --stacks a violation line says where in the
// code the calls that broke it were made, as gdb sees them: the three
// functions that open the file, and the one that runs the PATH search.
func TestCheckStacksSites(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	prog := testprog.Build(t, testprog.Stackprog)
	dir := t.TempDir()
	file := filepath.Join(dir, "target")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "none1") + ":" + filepath.Join(dir, "none2") + ":/bin:/usr/bin"
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"--opens", []string{"--opens", file + "=1"},
			"once check: stackprog opened " + file + " 3 times, expected 1; 3 opens from 3 call sites: 1 at open_alpha, 1 at open_beta, 1 at open_gamma\n"},
		{"--max-opens", []string{"--max-opens", "2"},
			"once check: stackprog opened " + file + " 3 times, expected at most 2; 3 opens from 3 call sites: 1 at open_alpha, 1 at open_beta, 1 at open_gamma\n"},
		{"--max", []string{"--max", "duplicate_open=2"},
			"once check: stackprog: duplicate_open " + file + ": 3 opens, expected at most 2; 3 opens from 3 call sites: 1 at open_alpha, 1 at open_beta, 1 at open_gamma\n"},
		{"--max-exec-probes", []string{"--max-exec-probes", "1"},
			"once check: stackprog made 2 failed exec probes for true, expected at most 1; 3 attempts from 1 call site: 3 at exec_delta\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"check", "--stacks"}, tc.flags...), "--", prog, file, "true")
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "PATH="+path)
			cmd.Stdin = strings.NewReader("go")
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("once check: %v, want exit 1\n%s", err, stderr.String())
			}
			// The line numbers are the compiler's: left out.
			got := regexp.MustCompile(` \(stackprog\.c:\d+\)`).ReplaceAllString(stderr.String(), "")
			if got != tc.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
