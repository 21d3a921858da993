package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/internal/privdrop"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// cmdDemo is the embedded tour: a real program that opens each source
// more than once (uutils cp when installed, else the bundled dupcopy),
// traced and then timed against the reference copy; a PATH search traced
// and then timed against a resolved path; the Markdown a patch author
// would paste. It needs nothing but what make builds.
func cmdDemo(args []string, stdout, stderr io.Writer) (code int, err error) {
	c := newCLI("demo", "once demo [flags]",
		"The tour: a real program that opens each source more than once (uutils cp, else\n"+
			"the bundled dupcopy) traced with its call sites and timed against the reference\n"+
			"copy; a PATH search traced and timed; the Markdown a patch author would paste.")
	c.examples = []string{"sudo once demo", "sudo once demo --files 3000 --runs 20 --plot cp.svg"}
	c.exits = `  0    the demo ran
  2    a usage error
  3    something is missing: privileges, BTF, tracefs
  4    tracing failed
  130  SIGINT or SIGTERM stopped it`
	fs := c.fs
	files := fs.Int("files", 500, "`N` files in the generated tree of the timed copies (1-100000)")
	runs := fs.Int("runs", 5, "`N` timed runs of each side (1-100)")
	plotPath := fs.String("plot", "once-demo.svg", "draw the cp comparison to `FILE.svg`; \"\" for none")
	var cpFlag string
	cliflag.NonEmpty(fs, &cpFlag, "cp", "", "the copy program to trace and time, `PATH` to a cp-like binary (default: uutils cp when installed, else the bundled dupcopy)")
	fs.BoolVar(&verbose, "v", false, "show long errors whole")
	if help, err := c.parse(args, stdout); help || err != nil {
		return 0, err
	}
	if *files < 1 || *files > 100000 {
		return 0, usagef("demo: --files %d: want 1-100000", *files)
	}
	if *runs < 1 || *runs > 100 {
		return 0, usagef("demo: --runs %d: want --runs 1-100", *runs)
	}
	// The default lands in the working directory: one that cannot take
	// it costs the plot, not the demo. A path asked for must work.
	plotNote := ""
	if *plotPath != "" {
		if err := compare.CheckPlot(*plotPath); err != nil {
			asked := false
			fs.Visit(func(f *flag.Flag) { asked = asked || f.Name == "plot" })
			if asked {
				return 0, usagef("demo: --plot %q: %v", *plotPath, err)
			}
			plotNote = fmt.Sprintf("no plot: %s: %v", *plotPath, err)
			*plotPath = ""
		}
	}
	if err := collector.Preflight(); err != nil {
		return 0, err
	}
	// The programs run as the user behind sudo, like once run's and
	// compare's, in a tree of that user's.
	cred, err := privdrop.Credential("")
	if err != nil {
		return 0, usagef("demo: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() { code, err = interrupted(ctx, "demo", code, err) }()
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	// A rule above each section: the tour is long, and each section
	// opens with a report of its own.
	section := func(title string) {
		fmt.Fprintf(w, "\n%s\n## %s\n\n", strings.Repeat("━", 78), title)
		w.Flush()
	}
	shell := func(argv ...string) { fmt.Fprintf(w, "$ %s\n\n", demoShellLine(argv)) }

	cp, cpName, err := demoCopy(cpFlag)
	if err != nil {
		return 0, err
	}
	var work string
	if err := privdrop.AsUser(cred, func() (err error) {
		work, err = os.MkdirTemp("", "once-demo-")
		return err
	}); err != nil {
		return 0, err
	}
	defer privdrop.AsUser(cred, func() error { return os.RemoveAll(work) })
	if real, err := filepath.EvalSymlinks(work); err == nil {
		work = real
	}

	fmt.Fprint(w, "# once demo\n\nWhat programs waste on open, exec and lookups, found by once and measured on this machine.\n")

	section(fmt.Sprintf("1. Duplicate opens: what once run reports for %s copying 3 files", cpName))
	if err := privdrop.AsUser(cred, func() error { return demoTree(filepath.Join(work, "src"), 3) }); err != nil {
		return 0, err
	}
	self := selfCommand()
	// In a subshell: the commands printed after it run from where the
	// user is, and once is named as it runs from the tree.
	fmt.Fprintf(w, "$ (cd %s && %s)\n\n", report.Escape(work),
		demoShellLine(append(selfCommandFrom(work), "run", "--stacks", "--details", "--", cp, "-r", "src", "dst")))
	cpCmd := exec.CommandContext(ctx, cp, "-r", "src", "dst")
	cpCmd.Dir = work
	asUser(cpCmd, cred)
	res, err := traceFiles(ctx, cpCmd, 0, trace.FilesDuplicates, demoStacks, defaultRings)
	if err != nil {
		return 0, err
	}
	if err := report.TextDetails(w, res); err != nil {
		return 0, err
	}
	if exe, ok := symbolless(res); ok {
		fmt.Fprintf(w, "\n%s has no symbols on this machine, so once cannot name its call sites; %s demo --cp %s shows them, by function and line, for a program that has.\n",
			report.Escape(exe), strings.Join(self, " "), refCommand("dupcopy"))
	}

	section(fmt.Sprintf("2. What they cost: %s against the reference copy, which opens each source once", cpName))
	// The program is the before side, the reference what a fix would
	// make of it the after side: what the demo shows, and what its
	// reproduce line runs again, in the same order.
	refcp, err := refBinary("refcp")
	if err != nil {
		return 0, err
	}
	before, after := []string{cp, "-r", "{src}", "{dst}"}, []string{refcp, "-r", "{src}", "{dst}"}
	f := compareFlags{baseline: compare.ShellJoin(before), runs: *runs, warmup: 1, files: *files, size: 4096}
	cmp, err := runComparison(ctx, f, cred, before, after, stderr)
	if err != nil {
		return 0, err
	}
	cmp.A.Label, cmp.B.Label = cpName, "reference refcp"
	cmp.Reproduce = []string{fmt.Sprintf("%s compare --baseline %s --files %d --size %d --runs %d --warmup %d -- %s",
		strings.Join(self, " "), compare.ShellQuote(f.baseline), f.files, f.size, f.runs, f.warmup, compare.ShellJoin(runnableArgv(after)))}
	if *plotPath != "" {
		cmp.Plot = compare.PlotLink(*plotPath, "")
		if err := writeReport(*plotPath, nil, stdout, stderr, func(pw io.Writer) error { return report.ComparePlot(pw, cmp) }); err != nil {
			return 0, exitError{exitTrace, "--plot: " + err.Error()}
		}
	}
	if err := report.CompareText(w, cmp); err != nil {
		return 0, err
	}
	if plotNote != "" {
		fmt.Fprintf(w, "\n%s\n", report.Escape(plotNote))
	}
	var summary strings.Builder
	if err := report.CompareMarkdown(&summary, cmp); err != nil {
		return 0, err
	}

	section("3. Failed exec probes: what once run reports for env finding its target in the 7th PATH entry")
	var dirs []string
	if err := privdrop.AsUser(cred, func() (err error) {
		dirs, _, err = compare.LaunchWorkload(filepath.Join(work, "launch"), 7)
		return err
	}); err != nil {
		return 0, err
	}
	shell(append(self, "run", "--", "env", "PATH="+strings.Join(dirs, ":"), "oncetarget")...)
	envCmd := exec.CommandContext(ctx, "env", "PATH="+strings.Join(dirs, ":"), "oncetarget")
	asUser(envCmd, cred)
	res, err = traceFiles(ctx, envCmd, time.Second, trace.FilesDuplicates, stackFlags{}, defaultRings)
	if err != nil {
		return 0, err
	}
	if err := report.Text(w, res); err != nil {
		return 0, err
	}

	section("4. What they cost: fork + execvpe through that PATH, against execve of the path found")
	launch, err := demoLaunch(ctx, w, cred, stderr)
	if err != nil {
		return 0, err
	}

	section("Summary, ready to paste into a pull request")
	fmt.Fprint(w, summary.String())
	fmt.Fprintf(w, "\nReproduce the launcher numbers with: %s\n", launch)
	return 0, nil
}

// demoStacks is how the demo traces the copy: with the call stacks, so
// that each duplicate shows where in the program its opens come from.
// The PATH search is traced without: its point is the time wasted, which
// a snapshot per call would add to.
var demoStacks = stackFlags{on: true, size: defaultStackSize}

// demoTree creates dir with n small files in it.
func demoTree(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("file%d.txt", i+1))
		if err := os.WriteFile(name, []byte(strings.Repeat("once\n", 100*(i+1))), 0o644); err != nil {
			return err
		}
	}
	return nil
}
