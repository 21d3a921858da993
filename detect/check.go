package detect

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/oncetool/once/trace"
)

// Assertions are what once check holds a run to.
type Assertions struct {
	// Opens: each file is opened exactly Count times by each process
	// that opens it.
	Opens []OpensAssertion
	// MaxOpens: no process opens any one file (outside Ignore) more
	// than this many times; negative: no such assertion. Devices, FIFOs
	// and sockets (Process.SpecialOpens) are no such file; an
	// assertion in Opens that names one counts its opens.
	MaxOpens int
	// MaxExecProbes: no exec probe chain fails more than this many
	// times; negative: no such assertion.
	MaxExecProbes int
	// Max: --max KIND=N, no finding of KIND has an Amount (its opens,
	// failed attempts, misses or stats: trace.KindInfo.Amount) above N.
	Max map[trace.FindingKind]int
	// AllowFail: the command failing is not a violation.
	AllowFail bool
	Ignore    Ignore
}

// OpensAssertion is --opens PATH=N: the file at Path, by its identity
// before the run.
type OpensAssertion struct {
	Path     string // as given, for messages
	Dev, Ino uint64
	// Gen is the file's generation (i_generation), where HasGen: ext4
	// and xfs give a freed inode number to the next file made, so a file
	// made during the run (a rewrite by rm and create, a rename over
	// it) can have the number the named one had: it is another file.
	// Without one, the device and inode number are all there is.
	Gen    uint32
	HasGen bool
	Count  int
	// Missing: why the file could not be identified before the run (the
	// assertion is then violated: it would hold vacuously).
	Missing error
}

// names says whether fo is the file o names: its device and inode number,
// and its generation where o has one.
func (o *OpensAssertion) names(fo *trace.FileOpens) bool {
	return fo.Dev == o.Dev && fo.Ino == o.Ino && (!o.HasGen || fo.Gen == o.Gen)
}

// KeepFile says which files a run's report must list for Check: those an
// assertion names, or every file when none may be opened even once.
func (a *Assertions) KeepFile(dev, ino uint64) bool {
	if a.MaxOpens == 0 {
		return true
	}
	for _, o := range a.Opens {
		if o.Missing == nil && o.Dev == dev && o.Ino == ino {
			return true
		}
	}
	return false
}

// Count is how many assertions a holds the run to: each --opens, and
// --max-opens, --max-exec-probes and each --max given.
func (a *Assertions) Count() int {
	n := len(a.Opens) + len(a.Max)
	if a.MaxOpens >= 0 {
		n++
	}
	if a.MaxExecProbes >= 0 {
		n++
	}
	return n
}

// Violation is one assertion a run broke: its line, and the finding
// whose calls broke it where there is one (a duplicate open, a probe
// chain: its call sites say where in the code, with --stacks).
type Violation struct {
	Text    string
	Finding *trace.Finding
}

// Check returns one line per violation; esc escapes a string from the
// traced system for a terminal.
func (a *Assertions) Check(res *trace.Result, esc func(string) string) []string {
	vs := a.Violations(res, esc)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Text
	}
	return out
}

// duplicateOf is the duplicate_open finding of image k's opens of the
// file fo names (its device, inode and generation), nil when none.
func duplicateOf(res *trace.Result, k trace.ImageKey, fo *trace.FileOpens) *trace.Finding {
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Kind == trace.KindDuplicateOpen && f.Key == k && f.Dev == fo.Dev && f.Ino == fo.Ino && f.Gen == fo.Gen {
			return f
		}
	}
	return nil
}

// Violations is Check with the finding behind each line.
func (a *Assertions) Violations(res *trace.Result, esc func(string) string) []Violation {
	var out []Violation
	add := func(f *trace.Finding, format string, args ...any) {
		out = append(out, Violation{Text: fmt.Sprintf(format, args...), Finding: f})
	}
	for _, o := range a.Opens {
		if o.Missing != nil {
			// Not a usage error: violated, loudly, so that a typo can't
			// turn a CI guard into a no-op.
			add(nil, "%s does not exist before the run (%v): the assertion would hold vacuously", esc(o.Path), o.Missing)
		}
	}
	if lost := res.Counters.Lost(); lost > 0 {
		add(nil, "%d %s lost: result incomplete", lost, plural(int(min(lost, 2)), "event", "events"))
	}
	if n := res.Counters.CompatImages; n > 0 {
		add(nil, "%d 32-bit program %s, whose opens and execs syscall tracepoints cannot see: result incomplete", n, plural(int(min(n, 2)), "image ran", "images ran"))
	}
	switch {
	case res.StartErrno != 0:
		// Whatever --allow-fail says: a command that never ran makes
		// every assertion hold vacuously.
		// In once run's words: an ENOENT of a script that is there
		// is its interpreter's.
		why := res.StartReason
		if why == "" {
			why = syscall.Errno(res.StartErrno).Error()
		}
		add(nil, "the command never ran: its execve failed (%s, exit status %d)", esc(why), res.ExitCode)
	case res.TimedOut:
		add(nil, "the command timed out after %v: the run is incomplete", res.Timeout)
	case res.Interrupted != "":
		// Whatever --allow-fail says: a cancelled CI job is no pass.
		add(nil, "once got %s and passed it on to the command (exit status %d): the run is incomplete", res.Interrupted, res.ExitCode)
	case res.ExitCode != 0 && !a.AllowFail && res.ExitSignal != "":
		// A crash or a kill (the OOM killer's SIGKILL) is no exit(137).
		add(nil, "the command was killed by %s (exit status %d; use --allow-fail if that is expected)", res.ExitSignal, res.ExitCode)
	case res.ExitCode != 0 && !a.AllowFail:
		add(nil, "the command failed with exit status %d (use --allow-fail if that is expected)", res.ExitCode)
	}
	if n := res.StillRunning(); n > 0 {
		// Their calls after the trace ended are not in it: an
		// assertion about them would hold vacuously.
		add(nil, "%d %s still running when the trace ended (--linger): the run is incomplete", n, plural(n, "process was", "processes were"))
	}
	for _, o := range a.Opens {
		if o.Missing != nil {
			continue
		}
		seen := false
		for _, p := range res.Processes {
			// A device named by an assertion is counted too, though
			// its repeats are no duplicates (--max-opens skips them).
			// O_PATH opens too: strace counts them, and a guard of 0
			// must not let them by. A file opened both ways is in two
			// lists: the process's opens of it are their sum.
			n, opened := 0, false
			var dup *trace.Finding
			for _, fo := range slices.Concat(p.Opens, p.SpecialOpens, p.PathOpens) {
				if o.names(fo) {
					n, opened = n+fo.Count, true
					if dup == nil {
						dup = duplicateOf(res, p.Key, fo)
					}
				}
			}
			if !opened {
				continue
			}
			seen = true
			if n != o.Count {
				add(dup, "%s opened %s %d %s, expected %d", esc(p.Comm), esc(o.Path), n, times(n), o.Count)
			}
		}
		if !seen && o.Count > 0 {
			add(nil, "no process opened %s, expected %d %s", esc(o.Path), o.Count, times(o.Count))
		}
	}
	if a.MaxOpens >= 0 {
		for _, p := range res.Processes {
			for _, fo := range p.Opens {
				if fo.Count > a.MaxOpens && !a.Ignore.Match(append([]string{fo.Path}, fo.Paths...)...) {
					add(duplicateOf(res, p.Key, fo), "%s opened %s %d %s, expected at most %d", esc(p.Comm), esc(fo.Path), fo.Count, times(fo.Count), a.MaxOpens)
				}
			}
		}
	}
	// Findings are ranked by the time they wasted, which differs from
	// run to run: a CI log that is diffed wants the same lines in the
	// same order for the same calls.
	findings := inRunOrder(res.Findings)
	for _, ki := range trace.Kinds {
		n, ok := a.Max[ki.Kind]
		if !ok {
			continue
		}
		for _, f := range findings {
			if f.Kind != ki.Kind || f.Amount() <= n {
				continue
			}
			subject := esc(f.Subject())
			if subject == "" {
				// A lookup of the empty name (ENOENT): shown, not left out.
				subject = `""`
			}
			add(f, "%s: %s %s: %d %s, expected at most %d", esc(f.Comm), ki.Kind, subject, f.Amount(), ki.Amount, n)
		}
	}
	if a.MaxExecProbes >= 0 {
		for _, f := range findings {
			if !f.Info().ExecSearch || f.Failed <= a.MaxExecProbes {
				continue
			}
			add(f, "%s made %d failed exec %s for %s, expected at most %d", esc(f.Comm), f.Failed, plural(f.Failed, "probe", "probes"), esc(f.Target), a.MaxExecProbes)
		}
	}
	return out
}

// inRunOrder is fs in an order that does not depend on their times: by
// the image that made them, in the order the images started (the
// thread group leader's start, then its execs), then by subject and
// amount.
func inRunOrder(fs []trace.Finding) []*trace.Finding {
	out := make([]*trace.Finding, len(fs))
	for i := range fs {
		out[i] = &fs[i]
	}
	slices.SortStableFunc(out, func(x, y *trace.Finding) int {
		return cmp.Or(
			cmp.Compare(x.Key.Start, y.Key.Start),
			cmp.Compare(x.Key.Pid, y.Key.Pid),
			cmp.Compare(x.Key.ExecID, y.Key.ExecID),
			strings.Compare(x.Subject(), y.Subject()),
			cmp.Compare(x.Amount(), y.Amount()),
		)
	})
	return out
}

func times(n int) string { return plural(n, "time", "times") }

// ParseMax parses --max's KIND=N: a kind of trace.Kinds and N >= 0.
func ParseMax(s string) (trace.FindingKind, int, error) {
	k, v, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 {
		return "", 0, fmt.Errorf("%q: want KIND=N with N >= 0", s)
	}
	kind := trace.FindingKind(k)
	if !kind.Known() {
		names := make([]string, len(trace.Kinds))
		for i, ki := range trace.Kinds {
			names[i] = string(ki.Kind)
		}
		return "", 0, fmt.Errorf("%q: no finding kind %q (kinds: %s)", s, k, strings.Join(names, ", "))
	}
	return kind, n, nil
}

// plural is one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
