package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// guardTimeout bounds each once a guard test starts: a report opened on a
// FIFO with no reader would hang once for good.
const guardTimeout = 30 * time.Second

// runOnceBounded is runOnce, killed after guardTimeout; hung says so.
func runOnceBounded(t *testing.T, env []string, args ...string) (code int, stdout, stderr string, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildOnce(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, o.String(), e.String(), true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), o.String(), e.String(), false
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String(), false
}

// stickyDir is a world-writable sticky directory like /tmp, reachable by
// every user: where another user plants things at the name once is given.
func stickyDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "once-guard-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plant is what another user (uid 65534) leaves at a path.
type plant struct {
	name string
	// make creates it; read, when set, returns what a reader of it got.
	make func(t *testing.T, path string) (read func() int)
}

var plants = []plant{
	{"a FIFO with a reader", func(t *testing.T, path string) func() int {
		if err := unix.Mkfifo(path, 0o622); err != nil {
			t.Fatal(err)
		}
		os.Lchown(path, 65534, 65534)
		// The other user's reader, waiting for root's report.
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return func() int {
			buf := make([]byte, 1<<16)
			n, _ := unix.Read(fd, buf)
			return max(n, 0)
		}
	}},
	{"a FIFO with no reader", func(t *testing.T, path string) func() int {
		if err := unix.Mkfifo(path, 0o622); err != nil {
			t.Fatal(err)
		}
		os.Lchown(path, 65534, 65534)
		return nil
	}},
	{"a socket", func(t *testing.T, path string) func() int {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		os.Lchown(path, 65534, 65534)
		return nil
	}},
	{"a character device (/dev/zero's numbers)", func(t *testing.T, path string) func() int {
		if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatal(err)
		}
		os.Lchown(path, 65534, 65534)
		return nil
	}},
	{"another user's regular file", func(t *testing.T, path string) func() int {
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Lchown(path, 65534, 65534)
		return func() int {
			st, err := os.Lstat(path)
			if err != nil {
				return -1
			}
			// Replaced by root's report, or written into.
			if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 65534 || st.Size() != 0 {
				return int(max(st.Size(), 1))
			}
			return 0
		}
	}},
}

// TestOutputGuards: -o, --events-o and --plot name a path in a directory
// others can write (/tmp): what another user planted there beforehand (a
// FIFO with their reader behind it, a socket, a device, a file of theirs)
// must get nothing of root's report (argv, paths), hang nothing, and be
// refused before the command runs: exit 2, one line.
func TestOutputGuards(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "-o/--events-o/--plot onto a FIFO, socket, device or file another user planted in /tmp")
	dir := stickyDir(t)
	marker := filepath.Join(dir, "ran")
	cmdline := []string{"--", "sh", "-c", "echo secret-argv > " + marker}
	type inv struct {
		name string
		args func(path string) []string
	}
	invs := []inv{
		{"run -o", func(p string) []string { return append([]string{"run", "-o", p}, cmdline...) }},
		{"run --events-o", func(p string) []string {
			return append([]string{"run", "--events", "--events-o", p, "-o", os.DevNull}, cmdline...)
		}},
		{"check -o", func(p string) []string {
			return append([]string{"check", "--max-opens", "100", "-o", p}, cmdline...)
		}},
		{"compare -o", func(p string) []string {
			return append([]string{"compare", "--no-trace", "--runs", "1", "--warmup", "0", "--baseline", "true", "-o", p}, cmdline...)
		}},
		{"compare --plot", func(p string) []string {
			return append([]string{"compare", "--no-trace", "--runs", "1", "--warmup", "0", "--baseline", "true", "--plot", p + ".svg", "-o", os.DevNull}, cmdline...)
		}},
	}
	tried, refused := 0, 0
	for _, in := range invs {
		for i, pl := range plants {
			t.Run(in.name+"/"+pl.name, func(t *testing.T) {
				os.Remove(marker)
				path := filepath.Join(dir, fmt.Sprintf("rep%d", i))
				if in.name == "compare --plot" {
					path += ".svg"
				}
				os.Remove(path)
				read := pl.make(t, path)
				args := in.args(path)
				if in.name == "compare --plot" {
					args = in.args(strings.TrimSuffix(path, ".svg"))
				}
				tried++
				code, _, stderr, hung := runOnceBounded(t, nil, args...)
				if hung {
					t.Fatalf("once hung on %s (killed after %v)", pl.name, guardTimeout)
				}
				got := 0
				if read != nil {
					got = read()
				}
				_, ranErr := os.Stat(marker)
				ok := code == 2 && got == 0 && ranErr != nil && strings.Count(strings.TrimSpace(stderr), "\n") == 0
				if !ok {
					t.Errorf("exit %d (want 2), %d bytes reached it (want 0), command ran: %v (want not), stderr %q",
						code, got, ranErr == nil, stderr)
					return
				}
				refused++
			})
		}
	}
	row.Inputs, row.Seen = fmt.Sprintf("%d (flag, planted file) pairs", tried), fmt.Sprintf("%d refused up front, exit 2, nothing written", refused)
}

// TestOutputStdStreams: -o - is the report on stdout (so that it pipes
// into a JSON parser), /dev/stdout and /dev/stderr are once's own, not
// opened by name, and /dev/null takes a report and drops it.
func TestOutputStdStreams(t *testing.T) {
	testprog.RequireRoot(t)
	for _, tc := range []struct {
		o          string
		wantStdout bool
		wantStderr bool
	}{
		{"-", true, false},
		{"/dev/stdout", true, false},
		{"/dev/stderr", false, true},
		{os.DevNull, false, false},
	} {
		t.Run(tc.o, func(t *testing.T) {
			code, stdout, stderr, hung := runOnceBounded(t, nil, "run", "--format", "json", "-o", tc.o, "--", "true")
			if hung || code != 0 {
				t.Fatalf("exit %d, hung %v: %s", code, hung, stderr)
			}
			var v map[string]any
			if gotOut := json.Unmarshal([]byte(stdout), &v) == nil; gotOut != tc.wantStdout {
				t.Errorf("stdout parses as the report: %v, want %v: %q", gotOut, tc.wantStdout, stdout)
			}
			if gotErr := strings.Contains(stderr, `"findings"`); gotErr != tc.wantStderr {
				t.Errorf("report on stderr: %v, want %v: %q", gotErr, tc.wantStderr, stderr)
			}
		})
	}
}

// TestOutputStreamsApart: JSON report and JSON event lines on one stream
// would parse as neither: refused. Apart, each parses.
func TestOutputStreamsApart(t *testing.T) {
	testprog.RequireRoot(t)
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"report and events on stdout", []string{"-o", "-", "--events-o", "/dev/stdout"}, false},
		{"report and events on stderr", []string{"-o", "/dev/stderr"}, false},
		{"report on stdout, events on stderr", []string{"-o", "-"}, true},
		{"report on stderr, events on stdout", []string{"--events-o", "-"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run", "--events", "--format", "json"}, tc.args...), "--", "true")
			code, stdout, stderr, hung := runOnceBounded(t, nil, args...)
			if hung {
				t.Fatal("hung")
			}
			if !tc.ok {
				if code != 2 || !strings.Contains(stderr, "so that each stream parses on its own") {
					t.Errorf("exit %d, want 2 and why: %q", code, stderr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var v map[string]any
			reportOut := stdout
			events := stderr
			if tc.args[0] == "--events-o" {
				reportOut, events = stderr, stdout
			}
			if err := json.Unmarshal([]byte(reportOut), &v); err != nil {
				t.Errorf("the report does not parse: %v: %q", err, reportOut)
			}
			for _, l := range strings.Split(strings.TrimSpace(events), "\n") {
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Errorf("an event line does not parse: %v: %q", err, l)
				}
			}
		})
	}
}

// TestCPUProfileGuards: ONCE_CPUPROFILE is written like -o: never through
// a symlink (into the file it points at), never into a FIFO, another
// user's file or a device.
func TestCPUProfileGuards(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "ONCE_CPUPROFILE through a symlink, onto a FIFO, a socket, a device, another user's file")
	dir := stickyDir(t)
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "prof.link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, 65534, 65534)
	tried, refused := 1, 0
	code, _, stderr, hung := runOnceBounded(t, []string{"ONCE_CPUPROFILE=" + link}, "version")
	data, _ := os.ReadFile(victim)
	if hung || code != 2 || string(data) != "keep me\n" {
		t.Errorf("symlink: exit %d (want 2), hung %v, the file it points at now %q: %s", code, hung, data, stderr)
	} else {
		refused++
	}
	for i, pl := range plants {
		path := filepath.Join(dir, fmt.Sprintf("prof%d", i))
		read := pl.make(t, path)
		tried++
		code, _, stderr, hung := runOnceBounded(t, []string{"ONCE_CPUPROFILE=" + path}, "version")
		got := 0
		if read != nil {
			got = read()
		}
		if hung || code != 2 || got != 0 {
			t.Errorf("%s: exit %d (want 2), hung %v, %d bytes reached it: %s", pl.name, code, hung, got, stderr)
		} else {
			refused++
		}
	}
	// A new file is made, 0600, and holds a profile.
	fresh := filepath.Join(t.TempDir(), "cpu.prof")
	if code, _, stderr, _ := runOnceBounded(t, []string{"ONCE_CPUPROFILE=" + fresh}, "version"); code != 0 {
		t.Errorf("a new profile: exit %d: %s", code, stderr)
	} else if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o600 || st.Size() == 0 {
		t.Errorf("a new profile: %v %v", st, err)
	}
	row.Inputs, row.Seen = fmt.Sprintf("%d hostile ONCE_CPUPROFILE paths", tried), fmt.Sprintf("%d refused, nothing written", refused)
}

// TestComparePrivilegeDrop: under sudo, once compare runs both commands
// as the invoking user, like once run, in every run (traced and timed),
// and the workload it generates is that user's: the after command moves
// files out of it. A malformed sudo environment is refused.
func TestComparePrivilegeDrop(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "compare under sudo (SUDO_UID=65534): both sides and the workload as the user")
	dir := stickyDir(t)
	uids := filepath.Join(dir, "uids")
	if err := os.WriteFile(uids, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(uids, 0o666)
	sudo := []string{"SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody"}
	// Each side writes its uid, then moves the workload's source away:
	// which it may only do when the workload is the user's.
	side := func(label string) string {
		return fmt.Sprintf("echo %s $(id -u) >> %s && mv {src} {dst}", label, uids)
	}
	code, stdout, stderr, hung := runOnceBounded(t, sudo, "compare", "--runs", "2", "--warmup", "0", "--files", "3", "--format", "json", "--keep",
		"--baseline", "sh -c '"+side("before")+"'", "--", "sh", "-c", side("after"))
	if hung || code != 0 {
		t.Fatalf("exit %d, hung %v: %s", code, hung, stderr)
	}
	if _, kept, ok := strings.Cut(stderr, "workload kept in "); ok {
		work := strings.TrimSpace(strings.SplitN(kept, "\n", 2)[0])
		t.Cleanup(func() { os.RemoveAll(work) })
		var notTheirs []string
		filepath.Walk(work, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Sys().(*syscall.Stat_t).Uid != 65534 {
				notTheirs = append(notTheirs, p)
			}
			return nil
		})
		if len(notTheirs) > 0 {
			t.Errorf("workload files not the user's: %q", notTheirs)
		}
	} else {
		t.Errorf("no workload kept: %s", stderr)
	}
	data, _ := os.ReadFile(uids)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	counts := map[string]int{}
	for _, l := range lines {
		counts[l]++
	}
	// One traced and two timed runs a side.
	if counts["before 65534"] != 3 || counts["after 65534"] != 3 || len(counts) != 2 {
		t.Errorf("the sides ran as %q, want before and after as 65534, 3 runs each", lines)
	}
	var res struct{ A, B struct{ Failed int } }
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Errorf("report: %v: %q", err, stdout)
	} else if res.A.Failed != 0 || res.B.Failed != 0 {
		t.Errorf("failed runs: before %d, after %d; want none: %s", res.A.Failed, res.B.Failed, stderr)
	}
	// A malformed sudo environment: exit 2, and nothing runs.
	os.WriteFile(uids, nil, 0o666)
	bad := 0
	for _, env := range [][]string{{"SUDO_UID=abc", "SUDO_GID=65534"}, {"SUDO_UID=65534"}} {
		code, _, stderr, _ := runOnceBounded(t, env, "compare", "--no-trace", "--runs", "1", "--warmup", "0",
			"--baseline", "sh -c 'id -u >> "+uids+"'", "--", "sh", "-c", "id -u >> "+uids)
		if data, _ := os.ReadFile(uids); code != 2 || len(data) != 0 {
			t.Errorf("%q: exit %d (want 2), ran as %q: %s", env, code, data, stderr)
		} else {
			bad++
		}
	}
	row.Inputs = "compare under SUDO_UID=65534 (3 runs a side), 2 malformed sudo environments"
	row.Seen = fmt.Sprintf("sides ran as %d distinct (side, uid) pairs; %d malformed refused", len(counts), bad)
}
