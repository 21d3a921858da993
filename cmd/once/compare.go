package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
	if err := compareShape(c, f, cmdA, cmdB); err != nil {
		return 0, err
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
		path, err := startErr(session.LookRunnable(c[0]))
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
