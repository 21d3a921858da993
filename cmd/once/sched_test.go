package main

import (
	"bytes"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// TestRunThreadsBatchCommandNormal: under once run, once's threads are in
// SCHED_BATCH (policy 3) once the command runs, and the command is not
// (0): it was started before, and inherits nothing. Policies are field
// 41 of /proc/TID/stat.
//
// once is started from a thread in SCHED_NORMAL: this test process may be
// in SCHED_BATCH already (the in-process watch tests move it), and a child
// inherits the policy of the thread that forks it.
func TestRunThreadsBatchCommandNormal(t *testing.T) {
	testprog.RequireRoot(t)
	script := `sleep 0.5; echo child $(cut -d' ' -f41 /proc/$$/stat); for t in /proc/$PPID/task/*; do echo once $(cut -d' ' -f41 $t/stat); done`
	bin := buildOnce(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_NORMAL}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		t.Fatalf("sched_setattr: %v", err)
	}
	cmd := exec.Command(bin, "run", "-o", "/dev/null", "--", "sh", "-c", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("once run: %v: %s", err, stderr.String())
	}
	out := stdout.String()
	var child, batch, other int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		switch f := strings.Fields(l); {
		case len(f) != 2:
			t.Fatalf("unexpected line %q in:\n%s", l, out)
		case f[0] == "child":
			child++
			if f[1] != "0" {
				t.Errorf("the command's policy is %s, want 0 (SCHED_NORMAL)", f[1])
			}
		case f[1] == "3":
			batch++
		default:
			other++
		}
	}
	if child != 1 || batch == 0 || other != 0 {
		t.Errorf("command lines %d, once's threads in SCHED_BATCH %d, in another policy %d; want 1, all, 0:\n%s", child, batch, other, out)
	}
}
