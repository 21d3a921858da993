package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/internal/privdrop"
	"github.com/oncetool/once/internal/term"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
	"golang.org/x/sys/unix"
)

func cmdCompare(args []string, stdout, stderr io.Writer) (code int, err error) {
	var f compareFlags
	c := newCLI("compare", "once compare (--baseline 'CMD_A' | --ref cp|mv|launch) [flags] -- CMD_B [ARGS...]",
		"Run a before and an after command side by side: each once traced (opens per file,\n"+
			"duplicates, failed probes) and --runs times untraced, interleaved, for wall and\n"+
			"CPU time. {src}, {dst} (cp, mv) and {target} (launch) name the generated inputs;\n"+
			"a command that names none of them gets them appended, so both sides run on the\n"+
			"same inputs. A run that exits non-zero stops the comparison (exit 1) unless\n"+
			"--ignore-failure. The report goes to stdout, or to -o FILE.")
	c.examples = []string{
		"sudo once compare --ref cp --files 3000 --runs 20 -- /usr/lib/cargo/bin/coreutils/cp -r",
		"sudo once compare --baseline 'cp -r {src} {dst}' --format markdown --plot cp.svg -- ./target/release/cp -r {src} {dst}",
		"sudo once compare --ref launch --path-dirs 7 -- env",
	}
	c.exits = `  0    the comparison ran and was reported
  1    a run of either command exited non-zero (without --ignore-failure)
  2    a usage error
  3    something is missing: privileges, BTF, tracefs
  4    tracing failed, or the report could not be written
  126  a command was found but could not run (a directory, not executable)
  127  a command was not found
  130  SIGINT or SIGTERM stopped the comparison`
	fs := c.fs
	cliflag.NonEmpty(fs, &f.baseline, "baseline", "", "the before command `'CMD_A'` (split into words like a shell, nothing expanded)")
	cliflag.NonEmpty(fs, &f.ref, "ref", "", "use a bundled reference as the before command: `cp`, mv or launch")
	fs.IntVar(&f.runs, "runs", 10, "`N` timed runs of each side (1-10000)")
	fs.IntVar(&f.warmup, "warmup", 1, "`N` untimed runs of each side first (0-100)")
	fs.IntVar(&f.files, "files", 3000, "cp/mv workload: generate `N` files (1-1000000)")
	fs.IntVar(&f.size, "size", 4096, "cp/mv workload: size of each file in `BYTES` (0-1073741824)")
	fs.IntVar(&f.pathDirs, "path-dirs", 7, "launch workload: `N` PATH entries, the target in the last (1-64)")
	fs.StringVar(&f.format, "format", "text", "report format: text, json or markdown")
	cliflag.NonEmpty(fs, &f.output, "o", "", "write the report to `FILE` (created 0600) instead of stdout")
	cliflag.NonEmpty(fs, &f.plot, "plot", "", "also draw the runs' times and the opens, before and after, to `FILE.svg` (created 0600); the Markdown report links it")
	fs.BoolVar(&f.noTrace, "no-trace", false, "only time the commands; skip the traced run that counts opens and execs")
	fs.BoolVar(&f.ignore, "ignore-failure", false, "go on when a run exits non-zero, and warn, instead of stopping with exit 1")
	fs.BoolVar(&f.ignore, "i", false, "short for --ignore-failure")
	fs.BoolVar(&f.keep, "keep", false, "keep the generated workload directory")
	cliflag.NonEmpty(fs, &f.user, "user", "", "run both commands, and generate the workload, as `NAME` (default: $SUDO_USER under sudo, else unchanged)")
	f.stacks.register(fs)
	f.otlp.register(fs)
	cliflag.Bytes(fs, &f.ringBuf, "ring-size", collector.DefaultRingBufferSize, "the traced run: size of each BPF ring buffer in `BYTES` (a power of two, 4096 to 2147483648, or with a K, M or G suffix: 16M; default 8 MiB each up to 4 rings, then 32 MiB shared, at least 1 MiB each)")
	cliflag.IntVar(fs, &f.rings, "rings", 0, 0, "the traced run: write events to `N` BPF ring buffers, CPU c to ring c mod N (default 0: one per 4 CPUs, at most 32; at most one per CPU)")
	fs.BoolVar(&verbose, "v", false, "show long errors whole")
	cmdB, help, err := c.parseCommand(args, stdout)
	if err != nil || help {
		return 0, err
	}
	f.ringGiven = c.given("ring-size")
	f.stacks.sizeGiven = c.given("stack-size")
	if err := checkRingSize("compare", f.ringBuf); err != nil {
		return 0, err
	}
	if err := f.stacks.check("compare"); err != nil {
		return 0, err
	}
	switch {
	case f.baseline == "" && f.ref == "":
		return 0, usagef("compare: say what to compare against: --baseline 'CMD_A' or --ref cp|mv|launch")
	case f.baseline != "" && f.ref != "":
		return 0, usagef("compare: --baseline and --ref exclude each other")
	}
	if f.ref != "" && f.ref != "cp" && f.ref != "mv" && f.ref != "launch" {
		return 0, usagef("compare: unknown reference %q (want cp, mv or launch)", f.ref)
	}
	if err := f.otlp.check("compare"); err != nil {
		return 0, err
	}
	for _, r := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--runs", f.runs, 1, 10000}, {"--warmup", f.warmup, 0, 100}, {"--files", f.files, 1, 1000000},
		{"--size", f.size, 0, 1 << 30}, {"--path-dirs", f.pathDirs, 1, 64},
	} {
		if r.v < r.lo || r.v > r.hi {
			return 0, usagef("compare: %s %d out of range (%d-%d)", r.name, r.v, r.lo, r.hi)
		}
	}
	render, err := compareRenderer(f.format)
	if err != nil {
		return 0, err
	}
	if err := output.Check(f.output); err != nil {
		return 0, usagef("compare: %v", err)
	}
	if err := compare.CheckPlot(f.plot); f.plot != "" && err != nil {
		return 0, usagef("compare: --plot %q: %v", f.plot, err)
	}
	var cmdA []string
	if f.baseline != "" {
		if cmdA, err = compare.SplitWords(f.baseline); err != nil {
			return 0, usagef("compare: --baseline: %v", err)
		}
		if len(cmdA) == 0 {
			return 0, usagef("compare: --baseline is empty")
		}
	}
	// A workload's flags where it has none of that workload do
	// nothing: refused, as --wide without --events is.
	work := compare.WorkloadOf(f.ref, cmdA, cmdB)
	if work == compare.WorkloadFiles && (compare.HasPlaceholder(cmdA, "target") || compare.HasPlaceholder(cmdB, "target")) {
		// One workload a comparison: {target} would run as written.
		return 0, usagef("compare: {target} names the launch workload's program, and {src} or {dst} (or --ref cp, mv) the cp/mv workload: a comparison has one")
	}
	for _, name := range []string{"files", "size"} {
		if c.given(name) && work != compare.WorkloadFiles {
			return 0, usagef("compare: --%s shapes the cp/mv workload, which this comparison has none of (--ref cp or mv, or {src} and {dst} in a command)", name)
		}
	}
	if c.given("path-dirs") && work != compare.WorkloadLaunch {
		return 0, usagef("compare: --path-dirs shapes the launch workload, which this comparison has none of (--ref launch, or {target} in a command without {src} or {dst})")
	}
	if work == compare.WorkloadFiles {
		if err := checkWorkloadSpace(f.files, f.size, f.ref == "mv"); err != nil {
			return 0, err
		}
	}
	if f.noTrace {
		// The traced run's flags without it do nothing: refused, as
		// a workload's flags are.
		for _, name := range []string{"stacks", "stack-size", "ring-size", "rings"} {
			if c.given(name) {
				return 0, usagef("compare: --%s shapes the traced run, which --no-trace leaves out", name)
			}
		}
		if f.otlp.endpoint != "" {
			return 0, usagef("compare: --otlp sends what the traced runs found, which --no-trace leaves out")
		}
	}

	// Who the commands run as, like once run's: a malformed sudo
	// environment is refused before anything runs.
	cred, err := privdrop.Credential(f.user)
	if err != nil {
		return 0, usagef("compare: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() { code, err = interrupted(ctx, "compare", code, err) }()
	res, err := runComparison(ctx, f, cred, cmdA, cmdB, stderr)
	if err != nil {
		return 0, err
	}
	if err := f.otlp.sendCompare(stderr, res.A, res.B); err != nil {
		return 0, exitError{exitTrace, err.Error()}
	}
	if f.plot != "" {
		res.Plot = compare.PlotLink(f.plot, f.output)
		if werr := writeReport(f.plot, nil, stdout, stderr, func(w io.Writer) error { return report.ComparePlot(w, res) }); werr != nil {
			return 0, exitError{exitTrace, "--plot: " + werr.Error()}
		}
	}
	if werr := writeReport(f.output, stdout, stdout, stderr, func(w io.Writer) error { return render(w, res) }); werr != nil {
		return 0, exitError{exitTrace, werr.Error()}
	}
	return 0, nil
}

// runComparison sets up the workload, substitutes placeholders and runs,
// the commands as cred (nil: unchanged). The workload is made, reset
// between runs and removed as that user too (privdrop.AsUser): it is
// theirs, and what their commands leave in it never steers root's hand.
func runComparison(ctx context.Context, f compareFlags, cred *syscall.Credential, cmdA, cmdB []string, stderr io.Writer) (*compare.Result, error) {
	if err := collector.Preflight(); err != nil && !f.noTrace {
		return nil, err
	}
	var work string
	if err := privdrop.AsUser(cred, func() (err error) {
		work, err = os.MkdirTemp("", "once-compare-")
		return err
	}); err != nil {
		return nil, err
	}
	// Roles are matched against the kernel's resolved paths: no symlinks.
	if real, err := filepath.EvalSymlinks(work); err == nil {
		work = real
	}
	if !f.keep {
		defer privdrop.AsUser(cred, func() error { return os.RemoveAll(work) })
	} else {
		fmt.Fprintf(stderr, "once: workload kept in %s\n", work)
	}
	var plan *compare.Plan
	if err := privdrop.AsUser(cred, func() (err error) {
		plan, err = compare.NewPlan(compare.Spec{Baseline: cmdA, Command: cmdB, Ref: f.ref, RefBinary: refBinary,
			Files: f.files, Size: f.size, PathDirs: f.pathDirs, Runs: f.runs, Warmup: f.warmup, Dir: work,
			Flags: reproduceFlags(f)})
		return err
	}); err != nil {
		return nil, err
	}
	cmdA, cmdB, opts := plan.A, plan.B, plan.Options
	opts.Credential = cred
	if prep := opts.Prepare; prep != nil && cred != nil {
		opts.Prepare = func() error { return privdrop.AsUser(cred, prep) }
	}
	for _, c := range [][]string{cmdA, cmdB} {
		path, err := compareRunnable(c[0])
		if err != nil {
			return nil, err
		}
		c[0] = path
	}
	if !f.noTrace {
		opts.Trace = func(ctx context.Context, cmd *exec.Cmd) (*trace.Result, error) {
			return traceFiles(ctx, cmd, 0, trace.FilesAll, f.stacks, traceRings{n: f.rings, size: f.ringBuf, sizeGiven: f.ringGiven})
		}
	}
	if term.IsTerminal(stderr) {
		opts.Progress = progressBar(stderr)
	}
	opts.IgnoreFailure = f.ignore
	res, err := compare.Run(ctx, cmdA, cmdB, opts)
	if opts.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	var re *compare.RunError
	if errors.As(err, &re) {
		return nil, exitError{1, fmt.Sprintf("compare: %v (%s); --ignore-failure (-i) compares anyway",
			re, report.Escape(compare.ShellJoin(re.Command)))}
	}
	if err != nil {
		return nil, err
	}
	res.Workload = plan.Workload
	res.Reproduce = plan.Reproduce
	return res, nil
}

// compareRunnable is the command name to run, as once run and a shell
// find it (through a relative PATH entry too: ./name), or why it cannot
// run: one not there (127) apart from one there that cannot run, a
// directory or a file without the execute bit (126).
func compareRunnable(name string) (string, error) {
	_, err := exec.LookPath(name)
	if err == nil {
		return name, nil
	}
	if errors.Is(err, exec.ErrDot) {
		return session.LookCommand(name)
	}
	code, reason := exitNotFound, "command not found"
	var se *session.StartError
	switch {
	case errors.Is(err, syscall.EISDIR):
		code, reason = exitNoExec, "is a directory"
	case errors.Is(err, fs.ErrPermission):
		code, reason = exitNoExec, "permission denied"
	case !strings.Contains(name, "/"):
		if _, lerr := session.LookCommand(name); errors.As(lerr, &se) && se.Code == exitNoExec {
			code, reason = exitNoExec, se.Reason
		}
	}
	return "", exitError{code, fmt.Sprintf("%s: %s", report.Escape(name), reason)}
}

// workloadFree is the space and the inodes free to an unprivileged user
// in dir, where compare makes its workload (a variable: tests give a
// small file system). Inodes: the most there is when the file system
// counts none.
var workloadFree = func(dir string) (bytes, inodes uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	inodes = st.Ffree
	if st.Files == 0 {
		inodes = math.MaxUint64
	}
	return st.Bavail * uint64(st.Bsize), inodes, nil
}

// checkWorkloadSpace refuses a cp/mv workload the file system that would
// hold it (TMPDIR's) has no room for: generated, it filled the disk, and
// whatever else wrote there, until a write failed. A copy needs the
// source and the copy; a move (--ref mv: its source is links to the
// seed) the source alone. Not known (statfs failed): left to the writes.
func checkWorkloadSpace(files, size int, move bool) error {
	dir := os.TempDir()
	free, inodes, err := workloadFree(dir)
	if err != nil {
		return nil
	}
	copies, what := uint64(2), "twice: a source and a copy"
	if move {
		copies, what = 1, "once: a source, moved"
	}
	need := copies * uint64(files) * uint64(size)
	// A file each, and a directory per 100, per copy.
	nodes := copies * (uint64(files) + uint64(files)/100 + 1)
	if need > free || nodes > inodes {
		return usagef("compare: the cp/mv workload needs %s (--files %d × --size %d, %s) in %s, which has %s free (%d inodes): give fewer or smaller files, or a TMPDIR with room",
			sizeText(need), files, size, what, report.Escape(dir), sizeText(free), inodes)
	}
	return nil
}

// sizeText is n bytes in the largest binary unit that keeps it at 1 or
// more: 80 KiB, 2.0 PiB.
func sizeText(n uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
