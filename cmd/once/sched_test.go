package main

import (
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestRunThreadsBatchCommandNormal: under once run, once's threads are in
// SCHED_BATCH (policy 3) once the command runs, and the command is not
// (0): it was started before, and inherits nothing. Policies are field
// 41 of /proc/TID/stat.
func TestRunThreadsBatchCommandNormal(t *testing.T) {
	testprog.RequireRoot(t)
	script := `sleep 0.5; echo child $(cut -d' ' -f41 /proc/$$/stat); for t in /proc/$PPID/task/*; do echo once $(cut -d' ' -f41 $t/stat); done`
	code, out, errOut := runOnce(t, nil, "run", "-o", "/dev/null", "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("once run exited %d: %s", code, errOut)
	}
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
