package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, exitUsage, "usage: once"},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"version with an argument", []string{"version", "extra"}, exitUsage, `version takes no arguments (got "extra")`},
		{"run without --", []string{"run", "true"}, exitUsage, "missing -- before the command"},
		{"run with nothing after --", []string{"run", "--"}, exitUsage, "no command after --"},
		{"bad format", []string{"run", "--format", "xml", "--", "true"}, exitUsage, `unknown --format "xml"`},
		{"bad flag", []string{"run", "--nope", "--", "true"}, exitUsage, "flag provided but not defined"},
		{"bad glob", []string{"run", "--ignore", "[", "--", "true"}, exitUsage, "bad --ignore pattern"},
		{"relative glob", []string{"check", "--max-opens", "1", "--ignore", "*.txt", "--", "true"}, exitUsage, `"*.txt" can match no file: a rule matches absolute paths, so start it with / or **/ (**/*.txt)`},
		{"stray argument", []string{"run", "x", "--", "true"}, exitUsage, `unexpected argument "x"`},
		{"negative timeout", []string{"run", "--timeout", "-1s", "--", "true"}, exitUsage, "--timeout -1s: must not be negative"},
		{"command not found", []string{"run", "--", "no-such-command-xyz"}, exitNotFound, "no-such-command-xyz: command not found"},
		{"bad duration", []string{"run", "--linger", "5", "--", "true"}, exitUsage, `invalid value "5" for flag -linger: want a duration such as 500ms, 2s or 1m30s`},
		{"negative linger", []string{"run", "--linger", "-1s", "--", "true"}, exitUsage, "--linger -1s: must not be negative"},
		{"ring size not a power of two", []string{"run", "--ring-size", "5000", "--", "true"}, exitUsage, "--ring-size 5000: want a power of two"},
		{"ring size past 32 bits", []string{"run", "--ring-size", "8589934592", "--", "true"}, exitUsage, "--ring-size 8589934592: want a power of two"},
		{"ring size not bytes", []string{"run", "--ring-size", "16X", "--", "true"}, exitUsage, `invalid value "16X" for flag -ring-size: want bytes, with an optional K, M or G suffix`},
		{"ring size with a suffix, not a power of two", []string{"watch", "--ring-size", "3M"}, exitUsage, "--ring-size 3145728: want a power of two"},
		{"negative rings", []string{"watch", "--rings", "-1"}, exitUsage, `invalid value "-1" for flag -rings: want 0 or more`},
		{"compare: ring size not a power of two", []string{"compare", "--ring-size", "5000", "--ref", "cp", "--", "cp"}, exitUsage, "compare: --ring-size 5000: want a power of two"},
		{"compare: negative rings", []string{"compare", "--rings", "-1", "--ref", "cp", "--", "cp"}, exitUsage, `invalid value "-1" for flag -rings: want 0 or more`},
		{"rings not a number", []string{"run", "--rings", "two", "--", "true"}, exitUsage, `invalid value "two" for flag -rings: want a whole number`},
		{"negative max-opens", []string{"check", "--max-opens", "-5", "--", "true"}, exitUsage, `invalid value "-5" for flag -max-opens: want 0 or more`},
		{"max-processes 0", []string{"watch", "--max-processes", "0"}, exitUsage, `invalid value "0" for flag -max-processes: want 1 or more`},
		{"memory-limit not bytes", []string{"watch", "--memory-limit", "lots"}, exitUsage, `--memory-limit "lots": want bytes`},
		{"memory-limit negative", []string{"watch", "--memory-limit", "-5M"}, exitUsage, `--memory-limit "-5M": want bytes`},
		{"max-processes -1", []string{"watch", "--max-processes", "-1"}, exitUsage, `invalid value "-1" for flag -max-processes: want 1 or more`},
		{"bad top", []string{"watch", "--top", "x"}, exitUsage, `invalid value "x" for flag -top: want a whole number`},
		{"stall timeout too short", []string{"watch", "--stall-timeout", "10ms"}, exitUsage, "--stall-timeout 10ms is too short (at least 1s)"},
		{"bad uid", []string{"watch", "--uid", "-1"}, exitUsage, "want a user id"},
		{"bad group", []string{"watch", "--group", "tree"}, exitUsage, `unknown --group "tree"`},
		{"bad time", []string{"run", "--events", "--time", "tai", "--", "true"}, exitUsage, `unknown --time "tai"`},
		{"run --time without --events", []string{"run", "--time", "boot", "--", "true"}, exitUsage, "run: --time needs --events"},
		{"run --time wall without --events", []string{"run", "--time", "wall", "--", "true"}, exitUsage, "run: --time needs --events"},
		{"check --time without --events", []string{"check", "--max-opens", "1", "--time", "boot", "--", "true"}, exitUsage, "check: --time needs --events"},
		{"watch --time without --events", []string{"watch", "--time", "boot"}, exitUsage, "watch: --time needs --events"},
		{"run --time with JSON lines", []string{"run", "--time", "boot", "--events-o", "/dev/null", "--format", "json", "--", "true"}, exitUsage, "run: --time sets the clock of the text --events lines"},
		{"watch --time with JSON lines", []string{"watch", "--time", "boot", "--events", "--format", "json"}, exitUsage, "watch: --time sets the clock of the text --events lines"},
		{"compare --files with --ref launch", []string{"compare", "--ref", "launch", "--files", "10", "--runs", "1", "--warmup", "0", "--no-trace", "--", "env"}, exitUsage, "compare: --files shapes the cp/mv workload, which this comparison has none of"},
		{"compare --size without a workload", []string{"compare", "--baseline", "true", "--size", "5", "--runs", "1", "--warmup", "0", "--no-trace", "--", "true"}, exitUsage, "compare: --size shapes the cp/mv workload"},
		{"compare --path-dirs with --ref cp", []string{"compare", "--ref", "cp", "--files", "1", "--path-dirs", "3", "--runs", "1", "--warmup", "0", "--no-trace", "--", "cp", "-r"}, exitUsage, "compare: --path-dirs shapes the launch workload"},
		{"compare --path-dirs without a workload", []string{"compare", "--baseline", "true", "--path-dirs", "3", "--runs", "1", "--warmup", "0", "--no-trace", "--", "true"}, exitUsage, "compare: --path-dirs shapes the launch workload"},
		{"compare {target} with {src}", []string{"compare", "--baseline", "sh -c 'echo {target}' {src}", "--files", "1", "--runs", "1", "--warmup", "0", "--no-trace", "--", "true"}, exitUsage, "compare: {target} names the launch workload's program"},
		{"compare {target} with --ref cp", []string{"compare", "--ref", "cp", "--files", "1", "--runs", "1", "--warmup", "0", "--no-trace", "--", "cp", "-r", "{target}"}, exitUsage, "compare: {target} names the launch workload's program"},
		{"run --details with JSON", []string{"run", "--details", "--format", "json", "--", "true"}, exitUsage, "run: --details adds sections to the text and markdown reports; --format json has none"},
		{"check --details with folded", []string{"check", "--max-opens", "1", "--details", "--format", "folded", "-o", "/dev/null", "--", "true"}, exitUsage, "check: --details adds sections"},
		{"run --wide without --events", []string{"run", "--wide", "--", "true"}, exitUsage, "run: --wide needs --events"},
		{"watch --wide without --events", []string{"watch", "--wide"}, exitUsage, "watch: --wide needs --events"},
		{"check --wide with JSON lines", []string{"check", "--max-opens", "1", "--wide", "--events-o", "/dev/null", "--format", "json", "--", "true"}, exitUsage, "check: --wide widens the text --events lines"},
		{"watch --wide with JSON lines", []string{"watch", "--wide", "--events", "--format", "json"}, exitUsage, "watch: --wide widens the text --events lines"},
		{"watch --events with a table's flag", []string{"watch", "--events", "--sort", "dup"}, exitUsage, "watch: --sort shapes the table, which --events replaces with a line per call"},
		{"-o in a missing directory", []string{"run", "-o", "/proc/once-missing/out", "--", "true"}, exitUsage, "-o /proc/once-missing/out"},
		{"-o and --events-o one file", []string{"run", "-o", "/tmp/once-usage-same", "--events-o", "/tmp/once-usage-same", "--", "true"}, exitUsage, "run: -o and --events-o name one file"},
		{"check: -o and --events-o one file, spelled two ways", []string{"check", "--max-opens", "1", "-o", "/tmp/once-usage-same", "--events-o", "/tmp/./once-usage-same", "--", "true"}, exitUsage, "check: -o and --events-o name one file"},
		{"check: json events on stderr, with the verdict", []string{"check", "--max-opens", "1", "--events", "--format", "json", "-o", "/dev/null", "--", "true"}, exitUsage, "check: --events with --format json: give --events-o FILE (or - for stdout)"},
		{"check: json events on stderr, no report", []string{"check", "--max-opens", "1", "--events", "--format", "json", "--", "true"}, exitUsage, "apart from check's verdict on stderr"},
		{"json events without a destination", []string{"run", "--events", "--format", "json", "--", "true"}, exitUsage, "give -o FILE for the report or --events-o FILE"},
		{"otlp without a scheme", []string{"run", "--otlp", "localhost:4318", "--", "true"}, exitUsage, "want http://HOST:PORT (plain text) or https://HOST:PORT (TLS)"},
		{"otlp bad protocol", []string{"watch", "--otlp", "http://c:4318", "--otlp-protocol", "http/json"}, exitUsage, `unknown OTLP protocol "http/json"`},
		{"otlp bad header", []string{"check", "--max-opens", "1", "--otlp", "http://c:4318", "--otlp-header", "novalue", "--", "true"}, exitUsage, `--otlp-header: OTLP header "novalue": want KEY=VALUE`},
		{"otlp missing CA", []string{"compare", "--ref", "cp", "--otlp", "https://c:4318", "--otlp-ca", "/proc/once-missing/ca.pem", "--", "cp"}, exitUsage, "OTLP CA"},
		{"otlp key without cert", []string{"run", "--otlp", "https://c:4318", "--otlp-client-key", "/k", "--", "true"}, exitUsage, "go together"},
		{"otlp flags without otlp", []string{"watch", "--otlp-protocol", "grpc"}, exitUsage, "the --otlp-* flags need --otlp URL"},
		{"run --stack-size without --stacks", []string{"run", "--stack-size", "600", "--", "true"}, exitUsage, "run: --stack-size needs --stacks (or --format pprof or folded)"},
		{"run --stack-size out of range without --stacks", []string{"run", "--stack-size", "20000", "--", "true"}, exitUsage, "run: --stack-size needs --stacks"},
		{"check --stack-size without --stacks", []string{"check", "--max-opens", "1", "--stack-size", "4096", "--", "true"}, exitUsage, "check: --stack-size needs --stacks"},
		{"watch --stack-size without --stacks", []string{"watch", "--stack-size", "600"}, exitUsage, "watch: --stack-size needs --stacks"},
		{"compare --stack-size without --stacks", []string{"compare", "--stack-size", "600", "--ref", "cp", "--", "cp"}, exitUsage, "compare: --stack-size needs --stacks"},
		{"compare --stack-size out of range", []string{"compare", "--stacks", "--stack-size", "99999", "--ref", "cp", "--", "cp"}, exitUsage, "compare: --stack-size 99999: want 512 to"},
		// An empty --metrics (a template's unset $PORT) was taken as no
		// --metrics: no metrics, no error, exit 0.
		{"watch --metrics empty", []string{"watch", "--duration", "1s", "--metrics", ""}, exitUsage, "watch: --metrics: empty metrics address; want PORT or HOST:PORT"},
		{"watch --metrics=", []string{"watch", "--duration", "1s", "--metrics="}, exitUsage, "watch: --metrics: empty metrics address"},
		{"watch --metrics all interfaces", []string{"watch", "--metrics", ":9469"}, exitUsage, "would listen on all interfaces"},
		{"watch --metrics dotted numbers", []string{"watch", "--metrics", "256.1.1.1:9469"}, exitUsage, `invalid host "256.1.1.1"`},
		// An empty value (a template's unset $OUT, $CGROUP) was taken as
		// the flag not given: the report on stderr, every process
		// watched, no OTLP, the default program; exit 0.
		{"run -o empty", []string{"run", "-o", "", "--", "true"}, exitUsage, `run: invalid value "" for flag -o: empty: give a value or leave the flag out`},
		{"run -o=", []string{"run", "-o=", "--", "true"}, exitUsage, `invalid value "" for flag -o: empty`},
		{"run --events-o empty", []string{"run", "--events-o", "", "--", "true"}, exitUsage, `invalid value "" for flag -events-o: empty`},
		{"check -o empty", []string{"check", "--max-opens", "1", "-o", "", "--", "true"}, exitUsage, `invalid value "" for flag -o: empty`},
		{"run --otlp empty", []string{"run", "--otlp", "", "--", "true"}, exitUsage, `invalid value "" for flag -otlp: empty`},
		{"run --otlp-ca empty", []string{"run", "--otlp", "https://c:4318", "--otlp-ca", "", "--", "true"}, exitUsage, `invalid value "" for flag -otlp-ca: empty`},
		{"watch --otlp-protocol empty", []string{"watch", "--duration", "1s", "--otlp", "http://c:4318", "--otlp-protocol", ""}, exitUsage, `invalid value "" for flag -otlp-protocol: empty`},
		{"watch -o empty", []string{"watch", "--duration", "1s", "-o", ""}, exitUsage, `invalid value "" for flag -o: empty`},
		{"watch --cgroup empty", []string{"watch", "--duration", "1s", "--cgroup", ""}, exitUsage, `invalid value "" for flag -cgroup: empty`},
		{"watch --group empty", []string{"watch", "--duration", "1s", "--group", ""}, exitUsage, `invalid value "" for flag -group: empty`},
		{"compare -o empty", []string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "-o", "", "--", "true"}, exitUsage, `invalid value "" for flag -o: empty`},
		{"compare --plot empty", []string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "--plot", "", "--", "true"}, exitUsage, `invalid value "" for flag -plot: empty`},
		{"compare --baseline empty", []string{"compare", "--baseline", "", "--ref", "cp", "--", "cp"}, exitUsage, `invalid value "" for flag -baseline: empty`},
		{"demo --cp empty", []string{"demo", "--files", "1", "--runs", "1", "--plot", "", "--cp", ""}, exitUsage, `invalid value "" for flag -cp: empty`},
		// --no-trace skips the traced run: its flags would do nothing.
		{"compare --no-trace --stacks", []string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "--stacks", "--", "true"}, exitUsage, "compare: --stacks shapes the traced run, which --no-trace leaves out"},
		{"compare --no-trace --ring-size", []string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "--ring-size", "16M", "--", "true"}, exitUsage, "compare: --ring-size shapes the traced run"},
		{"compare --no-trace --rings", []string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "--rings", "2", "--", "true"}, exitUsage, "compare: --rings shapes the traced run"},
		{"compare --no-trace --otlp", []string{"compare", "--baseline", "true", "--no-trace", "--runs", "1", "--warmup", "0", "--otlp", "http://127.0.0.1:1", "--", "true"}, exitUsage, "compare: --otlp sends what the traced runs found, which --no-trace leaves out"},
		// A newline in a value once echoes was cut there, the reason
		// behind "(run with -v for the full message)": escaped instead.
		{"a newline in -o's path", []string{"run", "-o", "/proc/once-missing/a\nb", "--", "true"}, exitUsage, `run: -o /proc/once-missing/a\nb: stat /proc/once-missing: no such file or directory`},
		{"a newline in a flag's name", []string{"run", "--a\x1b[31mb\nc", "--", "true"}, exitUsage, `run: flag provided but not defined: -a\x1b[31mb\nc`},
		{"a newline in check's flag", []string{"check", "--max-opens", "1", "--user", "a\nb", "--", "true"}, exitUsage, `check: --user "a\nb": user: unknown user a\nb`},
		{"a control byte in an argument", []string{"run", "--user", "\x1b[31mevil", "--", "true"}, exitUsage, `\x1b[31mevil`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.msg) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.msg)
			}
			if strings.ContainsAny(stderr.String(), "\x1b") {
				t.Errorf("a raw control byte reaches the terminal: %q", stderr.String())
			}
			if tc.code != exitUsage || tc.args == nil {
				return
			}
			// One clear line, never a Go stack trace.
			if lines := strings.Count(strings.TrimRight(stderr.String(), "\n"), "\n"); lines > 0 && !strings.Contains(tc.msg, "flag") {
				t.Errorf("usage error printed %d lines: %q", lines+1, stderr.String())
			}
			if strings.Contains(stderr.String(), "goroutine") {
				t.Errorf("stack trace: %s", stderr.String())
			}
		})
	}
}

// TestHelp: -h is help, like the tools users know: on stdout, exit 0,
// with examples and exit codes.
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"run", "check", "watch", "compare", "demo"} {
		for _, flag := range []string{"-h", "--help"} {
			var stdout, stderr bytes.Buffer
			args := []string{cmd, flag}
			if cmd == "run" || cmd == "check" || cmd == "compare" {
				args = append(args, "--", "true")
			}
			code := run(args, &stdout, &stderr)
			out := stdout.String()
			if code != 0 || stderr.Len() != 0 || !strings.HasPrefix(out, "usage: once "+cmd) ||
				!strings.Contains(out, "\nexamples:\n") || !strings.Contains(out, "\nexit status:\n") {
				t.Errorf("once %s %s: exit %d, stderr %q, stdout:\n%s", cmd, flag, code, stderr.String(), out)
			}
		}
	}
}

// TestPprofNotToTerminal: --format pprof -o - with a terminal for stdout
// is refused by run and check alike, before anything runs: gzip bytes
// on a terminal are raw control bytes.
func TestPprofNotToTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("SKIP cmd/once TestPprofNotToTerminal: no pty: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	for _, args := range [][]string{
		{"run", "--format", "pprof", "-o", "-", "--", "true"},
		{"check", "--max-opens", "5", "--format", "pprof", "-o", "-", "--", "true"},
	} {
		var stderr bytes.Buffer
		code := run(args, tty, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "--format pprof -o -: stdout is a terminal") {
			t.Errorf("once %v with a terminal for stdout: exit %d, stderr %q; want exit 2 and the refusal", args, code, stderr.String())
		}
	}
}

// TestHelpCommand: once help CMD is once CMD -h, as git help and go help
// are; an unknown one is a usage error.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"run", "check", "watch", "compare", "demo"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"help", cmd}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "usage: once "+cmd) {
			t.Errorf("once help %s: exit %d, stdout %.60q, stderr %q", cmd, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"help", "frob"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `help: unknown command "frob"`) {
		t.Errorf("once help frob: exit %d, stderr %q", code, stderr.String())
	}
}

// TestHelpSaysJSONOnly: --files and --processes shape only the JSON
// report (text and markdown show the findings' files, and --details
// every process): their help says so.
func TestHelpSaysJSONOnly(t *testing.T) {
	for _, cmd := range []string{"run", "check"} {
		var stdout, stderr bytes.Buffer
		run([]string{cmd, "-h"}, &stdout, &stderr)
		for _, want := range []string{"which files each process lists in the JSON report", "which processes the JSON report lists one by one"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("once %s -h lacks %q", cmd, want)
			}
		}
	}
}

// buildOnce builds the CLI for tests that run it as a separate process:
// once per test binary, into a directory every user can read (tests run it
// as nobody too); TestMain removes it.
func buildOnce(t *testing.T) string {
	t.Helper()
	onceBuild.Do(func() {
		dir, err := os.MkdirTemp("", "once-cli-")
		if err != nil {
			onceBuild.err = err
			return
		}
		onceBuild.dir = dir
		if err := os.Chmod(dir, 0o755); err != nil {
			onceBuild.err = err
			return
		}
		bin := filepath.Join(dir, "once")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			onceBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		onceBuild.bin = bin
	})
	if onceBuild.err != nil {
		t.Fatal(onceBuild.err)
	}
	return onceBuild.bin
}

var onceBuild struct {
	sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	if err := testprog.CheckMachine(); err != nil {
		fmt.Fprintln(os.Stderr, "testprog:", err)
		os.Exit(1)
	}
	// The link cache in a directory of the tests' own, not the system's:
	// every once the tests start shares it (cold for the first only).
	cache, err := os.MkdirTemp("", "once-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("ONCE_CACHE_DIR", cache)
	code := m.Run()
	os.RemoveAll(cache)
	if onceBuild.dir != "" {
		os.RemoveAll(onceBuild.dir)
	}
	if refsDir != "" {
		os.RemoveAll(refsDir)
	}
	testprog.RemoveBuilds()
	os.Exit(code)
}

// TestNotRoot: without privileges, one line saying what to do, exit 3.
func TestNotRoot(t *testing.T) {
	testprog.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop privileges")
	}
	bin := buildOnce(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "run", "--", "true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitEnv {
		t.Fatalf("exit %v, want %d; stderr %q", err, exitEnv, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "needs root") || !strings.Contains(msg, "sudo") || strings.Count(msg, "\n") != 1 {
		t.Errorf("message %q: want one line saying root is needed and how", msg)
	}
}

// TestRunEndToEnd runs the real CLI: exit status passed through, report in
// the requested format at -o, created 0600.
func TestRunEndToEnd(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.json")
	cmd := exec.Command(bin, "run", "--format", "json", "-o", out, "--", "sh", "-c", "cat "+src+" "+src+" >/dev/null; exit 3")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want the command's 3; stderr %s", err, stderr.String())
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("report mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(out)
	var doc struct {
		Command  []string `json:"command"`
		ExitCode int      `json:"exit_code"`
		Dropped  *uint64  `json:"dropped_events"`
		Findings []struct {
			Kind  string `json:"kind"`
			Comm  string `json:"comm"`
			Path  string `json:"path"`
			Count int    `json:"count"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, data)
	}
	if doc.ExitCode != 3 || doc.Dropped == nil || len(doc.Command) != 3 {
		t.Errorf("report header %+v", doc)
	}
	found := false
	for _, f := range doc.Findings {
		if f.Kind == "duplicate_open" && f.Path == src && f.Comm == "cat" && f.Count == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("no duplicate_open of %s by cat with count 2 in %s", src, data)
	}
}

// TestRunEvents: --events prints a line per open and exec as they happen,
// and tags the repeated open and the exec that ends a PATH search.
func TestRunEvents(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src\x1bx")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--events", "-o", filepath.Join(dir, "r.txt"), "--",
		"env", "PATH=/nonexistent/a:/nonexistent/b:/usr/bin", "cat", src, src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"PID", "COMM", "execve", "ENOENT", "/nonexistent/a/cat", "PROBE 2 failed -> /usr/bin/cat", "DUP 2x", `src\x1bx`} {
		if !strings.Contains(out, want) {
			t.Errorf("--events output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("--events output contains a raw escape byte")
	}
}

// TestRunEventsToClosedPipe: --events-o - into a pipe its reader closed
// (once run --events-o - | head -1) costs the lines, counted in the
// report, not the trace: once goes on, the report is written, and once
// exits with the command's status, not killed by SIGPIPE with the
// command left running untraced.
func TestRunEventsToClosedPipe(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	cmd := exec.Command(bin, "run", "--events-o", "-", "--format", "json", "-o", rep, "--",
		"sh", "-c", "cat /etc/hostname /etc/hostname >/dev/null; sleep 0.2; cat /etc/hostname >/dev/null; exit 3")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("once exited %v, want the command's status 3; stderr:\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatalf("no report: %v; stderr:\n%s", err, stderr.String())
	}
	var doc struct {
		OutputDropped uint64 `json:"output_dropped"`
		ExitCode      int    `json:"exit_code"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OutputDropped == 0 || doc.ExitCode != 3 {
		t.Errorf("report: output_dropped %d, exit_code %d; want the lines counted and 3", doc.OutputDropped, doc.ExitCode)
	}
}

// TestFoldedToStderrSays: --format folded written to stderr (no -o) ends
// with the summary line, so that what was lost or cut is said, worded so
// that flame graph tools skip it (its last word no count); with -o FILE,
// the plain summary line goes to stderr beside it.
func TestFoldedToStderrSays(t *testing.T) {
	testprog.RequireRoot(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--format", "folded", "--", "sh", "-c", "cat /etc/hostname /etc/hostname >/dev/null"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "once: ") || !strings.HasSuffix(last, foldedSummaryEnd) {
		t.Errorf("folded on stderr ends with %q, want the summary line ending in %q", last, foldedSummaryEnd)
	}
	if len(lines) < 2 || !strings.Contains(stderr.String(), ";duplicate_open /etc/hostname 2\n") {
		t.Errorf("folded stacks missing:\n%s", stderr.String())
	}
	stderr.Reset()
	out := filepath.Join(t.TempDir(), "f.folded")
	if code := run([]string{"run", "--format", "folded", "-o", out, "--", "true"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); !strings.HasPrefix(s, "once: ") || strings.HasSuffix(s, foldedSummaryEnd) {
		t.Errorf("with -o, stderr %q: want the plain summary line", s)
	}
}

// TestReportToDevice: -o onto the null device (any name) is written to, never
// replaced by a regular file; -o through a symlink is refused.
func TestReportToDevice(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "run", "-o", null, "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if st, err := os.Lstat(null); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("-o on a character device replaced it: %v %v", st.Mode(), err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "victim"), link)
	out, err := exec.Command(bin, "run", "-o", link, "--", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "symlink") {
		t.Errorf("-o through a symlink: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim")); err == nil {
		t.Errorf("the symlink's target was written")
	}
}

// TestRunWarnsWhenLossStarts: a flood into a tiny ring makes once run say
// so on stderr while the command still runs, not only in the report.
func TestRunWarnsWhenLossStarts(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	flooder := testprog.Build(t, testprog.Flooder)
	var stderr bytes.Buffer
	// A new O_TMPFILE per open (the flooder is given a directory): repeats
	// of one file would be tallied in the kernel, not flood the ring.
	cmd := exec.Command(bin, "run", "--ring-size", "4096", "-o", filepath.Join(t.TempDir(), "r.txt"), "--", flooder, "300", floodDir(t))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "once: WARNING:") || !strings.Contains(stderr.String(), "events lost so far") {
		t.Errorf("no live loss warning:\n%s", stderr.String())
	}
}

// TestDemoHelpRanges: demo's numeric flags name their value and the
// range they accept, as compare's do: --files 0 is a usage error, and
// the help says why before anyone tries it.
func TestDemoHelpRanges(t *testing.T) {
	var stdout, stderr bytes.Buffer
	run([]string{"demo", "-h"}, &stdout, &stderr)
	for _, want := range []string{"-files N\n", "(1-100000)", "-runs N\n", "(1-100)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("once demo -h lacks %q:\n%s", want, stdout.String())
		}
	}
}
