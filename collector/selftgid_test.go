package collector

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// nsPids is the NSpid line of /proc/self/status: this process's pid in
// each namespace from /proc's down to its own.
func nsPids(t *testing.T) []int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f, ok := strings.CutPrefix(l, "NSpid:"); ok {
			var pids []int
			for _, s := range strings.Fields(f) {
				n, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("NSpid %q", l)
				}
				pids = append(pids, n)
			}
			return pids
		}
	}
	t.Fatal("no NSpid line")
	return nil
}

// TestKernelTgid: the tgid the kernel side knows once by, which its
// programs leave out, is the initial pid namespace's, in a namespace of
// its own too, where getpid says 1. Checked against NSpid in the host's
// /proc (unshare -p without --mount-proc), whose first field is the
// initial namespace's pid.
func TestKernelTgid(t *testing.T) {
	testprog.RequireRoot(t)
	inNS := os.Getenv("ONCE_TEST_KERNEL_TGID") == "1"
	pids := nsPids(t)
	got, err := kernelTgid()
	if err != nil {
		t.Fatalf("kernelTgid: %v", err)
	}
	if got != uint32(pids[0]) {
		t.Errorf("kernelTgid %d, want %d (NSpid %v, getpid %d)", got, pids[0], pids, os.Getpid())
	}
	if tgid, known := selfTgid(); tgid != got || !known {
		t.Errorf("selfTgid %d %v, want %d true", tgid, known, got)
	}
	if inNS {
		if len(pids) < 2 || os.Getpid() != pids[len(pids)-1] || os.Getpid() == pids[0] {
			t.Errorf("not in a pid namespace of its own: NSpid %v, getpid %d", pids, os.Getpid())
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	cmd := exec.Command(unshare, "--pid", "--fork", os.Args[0], "-test.run=^TestKernelTgid$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ONCE_TEST_KERNEL_TGID=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestKernelTgid") {
		t.Errorf("in a pid namespace of its own: %v\n%s", err, out)
	}
}
