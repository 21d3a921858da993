package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/report"
)

func compareRenderer(format string) (func(io.Writer, *compare.Result) error, error) {
	switch format {
	case "text":
		return report.CompareText, nil
	case "json":
		return report.CompareJSON, nil
	case "markdown", "md":
		return report.CompareMarkdown, nil
	}
	return nil, usagef("compare: unknown --format %q (want text, json or markdown)", format)
}

// refBinary finds a bundled reference program: beside the once binary
// (where make puts it), else on PATH.
func refBinary(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", exitError{exitEnv, fmt.Sprintf("the bundled reference %s was not found beside once or on PATH: build it with make", name)}
}

func progressBar(w io.Writer) func(done, total int) {
	return func(done, total int) {
		const width = 30
		n := done * width / total
		fmt.Fprintf(w, "\r[%s%s] %d/%d runs", strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
	}
}

type compareFlags struct {
	baseline string
	ref      string
	runs     int
	warmup   int
	files    int
	size     int
	pathDirs int
	format   string
	output   string
	plot     string
	noTrace  bool
	ignore   bool
	keep     bool
	user     string
	stacks   stackFlags
	otlp     otlpFlags
	// The traced run's rings, as once run's --rings and --ring-size.
	rings     int
	ringBuf   int
	ringGiven bool
}

// reproduceFlags are the flags given that change what a comparison
// measures, as its reproduce line repeats them.
func reproduceFlags(f compareFlags) []string {
	var out []string
	if f.noTrace {
		out = append(out, "--no-trace")
	}
	if f.ignore {
		out = append(out, "--ignore-failure")
	}
	if f.stacks.on {
		out = append(out, "--stacks")
	}
	if f.user != "" {
		out = append(out, "--user", compare.ShellQuote(f.user))
	}
	return out
}

// compareShape refuses flags that shape what this comparison does not
// do (a workload it has none of, the traced run under --no-trace) and a
// cp/mv workload its file system has no room for.
func compareShape(c *cli, f compareFlags, cmdA, cmdB []string) error {
	// A workload's flags where it has none of that workload do
	// nothing: refused, as --wide without --events is.
	work := compare.WorkloadOf(f.ref, cmdA, cmdB)
	if work == compare.WorkloadFiles && (compare.HasPlaceholder(cmdA, "target") || compare.HasPlaceholder(cmdB, "target")) {
		// One workload a comparison: {target} would run as written.
		return usagef("compare: {target} names the launch workload's program, and {src} or {dst} (or --ref cp, mv) the cp/mv workload: a comparison has one")
	}
	for _, name := range []string{"files", "size"} {
		if c.given(name) && work != compare.WorkloadFiles {
			return usagef("compare: --%s shapes the cp/mv workload, which this comparison has none of (--ref cp or mv, or {src} and {dst} in a command)", name)
		}
	}
	if c.given("path-dirs") && work != compare.WorkloadLaunch {
		return usagef("compare: --path-dirs shapes the launch workload, which this comparison has none of (--ref launch, or {target} in a command without {src} or {dst})")
	}
	if work == compare.WorkloadFiles {
		if err := compare.CheckSpace(os.TempDir(), f.files, f.size, f.ref == "mv"); err != nil {
			return usagef("compare: %s", report.Escape(err.Error()))
		}
	}
	if f.noTrace {
		// The traced run's flags without it do nothing: refused, as
		// a workload's flags are.
		for _, name := range []string{"stacks", "stack-size", "ring-size", "rings"} {
			if c.given(name) {
				return usagef("compare: --%s shapes the traced run, which --no-trace leaves out", name)
			}
		}
		if f.otlp.endpoint != "" {
			return usagef("compare: --otlp sends what the traced runs found, which --no-trace leaves out")
		}
	}
	return nil
}
