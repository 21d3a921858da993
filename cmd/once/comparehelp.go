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
