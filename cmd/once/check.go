package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/internal/filegen"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// `once check` exit codes: 0 every assertion holds, 1 one is violated,
// 2 usage or tracing error (the contract CI scripts rely on).
const (
	checkOK       = 0
	checkViolated = 1
	checkError    = 2
)

type opensFlag []detect.OpensAssertion

func (o *opensFlag) String() string { return fmt.Sprint(*o) }

// Set parses PATH=N. The file is identified now, before the run: an
// assertion about a file that isn't there would hold vacuously, which
// Check reports.
func (o *opensFlag) Set(v string) error {
	i := strings.LastIndexByte(v, '=')
	if i <= 0 {
		return fmt.Errorf("want PATH=N, got %q", v)
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 0 {
		return fmt.Errorf("want PATH=N with N a count >= 0, got %q", v)
	}
	a := detect.OpensAssertion{Path: v[:i], Count: n}
	var st unix.Stat_t
	if err := unix.Stat(a.Path, &st); err != nil {
		a.Missing = err
	} else {
		a.Dev, a.Ino = st.Dev, st.Ino
		a.Gen, a.HasGen = filegen.Read(a.Path, &st)
	}
	*o = append(*o, a)
	return nil
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var f runFlags
	var opens opensFlag
	a := detect.Assertions{MaxOpens: -1, MaxExecProbes: -1}
	c := newRunCLI("check", "once check [assertions] [flags] -- CMD [ARGS...]",
		"Trace CMD like once run and hold it to assertions about its opens, exec\n"+
			"probes and findings of any kind (--max KIND=N): a CI guard. Each violation is\n"+
			"one line on stderr; the report is written only with -o FILE (in --format).", &f)
	c.examples = []string{
		"sudo once check --opens src/file=1 -- cp src/file dst/",
		"sudo once check --max-opens 1 --ignore '/usr/lib/**' --max-exec-probes 0 -- make",
		"sudo once check --max failed_stat_probes=0 --max repeated_miss=1 -- ./build.sh",
	}
	c.exits = `  0  every assertion holds
  1  one is violated (also: the command failed, or was found but could not run, events were lost;
     a CMD given as a path whose execve failed, ./nosuch too: the -o report has that execve)
  2  a usage or tracing error, something missing (privileges, BTF), or CMD not found
     (a CMD named without a /: no PATH entry holds it, or none that can run it; nothing ran)`
	fs := c.fs
	// check writes no report unless -o names where: the flags that shape
	// the report say so, or they would seem to do nothing.
	fs.Lookup("o").Usage = "also write the report to `FILE` (created 0600; - for stdout); without -o check writes no report, only its violations on stderr"
	for _, name := range []string{"details", "files", "processes"} {
		fs.Lookup(name).Usage += " (in the -o report)"
	}
	fs.Lookup("format").Usage += " (of the -o report and the --events lines)"
	fs.Var(&opens, "opens", "assert the file at `PATH=N` is opened exactly N times by each process that opens it (repeatable; N may be 0)")
	fs.Var(cliflag.Int{P: &a.MaxOpens}, "max-opens", "assert no process opens any one file more than `N` times (N >= 0)")
	fs.Var(cliflag.Int{P: &a.MaxExecProbes}, "max-exec-probes", "assert no process makes more than `N` failed exec probes in a row (N >= 0)")
	fs.Var(maxFlag(func(k trace.FindingKind, n int) {
		if a.Max == nil {
			a.Max = map[trace.FindingKind]int{}
		}
		a.Max[k] = n
	}), "max", "assert no finding of kind KIND counts more than N, given as `KIND=N` (its opens, failed attempts, misses or stats; repeatable; e.g. failed_stat_probes=0, repeated_miss=1)")
	fs.BoolVar(&a.AllowFail, "allow-fail", false, "do not fail when the command itself fails")
	command, help, err := c.parseCommand(args, stdout)
	if err != nil || help {
		return 0, err
	}
	f.ringGiven = c.given("ring-size")
	f.clockGiven = c.given("time")
	f.stacks.sizeGiven = c.given("stack-size")
	a.Opens = opens
	if len(a.Opens) == 0 && a.MaxOpens < 0 && a.MaxExecProbes < 0 && len(a.Max) == 0 {
		return 0, usagef("check: no assertion given (--opens PATH=N, --max-opens N, --max-exec-probes N or --max KIND=N)")
	}
	render, err := renderer("check", f.format, f.details || verbose)
	if err != nil {
		return 0, err
	}
	if a.Ignore, err = f.check("check"); err != nil {
		return 0, err
	}
	if err := f.checkTerminal(stdout); err != nil {
		return 0, err
	}

	p := detect.KeepAll(f.files)
	p.KeepFile = a.KeepFile
	res, err := traceCommand(command, f, p, a.Ignore, stdout, stderr)
	if res == nil {
		var ue usageError
		if errors.As(err, &ue) {
			return 0, err // exit 2, in one line
		}
		var ee exitError
		if errors.As(err, &ee) && ee.code == exitNotFound {
			return 0, exitError{checkError, ee.msg}
		}
		return 0, exitError{checkError, errString(err)}
	}
	violations := []string{}
	// where: each violation's call sites (--stacks), for its line on
	// stderr; "" where none are known.
	where := []string{}
	nothing := errors.Is(err, session.ErrNothingTraced)
	if nothing {
		violations = append(violations, "traced nothing: not a single open or exec was seen, so no assertion can be trusted")
		where = append(where, "")
	}
	if err == nil || nothing {
		// Unescaped in the report, whose renderers escape what they
		// write (and show the call sites of each finding); escaped on
		// stderr.
		for _, v := range a.Violations(res, func(s string) string { return s }) {
			violations = append(violations, v.Text)
			where = append(where, report.ViolationSites(v.Finding, res))
		}
		res.Violations = violations
	}
	if f.output != "" {
		if werr := writeReport(f.output, stderr, stdout, stderr, func(w io.Writer) error { return render(w, res) }); werr != nil {
			return 0, exitError{checkError, werr.Error()}
		}
	}
	if err != nil && !nothing {
		return 0, exitError{checkError, err.Error()}
	}
	for i, v := range violations {
		line := "once check: " + report.Escape(v)
		if where[i] != "" {
			line += "; " + where[i]
		}
		fmt.Fprintln(stderr, line)
	}
	if len(violations) > 0 {
		return checkViolated, nil
	}
	// A CI log shows the guard ran, and over what.
	fmt.Fprintf(stderr, "once check: %s; traced %s, %s, %s, %s\n",
		count(a.Count(), "assertion holds", "assertions hold"), count(len(res.Processes), "process image", "process images"),
		count(res.Opens, "open", "opens"), count(res.Execs, "exec", "execs"), count(res.Lookups, "lookup", "lookups"))
	return checkOK, nil
}

func errString(err error) string {
	if err == nil {
		return "tracing failed"
	}
	return err.Error()
}

// maxFlag is check's --max KIND=N, handing each to set.
type maxFlag func(trace.FindingKind, int)

func (maxFlag) String() string { return "" }

func (m maxFlag) Set(s string) error {
	k, n, err := detect.ParseMax(s)
	if err != nil {
		return err
	}
	m(k, n)
	return nil
}

// count is "1 open" or "2 opens".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
