package compare

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the measured command: with ONCE_COMPARE_SPIN
// set it burns that much CPU time, after starting a grandchild that burns
// ONCE_COMPARE_GRANDCHILD and is never waited for, and prints the CPU time
// each process counted itself.
func TestMain(m *testing.M) {
	if spin := os.Getenv("ONCE_COMPARE_SPIN"); spin != "" {
		os.Exit(spinHelper(spin, os.Getenv("ONCE_COMPARE_GRANDCHILD")))
	}
	os.Exit(m.Run())
}

func spinHelper(spin, grand string) int {
	d, err := time.ParseDuration(spin)
	if err != nil {
		return 2
	}
	var grandSelf time.Duration
	if grand != "" {
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "ONCE_COMPARE_SPIN="+grand, "ONCE_COMPARE_GRANDCHILD=")
		out, err := gc.StdoutPipe()
		if err != nil || gc.Start() != nil {
			return 3
		}
		// EOF comes when the grandchild exits; it is not waited for, so
		// its time is not in this process's rusage.
		data, _ := io.ReadAll(out)
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 4
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		grandSelf = time.Duration(ns)
	}
	start := processCPU()
	for processCPU()-start < d {
		for i := 0; i < 100000; i++ {
			spinSink += i
		}
	}
	fmt.Println(int64(processCPU()), int64(grandSelf))
	return 0
}

var spinSink int

func processCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// TestMeter runs the helper under each CPU source: a cgroup source must
// count the child and the grandchild it never waited for, and agree with
// rusage about a child alone; rusage counts the child only. A cgroup
// source this machine or user cannot use is skipped, and the automatic
// choice must then fall back to rusage without an error.
func TestMeter(t *testing.T) {
	auto, err := newMeter("")
	if err != nil {
		t.Fatalf("automatic CPU source: %v", err)
	}
	t.Logf("automatic CPU source: %s", auto.source)
	if os.Geteuid() != 0 && auto.source != CPURusage {
		t.Logf("not root, yet %s works: a delegated cgroup", auto.source)
	}
	for _, src := range []CPUSource{CPUCgroup2, CPUCgroup1, CPURusage} {
		t.Run(string(src), func(t *testing.T) {
			m, err := newMeter(src)
			if err != nil {
				// Which cgroup hierarchies a host mounts is its own
				// choice (cgroup2 only, v1 only, hybrid): no CI
				// requirement, a plain skip.
				t.Skipf("%s is not usable here: %v", src, err)
			}
			run := func(grand string) (cpuTime, time.Duration, time.Duration, time.Duration) {
				t.Helper()
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), "ONCE_COMPARE_SPIN=30ms", "ONCE_COMPARE_GRANDCHILD="+grand)
				var out bytes.Buffer
				cmd.Stdout = &out
				_, cpu, err := m.run(cmd)
				if err != nil {
					t.Fatal(err)
				}
				var self, grandSelf int64
				if _, err := fmt.Sscan(out.String(), &self, &grandSelf); err != nil || !cmd.ProcessState.Success() {
					t.Fatalf("helper: %v, %v, output %q", err, cmd.ProcessState, out.String())
				}
				rusage := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				return cpu, time.Duration(self), time.Duration(grandSelf), rusage
			}

			cpu, self, _, rusage := run("")
			t.Logf("alone: CPU %v (user %v, sys %v), rusage %v, the child's own count %v", cpu.total, cpu.user, cpu.sys, rusage, self)
			if cpu.total < self {
				t.Errorf("CPU %v, less than the %v the child counted itself", cpu.total, self)
			}
			if src.Exact() {
				// Both count the scheduler's runtime of the one process;
				// cgroup v1's loses a few µs to the forking thread's.
				if d := (cpu.total - rusage).Abs(); d > 500*time.Microsecond {
					t.Errorf("CPU %v, rusage %v: %v apart", cpu.total, rusage, d)
				}
			}

			cpu, self, grandSelf, rusage := run("30ms")
			t.Logf("with a grandchild: CPU %v, rusage %v, the child's own count %v, the grandchild's %v", cpu.total, rusage, self, grandSelf)
			switch {
			case src.Exact() && cpu.total < self+grandSelf:
				t.Errorf("CPU %v, less than the child's %v and the grandchild's %v", cpu.total, self, grandSelf)
			case !src.Exact() && cpu.total >= self+grandSelf/2:
				t.Errorf("rusage CPU %v counts the grandchild (child %v, grandchild %v)", cpu.total, self, grandSelf)
			}
			if rusage >= self+grandSelf/2 {
				t.Errorf("rusage %v counts the grandchild never waited for (child %v, grandchild %v)", rusage, self, grandSelf)
			}
			if cpu.user < 0 || cpu.sys < 0 {
				t.Errorf("user %v sys %v", cpu.user, cpu.sys)
			}
		})
	}
}

func TestCgroupDir(t *testing.T) {
	const hybridCG = "12:cpu,cpuacct:/user.slice\n4:memory:/x\n1:name=systemd:/user.slice\n0::/user.slice/session-1.scope\n"
	const hybridMI = "24 1 0:22 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755\n" +
		"25 24 0:23 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw,nsdelegate\n" +
		"30 24 0:28 / /sys/fs/cgroup/cpu,cpuacct rw shared:15 - cgroup cgroup rw,cpu,cpuacct\n" +
		"31 24 0:29 / /sys/fs/cgroup/memory rw shared:16 - cgroup cgroup rw,memory\n"
	tests := []struct {
		name       string
		src        CPUSource
		cg, mi     string
		want, fail string
	}{
		{"hybrid v2", CPUCgroup2, hybridCG, hybridMI, "/sys/fs/cgroup/unified/user.slice/session-1.scope", ""},
		{"hybrid v1 co-mounted", CPUCgroup1, hybridCG, hybridMI, "/sys/fs/cgroup/cpu,cpuacct/user.slice", ""},
		{"pure v2", CPUCgroup2, "0::/system.slice/x.service\n",
			"29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/system.slice/x.service", ""},
		{"pure v2 has no cpuacct", CPUCgroup1, "0::/a\n", "29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "", "not in a cgroup v1 cpuacct"},
		{"v1 on its own", CPUCgroup1, "2:cpuacct:/\n1:cpu:/\n",
			"40 1 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n41 1 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
			"/sys/fs/cgroup/cpuacct", ""},
		{"a mount of a subtree", CPUCgroup2, "0::/outer/inner\n", "29 23 0:26 /outer /mnt/cg rw - cgroup2 cgroup2 rw\n", "/mnt/cg/inner", ""},
		{"a mount of another subtree", CPUCgroup2, "0::/other\n", "29 23 0:26 /outer /mnt/cg rw - cgroup2 cgroup2 rw\n", "", "no cgroup2 mount"},
		{"a prefix is not a parent", CPUCgroup2, "0::/outerx\n", "29 23 0:26 /outer /mnt/cg rw - cgroup2 cgroup2 rw\n", "", "no cgroup2 mount"},
		{"an escaped mount point", CPUCgroup2, "0::/\n", `29 23 0:26 / /mnt/c\040g rw - cgroup2 cgroup2 rw` + "\n", "/mnt/c g", ""},
		{"no mount", CPUCgroup2, "0::/\n", "", "", "no cgroup2 mount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cgroupDir(tc.src, []byte(tc.cg), []byte(tc.mi))
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Errorf("got %q, %v; want an error with %q", got, err, tc.fail)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
