package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// runReport is the part of the JSON report these tests read.
type runReport struct {
	Command      []string `json:"command"`
	ExitCode     int      `json:"exit_code"`
	TimedOut     bool     `json:"timed_out"`
	ArgvRedacted bool     `json:"argv_redacted"`
	EventsLost   uint64   `json:"events_lost"`
	Received     uint64   `json:"events_received"`
	Processes    []struct {
		Pid      int      `json:"pid"`
		Comm     string   `json:"comm"`
		Argv     []string `json:"argv"`
		Exited   bool     `json:"exited"`
		ExitCode *int     `json:"exit_code"`
		Execs    []struct {
			Argv []string `json:"argv"`
		} `json:"execs"`
	} `json:"processes"`
}

func readReport(t *testing.T, path string) runReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r runReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// TestRunTimeout: --timeout stops the command (SIGTERM, then SIGKILL 2s
// later for one that ignores it), the report says what was seen and that
// it timed out, and once exits 124 like timeout(1).
func TestRunTimeout(t *testing.T) {
	testprog.RequireRoot(t)
	for _, tc := range []struct {
		name     string
		argv     []string
		exit     int
		min, max time.Duration
	}{
		{"SIGTERM", []string{"sleep", "30"}, 128 + int(syscall.SIGTERM), 300 * time.Millisecond, 10 * time.Second},
		{"SIGTERM ignored, SIGKILL", []string{"sh", "-c", `trap "" TERM; exec sleep 30`}, 128 + int(syscall.SIGKILL), 2300 * time.Millisecond, 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := reltest.Record(t, "run --timeout 300ms: "+tc.name)
			row.Inputs = strings.Join(tc.argv, " ")
			rep := filepath.Join(t.TempDir(), "r.json")
			start := time.Now()
			code, _, stderr := runOnce(t, nil, append([]string{"run", "--processes", "all", "--timeout", "300ms", "--linger", "100ms", "--format", "json", "-o", rep, "--"}, tc.argv...)...)
			took := time.Since(start)
			if code != exitTimeout {
				t.Errorf("exit %d, want %d; stderr %q", code, exitTimeout, stderr)
			}
			want := "once: the command timed out after 300ms (exit status " + strconv.Itoa(tc.exit) + ")\n"
			if stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("took %v, want %v to %v", took, tc.min, tc.max)
			}
			r := readReport(t, rep)
			row.Seen, row.Lost = r.Received, r.EventsLost
			if !r.TimedOut || r.ExitCode != tc.exit || len(r.Processes) == 0 {
				t.Errorf("report: timed_out %v, exit_code %d, %d processes; want true, %d and what was seen", r.TimedOut, r.ExitCode, len(r.Processes), tc.exit)
			}
		})
	}
	t.Run("flooding command", func(t *testing.T) {
		// A command whose events never let the ring go quiet is still
		// stopped on time.
		row := reltest.Record(t, "run --timeout 300ms: a command flooding opens")
		flooder := testprog.Build(t, testprog.Flooder)
		f := filepath.Join(t.TempDir(), "target")
		os.WriteFile(f, []byte("x"), 0o644)
		rep := filepath.Join(t.TempDir(), "r.txt")
		row.Inputs = "flooder for 30s"
		start := time.Now()
		code, _, stderr := runOnce(t, nil, "run", "--timeout", "300ms", "--linger", "100ms", "-o", rep, "--", flooder, "30000", f)
		if took := time.Since(start); code != exitTimeout || took > 10*time.Second {
			t.Errorf("exit %d after %v, want %d within 10s; stderr %q", code, took, exitTimeout, stderr)
		}
		text, _ := os.ReadFile(rep)
		if !strings.Contains(string(text), "(killed by SIGTERM, exit 143, ") || !strings.Contains(string(text), "timed out after 300ms)") {
			t.Errorf("report header: %q", strings.SplitN(string(text), "\n", 2)[0])
		}
		if m := regexp.MustCompile(`(?m)^once: \d+ process(?:es)?, (\d+) opens? .* (\d+) events? lost`).FindStringSubmatch(string(text)); m != nil {
			row.Seen, row.Lost = m[1], m[2]
		}
	})
	t.Run("not reached", func(t *testing.T) {
		code, _, stderr := runOnce(t, nil, "run", "--timeout", "30s", "-o", filepath.Join(t.TempDir(), "r"), "--", "sh", "-c", "exit 5")
		if code != 5 || stderr != "" {
			t.Errorf("exit %d, stderr %q: want the command's 5 and nothing said", code, stderr)
		}
	})
}

// TestRunKilled: a command killed by SIGKILL is reported, and once exits
// 137 like a shell.
func TestRunKilled(t *testing.T) {
	testprog.RequireRoot(t)
	rep := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runOnce(t, nil, "run", "--processes", "all", "--format", "json", "-o", rep, "--", "sh", "-c", "kill -9 $$")
	if code != 137 {
		t.Errorf("exit %d, want 137; stderr %q", code, stderr)
	}
	r := readReport(t, rep)
	if r.ExitCode != 137 || len(r.Processes) == 0 || !r.Processes[0].Exited || r.Processes[0].ExitCode == nil || *r.Processes[0].ExitCode != 137 {
		t.Errorf("report: exit_code %d, processes %+v", r.ExitCode, r.Processes)
	}
}

// TestRunDaemon: a command that forks a child and exits. After --linger
// the child is still running, and the report lists it so.
func TestRunDaemon(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	rep, pidFile := filepath.Join(dir, "r.json"), filepath.Join(dir, "pid")
	code, _, stderr := runOnce(t, nil, "run", "--processes", "all", "--linger", "300ms", "--format", "json", "-o", rep, "--",
		"sh", "-c", `sleep 30 </dev/null >/dev/null 2>&1 & echo $! >"$0"`, pidFile)
	data, _ := os.ReadFile(pidFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
		defer syscall.Kill(pid, syscall.SIGKILL)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readReport(t, rep)
	var root, daemon bool
	for _, p := range r.Processes {
		switch {
		case p.Comm == "sh" && p.Exited && p.ExitCode != nil && *p.ExitCode == 0:
			root = true
		case p.Comm == "sleep":
			daemon = true
			if p.Exited || p.ExitCode != nil || strconv.Itoa(p.Pid) != strings.TrimSpace(string(data)) {
				t.Errorf("the daemon: pid %d exited %v exit_code %v; want pid %s still running", p.Pid, p.Exited, p.ExitCode, data)
			}
		}
	}
	if !root || !daemon {
		t.Errorf("report lacks the exited sh (%v) or the running sleep (%v): %+v", root, daemon, r.Processes)
	}
}

// redacted is the hash --redact-args shows for an argument, computed here
// independently of the collector.
func redacted(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

var hashArg = regexp.MustCompile(`^sha256:[0-9a-f]{12}$`)

// TestRedactArgs: with --redact-args no argument value reaches any output
// of run, check or watch, in any format; each shows the hash instead.
func TestRedactArgs(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "--redact-args: run (3 formats, events), check, watch (JSON, text events)")
	const secret = "hunter2-TOKEN-s3cr3t"
	hash := redacted(secret)
	dir := t.TempDir()
	f := filepath.Join(dir, "target")
	os.WriteFile(f, []byte("x"), 0o644)
	script := `cat "$0" "$0" >/dev/null; : "$1"`
	argv := []string{"sh", "-c", script, f, secret}
	outputs := 0
	noSecret := func(what, out string) {
		t.Helper()
		outputs++
		if strings.Contains(out, secret) || strings.Contains(out, "hunter2") {
			t.Errorf("%s leaks the argument", what)
		}
		if !strings.Contains(out, hash) {
			t.Errorf("%s lacks its hash %s", what, hash)
		}
	}

	for _, format := range []string{"text", "json", "markdown"} {
		rep := filepath.Join(dir, "r."+format)
		code, stdout, stderr := runOnce(t, nil, append([]string{"run", "--processes", "all", "--redact-args", "--events", "--format", format, "-o", rep, "--"}, argv...)...)
		if code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
		data, _ := os.ReadFile(rep)
		noSecret("run --format "+format, string(data))
		noSecret("run --events ("+format+" run)", stdout+stderr)
		if format == "json" {
			r := readReport(t, rep)
			row.Seen = r.Received
			if !r.ArgvRedacted || len(r.Command) != len(argv) || r.Command[0] != "sh" {
				t.Errorf("report command %q, argv_redacted %v", r.Command, r.ArgvRedacted)
			}
			for _, a := range r.Command[1:] {
				if !hashArg.MatchString(a) {
					t.Errorf("command argument %q is not redacted", a)
				}
			}
			for _, p := range r.Processes {
				lists := [][]string{p.Argv}
				for _, e := range p.Execs {
					lists = append(lists, e.Argv)
				}
				for _, l := range lists {
					for i, a := range l {
						if i > 0 && !hashArg.MatchString(a) {
							t.Errorf("%s: argv[%d] %q is not redacted", p.Comm, i, a)
						}
					}
				}
			}
		}
		if format == "text" && !strings.Contains(string(data), "arguments redacted") {
			t.Errorf("text report does not say the arguments are redacted")
		}
	}

	rep := filepath.Join(dir, "check.json")
	code, stdout, stderr := runOnce(t, nil, append([]string{"check", "--processes", "all", "--redact-args", "--max-opens", "1", "--format", "json", "-o", rep, "--"}, argv...)...)
	if code != checkViolated || !strings.Contains(stderr, "cat opened "+f+" 2 times") {
		t.Errorf("check: exit %d, stderr %q; want the max-opens violation", code, stderr)
	}
	data, _ := os.ReadFile(rep)
	noSecret("check report", string(data))
	if strings.Contains(stdout+stderr, secret) {
		t.Errorf("check output leaks the argument")
	}

	// watch, system-wide: whatever it sees, the secret is not in it.
	sh := namedCopy(t, "/bin/sh", "onceredact")
	for _, args := range [][]string{{"--format", "json", "--events"}, {"--events"}} {
		w := startWatch(t, append([]string{"--redact-args"}, args...)...)
		runOK(t, sh, "-c", "exit 0", "x", secret)
		w.stop(t, os.Interrupt)
		noSecret("watch "+strings.Join(args, " "), w.stdout.String()+w.stderr.buf.String())
	}
	row.Inputs = "1 secret argument, " + strconv.Itoa(outputs) + " outputs"
}
