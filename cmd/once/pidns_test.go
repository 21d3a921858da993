package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// TestWatchPidNamespaceSelf: once watch in a pid namespace of its own
// (unshare -p --mount-proc, a container without hostPID) leaves out its
// own calls as it does on the host. The kernel side knows once by its
// tgid in the initial namespace, which getpid there does not give (it is
// 1): once asks the kernel. Its own events are those whose parent is the
// unshare that forked it (ppid, the kernel's pid of unshare), and it makes
// some after it attaches (its /proc reads, the summary). The warning
// still says the pids are the host's, and no longer that its own calls
// are traced.
func TestWatchPidNamespaceSelf(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "watch: in a pid namespace of its own, its own calls left out")
	row.Inputs = "unshare --pid --fork --mount-proc once watch --events --comm once"
	unshare := needTool(t, "unshare")
	bin := buildOnce(t)
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", bin, "watch", "--events", "--format", "json",
		"--comm", "once", "--duration", "2s")
	w := startWatchCmd(t, cmd)
	w.stop(t, nil)
	host := float64(cmd.Process.Pid) // unshare, once's parent
	own := 0
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] == "summary" || m["type"] == "finding" {
			continue
		}
		if m["ppid"] == host {
			if own++; own <= 5 {
				t.Errorf("once's own call traced: %v %v %v", m["syscall"], m["fname"], m["ppid"])
			}
		}
	}
	if own > 5 {
		t.Errorf("and %d more of its own calls", own-5)
	}
	stderr := w.stderr.buf.String()
	if !strings.Contains(stderr, "pid namespace of its own") || !strings.Contains(stderr, "--pid takes those") {
		t.Errorf("no warning that the pids are the host's: %s", stderr)
	}
	if strings.Contains(stderr, "own calls are traced") {
		t.Errorf("the warning says its own calls are traced: %s", stderr)
	}
}

// TestWatchPidNamespaceParentComm: a parent that predates the trace is
// named from /proc/PPID/comm, PPID the kernel's pid. In a pid namespace
// with its own /proc (unshare -p --mount-proc) that file is another
// process's, or none: the orphan below is reparented to the host's pid 1
// (or a subreaper), whose number in once's /proc is once itself. Its
// parent_comm is the host's comm of its ppid, or "" (unknown), never
// a process of once's namespace that has the same number.
func TestWatchPidNamespaceParentComm(t *testing.T) {
	testprog.RequireRoot(t)
	unshare := needTool(t, "unshare")
	bin := buildOnce(t)
	opener := namedCopy(t, testprog.Build(t, testprog.Opener), "oncensorphan")
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", bin, "watch", "--format", "json",
		"--comm", "oncensorphan", "--duration", "4s")
	w := startWatchCmd(t, cmd)
	// The shell exits at once: the opener, started after, is an orphan.
	runOK(t, "sh", "-c", `(sleep 0.3; exec "$0" "repeat:2:openat:$1") >/dev/null 2>&1 &`, opener, f)
	w.stop(t, nil)
	found := false
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] != "finding" || m["comm"] != "oncensorphan" {
			continue
		}
		found = true
		ppid, _ := m["ppid"].(float64)
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", int(ppid)))
		host := strings.TrimSpace(string(b))
		if pc := m["parent_comm"]; pc != "" && pc != host {
			t.Errorf("ppid %d: parent_comm %q, the host's is %q", int(ppid), pc, host)
		}
	}
	if !found {
		t.Fatalf("no finding of the orphan: %s", w.stdout.String())
	}
}

// TestWatchPidNamespaceStacks: --stacks in a pid namespace of its own is
// refused (exit 3, one line): the kernel's records of each mapping that
// symbolize a stack name processes by once's namespace's pids, the calls
// by the host's, so a process of once's namespace would lend its
// mappings to the host process of the same number (found: a host
// program's frames named by another program's functions).
func TestWatchPidNamespaceStacks(t *testing.T) {
	testprog.RequireRoot(t)
	unshare := needTool(t, "unshare")
	bin := buildOnce(t)
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", bin, "watch", "--stacks", "--duration", "1s")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitEnv {
		t.Fatalf("exit %v, want %d; stderr %q", err, exitEnv, stderr.String())
	}
	wantOneLine(t, "stderr", stderr.String())
	if !strings.Contains(stderr.String(), "--stacks") || !strings.Contains(stderr.String(), "hostPID") {
		t.Errorf("stderr %q: want it to name --stacks and hostPID", stderr.String())
	}
}

// TestWatchPidNamespacePid: in a pid namespace with its own /proc, --pid
// takes the host's pids, as the warning says: a host process is not
// refused as "no such process" for being absent from once's /proc, and
// is traced.
func TestWatchPidNamespacePid(t *testing.T) {
	testprog.RequireRoot(t)
	unshare := needTool(t, "unshare")
	bin := buildOnce(t)
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	target := exec.Command("sh", "-c", `sleep 2; exec cat "$0" "$0" >/dev/null`, f)
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer target.Wait()
	pid := target.Process.Pid
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", bin, "watch", "--format", "json",
		"--pid", fmt.Sprint(pid), "--duration", "4s")
	w := startWatchCmd(t, cmd)
	w.stop(t, nil)
	found := false
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] == "finding" && m["kind"] == "duplicate_open" && m["pid"] == float64(pid) && m["path"] == f {
			found = true
		}
	}
	if !found {
		t.Errorf("no duplicate open of %s by pid %d: %s", f, pid, w.stdout.String())
	}
}
