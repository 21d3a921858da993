package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The workload programs are compiled at bench time, from the sources next
// to this file, so the bench needs nothing prebuilt but bin/.
var (
	//go:embed w1/openloop.c
	openloopC []byte
	//go:embed w2/timecmd.c
	timecmdC []byte
	//go:embed scale/fanopen.c
	fanopenC []byte
	//go:embed w4/buildtree.c
	buildtreeC []byte
)

// Workload names, in the order a cell runs them.
const (
	w1     = "W1"
	w2     = "W2"
	w3vpe  = "W3-execvpe"
	w3abs  = "W3-absolute"
	target = "oncetarget" // the program reflaunch launches
)

var workloadOrder = []string{w1, w2, w3vpe, w3abs}

// programs are the paths of everything the workloads run.
type programs struct {
	openloop, timecmd, fanopen, buildtree, statloop string
	cp, find, git, bash                             string
	once, reflaunch                                 string
}

// buildPrograms compiles the C workloads into dir with gcc.
func buildPrograms(dir string) (programs, error) {
	p := programs{
		openloop:  filepath.Join(dir, "openloop"),
		timecmd:   filepath.Join(dir, "timecmd"),
		fanopen:   filepath.Join(dir, "fanopen"),
		buildtree: filepath.Join(dir, "buildtree"),
		statloop:  filepath.Join(dir, "statloop"),
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		return p, errors.New("gcc not found: the workloads are compiled at bench time (Debian: apt-get install gcc)")
	}
	for _, c := range []struct {
		out string
		src []byte
	}{{p.openloop, openloopC}, {p.timecmd, timecmdC}, {p.fanopen, fanopenC}, {p.buildtree, buildtreeC}, {p.statloop, statloopC}} {
		cmd := exec.Command("gcc", "-O2", "-Wall", "-Werror", "-x", "c", "-o", c.out, "-")
		cmd.Stdin = bytes.NewReader(c.src)
		if out, err := cmd.CombinedOutput(); err != nil {
			return p, fmt.Errorf("gcc %s: %v\n%s", filepath.Base(c.out), err, out)
		}
	}
	cp, err := exec.LookPath("cp")
	if err != nil {
		return p, err
	}
	// The absolute path: a bare "cp" would be a PATH search under every
	// tracer, with failed execs that depend on the caller's PATH.
	p.cp = cp
	// W5's, absolute for the same reason; a missing one fails W5 alone.
	p.find, _ = exec.LookPath("find")
	p.git, _ = exec.LookPath("git")
	p.bash, _ = exec.LookPath("bash")
	return p, nil
}

// data is where the workloads' files live: tmpfs, so the disk does not
// add its noise to what the tracers cost.
type data struct {
	root    string
	w1File  string
	w2Src   string
	w2Dst   string
	scaleIn string
}

// prepareData creates the W1 file and the W2 tree (files of size bytes,
// 100 to a directory, like a source tree rather than one huge directory).
func prepareData(root string, files, size int) (data, error) {
	d := data{root: root, w1File: filepath.Join(root, "w1", "target"),
		w2Src: filepath.Join(root, "w2", "src"), w2Dst: filepath.Join(root, "w2", "dst"),
		scaleIn: filepath.Join(root, "scale")}
	if err := os.RemoveAll(root); err != nil {
		return d, err
	}
	for _, dir := range []string{filepath.Dir(d.w1File), d.w2Src, d.scaleIn} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return d, err
		}
	}
	if err := os.WriteFile(d.w1File, []byte("once bench\n"), 0o644); err != nil {
		return d, err
	}
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	for i := 0; i < files; i++ {
		dir := filepath.Join(d.w2Src, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return d, err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), buf, 0o644); err != nil {
			return d, err
		}
	}
	return d, nil
}

// sample is one run of one workload in one cell (round × tracer).
type sample struct {
	Round    int    `json:"round"`
	Tracer   string `json:"tracer"`
	Workload string `json:"workload"`
	Pid      int    `json:"pid"` // openloop, cp, or reflaunch (the children's parent)

	// W1: ns per open+close pair, measured inside openloop.
	NsPerCall float64            `json:"ns_per_call,omitempty"`
	ByKind    map[string]float64 `json:"ns_per_call_by_kind,omitempty"`
	Calls     int                `json:"calls,omitempty"`
	// W2: cp's wall, user and system time, from timecmd.
	WallNs int64 `json:"wall_ns,omitempty"`
	UserNs int64 `json:"user_ns,omitempty"`
	SysNs  int64 `json:"sys_ns,omitempty"`
	// W3: per fork+exec+wait iteration, from reflaunch -json.
	MinNs    int64 `json:"min_ns,omitempty"`
	MedianNs int64 `json:"median_ns,omitempty"`

	// StartupNs is launch → the workload's first instruction (W1, W2),
	// which under a wrapping tracer includes its whole start-up.
	StartupNs int64 `json:"startup_ns,omitempty"`
	// IRQWork is IRQ-work interrupts taken during the run (all CPUs).
	IRQWork uint64 `json:"irq_work_interrupts"`
	// DrainNs: how long a system-wide tracer stayed busy after the
	// workload ended, consuming its backlog.
	DrainNs int64 `json:"drain_ns,omitempty"`
	// TracerMaxRSSKB: ru_maxrss of a wrapping tracer, from timecmd's
	// wait4 (the max over it and the workload it waited for).
	TracerMaxRSSKB int64 `json:"tracer_maxrss_kb,omitempty"`
	// LostDeclared: events a wrapping tracer said it lost (once run's
	// events_lost); system-wide tracers report theirs per session.
	LostDeclared *int64 `json:"events_lost_declared,omitempty"`
	// Foreign: another tracer was on the machine during the cell.
	Foreign bool `json:"foreign_tracers,omitempty"`
	// PairedWith: an untraced run made right before this tracer's cell
	// in the same round, its baseline (see pairedBaseline).
	PairedWith string `json:"paired_with,omitempty"`

	Expected int64 `json:"events_expected"`
	// Seen is what the tracer reported of those; -1 when its output
	// cannot tell (aggregated output without per-process counts).
	Seen  int64  `json:"events_seen"`
	Error string `json:"error,omitempty"`
}

// runResult is what running a command gave back.
type runResult struct {
	stdout []byte
	stderr []byte
	launch int64 // CLOCK_MONOTONIC at fork, ns
	pid    int
}

func monoNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// run runs argv to completion with env, within timeout.
func run(argv []string, env []string, timeout time.Duration) (*runResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	r := &runResult{}
	r.launch = monoNs()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r.pid = cmd.Process.Pid
	err := cmd.Wait()
	r.stdout, r.stderr = out.Bytes(), errb.Bytes()
	if ctx.Err() != nil {
		return r, fmt.Errorf("timed out after %v", timeout)
	}
	if err != nil {
		return r, fmt.Errorf("%v: %s", err, tail(r.stderr, 300))
	}
	return r, nil
}

// tail is the end of b, on one line, for error messages.
func tail(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// jsonIn decodes the first JSON object in b (a wrapping tracer may print
// before the workload does).
func jsonIn(b []byte, v any) error {
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		return fmt.Errorf("no JSON in the output: %q", tail(b, 200))
	}
	return json.NewDecoder(bytes.NewReader(b[i:])).Decode(v)
}

// workloadArgv is the command line of a workload run; w1N is the number of
// opens for W1 (smaller for strace, whose per-call cost would take minutes).
func (b *bench) workloadArgv(wl string, w1N int) []string {
	switch wl {
	case w1:
		return []string{b.progs.openloop, b.data.w1File, strconv.Itoa(w1N), "mixed"}
	case w2:
		return []string{b.progs.timecmd, b.progs.cp, "-r", b.data.w2Src, b.data.w2Dst}
	case w3vpe, w3abs:
		strategy := strings.TrimPrefix(wl, "W3-")
		argv := []string{b.progs.reflaunch, "-n", strconv.Itoa(b.cfg.W3N), "-k", strconv.Itoa(b.cfg.W3K),
			"-strategy", strategy, "-json"}
		if b.cfg.W3CPU >= 0 {
			argv = append(argv, "-cpu", strconv.Itoa(b.cfg.W3CPU))
		}
		return argv
	}
	panic("unknown workload " + wl)
}

// beforeRun is the untimed preparation of a run: W2 copies into a
// destination that must not exist.
func (b *bench) beforeRun(wl string) error {
	if wl == w2 {
		return os.RemoveAll(b.data.w2Dst)
	}
	return nil
}

// expected is how many traced events a run of wl makes, by construction
// (W1, W3) or by the strace calibration (W2).
func (b *bench) expected(wl string, w1N int) int64 {
	switch wl {
	case w1:
		return int64(w1N)
	case w2:
		return b.w2Opens
	case w3vpe:
		return int64(b.cfg.W3N * b.cfg.W3K) // K-1 failed execve and the one that works
	case w3abs:
		return int64(b.cfg.W3N)
	}
	return 0
}

// parseWorkload fills s from the workload's own report on stdout.
func parseWorkload(wl string, r *runResult, s *sample) error {
	switch wl {
	case w1:
		var o struct {
			Pid       int     `json:"pid"`
			StartNs   int64   `json:"start_ns"`
			N         int     `json:"n"`
			NsPerCall float64 `json:"ns_per_call"`
			Open      *kind   `json:"open"`
			Openat    *kind   `json:"openat"`
			Openat2   *kind   `json:"openat2"`
		}
		if err := jsonIn(r.stdout, &o); err != nil {
			return err
		}
		s.Pid, s.NsPerCall, s.Calls, s.StartupNs = o.Pid, o.NsPerCall, o.N, o.StartNs-r.launch
		s.ByKind = map[string]float64{}
		for name, k := range map[string]*kind{"open": o.Open, "openat": o.Openat, "openat2": o.Openat2} {
			if k != nil {
				s.ByKind[name] = k.NsPerCall
			}
		}
	case w2:
		var o struct {
			Pid      int   `json:"pid"`
			StartNs  int64 `json:"start_ns"`
			WallNs   int64 `json:"wall_ns"`
			UtimeNs  int64 `json:"utime_ns"`
			StimeNs  int64 `json:"stime_ns"`
			ExitCode int   `json:"exit_code"`
		}
		if err := jsonIn(r.stdout, &o); err != nil {
			return err
		}
		if o.ExitCode != 0 {
			return fmt.Errorf("cp exited %d", o.ExitCode)
		}
		s.Pid, s.WallNs, s.UserNs, s.SysNs, s.StartupNs = o.Pid, o.WallNs, o.UtimeNs, o.StimeNs, o.StartNs-r.launch
	case w3vpe, w3abs:
		var o struct {
			Strategies []struct {
				MinNs    int64 `json:"min_ns"`
				MedianNs int64 `json:"median_ns"`
			} `json:"strategies"`
		}
		if err := jsonIn(r.stdout, &o); err != nil {
			return err
		}
		if len(o.Strategies) != 1 {
			return fmt.Errorf("reflaunch reported %d strategies, want 1", len(o.Strategies))
		}
		// The children's parent is reflaunch itself: the process started,
		// or under a wrapping tracer unknown (and not needed).
		s.Pid, s.MinNs, s.MedianNs = r.pid, o.Strategies[0].MinNs, o.Strategies[0].MedianNs
	}
	return nil
}

type kind struct {
	N         int     `json:"n"`
	NsPerCall float64 `json:"ns_per_call"`
}
