// Package compare measures two commands side by side: exact open and exec
// counts from one traced run of each, and timing statistics from
// interleaved untraced runs (A B A B ..., after warm-up), so a patch can
// quote before/after numbers measured in one sitting on one machine.
package compare

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/privdrop"
	"github.com/oncetool/once/trace"
)

// Stats summarises one measure over the timed runs, in nanoseconds.
type Stats struct {
	N      int
	Min    float64
	Median float64
	Mean   float64
	Stddev float64
	Max    float64
	// Outliers counts the runs further from the median than
	// OutlierMADs median absolute deviations.
	Outliers int
	// SlowFirst: the first timed run, First, is such an outlier, above
	// the median: a cache filled by the first run, typically.
	SlowFirst bool
	First     float64
}

// OutlierMADs is how many median absolute deviations (MAD) from the median
// make a run an outlier: hyperfine's rule, a modified Z-score over 10 where
// 1.4826 MAD estimates one standard deviation of a normal distribution.
// The median and the MAD, unlike the mean and the standard deviation, are
// not dragged along by the outliers they are to find.
const OutlierMADs = 1.4826 * 10

// minOutlierRuns: unlike hyperfine, once looks for no outliers in fewer
// than 4 runs. Of 3 the MAD is the smaller deviation of the outer two,
// and one of them 15 times the other is no rare event.
const minOutlierRuns = 4

// Ratio is B/A of the means, with its spread propagated from both sides'
// relative standard deviations, and B/A of the medians.
type Ratio struct {
	Mean   float64
	Spread float64
	Median float64
	// Defined: the ratio was computed. It is not for a baseline mean or
	// median of 0, nor for figures that are not exact on both sides (a
	// tick-based user/sys split, rusage's CPU time).
	Defined bool
	// NoSpread: a side has one run, whose σ is undefined: Spread is 0
	// and means nothing.
	NoSpread bool
}

// Speed says which way a ratio goes, as hyperfine words its relative
// speed: the after side took less time (Faster), more (Slower), or as much.
type Speed int

const (
	Same Speed = iota
	Faster
	Slower
)

func (s Speed) String() string {
	switch s {
	case Faster:
		return "faster"
	case Slower:
		return "slower"
	}
	return "same"
}

// Relative is the ratio of the means as hyperfine states relative speed:
// a factor of at least 1, how many times less (Faster) or more (Slower)
// time the after side took, with its standard deviation propagated the
// same way as Spread (the factor times the hypotenuse of both sides'
// relative standard deviations; hyperfine's formula, which takes the two
// sides as independent). A ratio of 0.5 ± 0.1 is 2.0 ± 0.4 times faster.
func (q Ratio) Relative() (factor, stddev float64, s Speed) {
	factor, s = relative(q.Mean)
	if q.Mean > 0 {
		stddev = factor * (q.Spread / q.Mean)
	}
	return factor, stddev, s
}

// MedianRelative is the ratio of the medians as a factor of at least 1
// and its direction, like Relative.
func (q Ratio) MedianRelative() (float64, Speed) { return relative(q.Median) }

func relative(r float64) (float64, Speed) {
	switch {
	case r > 0 && r < 1:
		return 1 / r, Faster
	case r > 1:
		return r, Slower
	}
	return 1, Same
}

// Sample is one timed run.
type Sample struct {
	Wall time.Duration
	// CPU is the run's total CPU time from its side's CPUSource; User and
	// Sys are the kernel's split of it, at scheduler ticks.
	CPU, User, Sys time.Duration
	ExitCode       int    // 128+signal for a signal death
	Signal         string // the signal that killed it ("SIGKILL"), "" when it exited
}

// OpenPattern is how one side opened the files of one role: Files files,
// each opened PerFile times with this syscall and these flags.
type OpenPattern struct {
	Role    string // "src", "dst", or a path for role-less comparisons
	Syscall string
	Flags   uint64
	PerFile int
	Files   int
}

// Side is one command of the comparison.
type Side struct {
	Label   string   // "before" (A, the baseline) or "after" (B)
	Command []string // as run, placeholders substituted
	Trace   *trace.Result
	Samples []Sample
	Wall    Stats
	CPU     Stats
	User    Stats
	Sys     Stats
	Failed  int // timed runs that exited non-zero

	// CPUSource says where CPU, User and Sys come from. CPUExact: CPU is
	// exact to the µs and counts every process of a run. SplitExact: so
	// are User and Sys; every source once reads splits them at the
	// kernel's scheduler ticks, so it is false.
	CPUSource  CPUSource
	CPUExact   bool
	SplitExact bool

	Opens          int // open calls in the traced run
	FailedOpens    int // of them, those that failed
	DuplicateOpens int // extra opens: sum over duplicate_open findings of count-1
	DuplicateFiles int
	FailedExecs    int // failed execve of exec searches (KindInfo.ExecSearch)
	WastedExecNs   uint64
	WastedOpenNs   uint64
	// Lookups and FailedLookups: the traced run's stat and access calls
	// that named a file, and those that failed.
	Lookups, FailedLookups int
	// Waste is the traced run's total per kind of trace.Kinds, in its
	// order, zero ones included (trace.Result.Waste): the kinds above
	// and every other one.
	Waste           []trace.KindTotal
	Patterns        []OpenPattern
	PerProcessOpens []ProcessOpens
}

// ProcessOpens is the open count of one process image of the traced run.
type ProcessOpens struct {
	Pid       uint32
	Comm      string
	Opens     int
	Files     int
	DupFiles  int
	ExecProbe int
}

// Machine is what reproducing the numbers needs to know.
type Machine struct {
	Kernel string
	CPUs   int
	CPU    string
}

// Result is a whole comparison.
type Result struct {
	Workload string // e.g. "copying 3000 files of 4096 bytes"
	Runs     int
	Warmup   int
	A, B     Side
	Wall     Ratio
	CPU      Ratio
	User     Ratio
	Sys      Ratio
	Machine  Machine
	// Reproduce lists the commands that give these numbers again.
	Reproduce []string
	// Plot is the path of the SVG drawn of this comparison, as the
	// report links to it, or "".
	Plot string
}

// Options configure Run.
type Options struct {
	Runs   int // timed runs per side
	Warmup int // untimed runs per side before them
	Env    []string
	Dir    string
	// Prepare runs before every run of either side, untimed (e.g. remove
	// the previous destination, recreate a moved source).
	Prepare func() error
	// Roles maps a directory prefix to a role name for the open patterns
	// ("src", "dst"); without roles the patterns list repeated files.
	Roles map[string]string
	// Trace runs a command under the tracer; nil skips the traced runs.
	Trace func(ctx context.Context, cmd *exec.Cmd) (*trace.Result, error)
	// Progress, when set, is told after each run.
	Progress func(done, total int)
	// Stdout and Stderr of the commands; nil discards.
	Stdout, Stderr *os.File
	// CPU is the CPU source to use; "" picks the first that works of
	// cgroup v2, cgroup v1 and rusage.
	CPU CPUSource
	// IgnoreFailure: a run (traced, warm-up or timed) that exits
	// non-zero is measured like any other, instead of stopping the
	// comparison with a *RunError (hyperfine's -i/--ignore-failure).
	IgnoreFailure bool
	// Credential, when set, is the user both commands run as, in every
	// run, traced or timed: started from a thread that dropped once's
	// privileges (privdrop.OnThread), like once run's command. Prepare is
	// the caller's to run as that user (privdrop.AsUser).
	Credential *syscall.Credential
}

// RunError is a run that exited non-zero, which stops a comparison
// unless Options.IgnoreFailure: like hyperfine, a failing command's times
// are taken to measure something other than the work it was to do.
type RunError struct {
	Side     string   // "before" or "after"
	Command  []string // as run
	Run      string   // "the traced run", "warm-up run 1 of 1", "timed run 2 of 10"
	ExitCode int      // 128+signal for a signal death
	Signal   string   // the signal that killed it ("SIGKILL"), "" when it exited
}

func (e *RunError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("%s: %s was killed by %s (exit %d)", e.Side, e.Run, e.Signal, e.ExitCode)
	}
	return fmt.Sprintf("%s: %s exited %d", e.Side, e.Run, e.ExitCode)
}

// Run compares a (before) against b (after).
func Run(ctx context.Context, a, b []string, opts Options) (*Result, error) {
	if opts.Runs < 1 {
		return nil, fmt.Errorf("runs must be at least 1")
	}
	res := &Result{Runs: opts.Runs, Warmup: opts.Warmup, Machine: machine()}
	res.A = Side{Label: "before", Command: a}
	res.B = Side{Label: "after", Command: b}
	total := 2 * (opts.Runs + opts.Warmup)
	if opts.Trace != nil {
		total += 2
	}
	done := 0
	step := func() {
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	if opts.Trace != nil {
		for _, s := range []*Side{&res.A, &res.B} {
			if err := prepare(opts); err != nil {
				return nil, err
			}
			tr, err := opts.Trace(ctx, command(ctx, s.Command, opts))
			if err != nil {
				return nil, fmt.Errorf("trace %s: %w", strings.Join(s.Command, " "), err)
			}
			s.Trace = tr
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if tr != nil && tr.ExitCode != 0 && !opts.IgnoreFailure {
				return nil, &RunError{Side: s.Label, Command: s.Command, Run: "the traced run", ExitCode: tr.ExitCode, Signal: tr.ExitSignal}
			}
			summarise(s, opts.Roles)
			step()
		}
	}
	m, err := newMeter(opts.CPU)
	if err != nil {
		return nil, err
	}
	for _, s := range []*Side{&res.A, &res.B} {
		s.CPUSource, s.CPUExact = m.source, m.source.Exact()
	}
	// Interleave A and B so drift (thermal, page cache, other load) hits
	// both sides alike.
	for i := 0; i < opts.Warmup+opts.Runs; i++ {
		for _, s := range []*Side{&res.A, &res.B} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := prepare(opts); err != nil {
				return nil, err
			}
			smp, err := timed(ctx, m, s.Command, opts)
			if err != nil {
				return nil, err
			}
			// A run killed because once was interrupted is no failure
			// of the command's.
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if smp.ExitCode != 0 && !opts.IgnoreFailure {
				run := fmt.Sprintf("timed run %d of %d", i-opts.Warmup+1, opts.Runs)
				if i < opts.Warmup {
					run = fmt.Sprintf("warm-up run %d of %d", i+1, opts.Warmup)
				}
				return nil, &RunError{Side: s.Label, Command: s.Command, Run: run, ExitCode: smp.ExitCode, Signal: smp.Signal}
			}
			if i >= opts.Warmup {
				s.Samples = append(s.Samples, smp)
			}
			step()
		}
	}
	Compute(res)
	return res, nil
}

// Compute derives every side's statistics and failed runs, and the ratios,
// from the samples and the sides' CPU sources.
func Compute(r *Result) {
	for _, s := range []*Side{&r.A, &r.B} {
		s.Wall = stats(s.Samples, func(x Sample) time.Duration { return x.Wall })
		s.CPU = stats(s.Samples, func(x Sample) time.Duration { return x.CPU })
		s.User = stats(s.Samples, func(x Sample) time.Duration { return x.User })
		s.Sys = stats(s.Samples, func(x Sample) time.Duration { return x.Sys })
		s.Failed = 0
		for _, x := range s.Samples {
			if x.ExitCode != 0 {
				s.Failed++
			}
		}
	}
	a, b := &r.A, &r.B
	r.Wall = ratio(a.Wall, b.Wall)
	r.CPU, r.User, r.Sys = Ratio{}, Ratio{}, Ratio{}
	// A ratio of figures that are not exact on both sides would pass for
	// a measured change; a tick-based split says more about the ticks
	// than about the commands.
	if a.CPUExact && b.CPUExact {
		r.CPU = ratio(a.CPU, b.CPU)
	}
	if a.SplitExact && b.SplitExact {
		r.User, r.Sys = ratio(a.User, b.User), ratio(a.Sys, b.Sys)
	}
}

func prepare(opts Options) error {
	if opts.Prepare == nil {
		return nil
	}
	if err := opts.Prepare(); err != nil {
		return fmt.Errorf("prepare run: %w", err)
	}
	return nil
}

func command(ctx context.Context, argv []string, opts Options) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	if opts.Credential != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: opts.Credential}
	}
	if opts.Stdout != nil {
		cmd.Stdout = opts.Stdout
	}
	if opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	}
	return cmd
}

func timed(ctx context.Context, m *meter, argv []string, opts Options) (Sample, error) {
	cmd := command(ctx, argv, opts)
	var wall time.Duration
	var cpu cpuTime
	// The whole run on the dropped thread: a cgroup v1 run forks from the
	// thread that joined its group, and that must be the one that dropped.
	err := privdrop.OnThread(opts.Credential, func() (err error) {
		wall, cpu, err = m.run(cmd)
		return err
	})
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Wall: wall, CPU: cpu.total, User: cpu.user, Sys: cpu.sys}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		s.ExitCode = ws.ExitStatus()
		if ws.Signaled() {
			s.ExitCode = 128 + int(ws.Signal())
			s.Signal = trace.SignalName(ws.Signal())
		}
	}
	return s, nil
}

// stats summarises one measure of the samples, which are in run order.
// Squares and sums are rounded one operation at a time (the float64
// conversions forbid fused multiply-adds), so the figures, and the golden
// files made of them, are the same bits on every GOARCH.
func stats(samples []Sample, get func(Sample) time.Duration) Stats {
	n := len(samples)
	if n == 0 {
		return Stats{}
	}
	v := make([]float64, n)
	sum := 0.0
	for i, s := range samples {
		v[i] = float64(get(s))
		sum += v[i]
	}
	first := v[0]
	sorted := slices.Clone(v)
	sort.Float64s(sorted)
	st := Stats{N: n, Min: sorted[0], Max: sorted[n-1], Mean: sum / float64(n), Median: median(sorted), First: first}
	if n > 1 {
		ss := 0.0
		for _, x := range v {
			d := x - st.Mean
			ss += float64(d * d)
		}
		st.Stddev = math.Sqrt(ss / float64(n-1))
	}
	if n < minOutlierRuns {
		return st
	}
	dev := make([]float64, n)
	for i, x := range sorted {
		dev[i] = math.Abs(x - st.Median)
	}
	sort.Float64s(dev)
	// With half the runs or more equal to the median the MAD is 0 and
	// any other run is an outlier, as in hyperfine.
	limit := float64(OutlierMADs * median(dev))
	for _, d := range dev {
		if d > limit {
			st.Outliers++
		}
	}
	st.SlowFirst = first-st.Median > limit
	return st
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// ratio is b over a. Its spread is the means' ratio times the hypotenuse
// of the relative standard deviations, with the squares rounded as in
// stats.
func ratio(a, b Stats) Ratio {
	if a.Mean == 0 || a.Median == 0 {
		return Ratio{}
	}
	r := Ratio{Mean: b.Mean / a.Mean, Median: b.Median / a.Median, Defined: true, NoSpread: a.N < 2 || b.N < 2}
	if b.Mean > 0 {
		ra, rb := a.Stddev/a.Mean, b.Stddev/b.Mean
		r.Spread = r.Mean * math.Sqrt(float64(ra*ra)+float64(rb*rb))
	}
	return r
}

// summarise derives a side's counts and open patterns from its traced run.
func summarise(s *Side, roles map[string]string) {
	r := s.Trace
	s.Opens, s.FailedOpens = r.Opens, r.FailedOpens
	// The run's own totals per kind (trace.Result.Waste), as its report
	// shows them: every search made of execve counts (exec_shell_fallback
	// too), not only failed_exec_probes.
	s.Lookups, s.FailedLookups = r.Lookups, r.FailedLookups
	s.Waste = make([]trace.KindTotal, len(trace.Kinds))
	for i, ki := range trace.Kinds {
		s.Waste[i] = r.KindTotal(ki.Kind)
	}
	dup := r.KindTotal(trace.KindDuplicateOpen)
	s.DuplicateFiles, s.DuplicateOpens, s.WastedOpenNs = dup.Findings, dup.Avoidable, dup.WastedNs
	for _, t := range r.Waste {
		if t.Kind.Info().ExecSearch {
			s.FailedExecs += t.Avoidable
			s.WastedExecNs += t.WastedNs
		}
	}
	for _, p := range r.Processes {
		if p == nil {
			continue
		}
		// The image's exact totals: every open call strace counts (O_PATH
		// and devices too), whatever its lists keep.
		po := ProcessOpens{Pid: p.Pid, Comm: p.Comm, Opens: p.Totals.Opens, Files: p.Totals.Files, DupFiles: p.Totals.DupFiles}
		for _, e := range p.Execs {
			if e.Errno != 0 {
				po.ExecProbe++
			}
		}
		s.PerProcessOpens = append(s.PerProcessOpens, po)
	}
	s.Patterns = patterns(r, roles)
}

type sig struct {
	role    string
	syscall string
	flags   uint64
	perFile int
}

// patterns groups the successful opens of the traced run: per file, how
// many times with which syscall and flags; then files with the same
// signature are counted together ("openat(src/*, O_RDONLY) x3, 3000 files").
func patterns(r *trace.Result, roles map[string]string) []OpenPattern {
	counts := map[sig]int{}
	var order []sig
	add := func(k sig) {
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	for _, p := range r.Processes {
		if p == nil {
			continue
		}
		for _, fo := range p.Opens {
			role := roleOf(fo.Path, roles)
			if role == "" {
				if len(roles) > 0 || fo.Count < 2 {
					continue // the loader's libraries and the like
				}
				role = fo.Path
			}
			type cf struct {
				sc    string
				flags uint64
			}
			per := map[cf]int{}
			var cfOrder []cf
			for _, c := range fo.Calls {
				k := cf{c.Syscall.String(), c.Flags &^ unix.O_CLOEXEC}
				if per[k] == 0 {
					cfOrder = append(cfOrder, k)
				}
				per[k]++
			}
			for _, k := range cfOrder {
				add(sig{role, k.sc, k.flags, per[k]})
			}
		}
	}
	out := make([]OpenPattern, 0, len(order))
	for _, k := range order {
		out = append(out, OpenPattern{Role: k.role, Syscall: k.syscall, Flags: k.flags, PerFile: k.perFile, Files: counts[k]})
	}
	return out
}

func roleOf(path string, roles map[string]string) string {
	best, role := "", ""
	for prefix, name := range roles {
		if (path == prefix || strings.HasPrefix(path, prefix+"/")) && len(prefix) > len(best) {
			best, role = prefix, name
		}
	}
	return role
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
