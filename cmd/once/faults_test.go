package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// oneLine fails unless s is exactly one line.
func wantOneLine(t *testing.T, what, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || strings.Contains(s, "goroutine") {
		t.Errorf("%s: %q, want exactly one line", what, s)
	}
}

// needTool is testprog.NeedTool: the path of a program, the test skipped
// (failed under CI=true) without it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	return testprog.NeedTool(t, name)
}

// TestFaultCapabilities: root with every capability dropped but CAP_BPF
// gets one line naming the missing CAP_PERFMON, exit 3.
func TestFaultCapabilities(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "fault: root with CAP_BPF only")
	setpriv := needTool(t, "setpriv")
	bin := buildOnce(t)
	cmd := exec.Command(setpriv, "--bounding-set=-all,+bpf", "--inh-caps=-all", bin, "run", "--", "true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	row.Inputs = "setpriv --bounding-set=-all,+bpf"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitEnv {
		t.Fatalf("exit %v, want %d; stderr %q", err, exitEnv, stderr.String())
	}
	wantOneLine(t, "stderr", stderr.String())
	if !strings.HasPrefix(stderr.String(), "once: missing capability CAP_PERFMON: ") {
		t.Errorf("stderr %q: want it to name CAP_PERFMON as missing", stderr.String())
	}
}

// inMountNS runs script with sh in a private mount namespace (unshare -m),
// after unmounting every tracefs and debugfs there: the host keeps its
// mounts. The script's arguments follow.
func inMountNS(t *testing.T, script string, args ...string) (int, string, string) {
	t.Helper()
	unshare := needTool(t, "unshare")
	pre := `set -e
for m in $(awk '$3=="tracefs"||$3=="debugfs"{print $2}' /proc/self/mounts | sort -r); do umount -l "$m"; done
if awk '$3=="tracefs"{f=1} END{exit !f}' /proc/self/mounts; then echo "tracefs still mounted" >&2; exit 99; fi
set +e
`
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c", pre + script, "sh"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 99 {
		t.Fatalf("could not unmount tracefs in the namespace: %s", stderr.String())
	}
	return code, stdout.String(), stderr.String()
}

func hostTracefs(t *testing.T) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^\S+ \S+ tracefs `).Match(data)
}

// TestFaultTracefs: with tracefs unmounted, once mounts it itself and
// traces; where it cannot (no CAP_SYS_ADMIN: CAP_BPF and CAP_PERFMON are
// enough to trace but not to mount), one line with the exact mount
// command, exit 3.
func TestFaultTracefs(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	hostHad := hostTracefs(t)
	t.Run("mounted by once", func(t *testing.T) {
		row := reltest.Record(t, "fault: tracefs not mounted")
		row.Inputs = "cat F F"
		f := filepath.Join(t.TempDir(), "target")
		os.WriteFile(f, []byte("x"), 0o644)
		rep := filepath.Join(t.TempDir(), "r.json")
		code, stdout, stderr := inMountNS(t, `"$@"; rc=$?; awk '$3=="tracefs"{print "tracefs at", $2}' /proc/self/mounts; exit $rc`,
			bin, "run", "--processes", "all", "--format", "json", "-o", rep, "--", "cat", f, f)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "tracefs at /sys/kernel/tracing") {
			t.Errorf("once did not mount tracefs: mounts after it ran: %q", stdout)
		}
		r := readReport(t, rep)
		row.Seen, row.Lost = r.Received, r.EventsLost
		cat := false
		for _, p := range r.Processes {
			cat = cat || p.Comm == "cat"
		}
		if !cat {
			t.Errorf("traced nothing of cat: %+v", r.Processes)
		}
	})
	t.Run("cannot mount", func(t *testing.T) {
		row := reltest.Record(t, "fault: tracefs not mounted, no CAP_SYS_ADMIN")
		setpriv := needTool(t, "setpriv")
		code, _, stderr := inMountNS(t, `exec "$@"`, setpriv, "--bounding-set=-all,+bpf,+perfmon", "--inh-caps=-all", bin, "run", "--", "true")
		row.Inputs = "setpriv --bounding-set=-all,+bpf,+perfmon"
		if code != exitEnv {
			t.Errorf("exit %d, want %d; stderr %q", code, exitEnv, stderr)
		}
		wantOneLine(t, "stderr", stderr)
		if !strings.HasSuffix(stderr, ": run: mount -t tracefs nodev /sys/kernel/tracing\n") {
			t.Errorf("stderr %q: want it to end with the mount command", stderr)
		}
	})
	if hostHad && !hostTracefs(t) {
		t.Errorf("the host lost its tracefs mount")
	}
}

// TestFaultDiskFull: -o on a full filesystem fails with one line, exit 4,
// and leaves no file behind, not even a partial one.
func TestFaultDiskFull(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "fault: -o on a full 64 KiB tmpfs")
	opener := testprog.Build(t, testprog.Opener)
	full := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(full, unix.MNT_DETACH) })
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	// 3000 opens: a JSON report of about a megabyte.
	code, _, stderr := runOnce(t, nil, "run", "--format", "json", "-o", filepath.Join(full, "report.json"), "--", opener, "repeat:3000:openat:"+f)
	row.Inputs = "3000 opens, ~1 MB report"
	if code != exitTrace {
		t.Errorf("exit %d, want %d; stderr %q", code, exitTrace, stderr)
	}
	wantOneLine(t, "stderr", stderr)
	if !strings.HasPrefix(stderr, "once: write report") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr %q: want the failed write, and why", stderr)
	}
	ents, err := os.ReadDir(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in the full filesystem: %s", e.Name())
	}
}

// heldFDs counts this process's descriptors of BPF objects and perf
// events (tracepoint attachments).
func heldFDs(t *testing.T) map[string]int {
	t.Helper()
	n := map[string]int{}
	for target, c := range testprog.KernelFDs(t) {
		if strings.HasPrefix(target, "anon_inode:bpf") || target == "anon_inode:[perf_event]" || target == "anon_inode:btf" {
			n[target] = c
		}
	}
	return n
}

// TestPanicReleasesBPF: a panic in a renderer is recovered by main (one
// line, exit 4), and the deferred Close has run by then: every BPF
// program, map and attachment of the run is released. In-process, so the
// descriptors can be counted.
func TestPanicReleasesBPF(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "leak: panic in a renderer (run, watch table, watch JSON)")
	beforeRender = func() { panic("injected renderer panic") }
	defer func() { beforeRender = nil }()
	before := heldFDs(t)
	cases := [][]string{
		{"run", "--", "true"},
		{"watch", "--duration", "100ms"},
		{"watch", "--format", "json", "--events", "--duration", "100ms"},
	}
	for _, args := range cases {
		var held map[string]int
		beforeRender = func() {
			held = heldFDs(t)
			panic("injected renderer panic")
		}
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != exitTrace || !strings.HasSuffix(stderr.String(), "once: internal error: injected renderer panic\n") {
			t.Errorf("%q: exit %d, stderr %q; want %d and the recovered panic", args, code, stderr.String(), exitTrace)
		}
		if args[0] == "watch" && held["anon_inode:bpf-prog"] < before["anon_inode:bpf-prog"]+onceProgs(t) {
			t.Errorf("%q: %d programs held when the renderer ran: the check can't see them", args, held["anon_inode:bpf-prog"])
		}
		// The syscall tracepoints' perf events close in the background
		// (collector.Tracer.Released); the process's exit waits for them.
		collector.AllReleased()
		if after := heldFDs(t); !maps(before, after) {
			t.Errorf("%q: BPF descriptors before %v, after the panic %v", args, before, after)
		}
	}
	row.Inputs = fmt.Sprintf("%d panics", len(cases))
}

func maps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRunLeavesNothingAttached: every way once run ends releases every
// BPF program: the command exits, Ctrl-C (SIGINT to the process group),
// SIGTERM to once (passed on to the command), SIGKILL to once.
func TestRunLeavesNothingAttached(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "leak: once run ends (exit, Ctrl-C, SIGTERM, SIGKILL)")
	bin := buildOnce(t)
	cases := []struct {
		name string
		sig  syscall.Signal
		pgrp bool // to the whole process group, like a terminal's Ctrl-C
		exit int
	}{
		{"command exits", 0, false, 0},
		{"Ctrl-C", syscall.SIGINT, true, 130},
		{"SIGTERM", syscall.SIGTERM, false, 143},
		{"SIGKILL", syscall.SIGKILL, false, -1}, // ExitCode() of a signal death
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			release := filepath.Join(dir, "release")
			// The command waits for the test (bounded), then exits 0.
			script := `i=0; while [ ! -e "$0" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`
			cmd := exec.Command(bin, "run", "-o", filepath.Join(dir, "r.txt"), "--", "sh", "-c", script, release)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var ids []ebpf.ProgramID
			for deadline := time.Now().Add(30 * time.Second); len(ids) < onceProgs(t); {
				if time.Now().After(deadline) {
					t.Fatalf("once run never held its %d programs (%d)", onceProgs(t), len(ids))
				}
				time.Sleep(20 * time.Millisecond) // polling until attached, bounded by the deadline
				ids = progIDsOf(t, cmd.Process.Pid)
			}
			switch {
			case tc.sig == 0:
				os.WriteFile(release, nil, 0o644)
			case tc.pgrp:
				syscall.Kill(-cmd.Process.Pid, tc.sig)
			default:
				cmd.Process.Signal(tc.sig)
			}
			if tc.sig == syscall.SIGKILL {
				// The command outlives a SIGKILLed once (and holds its
				// stderr open): let it go.
				os.WriteFile(release, nil, 0o644)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("once run did not end")
			}
			if code := exitCodeOf(err); code != tc.exit {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.exit, stderr.String())
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(loaded(ids)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond) // programs are freed after an RCU grace period
			}
			if still := loaded(ids); len(still) > 0 {
				t.Errorf("programs %v still loaded", still)
			}
		})
	}
	row.Inputs = fmt.Sprintf("%d endings", len(cases))
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -2
	}
	return 0
}

// TestPrivilegeDrop: under sudo (SUDO_UID/SUDO_GID), the command runs as
// that user: its uid and gid, that user's supplementary groups only, and
// no capability in any set, even when once itself holds inheritable ones.
func TestPrivilegeDrop(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "privilege drop under sudo (SUDO_UID=65534)")
	bin := buildOnce(t)
	// The user's groups, as id(1) sees them; none when uid 65534 has no
	// passwd entry (once then uses SUDO_GID alone).
	idOut, _ := exec.Command("id", "-G", "65534").Output()
	wantGroups := strings.Fields(string(idOut))
	slices.Sort(wantGroups)
	setpriv := needTool(t, "setpriv")
	for _, tc := range []struct {
		name   string
		prefix []string
	}{
		{"root", nil},
		{"root with inheritable capabilities", []string{setpriv, "--inh-caps=+net_bind_service,+sys_admin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := append(append(slices.Clone(tc.prefix), bin), "run", "-o", filepath.Join(t.TempDir(), "r.txt"), "--", "cat", "/proc/self/status")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			status := map[string]string{}
			for _, line := range strings.Split(stdout.String(), "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok {
					status[k] = strings.TrimSpace(v)
				}
			}
			if got := strings.Fields(status["Uid"]); len(got) != 4 || slices.ContainsFunc(got, func(s string) bool { return s != "65534" }) {
				t.Errorf("Uid: %q, want 65534 four times", status["Uid"])
			}
			if got := strings.Fields(status["Gid"]); len(got) != 4 || slices.ContainsFunc(got, func(s string) bool { return s != "65534" }) {
				t.Errorf("Gid: %q, want 65534 four times", status["Gid"])
			}
			groups := strings.Fields(status["Groups"])
			slices.Sort(groups)
			if !slices.Equal(groups, wantGroups) {
				t.Errorf("Groups: %q, want the user's %q", groups, wantGroups)
			}
			for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd"} {
				if v, err := strconv.ParseUint(status[c], 16, 64); err != nil || v != 0 {
					t.Errorf("%s: %q, want 0", c, status[c])
				}
			}
			if status["NoNewPrivs"] != "1" {
				t.Errorf("NoNewPrivs: %q, want 1", status["NoNewPrivs"])
			}
		})
	}
	// A malformed or partial sudo environment: exit 2, one line, and the
	// command never runs (as root or at all).
	for _, env := range [][]string{
		{"SUDO_UID=abc", "SUDO_GID=65534"},
		{"SUDO_UID= 65534", "SUDO_GID=65534"},
		{"SUDO_UID=65534"},
		{"SUDO_GID=65534"},
		{"SUDO_UID=-1", "SUDO_GID=65534"},
		{"SUDO_UID=4294967295", "SUDO_GID=65534"},
		{"SUDO_UID=65534", "SUDO_GID=x"},
	} {
		marker := filepath.Join(t.TempDir(), "ran")
		cmd := exec.Command(bin, "run", "--", "touch", marker)
		cmd.Env = append(withoutSudo(os.Environ()), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != exitUsage || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "refusing to run the command as root") {
			t.Errorf("%q: exit %d, stderr %q; want %d and one line", env, code, stderr.String(), exitUsage)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%q: the command ran", env)
		}
	}
	row.Inputs = "2 launches (plain root, root with inheritable caps), 7 malformed sudo environments"
}

func withoutSudo(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "SUDO_") {
			out = append(out, e)
		}
	}
	return out
}

// TestTwoInstances: two once watch with different --comm filters and a
// once run, all at the same time, each see only their own processes: each
// instance has its own maps and filters.
func TestTwoInstances(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "two watches (--comm A, --comm B) and a run at once")
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	progs, files := map[string]string{}, map[string]string{}
	for _, n := range []string{"oncetwoa", "oncetwob", "oncetwoc"} {
		progs[n] = namedCopy(t, opener, n)
		files[n] = filepath.Join(dir, n)
		os.WriteFile(files[n], []byte("x"), 0o644)
	}
	wa := startWatch(t, "--format", "json", "--events", "--comm", "oncetwoa")
	wb := startWatch(t, "--format", "json", "--events", "--comm", "oncetwob")
	rep := filepath.Join(dir, "run.json")
	// once run of C while both watches are attached.
	runCmd := exec.Command(buildOnce(t), "run", "--processes", "all", "--format", "json", "-o", rep, "--", progs["oncetwoc"], "repeat:4:openat:"+files["oncetwoc"])
	var runStderr bytes.Buffer
	runCmd.Stderr = &runStderr
	if err := runCmd.Start(); err != nil {
		t.Fatal(err)
	}
	runOK(t, progs["oncetwoa"], "repeat:3:openat:"+files["oncetwoa"])
	runOK(t, progs["oncetwob"], "repeat:5:openat:"+files["oncetwob"])
	if err := runCmd.Wait(); err != nil {
		t.Errorf("once run: %v: %s", err, runStderr.String())
	}
	wa.stop(t, os.Interrupt)
	wb.stop(t, syscall.SIGTERM)

	seen := 0
	for name, w := range map[string]*watchProc{"oncetwoa": wa, "oncetwob": wb} {
		counts := map[string]int{}
		for _, m := range jsonLines(t, w.stdout.Bytes()) {
			if m["type"] != "open" && m["type"] != "exec" {
				continue
			}
			seen++
			if m["comm"] != name {
				t.Errorf("watch --comm %s saw an event of %v", name, m["comm"])
			}
			if p, _ := m["path"].(string); m["type"] == "open" {
				counts[p]++
			}
		}
		want := map[string]int{"oncetwoa": 3, "oncetwob": 5}[name]
		if counts[files[name]] != want {
			t.Errorf("watch --comm %s saw %d opens of its file, want %d", name, counts[files[name]], want)
		}
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatalf("once run: %v: %s", err, runStderr.String())
	}
	var r runReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Processes {
		if p.Comm != "oncetwoc" {
			t.Errorf("once run reports a process it did not start: %s", p.Comm)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(compact.String(), `"count":4`) {
		t.Errorf("once run did not see its 4 opens")
	}
	row.Inputs, row.Seen = "3 + 5 + 4 opens by 3 programs", seen
}
