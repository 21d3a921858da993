// Package report renders a trace.Result as a human-readable text report
// (Text), a machine-readable JSON document (JSON, schema in SCHEMA.md) or
// Markdown for pasting into a pull request (Markdown).
//
// Every string that comes from the traced system is attacker-controlled
// (a traced program chooses its file names, argv and comm) and may hold any
// byte. Each format escapes such strings so that the output can neither
// inject terminal control sequences nor fake report structure, and so that
// the original bytes can be recovered: see Escape and UnescapeJSONBytes.
package report

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/oncetool/once/trace"
)

var errNilResult = errors.New("report: nil result")

// atFDCWD is the dirfd value meaning "relative to the working directory".
const atFDCWD = -100

// processGroup is the findings of one process image, in Result order.
type processGroup struct {
	proc     *trace.Process // nil if the image is not in Result.Processes
	findings []*trace.Finding
}

// groupFindings groups findings by process image, keeping Result order:
// groups are ordered by their first (most wasteful) finding and findings
// keep their relative order inside a group.
func groupFindings(r *trace.Result) []*processGroup {
	procs := make(map[trace.ImageKey]*trace.Process, len(r.Processes))
	for _, p := range r.Processes {
		if p != nil {
			if _, dup := procs[p.Key]; !dup {
				procs[p.Key] = p
			}
		}
	}
	var groups []*processGroup
	byKey := map[trace.ImageKey]*processGroup{}
	for i := range r.Findings {
		f := &r.Findings[i]
		g := byKey[f.Key]
		if g == nil {
			g = &processGroup{proc: procs[f.Key]}
			byKey[f.Key] = g
			groups = append(groups, g)
		}
		g.findings = append(g.findings, f)
	}
	return groups
}

// processLine is the header line of a finding group, escaped for a
// terminal: "pid 1234 (cp) ppid 1200 (bash) exe /usr/bin/cp argv: cp a b".
func processLine(g *processGroup) string {
	f := g.findings[0]
	pid, ppid, comm, last, pcomm := f.Pid, f.PPid, f.Comm, f.LastComm, f.ParentComm
	exe, argv := "[unknown]", "[unknown]"
	if p := g.proc; p != nil {
		pid, ppid, comm, last, pcomm = p.Pid, p.PPid, p.Comm, p.LastComm, p.ParentComm
		if p.Exe != "" {
			exe = quoteArg(p.Exe)
		}
		argv = argvString(p.Argv, p.ArgvTruncated)
	}
	line := fmt.Sprintf("pid %d (%s) ppid %d (%s) exe %s", pid, namesString(comm, last), ppid, commString(pcomm), exe)
	if p := g.proc; p != nil && p.Container != nil {
		line += " container " + quoteArg(containerLabel(p.Container))
	}
	return line + " argv: " + argv
}

// commString renders a comm for use between parentheses. A comm is chosen
// by the traced program (prctl PR_SET_NAME), so one that holds a
// parenthesis or quote is quoted: "x) ppid 1 (init" must not read as two
// fields.
func commString(c string) string {
	return quoteEscaped(c, "(),\"")
}

// namesString renders a process's name for use between parentheses, with
// the name it gave itself later when it renamed itself: "python3,
// renamed celery".
func namesString(comm, last string) string {
	if last == "" || last == comm {
		return commString(comm)
	}
	return commString(comm) + ", renamed " + commString(last)
}

// quoteArg renders one argument or path on a line of space-separated
// fields; it is quoted when it holds a space, a quote or '[' (so it cannot
// pass for one of the bracketed notes such as "[argv truncated]").
func quoteArg(a string) string {
	return quoteEscaped(a, " \"'[")
}

// quoteEscaped escapes s and, when the result is empty or contains any of
// special, wraps it in double quotes, with '"' written as `\"`. Escape
// already writes '\' as `\\`, so the quoted form stays unambiguous.
func quoteEscaped(s, special string) string {
	e := Escape(s)
	if e != "" && !strings.ContainsAny(e, special) {
		return e
	}
	return `"` + strings.ReplaceAll(e, `"`, `\"`) + `"`
}

// argvString renders an argument list on one line, each argument through
// quoteArg so that argument boundaries stay visible.
func argvString(argv []string, truncated bool) string {
	if argv == nil && !truncated {
		return "[none: forked, no exec]"
	}
	parts := make([]string, 0, len(argv)+1)
	for _, a := range argv {
		parts = append(parts, quoteArg(a))
	}
	if truncated {
		parts = append(parts, "[argv truncated]")
	}
	return strings.Join(parts, " ")
}

// callsSummary condenses a list of open calls into
// "openat O_RDONLY|O_CLOEXEC x2, open O_RDONLY x1": one entry per distinct
// (syscall, flags) pair, in first-use order.
func callsSummary(calls []trace.OpenCall) string {
	type key struct {
		sys   trace.Syscall
		flags uint64
	}
	var order []key
	counts := map[key]int{}
	for _, c := range calls {
		k := key{c.Syscall, c.Flags}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = callKindString(k.sys, k.flags, counts[k])
	}
	return strings.Join(parts, ", ")
}

// kindsSummary is callsSummary from the exact per-(syscall, flags)
// counts, which stay right when the calls list was capped; a Result built
// without them (tests, older producers) falls back to the calls.
//
// total is the finding's count: a first call the kernel counted without
// sending (a first stat, or a first open under once watch) is in it but
// in no kind, and is said so ("newfstatat x2, 1 counted in the kernel"),
// so that the calls add up to the count.
func kindsSummary(kinds []trace.CallKind, calls []trace.OpenCall, total int) string {
	if len(kinds) == 0 {
		return callsSummary(calls)
	}
	parts := make([]string, len(kinds), len(kinds)+1)
	n := 0
	for i, k := range kinds {
		parts[i] = callKindString(k.Syscall, k.Flags, k.Count)
		n += k.Count
	}
	if total > n {
		parts = append(parts, strconv.Itoa(total-n)+" counted in the kernel")
	}
	return strings.Join(parts, ", ")
}

// callKindString is "openat O_RDONLY|O_CLOEXEC x2", or for a lookup
// without flags "newfstatat x2".
func callKindString(sc trace.Syscall, flags uint64, n int) string {
	if sc.IsLookup() && flags == 0 {
		return fmt.Sprintf("%s x%d", sc, n)
	}
	return fmt.Sprintf("%s %s x%d", sc, CallFlags(sc, flags), n)
}

// devIno renders a file identity as "major:minor:ino".
func devIno(dev, ino uint64) string {
	return DevString(dev) + ":" + strconv.FormatUint(ino, 10)
}

// attemptResult is "ok" for the attempt that worked, else the errno name.
func attemptResult(errno int32) string {
	if errno == 0 {
		return "ok"
	}
	return ErrnoName(errno)
}

// foundString renders a probe chain's winner for a table cell.
func foundString(found *string) string {
	if found == nil {
		return "[none]"
	}
	return quoteArg(*found)
}

// Tables. Text and Markdown both use them. Cells from the traced system go
// through quoteArg rather than plain Escape: a table pads with spaces, so
// a leading or trailing space in a path would otherwise be invisible.

func dupTable(fs []*trace.Finding) *table {
	t := newTable("FILE", strings.ToUpper(fs[0].Info().Amount), "SPELLINGS", "CALLS", "DEV:INO").alignRight(1, 2)
	for _, f := range fs {
		spellings := strconv.Itoa(len(f.Paths))
		if f.PathsCapped {
			spellings += "+" // more were used than kept
		}
		t.add(quoteArg(f.Path), strconv.Itoa(f.Count), spellings,
			kindsSummary(f.Kinds, f.Calls, f.Count), devIno(f.Dev, f.Ino))
		// The other spellings of the same file (hard links, symlinked
		// directories, "..") one per row under the first.
		for _, p := range f.Paths {
			if p != f.Path {
				t.add("  also "+quoteArg(p), "", "", "", "")
			}
		}
		if f.PathsCapped {
			t.add("  also [more spellings, not kept]", "", "", "", "")
		}
		// The names the code passed, where they are not the path the
		// kernel resolved (a symlink's, a relative name): what a grep
		// of the code finds.
		for _, n := range passedNames(f) {
			t.add("  as passed: "+quoteArg(n), "", "", "", "")
		}
	}
	return t
}

// passedNames is the names f's kept calls passed (their Fname) that are
// none of f's resolved spellings, first-use order: /etc/os-release,
// which the kernel resolved to /usr/lib/os-release, or os-release passed
// relative to the cwd. A truncated or unreadable name is left out, and
// so are the calls counted in the kernel or not kept, whose names are
// not known.
func passedNames(f *trace.Finding) []string {
	if f.Info().Shape != trace.ShapeFile {
		return nil
	}
	var out []string
	for _, c := range f.Calls {
		// An absolute name that is a spelling but for a trailing
		// slash or a doubled one is none of these.
		n := c.Fname
		if strings.HasPrefix(n, "/") {
			n = path.Clean(n)
		}
		if c.Fname == "" || c.FnameTruncated || c.FnameUnreadable || n == f.Path ||
			slices.Contains(f.Paths, n) || slices.Contains(out, c.Fname) {
			continue
		}
		out = append(out, c.Fname)
	}
	return out
}

func missTable(fs []*trace.Finding) *table {
	t := newTable("PATH", "MISSES", "ERROR", "WASTED", "CALLS").alignRight(1, 3)
	for _, f := range fs {
		t.add(quoteArg(f.Path), strconv.Itoa(f.Count), ErrnoName(f.Errno), Duration(f.WastedNs), kindsSummary(f.Kinds, f.Calls, f.Count))
	}
	return t
}

func probeTable(fs []*trace.Finding) *table {
	t := newTable("TARGET", "FAILED", "WASTED", "FOUND", "ATTEMPT", "RESULT", "TIME").alignRight(1, 2, 6)
	for _, f := range fs {
		head := []string{quoteArg(f.Target), strconv.Itoa(f.Failed), Duration(f.WastedNs), foundString(f.Found)}
		if len(f.Attempts) == 0 {
			t.add(head...)
			continue
		}
		for i, a := range f.Attempts {
			row := make([]string, 0, 7)
			if i == 0 {
				row = append(row, head...)
			} else {
				row = append(row, "", "", "", "")
			}
			row = append(row, quoteArg(a.Path), attemptResult(a.Errno), Duration(a.Ns))
			t.add(row...)
			// Past the cap the attempts are counted, not kept: said
			// where the failed ones would be, before the winner.
			if f.AttemptsOmitted > 0 && (i == len(f.Attempts)-1 && f.Found == nil || i == len(f.Attempts)-2 && f.Found != nil) {
				t.add("", "", "", "", omittedAttempts(f.AttemptsOmitted), "", "")
			}
		}
	}
	return t
}

// omittedAttempts is the row that stands for attempts not kept.
func omittedAttempts(n int) string {
	return fmt.Sprintf("[%d more failed, not kept]", n)
}

// callTable lists open calls one per row (Markdown detail blocks).
func callTable(calls []trace.OpenCall) *table {
	t := newTable("SYSCALL", "TID", "DIRFD", "FNAME", "FLAGS", "RET", "PATH", "TIME").alignRight(1, 5, 7)
	for _, c := range calls {
		t.add(c.Syscall.String(), strconv.FormatUint(uint64(c.Tid), 10), dirfdString(c.Dirfd),
			fnameString(c), flagsString(c), retString(c.Ret), pathString(c), Duration(c.Ns))
	}
	return t
}

func dirfdString(fd int32) string {
	if fd == atFDCWD {
		return "AT_FDCWD"
	}
	return strconv.Itoa(int(fd))
}

func fnameString(c trace.OpenCall) string {
	if c.FnameUnreadable {
		return "(unreadable)"
	}
	s := quoteArg(c.Fname)
	if c.FnameTruncated {
		s += " [truncated]"
	}
	return s
}

func pathString(c trace.OpenCall) string {
	s := quoteArg(c.Path)
	if c.PathTruncated {
		s += " [truncated]"
	}
	return s
}

// flagsString is the open flags plus, when set, the creation mode and the
// openat2 RESOLVE_* flags.
func flagsString(c trace.OpenCall) string {
	s := CallFlags(c.Syscall, c.Flags)
	if c.Mode != 0 {
		s += " mode 0" + strconv.FormatUint(c.Mode, 8)
	}
	if c.Resolve != 0 {
		s += " resolve " + ResolveFlags(c.Resolve)
	}
	return s
}

func retString(ret int32) string {
	if ret < 0 {
		return ErrnoName(-ret)
	}
	return strconv.Itoa(int(ret))
}

func processTable(procs []*trace.Process) *table {
	t := newTable("PID", "PPID", "COMM", "OPENS", "FILES", "DUP FILES", "FAILED OPENS", "EXECS", "FAILED EXECS",
		"LOOKUPS", "FAILED LOOKUPS", "EXIT").
		alignRight(0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	for _, p := range procs {
		if p == nil {
			continue
		}
		s := p.Totals
		exit := "-"
		if p.Exited {
			exit = strconv.Itoa(p.ExitCode)
		}
		count := strconv.Itoa
		if p.Compat {
			// 32-bit: its syscalls were not seen, so its counts are
			// unknown, not zero (see compatWarning).
			count = func(int) string { return "?" }
		}
		t.add(strconv.FormatUint(uint64(p.Pid), 10), strconv.FormatUint(uint64(p.PPid), 10), quoteArg(p.Comm),
			count(s.Opens), count(s.Files), count(s.DupFiles), count(s.FailedOpens),
			count(s.Execs), count(s.FailedExecs), count(s.Lookups), count(s.FailedLookups), exit)
	}
	return t
}

// specialRow is a device, FIFO or socket that the processes of one
// program opened more than once each: listed apart, never a finding.
type specialRow struct {
	comm, path, ftype string
	procs, opens      int
}

// topSpecial bounds the rows of the special opens table.
const topSpecial = 10

// specialRows groups the special opens made more than once by a process
// (trace.Process.SpecialOpens) by program, file and type, most opens
// first, and says how many rows past topSpecial were left out. Raw
// strings: the caller escapes them.
func specialRows(procs []*trace.Process) (rows []specialRow, rest int) {
	type key struct{ comm, path, ftype string }
	at := map[key]int{}
	for _, p := range procs {
		if p == nil {
			continue
		}
		for _, fo := range p.SpecialOpens {
			if fo == nil || fo.Count < 2 {
				continue
			}
			k := key{p.Comm, fo.Path, trace.FileTypeName(fo.FileType)}
			i, ok := at[k]
			if !ok {
				i = len(rows)
				at[k] = i
				rows = append(rows, specialRow{comm: k.comm, path: k.path, ftype: k.ftype})
			}
			rows[i].procs++
			rows[i].opens += fo.Count
		}
	}
	slices.SortStableFunc(rows, func(a, b specialRow) int {
		if c := cmp.Compare(b.opens, a.opens); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.comm, b.comm), cmp.Compare(a.path, b.path))
	})
	if len(rows) > topSpecial {
		return rows[:topSpecial], len(rows) - topSpecial
	}
	return rows, 0
}

// specialTitle heads the special opens table.
const specialTitle = "opened again, not duplicates (devices, FIFOs, sockets)"

// specialTable is the special opens table, nil when there are none; rest
// is the line that counts the rows left out ("" for none). The file is
// not the last column: that one must hold no traced text (table.render).
func specialTable(procs []*trace.Process) (t *table, rest string) {
	rows, more := specialRows(procs)
	if len(rows) == 0 {
		return nil, ""
	}
	t = newTable("PROGRAM", "FILE", "TYPE", "PROCESSES", "OPENS").alignRight(3, 4)
	for _, r := range rows {
		ftype := r.ftype
		if ftype == "" {
			ftype = "?"
		}
		t.add(quoteArg(r.comm), quoteArg(r.path), ftype, strconv.Itoa(r.procs), strconv.Itoa(r.opens))
	}
	if more > 0 {
		rest = fmt.Sprintf("... and %d more", more)
	}
	return t, rest
}

// kindGroup is the findings of one kind within a process group.
type kindGroup struct {
	title    string
	findings []*trace.Finding
}

// byKind splits a group's findings by kind, in trace.Kinds order, each
// kind keeping Result order. A kind this package does not know (a newer
// collector) is shown after the known ones, titled by its escaped name and
// rendered like a probe chain.
func byKind(fs []*trace.Finding) []kindGroup {
	var out []kindGroup
	for _, ki := range trace.Kinds {
		g := kindGroup{title: ki.Title}
		for _, f := range fs {
			if f.Kind == ki.Kind {
				g.findings = append(g.findings, f)
			}
		}
		if len(g.findings) > 0 {
			out = append(out, g)
		}
	}
	index := map[trace.FindingKind]int{}
	for _, f := range fs {
		if f.Kind.Known() {
			continue
		}
		i, ok := index[f.Kind]
		if !ok {
			i = len(out)
			index[f.Kind] = i
			out = append(out, kindGroup{title: Escape(string(f.Kind))})
		}
		out[i].findings = append(out[i].findings, f)
	}
	return out
}

// table renders the group in its kind's shape: a file's table or a
// probe chain's.
func (g kindGroup) table() *table {
	switch g.findings[0].Info().Shape {
	case trace.ShapeFile:
		return dupTable(g.findings)
	case trace.ShapeMiss:
		return missTable(g.findings)
	}
	return probeTable(g.findings)
}

// SummaryLine is the one-line counters summary that ends the Text and
// Markdown reports: the totals, then the counters that are not zero
// (countersLine). A pprof profile carries it as its comment; once run
// prints it beside a folded one, which has no room for it.
func SummaryLine(r *trace.Result) string {
	return fmt.Sprintf("once: %s, %s (%d failed), %s (%d failed), %s (%d failed), %s; %s",
		plural(len(r.Processes), "process", "processes"), plural(r.Opens, "open", "opens"), r.FailedOpens,
		plural(r.Execs, "exec", "execs"), r.FailedExecs, plural(r.Lookups, "lookup", "lookups"), r.FailedLookups,
		plural(len(r.Findings), "finding", "findings"), countersLine(&r.Counters))
}

// compatWarning is printed before the summary when 32-bit programs ran:
// none of their syscalls were seen, and no counter can say how many.
func compatWarning(n uint64) string {
	return fmt.Sprintf("WARNING: %s ran; the kernel's syscall tracepoints skip their syscalls, so none of their opens and execs are shown (strace -f sees them)", plural(n, "32-bit program image", "32-bit program images"))
}

// lostWarning is printed before the summary when events were lost.
// lostWarning is lostLine in a run's report, which adds what compare's
// says too: a lost call can make a finding wrong, not only smaller (a
// search whose success was lost looks failed).
func lostWarning(r *trace.Result) string {
	return lostLine(&r.Counters) + ", and a finding may be wrong (a lost success makes a search look failed)"
}

// lostLine is the warning every text output gives when events were lost.
// With more than one ring it names those that overflowed: one ring full
// while the others were not is a CPU group busier than the rest (more
// --rings), all of them a reader too slow or rings too small
// (--ring-size).
func lostLine(c *trace.Counters) string {
	s := "WARNING: " + plural(c.Lost(), "event was lost", "events were lost")
	if len(c.DroppedByRing) > 1 && c.DroppedEvents > 0 {
		var full []string
		for i, n := range c.DroppedByRing {
			if n > 0 {
				full = append(full, fmt.Sprintf("%d in ring %d", n, i))
			}
		}
		s += fmt.Sprintf(" (ring buffers full: %s of %d)", strings.Join(full, ", "), len(c.DroppedByRing))
	}
	return s + "; counts are lower bounds"
}

// mapsLostLine is the warning the live screen and the watch table give
// when --stacks lost mapping records (counted apart from the events):
// stacks through the mappings they recorded end at an unknown mapping.
func mapsLostLine(c *trace.Counters) string {
	return "WARNING: " + plural(c.StacksMapsLost, "mapping record was lost", "mapping records were lost") +
		"; stacks may end at an unknown mapping"
}

// mappingRecords is "6080000 mapping records" (lost, under --stacks).
func mappingRecords(c *trace.Counters) string {
	return plural(c.StacksMapsLost, "mapping record", "mapping records")
}

// checkVerdict is once check's verdict under a report's header: "every
// assertion holds" or "2 violations", "" for once run.
func checkVerdict(r *trace.Result) string {
	switch {
	case r.Violations == nil:
		return ""
	case len(r.Violations) == 0:
		return "every assertion holds"
	}
	return plural(len(r.Violations), "violation", "violations")
}

// runNotes is what the header line says about the run in parentheses:
// "exit 0, 4.9ms" ("killed by SIGSEGV, exit 139, 4.9ms"), and whether it timed out, was interrupted, left
// processes running past --linger, or its arguments are redacted.
func runNotes(r *trace.Result) string {
	s := fmt.Sprintf("exit %d, %s", r.ExitCode, Duration(uint64(max(r.Duration, 0))))
	if r.ExitSignal != "" {
		s = fmt.Sprintf("killed by %s, exit %d, %s", r.ExitSignal, r.ExitCode, Duration(uint64(max(r.Duration, 0))))
	}
	if c := RunCaveats(r); c != "" {
		s += ", " + c
	}
	if r.ArgvRedacted {
		s += ", arguments redacted"
	}
	return s
}

// RunCaveats is what of runNotes says the report holds less than the
// command's every call: it never ran, timed out, was interrupted, or left
// processes running past --linger; "" when none of these. The formats
// without a header carry it beside their summary line (pprof's comments,
// folded's line on stderr).
func RunCaveats(r *trace.Result) string {
	var c []string
	if r.StartErrno != 0 {
		c = append(c, "never ran: its execve failed with "+ErrnoName(r.StartErrno))
	}
	if r.TimedOut {
		c = append(c, "timed out after "+r.Timeout.String())
	}
	if r.Interrupted != "" {
		c = append(c, "interrupted: once passed its "+r.Interrupted+" on")
	}
	if n := r.StillRunning(); n > 0 {
		// What the JSON's still_running says: the report ends before
		// these processes did.
		its := "its"
		if n > 1 {
			its = "their"
		}
		c = append(c, plural(n, "process", "processes")+" still running past --linger: "+its+" later calls are not in the report")
	}
	return strings.Join(c, ", ")
}

// commandLine renders the traced command, escaped and quoted like argv.
func commandLine(cmd []string) string {
	if len(cmd) == 0 {
		return "(unknown command)"
	}
	return argvString(cmd, false)
}
