package compare

import (
	"errors"
	"fmt"
	"github.com/oncetool/once/internal/mountinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/exectarget"
)

// CPUSource is where the CPU time of the timed runs comes from.
//
// wait4's rusage is what a shell's time reports, and its user/sys split is
// the problem: the kernel samples which mode a task is in at each
// scheduler tick and shares the task's exact runtime out in that
// proportion, so a run a few ticks long gets all or nothing of either
// (with no tick at all, everything is "user"). It also counts only the
// children the command waited for. A cgroup of the run's own counts every
// process the run started, from the scheduler's runtime accounting.
type CPUSource string

const (
	// CPUCgroup2: each run made in a cgroup v2 of its own
	// (CLONE_INTO_CGROUP); usage_usec of its cpu.stat, which needs no
	// controller. Its user_usec/system_usec are the same tick-based split
	// as rusage's.
	CPUCgroup2 CPUSource = "cgroup2"
	// CPUCgroup1: each run forked into a cgroup v1 cpuacct group of its
	// own; cpuacct.usage in ns, less what once's forking thread spent in
	// the group. cpuacct.usage_user/usage_sys count whole ticks.
	CPUCgroup1 CPUSource = "cgroup1"
	// CPURusage: wait4's rusage, user+sys. The fallback.
	CPURusage CPUSource = "rusage"
)

// Exact reports whether the source's total CPU time is exact to the µs and
// covers every process of the run.
func (s CPUSource) Exact() bool { return s == CPUCgroup2 || s == CPUCgroup1 }

// cpuTime is the CPU time of one run.
type cpuTime struct{ total, user, sys time.Duration }

// meter runs a command and measures it with one CPU source.
type meter struct {
	source CPUSource
	// home is once's own cgroup in the source's hierarchy: the runs'
	// groups are made in it, and what a run leaves behind moves back to it.
	home string
	seq  int
}

// newMeter picks the CPU source: want, or the first that works of cgroup
// v2, cgroup v1 and rusage. A cgroup source is tried for real, with one
// run of the exec target, so that a kernel without CLONE_INTO_CGROUP or a
// cgroup once may not join fails here rather than in the comparison.
func newMeter(want CPUSource) (*meter, error) {
	if want == CPURusage {
		return &meter{source: CPURusage}, nil
	}
	var errs []error
	for _, src := range []CPUSource{CPUCgroup2, CPUCgroup1} {
		if want != "" && want != src {
			continue
		}
		m, err := probeMeter(src)
		if err == nil {
			return m, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", src, err))
	}
	if want != "" {
		return nil, fmt.Errorf("CPU source %s: %w", want, errors.Join(errs...))
	}
	return &meter{source: CPURusage}, nil
}

func probeMeter(src CPUSource) (*meter, error) {
	home, err := ownCgroup(src)
	if err != nil {
		return nil, err
	}
	m := &meter{source: src, home: home}
	dir, err := os.MkdirTemp("", "once-cpu-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "oncetarget")
	if err := exectarget.Write(target); err != nil {
		return nil, err
	}
	// A few tries: the probe is so short that under cgroup v1, where the
	// forking thread's own time is taken off the group's, what is left
	// can come out at nothing now and then though the group counts.
	for range 3 {
		cmd := exec.Command(target)
		_, cpu, err := m.run(cmd)
		if err != nil {
			return nil, err
		}
		if !cmd.ProcessState.Success() {
			return nil, fmt.Errorf("probe run: %v", cmd.ProcessState)
		}
		if cpu.total > 0 {
			return m, nil
		}
	}
	return nil, fmt.Errorf("the probe run's cgroup counted no CPU time in 3 tries")
}

// run runs cmd to its end and measures it. The error is for what kept
// the run or its measurement from happening; a command that exits
// non-zero is no error (cmd.ProcessState has its status).
func (m *meter) run(cmd *exec.Cmd) (time.Duration, cpuTime, error) {
	switch m.source {
	case CPUCgroup2:
		return m.runCgroup2(cmd)
	case CPUCgroup1:
		return m.runCgroup1(cmd)
	}
	wall, err := runWall(cmd)
	if err != nil {
		return 0, cpuTime{}, err
	}
	ps := cmd.ProcessState
	return wall, cpuTime{total: ps.UserTime() + ps.SystemTime(), user: ps.UserTime(), sys: ps.SystemTime()}, nil
}

func runWall(cmd *exec.Cmd) (time.Duration, error) {
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		return 0, fmt.Errorf("run %s: %w", strings.Join(cmd.Args, " "), err)
	}
	return wall, nil
}

func (m *meter) runCgroup2(cmd *exec.Cmd) (wall time.Duration, cpu cpuTime, err error) {
	dir, err := m.mkdir()
	if err != nil {
		return 0, cpuTime{}, err
	}
	defer func() {
		if rerr := m.remove(dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, cpuTime{}, fmt.Errorf("open cgroup: %w", err)
	}
	defer unix.Close(fd)
	// The child is born in the group: nothing of it runs outside, and
	// nothing of once runs inside.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	if wall, err = runWall(cmd); err != nil {
		return 0, cpuTime{}, err
	}
	st, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, cpuTime{}, err
	}
	usec := func(k string) time.Duration { return time.Duration(st[k]) * time.Microsecond }
	return wall, cpuTime{total: usec("usage_usec"), user: usec("user_usec"), sys: usec("system_usec")}, nil
}

// runCgroup1 forks cmd into a cpuacct group of its own. cgroup v1 has no
// CLONE_INTO_CGROUP, and os/exec no hook between fork and exec, but a
// child is born in the groups of the thread that forks it and cgroup v1
// moves single threads: the forking thread joins the group for the run
// and leaves after. What that thread spends there (its part of the fork,
// the wait) is counted by the group too, so its own CPU clock over the
// same span is taken off.
func (m *meter) runCgroup1(cmd *exec.Cmd) (wall time.Duration, cpu cpuTime, err error) {
	dir, err := m.mkdir()
	if err != nil {
		return 0, cpuTime{}, err
	}
	defer func() {
		if rerr := m.remove(dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := strconv.Itoa(unix.Gettid())
	// Reading the thread's clock brings its runtime accounting up to
	// date, so what it ran before joining is charged to its own group.
	t0, err := threadCPU()
	if err != nil {
		return 0, cpuTime{}, err
	}
	if err := writeCgroupFile(filepath.Join(dir, "tasks"), tid); err != nil {
		return 0, cpuTime{}, err
	}
	wall, runErr := runWall(cmd)
	t1, clockErr := threadCPU()
	if err := writeCgroupFile(filepath.Join(m.home, "tasks"), tid); err != nil {
		return 0, cpuTime{}, err
	}
	if runErr != nil {
		return 0, cpuTime{}, runErr
	}
	if clockErr != nil {
		return 0, cpuTime{}, clockErr
	}
	var v [3]int64
	for i, name := range []string{"cpuacct.usage", "cpuacct.usage_user", "cpuacct.usage_sys"} {
		if v[i], err = readInt(filepath.Join(dir, name)); err != nil {
			return 0, cpuTime{}, err
		}
	}
	total := time.Duration(v[0]) - (t1 - t0)
	if total < 0 {
		total = 0
	}
	return wall, cpuTime{total: total, user: time.Duration(v[1]), sys: time.Duration(v[2])}, nil
}

func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("thread CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// mkdir makes the group of the next run.
func (m *meter) mkdir() (string, error) {
	m.seq++
	dir := filepath.Join(m.home, fmt.Sprintf("once-%d-%d", os.Getpid(), m.seq))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("make cgroup: %w", err)
	}
	return dir, nil
}

// remove deletes a run's group. Processes the command left running are
// moved back to once's group first: their CPU time after the command
// ended is not the run's, and a group with processes cannot be removed.
func (m *meter) remove(dir string) error {
	var err error
	for try := 0; try < 200; try++ {
		if data, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
			for _, pid := range strings.Fields(string(data)) {
				// A process that exits meanwhile cannot be moved: no matter.
				_ = writeCgroupFile(filepath.Join(m.home, "cgroup.procs"), pid)
			}
		}
		if err = unix.Rmdir(dir); err == nil || !errors.Is(err, unix.EBUSY) {
			break
		}
		// A reaped child leaves its group a little after wait4 returns.
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}

func writeCgroupFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cgroup: write %s to %s: %w", value, path, err)
	}
	return nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %s: %w", path, err)
	}
	return v, nil
}

// readKeyed reads a flat keyed file ("usage_usec 1234" lines).
func readKeyed(path string) (map[string]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	if _, ok := out["usage_usec"]; !ok {
		return nil, fmt.Errorf("cgroup: %s has no usage_usec", path)
	}
	return out, nil
}

// ownCgroup is the directory of once's own cgroup in the hierarchy of src:
// the cgroup2 mount, or the cgroup v1 mount with the cpuacct controller.
func ownCgroup(src CPUSource) (string, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	return cgroupDir(src, cg, mi)
}

// cgroupDir finds, from /proc/self/cgroup and /proc/self/mountinfo, the
// directory of the process's cgroup in the hierarchy of src.
func cgroupDir(src CPUSource, procCgroup, mounts []byte) (string, error) {
	hasCpuacct := func(list string) bool {
		for _, c := range strings.Split(list, ",") {
			if c == "cpuacct" {
				return true
			}
		}
		return false
	}
	path, found := "", false
	for _, line := range strings.Split(string(procCgroup), "\n") {
		// hierarchy-id:controllers:path; cgroup2's is "0::path".
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if src == CPUCgroup2 && parts[0] == "0" && parts[1] == "" || src == CPUCgroup1 && hasCpuacct(parts[1]) {
			path, found = parts[2], true
			break
		}
	}
	if !found {
		return "", fmt.Errorf("not in a %s hierarchy", hierarchyName(src))
	}
	for _, m := range mountinfo.Parse(string(mounts)) {
		if src == CPUCgroup2 && m.FSType != "cgroup2" || src == CPUCgroup1 && (m.FSType != "cgroup" || !m.HasOption("cpuacct")) {
			continue
		}
		root, mnt := m.Root, m.Point
		rel, ok := strings.CutPrefix(path, root)
		if root == "/" {
			rel, ok = path, true
		}
		if !ok || rel != "" && !strings.HasPrefix(rel, "/") {
			continue
		}
		return filepath.Join(mnt, rel), nil
	}
	return "", fmt.Errorf("no %s mount holds once's cgroup", hierarchyName(src))
}

func hierarchyName(src CPUSource) string {
	if src == CPUCgroup2 {
		return "cgroup2"
	}
	return "cgroup v1 cpuacct"
}
