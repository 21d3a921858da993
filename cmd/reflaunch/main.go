// Command reflaunch reproduces the measurement behind the kernel patch
// "fs/exec: fast path for ENOENT on PATH search" (Josh Triplett, 2022): how
// much longer it takes to start a program by PATH search, when the search
// fails in every directory but the last, than by its absolute path.
//
// Usage:
//
//	reflaunch [-n N] [-k K] [-strategy execvpe|spawnp|absolute|resolved|all] [-cpu CPU] [-json] [-keep DIR]
//
// It builds a PATH of K empty-but-one directories d1..dK, puts a minimal
// static executable named oncetarget (generated on the fly; it only calls
// exit_group(0)) in dK, and times N launches of it with each strategy:
//
//	execvpe   fork, then glibc execvpe("oncetarget"): K-1 failed execve first
//	spawnp    glibc posix_spawnp("oncetarget"): the same K-1 failed execve
//	absolute  fork, then execve("<dK>/oncetarget")
//	resolved  look the name up once (faccessat over PATH), then fork and
//	          execve the resolved path every time
//
// Each sample spans the fork or spawn, the exec and the waitpid that reaps
// the child, timed with CLOCK_MONOTONIC inside one C loop per strategy. The
// report gives min, median, mean and 90th percentile per strategy, the
// failed execve each iteration makes by construction (the calls the once
// tracer counts as wasted probes), and the ratio of the execvpe median to
// the absolute and resolved medians.
//
// With every strategy (the default) it also times, in the same rounds,
// what the launches are made of: one failed execve alone; fork with a
// child that exits at once; clone(CLONE_VM|CLONE_VFORK) the same way, as
// glibc's posix_spawn makes its child; and it reads the page tables fork
// copies (VmPTE). execvpe and spawnp make the same failed execve: the
// parts say where the difference between them goes.
//
// With -cpu, the launching thread and so every child it starts run on that
// CPU alone. Unpinned on a 2-vCPU VM, a child often starts on the other,
// idle vCPU, and waking it dominates the median: the median then measures
// how idle the other vCPU was, which any process running there changes.
//
// Exit status: 0 on success, 1 if a measurement failed, 2 on a usage error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/exectarget"
)

const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

const usageLine = "usage: reflaunch [-n N] [-k K] [-strategy execvpe|spawnp|absolute|resolved|all] [-cpu CPU] [-json] [-keep DIR]"

// Limits on the flags: K is bounded so that PATH stays a sane length, N so
// that the samples fit comfortably in memory.
const (
	maxN = 10_000_000
	maxK = 64
)

// interleaveRound is how many iterations of one strategy run before the
// next strategy's turn.
const interleaveRound = 100

// targetName is the program the PATH search looks for.
const targetName = "oncetarget"

// strategy is one way of launching the target.
type strategy struct {
	name string
	// failedExecs is how many execve calls fail with ENOENT in each
	// iteration by construction, for a PATH of k directories.
	failedExecs func(k int) int
}

var strategies = []strategy{
	{"execvpe", func(k int) int { return k - 1 }},
	{"spawnp", func(k int) int { return k - 1 }},
	{"absolute", func(int) int { return 0 }},
	{"resolved", func(int) int { return 0 }},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	n, k     int
	strategy string
	json     bool
	keep     string
	cpu      int // -1: not pinned
}

// newFlagSet declares reflaunch's flags, storing their values in o.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("reflaunch", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	fs.IntVar(&o.n, "n", 2000, "iterations per strategy (1.."+strconv.Itoa(maxN)+")")
	fs.IntVar(&o.k, "k", 7, "directories in PATH; the target is in the last (1.."+strconv.Itoa(maxK)+")")
	fs.StringVar(&o.strategy, "strategy", "all", "execvpe, spawnp, absolute, resolved or all")
	fs.BoolVar(&o.json, "json", false, "print a JSON object instead of a table")
	fs.StringVar(&o.keep, "keep", "", "build the PATH directories in `DIR` (new or empty) and keep them")
	fs.IntVar(&o.cpu, "cpu", -1, "run the launches (and the programs they start) on `CPU` only (default: any)")
	return fs
}

// parseArgs returns the options, flag.ErrHelp for -h, or an error meant to
// be printed as one line.
func parseArgs(args []string) (options, error) {
	var o options
	fs := newFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.n < 1 || o.n > maxN:
		return o, fmt.Errorf("-n must be 1..%d, got %d", maxN, o.n)
	case o.k < 1 || o.k > maxK:
		return o, fmt.Errorf("-k must be 1..%d, got %d", maxK, o.k)
	case o.cpu < -1:
		return o, fmt.Errorf("-cpu must be a CPU number, got %d", o.cpu)
	}
	if o.cpu >= 0 {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil || !set.IsSet(o.cpu) {
			return o, fmt.Errorf("-cpu %d: not a CPU this process may run on", o.cpu)
		}
	}
	if o.strategy != "all" && findStrategy(o.strategy) == nil {
		return o, fmt.Errorf("unknown -strategy %q (want execvpe, spawnp, absolute, resolved or all)", o.strategy)
	}
	return o, nil
}

func findStrategy(name string) *strategy {
	for i := range strategies {
		if strategies[i].name == name {
			return &strategies[i]
		}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, usageLine)
		fs := newFlagSet(new(options))
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "reflaunch: %v (%s)\n", err, usageLine)
		return exitUsage
	}

	rep, err := measureAll(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "reflaunch: %v\n", err)
		return exitFailure
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "reflaunch: writing report: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// report is the result of a run; its JSON form is reflaunch -json's output.
type report struct {
	N          int              `json:"n"`
	K          int              `json:"k"`
	CPU        *int             `json:"cpu,omitempty"` // -cpu, when given
	Strategies []strategyResult `json:"strategies"`
	// Ratios of medians, present when both strategies of a ratio ran.
	Ratios *ratios `json:"ratios,omitempty"`
	// Parts, with every strategy: what execvpe and spawnp are made of.
	Parts *parts `json:"parts,omitempty"`
}

// parts are the pieces the launches are made of, each timed alone (the
// median) in the same rounds as the strategies: they say why spawnp is
// faster than fork+execvpe although both make the same failed execve.
type parts struct {
	// FailedExecveNS is one execve that fails with ENOENT, made in this
	// process on the PATH entries before the target's (0 when K is 1).
	FailedExecveNS int64 `json:"failed_execve_ns"`
	// ForkNS is fork, the child calling _exit at once, and waitpid:
	// what execvpe's fork costs before any exec.
	ForkNS int64 `json:"fork_exit_wait_ns"`
	// CloneVMNS is the same with clone(CLONE_VM|CLONE_VFORK), the way
	// glibc's posix_spawn makes its child: no page tables copied.
	CloneVMNS int64 `json:"clone_vm_exit_wait_ns"`
	// ForkFailNS and CloneVMFailNS are ForkNS and CloneVMNS with the
	// child making the K-1 failed execve first, as execvpe's and
	// posix_spawnp's children do (0 when K is 1): what those cost in
	// each kind of child.
	ForkFailNS    int64 `json:"fork_failed_exit_wait_ns"`
	CloneVMFailNS int64 `json:"clone_vm_failed_exit_wait_ns"`
	// PageTablesBytes is this process's page tables (VmPTE) as measured:
	// what each fork copies and the child's exit frees.
	PageTablesBytes int64 `json:"page_tables_bytes"`
}

type strategyResult struct {
	Name        string `json:"name"`
	N           int    `json:"n"`
	MinNS       int64  `json:"min_ns"`
	MedianNS    int64  `json:"median_ns"`
	MeanNS      int64  `json:"mean_ns"`
	P90NS       int64  `json:"p90_ns"`
	FailedExecs int    `json:"failed_execs_per_iteration"`
	// LookupNS is the one-time PATH lookup of the resolved strategy, not
	// included in its per-iteration times.
	LookupNS *int64 `json:"lookup_ns,omitempty"`
	// LookupProbes is how many PATH entries that lookup examined.
	LookupProbes int `json:"lookup_probes,omitempty"`
}

type ratios struct {
	ExecvpeOverAbsolute *float64 `json:"execvpe_over_absolute,omitempty"`
	ExecvpeOverResolved *float64 `json:"execvpe_over_resolved,omitempty"`
}

// measureAll sets up the PATH directories and runs the chosen strategies.
func measureAll(o options, stderr io.Writer) (*report, error) {
	root, cleanup, err := makeRoot(o.keep)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	dirs := make([]string, o.k)
	for i := range dirs {
		dirs[i] = filepath.Join(root, "d"+strconv.Itoa(i+1))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			return nil, err
		}
	}
	target := filepath.Join(dirs[o.k-1], targetName)
	if err := exectarget.Write(target); err != nil {
		return nil, err
	}
	searchPath := strings.Join(dirs, ":")
	if o.keep != "" {
		fmt.Fprintf(stderr, "reflaunch: keeping %s (PATH=%s)\n", root, searchPath)
	}

	rep := &report{N: o.n, K: o.k}
	if o.cpu >= 0 {
		rep.CPU = &o.cpu
	}
	// The strategies take turns, a round of each at a time, rather than
	// one after the other: a machine that slows down or speeds up part
	// way (another tenant, frequency scaling) then weighs on all of them
	// alike instead of on whichever ran at that moment.
	type job struct {
		res  strategyResult
		m    method
		file string
		ns   []int64
	}
	var jobs []*job
	for _, s := range strategies {
		if o.strategy != "all" && o.strategy != s.name {
			continue
		}
		j := &job{res: strategyResult{Name: s.name, FailedExecs: s.failedExecs(o.k)}, file: target}
		switch s.name {
		case "execvpe":
			j.m, j.file = forkExecvpe, targetName
		case "spawnp":
			j.m, j.file = posixSpawnp, targetName
		case "absolute":
			j.m = forkExecve
		case "resolved":
			var path string
			var lookup int64
			path, lookup, j.res.LookupProbes, err = resolve(targetName, searchPath)
			if err == nil && path != target {
				err = fmt.Errorf("PATH lookup found %s, expected %s", path, target)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w%s", s.name, err, noexecHint(err, root))
			}
			j.res.LookupNS = &lookup
			j.m, j.file = forkExecve, path
		}
		jobs = append(jobs, j)
	}
	// With every strategy, the parts too, in the same rounds.
	var fork, clone, failed, forkFailed, cloneFailed *job
	if o.strategy == "all" {
		fork = &job{m: forkExit, file: targetName}
		clone = &job{m: cloneVMExit, file: targetName}
		jobs = append(jobs, fork, clone)
		if o.k > 1 {
			failed = &job{m: failedExec, file: targetName}
			forkFailed = &job{m: forkFail, file: targetName}
			cloneFailed = &job{m: cloneVMFail, file: targetName}
			jobs = append(jobs, failed, forkFailed, cloneFailed)
		}
	}
	for done := 0; done < o.n; done += interleaveRound {
		k := min(interleaveRound, o.n-done)
		for _, j := range jobs {
			ns, err := measure(j.m, j.file, searchPath, k, o.cpu)
			if err != nil {
				return nil, fmt.Errorf("%s: %w%s", j.res.Name, err, noexecHint(err, root))
			}
			j.ns = append(j.ns, ns...)
		}
	}
	for _, j := range jobs {
		if j.res.Name == "" {
			continue
		}
		sum := summarize(j.ns)
		j.res.N, j.res.MinNS, j.res.MedianNS, j.res.MeanNS, j.res.P90NS = sum.N, sum.Min, sum.Median, sum.Mean, sum.P90
		rep.Strategies = append(rep.Strategies, j.res)
	}
	rep.Ratios = rep.medianRatios()
	if fork != nil {
		p := &parts{ForkNS: summarize(fork.ns).Median, CloneVMNS: summarize(clone.ns).Median, PageTablesBytes: pageTables()}
		if failed != nil {
			p.FailedExecveNS = summarize(failed.ns).Median
			p.ForkFailNS, p.CloneVMFailNS = summarize(forkFailed.ns).Median, summarize(cloneFailed.ns).Median
		}
		rep.Parts = p
	}
	return rep, nil
}

// pageTables is this process's page-table memory (VmPTE in
// /proc/self/status), in bytes; 0 when it cannot be read.
func pageTables() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmPTE:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// makeRoot returns the directory to build d1..dK in, and how to dispose of
// it. Every PATH entry must be absolute and free of ':', or the search
// would not be the one intended.
func makeRoot(keep string) (root string, cleanup func(), err error) {
	if keep == "" {
		root, err = os.MkdirTemp("", "reflaunch-")
		if err != nil {
			return "", nil, err
		}
		cleanup = func() { os.RemoveAll(root) }
	} else {
		if root, err = filepath.Abs(keep); err != nil {
			return "", nil, err
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", nil, err
		}
		// Refuse a directory with contents: stray files in d1..d(K-1)
		// would change what the search finds, and ours would overwrite
		// someone else's.
		entries, err := os.ReadDir(root)
		if err != nil {
			return "", nil, err
		}
		if len(entries) > 0 {
			return "", nil, fmt.Errorf("-keep %s: directory is not empty", keep)
		}
		cleanup = func() {}
	}
	if strings.Contains(root, ":") {
		cleanup()
		return "", nil, fmt.Errorf("%s contains ':' and cannot be used in PATH (set TMPDIR or use -keep)", root)
	}
	return root, cleanup, nil
}

// noexecHint explains the most likely reason the target cannot run at all.
func noexecHint(err error, dir string) string {
	if !errors.Is(err, errChildFailed) && !errors.Is(err, unix.EACCES) {
		return ""
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_NOEXEC != 0 {
		return fmt.Sprintf(" (%s is on a noexec file system; set TMPDIR or use -keep elsewhere)", dir)
	}
	return ""
}

func (r *report) median(name string) (int64, bool) {
	for _, s := range r.Strategies {
		if s.Name == name {
			return s.MedianNS, true
		}
	}
	return 0, false
}

func (r *report) medianRatios() *ratios {
	vpe, ok := r.median("execvpe")
	if !ok {
		return nil
	}
	var rs ratios
	over := func(name string) *float64 {
		m, ok := r.median(name)
		if !ok || m == 0 {
			return nil
		}
		v := float64(vpe) / float64(m)
		return &v
	}
	rs.ExecvpeOverAbsolute = over("absolute")
	rs.ExecvpeOverResolved = over("resolved")
	if rs.ExecvpeOverAbsolute == nil && rs.ExecvpeOverResolved == nil {
		return nil
	}
	return &rs
}

// micros is ns in µs with one decimal: the one unit of the text.
func micros(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }

func (r *report) writeText(w io.Writer) error {
	fmt.Fprintf(w, "%d iterations per strategy, taking turns in rounds of %d; PATH of %d directories, %s in the last; time per fork+exec+wait (µs)\n\n", r.N, interleaveRound, r.K, targetName)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tn\tmin\tmedian\tmean\tp90\tfailed execve/iter\t")
	for _, s := range r.Strategies {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t\n", s.Name, s.N, micros(s.MinNS), micros(s.MedianNS), micros(s.MeanNS), micros(s.P90NS), s.FailedExecs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Strategies {
		if s.LookupNS != nil {
			fmt.Fprintf(w, "\nresolved: one-time PATH lookup took %s µs (%d entries probed), not included above\n", micros(*s.LookupNS), s.LookupProbes)
		}
	}
	if rs := r.Ratios; rs != nil {
		var parts []string
		if rs.ExecvpeOverAbsolute != nil {
			parts = append(parts, fmt.Sprintf("execvpe/absolute %.3f", *rs.ExecvpeOverAbsolute))
		}
		if rs.ExecvpeOverResolved != nil {
			parts = append(parts, fmt.Sprintf("execvpe/resolved %.3f", *rs.ExecvpeOverResolved))
		}
		fmt.Fprintf(w, "median ratio: %s\n", strings.Join(parts, ", "))
	}
	if p := r.Parts; p != nil {
		fmt.Fprintf(w, "\nwhat the launches are made of, each timed alone in the same rounds (median, µs):\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if p.FailedExecveNS > 0 {
			fmt.Fprintf(tw, "  one failed execve (ENOENT)\t%7s\t%d per launch in both execvpe and spawnp\n", micros(p.FailedExecveNS), r.K-1)
		}
		fmt.Fprintf(tw, "  fork, child _exits, wait\t%7s\tcopies this process's page tables (%d kB), as execvpe's fork does\n", micros(p.ForkNS), p.PageTablesBytes/1024)
		fmt.Fprintf(tw, "  clone(CLONE_VM|CLONE_VFORK), child _exits, wait\t%7s\tshares them, as posix_spawn's child does\n", micros(p.CloneVMNS))
		if p.ForkFailNS > 0 {
			fmt.Fprintf(tw, "  fork, child fails %d execve, _exits, wait\t%7s\n", r.K-1, micros(p.ForkFailNS))
			fmt.Fprintf(tw, "  clone(CLONE_VM|CLONE_VFORK), child fails %d execve, _exits, wait\t%7s\n", r.K-1, micros(p.CloneVMFailNS))
		}
		return tw.Flush()
	}
	return nil
}
