package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/trace"
)

// `once check` exit codes: 0 every assertion holds, 1 one is violated,
// 2 usage or tracing error (the contract CI scripts rely on).
const (
	checkOK       = 0
	checkViolated = 1
	checkError    = 2
)

type opensAssertion struct {
	path  string // as given, for messages
	id    fileKey
	count int
}

type fileKey struct{ dev, ino uint64 }

type opensFlag []opensAssertion

func (o *opensFlag) String() string { return fmt.Sprint(*o) }

// Set parses PATH=N. The file must exist now: an assertion about a file
// that isn't there would hold vacuously.
func (o *opensFlag) Set(v string) error {
	i := strings.LastIndexByte(v, '=')
	if i <= 0 {
		return fmt.Errorf("want PATH=N, got %q", v)
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 0 {
		return fmt.Errorf("want PATH=N with N a count >= 0, got %q", v)
	}
	*o = append(*o, opensAssertion{path: v[:i], count: n})
	return nil
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var f runFlags
	var opens opensFlag
	maxOpens, maxProbes := -1, -1
	var allowFail bool
	fs := newRunFlagSet("check", &f, stderr)
	fs.Var(&opens, "opens", "assert the file at `PATH=N` is opened exactly N times by each process that opens it (repeatable; N may be 0)")
	fs.IntVar(&maxOpens, "max-opens", -1, "assert no process opens any one file more than `N` times")
	fs.IntVar(&maxProbes, "max-exec-probes", -1, "assert no process makes more than `N` failed exec probes in a row")
	fs.BoolVar(&allowFail, "allow-fail", false, "do not fail when the command itself fails")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: once check [assertions] [flags] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	command, help, err := parseWithCommand("check", fs, args)
	if err != nil || help {
		return 0, err
	}
	if len(opens) == 0 && maxOpens < 0 && maxProbes < 0 {
		return 0, usagef("check: no assertion given (--opens PATH=N, --max-opens N or --max-exec-probes N)")
	}
	render, err := renderer(f.format)
	if err != nil {
		return 0, err
	}
	if err := checkGlobs("check", f.ignore); err != nil {
		return 0, err
	}
	if f.timeout < 0 {
		return 0, usagef("check: --timeout must not be negative")
	}

	var violations []string
	for i := range opens {
		var st unix.Stat_t
		if err := unix.Stat(opens[i].path, &st); err != nil {
			// Not a usage error: the assertion is violated, loudly, so a
			// typo can't turn a CI guard into a no-op.
			violations = append(violations, fmt.Sprintf("%s does not exist before the run (%v): the assertion would hold vacuously", opens[i].path, err))
			continue
		}
		opens[i].id = fileKey{st.Dev, st.Ino}
	}

	res, err := traceCommand(command, f, stderr)
	if res == nil {
		var ee exitError
		if errors.As(err, &ee) && ee.code == exitNotFound {
			return 0, exitError{checkError, ee.msg}
		}
		return 0, exitError{checkError, errString(err)}
	}
	if f.output != "" {
		if werr := writeReport(f.output, stderr, func(w io.Writer) error { return render(w, res) }); werr != nil {
			return 0, exitError{checkError, werr.Error()}
		}
	}
	if errors.Is(err, collector.ErrNothingTraced) {
		violations = append(violations, "traced nothing: not a single open or exec was seen, so no assertion can be trusted")
	} else if err != nil {
		return 0, exitError{checkError, err.Error()}
	}
	violations = append(violations, checkResult(res, opens, maxOpens, maxProbes, allowFail, f.ignore)...)
	for _, v := range violations {
		fmt.Fprintln(stderr, "once check: "+v)
	}
	if len(violations) > 0 {
		return checkViolated, nil
	}
	return checkOK, nil
}

func errString(err error) string {
	if err == nil {
		return "tracing failed"
	}
	return err.Error()
}

// checkResult evaluates the assertions; each violation is one line.
func checkResult(res *trace.Result, opens opensFlag, maxOpens, maxProbes int, allowFail bool, ignore []string) []string {
	var out []string
	if lost := res.Counters.Lost(); lost > 0 {
		out = append(out, fmt.Sprintf("%d events lost: result incomplete", lost))
	}
	if n := res.Counters.CompatImages; n > 0 {
		out = append(out, fmt.Sprintf("%d 32-bit program images ran, whose opens and execs syscall tracepoints cannot see: result incomplete", n))
	}
	if res.TimedOut {
		out = append(out, fmt.Sprintf("the command timed out after %v: the run is incomplete", res.Timeout))
	} else if res.ExitCode != 0 && !allowFail {
		out = append(out, fmt.Sprintf("the command failed with exit status %d (use --allow-fail if that is expected)", res.ExitCode))
	}
	for _, a := range opens {
		if a.id == (fileKey{}) {
			continue // already reported missing
		}
		seen := false
		for _, p := range res.Processes {
			for _, fo := range p.Opens {
				if fo.Dev != a.id.dev || fo.Ino != a.id.ino {
					continue
				}
				seen = true
				if fo.Count != a.count {
					out = append(out, fmt.Sprintf("%s opened %s %d %s, expected %d", escapeComm(p.Comm), a.path, fo.Count, times(fo.Count), a.count))
				}
			}
		}
		if !seen && a.count > 0 {
			out = append(out, fmt.Sprintf("no process opened %s, expected %d %s", a.path, a.count, times(a.count)))
		}
	}
	if maxOpens >= 0 {
		for _, p := range res.Processes {
			for _, fo := range p.Opens {
				if fo.Count > maxOpens && !ignored(ignore, fo.Paths) {
					out = append(out, fmt.Sprintf("%s opened %s %d %s, expected at most %d", escapeComm(p.Comm), escapePath(fo.Path), fo.Count, times(fo.Count), maxOpens))
				}
			}
		}
	}
	if maxProbes >= 0 {
		for _, f := range res.Findings {
			if f.Kind != trace.KindFailedExecProbes || f.Failed <= maxProbes {
				continue
			}
			out = append(out, fmt.Sprintf("%s made %d failed exec probes for %s, expected at most %d", escapeComm(f.Comm), f.Failed, escapePath(f.Target), maxProbes))
		}
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "time"
	}
	return "times"
}

func ignored(globs []string, paths []string) bool {
	for _, g := range globs {
		for _, p := range paths {
			if ok, _ := filepath.Match(g, p); ok {
				return true
			}
		}
	}
	return false
}
