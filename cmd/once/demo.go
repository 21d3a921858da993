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
	"github.com/oncetool/once/report"
)

// cmdDemo is the embedded tour: the seed's cp benchmark against the
// reference copy, mv against the reference move, and the PATH-probe
// launcher benchmark, in one report. It needs nothing but what make builds.
func cmdDemo(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	files := fs.Int("files", 3000, "files in the generated tree")
	runs := fs.Int("runs", 5, "timed runs of each side")
	plotPath := fs.String("plot", "once-demo.svg", "draw the cp comparison to `FILE.svg`; \"\" for none")
	fs.BoolVar(&verbose, "v", false, "show long errors whole")
	if help, err := parseFlags("demo", fs, args, ""); help || err != nil {
		return 0, err
	}
	if *files < 1 || *files > 100000 || *runs < 1 || *runs > 100 {
		return 0, usagef("demo: --files must be 1-100000 and --runs 1-100")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := bufio.NewWriter(stdout)
	defer w.Flush()

	section := func(title string) {
		fmt.Fprintf(w, "\n## %s\n\n", title)
		w.Flush()
	}
	fmt.Fprintln(w, "# once demo")
	fmt.Fprintf(w, "\nWhat programs waste on open and exec, measured on this machine (%d files of 4096 bytes, %d runs each, interleaved).\n", *files, *runs)

	var summaries []string
	for _, c := range []struct {
		ref, tool, title string
	}{
		{"cp", "cp", "cp -r: the system's cp against the reference copy (each source opened once)"},
		{"mv", "mv", "mv: the system's mv against the reference move (a same-filesystem move opens nothing)"},
	} {
		section(c.title)
		tool, err := exec.LookPath(c.tool)
		if err != nil {
			fmt.Fprintf(w, "skipped: %s not found\n", c.tool)
			continue
		}
		argv := []string{tool}
		if c.ref == "cp" {
			argv = append(argv, "-r")
		}
		f := compareFlags{ref: c.ref, runs: *runs, warmup: 1, files: *files, size: 4096, pathDirs: 7}
		res, err := runComparison(ctx, f, nil, argv, stderr)
		if err != nil {
			return 0, err
		}
		// The demo's "before" is the reference: the system tool is what
		// we hold against it, so show the system tool first.
		res.A, res.B = res.B, res.A
		res.A.Label, res.B.Label = "system "+c.tool, "reference ref"+c.ref
		res.Wall, res.CPU, res.User, res.Sys = invert(res.Wall), invert(res.CPU), invert(res.User), invert(res.Sys)
		if c.ref == "cp" && *plotPath != "" {
			res.Plot = compare.PlotLink(*plotPath, "")
			if err := writeReport(*plotPath, nil, func(pw io.Writer) error { return report.ComparePlot(pw, res) }); err != nil {
				return 0, exitError{exitTrace, "--plot: " + err.Error()}
			}
		}
		if err := report.CompareText(w, res); err != nil {
			return 0, err
		}
		// The report ends with "plot: FILE" when there is one.
		if c.ref == "cp" && plotNote != "" {
			fmt.Fprintf(w, "\n%s\n", report.Escape(plotNote))
		}
		var md strings.Builder
		if err := report.CompareMarkdown(&md, res); err == nil {
			summaries = append(summaries, md.String())
		}
	}

	section("Exec PATH probes: fork + execvpe with a 7-entry PATH, against a resolved path and an absolute path")
	launcher, err := refBinary("reflaunch")
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, launcher, "-n", "2000", "-k", "7")
	cmd.Stdout, cmd.Stderr = w, stderr
	w.Flush()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("reflaunch: %w", err)
	}
	w.Flush()

	section("What once run reports for a PATH search: env with the target in the 7th PATH entry")
	work, err := os.MkdirTemp("", "once-demo-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(work)
	dirs, _, err := compare.LaunchWorkload(work, 7)
	if err != nil {
		return 0, err
	}
	envCmd := exec.CommandContext(ctx, "env", "PATH="+strings.Join(dirs, ":"), "oncetarget")
	res, err := traceExact(ctx, envCmd, time.Second)
	if err != nil {
		return 0, err
	}
	if err := report.Text(w, res); err != nil {
		return 0, err
	}

	section("Summary, ready to paste into a pull request")
	for _, s := range summaries {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintf(w, "Reproduce the launcher numbers with: %s -n 2000 -k 7\n", filepath.Base(launcher))
	return 0, nil
}

func invert(r compare.Ratio) compare.Ratio {
	if !r.Defined || r.Mean == 0 || r.Median == 0 {
		return compare.Ratio{}
	}
	return compare.Ratio{Mean: 1 / r.Mean, Spread: r.Spread / (r.Mean * r.Mean), Median: 1 / r.Median, Defined: true}
}
