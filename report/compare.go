package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/trace"
)

// This file renders a compare.Result (once compare): CompareText for the
// terminal, CompareJSON (schema in SCHEMA.md, "once compare JSON report")
// and CompareMarkdown for a pull request or patch mail.
//
// The escaping rules are those of the single-run reports: commands,
// paths, comm, the workload and the machine strings go through Escape in
// Text and in code blocks, through mdText (or mdPunct of an Escape'd form)
// in Markdown prose, and through appendJSONString (jstr) in JSON.

// CompareSchemaVersion is the "schema_version" of the CompareJSON document.
// Like SchemaVersion it changes only when a field is removed or changes
// meaning.
const CompareSchemaVersion = 1

var errNilCompare = errors.New("report: nil comparison")

// sideNames are the names of Result.A and Result.B in every format (and
// the keys of the JSON document), whatever Side.Label says.
var sideNames = [2]string{"before", "after"}

func cmpSides(r *compare.Result) [2]*compare.Side {
	return [2]*compare.Side{&r.A, &r.B}
}

// CompareText writes the human-readable comparison: a header line with the
// workload and the run plan, warnings (failed timed runs, lost events, a
// failing traced run), the timing table (mean ± σ, median and min … max
// of wall, CPU, user and sys time of both sides, in one unit), the ratios
// in hyperfine's words ("after ran 1.16 ± 0.17 times faster than
// before"), the notes (where the CPU time comes from and what of it is
// exact) and the warnings of outliers and a slow first run, the exact syscall counts of the traced run of each
// side, the open patterns, a process table per side (its first
// maxCompareProcesses rows, the rest summed in one), and last the
// commands, the reproduce commands, the plot's path and the machine. A
// side compared without the tracer shows "not traced" wherever a count
// would be.
func CompareText(w io.Writer, r *compare.Result) error {
	if r == nil {
		return errNilCompare
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("compare: ")
	if r.Workload != "" {
		bw.WriteString(Escape(r.Workload))
		bw.WriteString(", ")
	}
	warmup := plural(r.Warmup, "warm-up", "warm-ups")
	if r.Warmup == 0 {
		warmup = "no warm-up"
	}
	fmt.Fprintf(bw, "%s each, interleaved, %s\n", plural(r.Runs, "run", "runs"), warmup)
	for _, wl := range compareWarnings(r) {
		bw.WriteString(wl)
		bw.WriteString("\n")
	}

	u := tableUnit(r)
	fmt.Fprintf(bw, "\ntimes (%s):\n", u.name)
	if err := timingTable(r, u).render(bw, "  "); err != nil {
		return err
	}
	bw.WriteString("\n")
	for _, n := range append(append(relativeLines(r), cpuNotes(r)...), statWarnings(r, u)...) {
		bw.WriteString("  ")
		bw.WriteString(n)
		bw.WriteString("\n")
	}

	sides := cmpSides(r)
	if sides[0].Trace == nil && sides[1].Trace == nil {
		bw.WriteString("\nsyscalls: not traced\n")
	} else {
		bw.WriteString("\nsyscalls (one traced run of each side):\n")
		if err := countTable(r).render(bw, "  "); err != nil {
			return err
		}
		bw.WriteString("\nopen patterns:\n")
		for i, s := range sides {
			fmt.Fprintf(bw, "  %s: %s\n", sideNames[i], patternLine(s, " per file"))
		}
		for i, s := range sides {
			if s.Trace == nil {
				fmt.Fprintf(bw, "\nprocesses, %s: not traced\n", sideNames[i])
				continue
			}
			fmt.Fprintf(bw, "\nprocesses, %s (%d):\n", sideNames[i], len(s.PerProcessOpens))
			if err := cmpProcessTable(s.PerProcessOpens).render(bw, "  "); err != nil {
				return err
			}
		}
		for i, s := range sides {
			writeCompareSites(bw, sideNames[i], s.Trace)
		}
	}

	bw.WriteString("\ncommands:\n")
	for i, s := range sides {
		fmt.Fprintf(bw, "  %s: %s\n", sideNames[i], commandLine(s.Command))
	}
	if len(r.Reproduce) > 0 {
		bw.WriteString("\nreproduce:\n")
		for _, l := range r.Reproduce {
			bw.WriteString("  ")
			bw.WriteString(reproduceLine(l))
			bw.WriteString("\n")
		}
	}
	if r.Plot != "" {
		fmt.Fprintf(bw, "\nplot: %s\n", Escape(r.Plot))
	}
	fmt.Fprintf(bw, "\nmachine: %s\n", machineLine(r.Machine, Escape))
	return bw.Flush()
}

// maxCompareSites bounds the findings whose call sites a comparison
// shows per side: the ones that waste most come first.
const maxCompareSites = 5

// writeCompareSites shows where in the code a side's findings come from
// (traced with --stacks): the call sites of its first findings.
func writeCompareSites(bw *bufio.Writer, side string, r *trace.Result) {
	if r == nil || len(r.Stacks) == 0 {
		return
	}
	shown := 0
	for i := range r.Findings {
		f := &r.Findings[i]
		if len(f.CallSites) == 0 {
			continue
		}
		if shown == 0 {
			fmt.Fprintf(bw, "\ncall sites, %s:\n", side)
		}
		if shown == maxCompareSites {
			fmt.Fprintf(bw, "  (and %d more findings with call sites)\n", countSited(r.Findings[i:]))
			return
		}
		writeCallSites(bw, f, r, "  ")
		shown++
	}
}

// firstSited is r's first finding with call sites (the one that wastes
// most), nil without --stacks.
func firstSited(r *trace.Result) *trace.Finding {
	if r == nil {
		return nil
	}
	for i := range r.Findings {
		if len(r.Findings[i].CallSites) > 0 {
			return &r.Findings[i]
		}
	}
	return nil
}

func countSited(fs []trace.Finding) int {
	n := 0
	for i := range fs {
		if len(fs[i].CallSites) > 0 {
			n++
		}
	}
	return n
}

// CompareMarkdown writes the comparison in the style of a patch
// description, ready to paste into a pull request or a commit message: a
// code block with the open pattern of each side, the verdict ("Copying
// 3000 files of 4096 bytes, 10 runs each: after ran 1.16 ± 0.17 times
// faster than before (medians: 1.17 times faster)."), hyperfine's
// Markdown table of both sides (mean ± σ, median, min … max, CPU, user,
// system, relative), the CPU time line with its ratio and source, the
// system and user time line, the failed exec probe and duplicate open
// counts when either side has some, the warnings of outliers and slow
// first runs, the plot (an image linked by the path in r.Plot, which the caller
// makes relative to where the Markdown goes), a code block of the
// commands that reproduce the numbers, and the machine. Any warning
// (failed timed runs, lost events) comes first, as a block quote.
//
// Code blocks are fenced with more backticks than their content holds and
// their lines are Escape'd (except a reproduce command that is printable,
// kept as is so that it pastes: see reproduceLine); prose goes through
// mdText, so neither a path nor a command can break the structure.
func CompareMarkdown(w io.Writer, r *compare.Result) error {
	if r == nil {
		return errNilCompare
	}
	bw := bufio.NewWriter(w)
	for _, wl := range compareWarnings(r) {
		fmt.Fprintf(bw, "> **%s**\n\n", mdPunct(wl))
	}
	sides := cmpSides(r)
	a, b := sides[0], sides[1]
	if a.Trace != nil || b.Trace != nil {
		var body strings.Builder
		for i, s := range sides {
			fmt.Fprintf(&body, "%s: %s\n", sideNames[i], patternLine(s, ""))
		}
		writeFenced(bw, "text", body.String())
		bw.WriteString("\n")
	}

	// The numbers: the verdict, the table, then one sentence a line.
	u := tableUnit(r)
	if r.Workload != "" {
		bw.WriteString(mdLineStart(mdText(capitalise(r.Workload))))
		bw.WriteString(", ")
	}
	fmt.Fprintf(bw, "%s each", plural(r.Runs, "run", "runs"))
	if l := relativeText(measures[0], r.Wall); l != "" {
		fmt.Fprintf(bw, ": %s", l)
	}
	bw.WriteString(".\n\n")
	bw.WriteString(mdTimingTable(r, u))
	bw.WriteString("\n")
	fmt.Fprintf(bw, "CPU time %s", meanPair(a.CPU, b.CPU, u))
	if l := relativeText(measures[1], r.CPU); l != "" {
		fmt.Fprintf(bw, ": %s", strings.TrimPrefix(l, "CPU time: "))
	}
	fmt.Fprintf(bw, ", %s.\n", mdPunct(cpuSourceText(r)))
	fmt.Fprintf(bw, "System time %s -> %s; user time %s -> %s", u.format(a.Sys.Mean), u.format(b.Sys.Mean),
		u.format(a.User.Mean), u.format(b.User.Mean))
	if !a.SplitExact || !b.SplitExact {
		bw.WriteString(" (the kernel's split at scheduler ticks, not exact)")
	}
	bw.WriteString(".\n")
	switch {
	case a.Trace != nil && b.Trace != nil:
		if a.FailedExecs != 0 || b.FailedExecs != 0 {
			wa, wb := wastedPair(a.WastedExecNs, b.WastedExecNs)
			fmt.Fprintf(bw, "Failed exec probes: %d -> %d per run (wasted %s -> %s).\n",
				a.FailedExecs, b.FailedExecs, wa, wb)
		}
		if a.DuplicateOpens != 0 || b.DuplicateOpens != 0 {
			fmt.Fprintf(bw, "Duplicate opens: %d -> %d per run (%s -> %d", a.DuplicateOpens, b.DuplicateOpens,
				plural(a.DuplicateFiles, "file", "files"), b.DuplicateFiles)
			if a.WastedOpenNs != 0 || b.WastedOpenNs != 0 {
				wa, wb := wastedPair(a.WastedOpenNs, b.WastedOpenNs)
				fmt.Fprintf(bw, ", wasted %s -> %s", wa, wb)
			}
			bw.WriteString(").\n")
		}
		for _, i := range otherKinds([]*compare.Side{a, b}) {
			ta, tb := a.Waste[i], b.Waste[i]
			wa, wb := wastedPair(ta.WastedNs, tb.WastedNs)
			fmt.Fprintf(bw, "%s: %d -> %d %s per run (wasted %s -> %s).\n", capitalise(trace.Kinds[i].Title),
				ta.Avoidable, tb.Avoidable, avoidableNoun(trace.Kinds[i].Kind), wa, wb)
		}
		for i, side := range []*compare.Side{a, b} {
			if f := firstSited(side.Trace); f != nil {
				// "Call sites, before: 3 opens of src from ..."
				fmt.Fprintf(bw, "Call sites, %s: %s\n", sideNames[i], strings.TrimPrefix(mdSites(f, side.Trace), "Call sites: "))
			}
		}
	case a.Trace != nil:
		bw.WriteString("Open and exec counts: after not traced.\n")
	case b.Trace != nil:
		bw.WriteString("Open and exec counts: before not traced.\n")
	}

	for _, n := range statWarnings(r, u) {
		bw.WriteString(mdPunct(capitalise(n)))
		bw.WriteString("\n")
	}

	if r.Plot != "" {
		fmt.Fprintf(bw, "\n![Wall and CPU time of every run, and the opens, before and after](%s)\n", mdLinkDest(r.Plot))
	}

	bw.WriteString("\nReproduce:\n\n")
	var repro strings.Builder
	if len(r.Reproduce) > 0 {
		for _, l := range r.Reproduce {
			repro.WriteString(reproduceLine(l))
			repro.WriteString("\n")
		}
	} else {
		// No reproduce commands given: the two commands, labelled.
		for i, s := range sides {
			fmt.Fprintf(&repro, "# %s\n%s\n", sideNames[i], commandLine(s.Command))
		}
	}
	writeFenced(bw, "sh", repro.String())
	fmt.Fprintf(bw, "\nMachine: %s\n", machineLine(r.Machine, mdText))
	return bw.Flush()
}

// writeFenced writes body (lines already escaped, each ending in '\n') as
// a fenced code block whose fence no line of body can close.
func writeFenced(w *bufio.Writer, info, body string) {
	fence := codeFence(body)
	w.WriteString(fence)
	w.WriteString(info)
	w.WriteString("\n")
	w.WriteString(body)
	w.WriteString(fence)
	w.WriteString("\n")
}

// compareWarnings lists what makes the numbers doubtful: timed runs that
// exited non-zero, lost events (and --stacks' lost mapping records) and a
// traced run that failed.
func compareWarnings(r *compare.Result) []string {
	var out []string
	for i, s := range cmpSides(r) {
		name := sideNames[i]
		if s.Failed > 0 {
			runs := len(s.Samples)
			if runs == 0 {
				runs = r.Runs
			}
			msg := fmt.Sprintf("WARNING: %s: %d of %d timed runs exited non-zero", name, s.Failed, runs)
			if codes := failedCodes(s.Samples); codes != "" {
				msg += " (" + codes + ")"
			}
			out = append(out, msg+"; its times may not measure the intended work")
		}
		if s.Trace == nil {
			continue
		}
		if lost := s.Trace.Counters.Lost(); lost > 0 {
			out = append(out, fmt.Sprintf("WARNING: %s: the traced run lost %s; its counts are lower bounds, and a finding may be wrong (a lost success makes a search look failed): run it again with a larger --ring-size", name, plural(lost, "event", "events")))
		}
		if n := s.Trace.Counters.StacksMapsLost; n > 0 {
			out = append(out, fmt.Sprintf("WARNING: %s: the traced run lost %s; its counts stand, but some call sites may end at an unknown mapping", name, plural(n, "mapping record", "mapping records")))
		}
		if n := s.Trace.Counters.CompatImages; n > 0 {
			out = append(out, fmt.Sprintf("WARNING: %s: the traced run ran %s, whose opens and execs were not seen", name, plural(n, "32-bit program image", "32-bit program images")))
		}
		if s.Trace.ExitSignal != "" {
			out = append(out, fmt.Sprintf("WARNING: %s: the traced run was killed by %s (exit %d)", name, s.Trace.ExitSignal, s.Trace.ExitCode))
		} else if s.Trace.ExitCode != 0 {
			out = append(out, fmt.Sprintf("WARNING: %s: the traced run exited %d", name, s.Trace.ExitCode))
		}
	}
	return out
}

// failedCodes lists the distinct non-zero exit codes of the samples in
// first-seen order: "exit 1" or "exits 1, 137".
func failedCodes(samples []compare.Sample) string {
	var codes []string
	seen := map[int]bool{}
	for _, s := range samples {
		if s.ExitCode != 0 && !seen[s.ExitCode] {
			seen[s.ExitCode] = true
			code := strconv.Itoa(s.ExitCode)
			if s.Signal != "" {
				code += ": " + s.Signal
			}
			codes = append(codes, code)
		}
	}
	switch len(codes) {
	case 0:
		return ""
	case 1:
		return "exit " + codes[0]
	}
	return "exits " + strings.Join(codes, ", ")
}

// countTable is the exact counts of the traced run of each side.
func countTable(r *compare.Result) *table {
	t := newTable("COUNT", "BEFORE", "AFTER")
	sides := cmpSides(r)
	type row struct {
		name string
		get  func(*compare.Side) string
		// ns: a wasted time, shown in one unit on both sides
		ns func(*compare.Side) uint64
	}
	rows := []row{
		{name: "opens", get: func(s *compare.Side) string {
			return strconv.Itoa(s.Opens) + " (" + strconv.Itoa(s.FailedOpens) + " failed)"
		}},
		{name: "lookups", get: func(s *compare.Side) string {
			return strconv.Itoa(s.Lookups) + " (" + strconv.Itoa(s.FailedLookups) + " failed)"
		}},
		{name: "duplicate opens", get: dupString},
		{name: "failed exec probes", get: func(s *compare.Side) string { return strconv.Itoa(s.FailedExecs) }},
	}
	others := otherKinds(sides[:])
	for _, i := range others {
		rows = append(rows, row{name: trace.Kinds[i].Title, get: func(s *compare.Side) string { return avoidableString(s.Waste[i]) }})
	}
	rows = append(rows,
		row{name: "wasted in exec probes", ns: func(s *compare.Side) uint64 { return s.WastedExecNs }},
		row{name: "wasted in duplicate opens", ns: func(s *compare.Side) uint64 { return s.WastedOpenNs }})
	for _, i := range others {
		rows = append(rows, row{name: "wasted in " + trace.Kinds[i].Title, ns: func(s *compare.Side) uint64 { return s.Waste[i].WastedNs }})
	}
	rows = append(rows, row{name: "events lost", get: func(s *compare.Side) string { return strconv.FormatUint(s.Trace.Counters.Lost(), 10) }})
	for _, row := range rows {
		cells := []string{row.name}
		var u timeUnit
		if row.ns != nil {
			var most uint64
			for _, s := range sides {
				if s.Trace != nil {
					most = max(most, row.ns(s))
				}
			}
			u = unitFor(float64(most))
		}
		for _, s := range sides {
			switch {
			case s.Trace == nil:
				cells = append(cells, "not traced")
			case row.ns != nil:
				cells = append(cells, wastedIn(row.ns(s), u))
			default:
				cells = append(cells, row.get(s))
			}
		}
		t.add(cells...)
	}
	return t
}

// otherKinds are the kinds (indexes into trace.Kinds) with no rows of
// their own in a comparison, the duplicate opens and the searches made of
// execve having theirs, that made a finding on a traced side.
func otherKinds(sides []*compare.Side) []int {
	var out []int
	for i, ki := range trace.Kinds {
		if ki.Kind == trace.KindDuplicateOpen || ki.ExecSearch {
			continue
		}
		for _, s := range sides {
			if s.Trace != nil && i < len(s.Waste) && s.Waste[i].Findings > 0 {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// avoidableString is a kind's avoidable calls with the findings they are
// in, saying what they are: "6 failed (1 finding)" for a search (its
// failed attempts, run's EACH), "3 avoidable (1 finding)" for the others,
// whose avoidable calls are not what run counts (a miss's repeats, not
// its 4 misses).
func avoidableString(t trace.KindTotal) string {
	n := strconv.Itoa(t.Avoidable)
	if t.Avoidable > 0 {
		n += " " + avoidableNoun(t.Kind)
	}
	n += " (" + plural(t.Findings, "finding", "findings")
	// A miss's repeats that are a search's attempts count in the
	// search's row: without a word, "0 (3 findings)" reads as none.
	switch {
	case t.Chained > 0 && t.Avoidable == 0:
		n += ", " + verbFor(t.Findings, "its ", "their ") + plural(t.Chained, "repeat", "repeats") + " counted in the searches"
	case t.Chained > 0:
		n += ", " + plural(t.Chained, "more repeat", "more repeats") + " counted in the searches"
	}
	return n + ")"
}

// avoidableNoun says what a kind's avoidable calls are, after their
// number: "failed" for a search's, as run says them, else "avoidable".
func avoidableNoun(k trace.FindingKind) string {
	if ki := k.Info(); ki.Shape == trace.ShapeChain {
		return ki.Amount
	}
	return "avoidable"
}

// dupString is the extra opens with the files they fell on:
// "6000 (3000 files × 2 extra opens)" when every file had as many, else
// "6001 (3000 files)".
func dupString(s *compare.Side) string {
	n := strconv.Itoa(s.DuplicateOpens)
	if s.DuplicateOpens == 0 || s.DuplicateFiles <= 0 {
		return n
	}
	files := plural(s.DuplicateFiles, "file", "files")
	if per := evenExtra(s); per > 0 {
		return n + " (" + files + " × " + plural(per, "extra open", "extra opens") + ")"
	}
	return n + " (" + files + ")"
}

// evenExtra is how many extra opens each duplicate_open finding of the
// side's traced run has, when every one has as many and they are the
// side's counts; 0 when they differ or the run's findings are not there
// to tell (an even quotient is no sign that they are even: 2 and 4 are
// 6 on 2 files, none of which had 3).
func evenExtra(s *compare.Side) int {
	if s.Trace == nil {
		return 0
	}
	per, files, extra := 0, 0, 0
	for i := range s.Trace.Findings {
		f := &s.Trace.Findings[i]
		if f.Kind != trace.KindDuplicateOpen {
			continue
		}
		if files == 0 {
			per = f.Count - 1
		} else if f.Count-1 != per {
			return 0
		}
		files++
		extra += f.Count - 1
	}
	if files != s.DuplicateFiles || extra != s.DuplicateOpens {
		return 0
	}
	return per
}

// maxCompareProcesses bounds the rows of a side's process table in the
// text report: a build runs thousands of processes. The rest are summed
// in one row; the JSON lists each.
const maxCompareProcesses = 20

func cmpProcessTable(procs []compare.ProcessOpens) *table {
	t := newTable("PID", "COMM", "OPENS", "FILES", "DUP FILES", "FAILED EXECS").alignRight(0, 2, 3, 4, 5)
	for i, p := range procs {
		if i == maxCompareProcesses {
			var rest compare.ProcessOpens
			for _, p := range procs[i:] {
				rest.Opens += p.Opens
				rest.Files += p.Files
				rest.DupFiles += p.DupFiles
				rest.ExecProbe += p.ExecProbe
			}
			t.add("", fmt.Sprintf("%d more (each in --format json)", len(procs)-i), strconv.Itoa(rest.Opens),
				strconv.Itoa(rest.Files), strconv.Itoa(rest.DupFiles), strconv.Itoa(rest.ExecProbe))
			break
		}
		t.add(strconv.FormatUint(uint64(p.Pid), 10), quoteArg(p.Comm), strconv.Itoa(p.Opens),
			strconv.Itoa(p.Files), strconv.Itoa(p.DupFiles), strconv.Itoa(p.ExecProbe))
	}
	return t
}

// patternLine renders a side's open patterns joined by " + ", each as
// `openat("src/*", O_RDONLY) x3` plus, for a pattern over several files,
// perFile and " (3000 files)". The result is Escape'd.
func patternLine(s *compare.Side, perFile string) string {
	if s.Trace == nil {
		return "not traced"
	}
	if len(s.Patterns) == 0 {
		return "no repeated opens"
	}
	parts := make([]string, len(s.Patterns))
	for i, p := range s.Patterns {
		parts[i] = patternString(p, perFile)
	}
	return strings.Join(parts, " + ")
}

// patternString renders one open pattern. The role is a role name ("src")
// or, in a comparison without roles, the absolute path of a file; a role
// name that covers several files is written "src/*", a path as is.
func patternString(p compare.OpenPattern, perFile string) string {
	role := p.Role
	if p.Files > 1 && !strings.HasPrefix(role, "/") {
		role += "/*"
	}
	s := fmt.Sprintf("%s(%s, %s) x%d", Escape(p.Syscall), quoteAlways(role), OpenFlags(p.Flags), p.PerFile)
	if p.Files > 1 {
		s += perFile + " (" + strconv.Itoa(p.Files) + " files)"
	}
	return s
}

// quoteAlways is Escape in double quotes, a '"' written `\"`.
func quoteAlways(s string) string {
	return `"` + strings.ReplaceAll(Escape(s), `"`, `\"`) + `"`
}

// reproduceLine renders a command meant to be pasted into a shell. A line
// that is printable UTF-8 is written as is, backslashes included, so that
// it still pastes; any other line is Escape'd and written as a comment,
// "# escaped: ...", so that it neither reaches a terminal raw nor passes
// for a command that would run.
func reproduceLine(s string) string {
	if printable(s) {
		return s
	}
	return "# escaped: " + Escape(s)
}

// printable reports whether Escape would change nothing in s but its
// backslashes.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || escapeRune(r) {
			return false
		}
	}
	return true
}

// machineLine is "Linux 6.18 x86_64, 2 CPUs, <cpu model>", each string
// through esc, empty parts left out.
func machineLine(m compare.Machine, esc func(string) string) string {
	var parts []string
	if m.Kernel != "" {
		parts = append(parts, esc(m.Kernel))
	}
	if m.CPUs > 0 {
		parts = append(parts, plural(m.CPUs, "CPU", "CPUs"))
	}
	if m.CPU != "" {
		parts = append(parts, esc(m.CPU))
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

// mdLineStart backslash-escapes what would make a line that starts with
// e (already through mdText) a list item or a heading underline: a leading
// '-', '+' or '=', or digits followed by '.' or ')'.
func mdLineStart(e string) string {
	if e == "" {
		return e
	}
	if strings.IndexByte("-+=", e[0]) >= 0 {
		return `\` + e
	}
	i := 0
	for i < len(e) && e[i] >= '0' && e[i] <= '9' {
		i++
	}
	if i > 0 && i < len(e) && (e[i] == '.' || e[i] == ')') {
		return e[:i] + `\` + e[i:]
	}
	return e
}

// capitalise upper-cases the first rune of s (raw bytes, escaped later).
func capitalise(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// plural is n and the noun that agrees with it: "1 process", "2
// processes", "0 findings".
func plural[N ~int | ~int64 | ~uint32 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(int64(n), 10) + " " + many
}

// Times. Comparisons print one decimal in a unit shared by both sides
// ("199.9ms ± 14.9ms -> 171.7ms ± 23.6ms"), unlike Duration, so that small
// changes show and both sides read in the same unit.

type timeUnit struct {
	ns   float64
	name string
}

var timeUnits = []timeUnit{{1, "ns"}, {1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}}

// unitFor is the largest unit in which v shows as at least 10.0, so that
// one decimal keeps three significant digits: 199.9ms, 35.2µs, but
// 1290.0µs rather than 1.3ms (ns below 10ns).
func unitFor(v float64) timeUnit {
	for i := len(timeUnits) - 1; i > 0; i-- {
		// Decide on the printed digits, so that what shows as 10.0
		// counts as 10.
		u := timeUnits[i]
		if x, _ := strconv.ParseFloat(u.number(math.Abs(v)), 64); x >= 10 {
			return u
		}
	}
	return timeUnits[0]
}

// number is v in unit u with one decimal and no unit name.
func (u timeUnit) number(v float64) string {
	return strconv.FormatFloat(v/u.ns, 'f', 1, 64)
}

// format is v in unit u with one decimal and the unit name.
func (u timeUnit) format(v float64) string {
	return u.number(v) + u.name
}

// cpuSourceText says where each side's CPU time comes from and whether it
// is exact: "cgroup v2 ..., exact to the µs", or per side when they differ.
func cpuSourceText(r *compare.Result) string {
	line := func(s *compare.Side) string {
		if s.CPUExact {
			return "from " + cpuSourceName(s.CPUSource) + ", exact to the µs"
		}
		return "from " + cpuSourceName(s.CPUSource) + ", only the children the command waited for"
	}
	a, b := &r.A, &r.B
	if a.CPUSource == b.CPUSource && a.CPUExact == b.CPUExact {
		return line(a)
	}
	return sideNames[0] + " " + line(a) + ", " + sideNames[1] + " " + line(b)
}

// mdLinkDest percent-encodes a path for a Markdown link destination: every
// byte but unreserved URL characters and '/', so that neither a space, a
// parenthesis nor a control character can end the link or reach a reader.
func mdLinkDest(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// wastedString is a wasted time, "0" when there is none.
func wastedString(ns uint64) string {
	return wastedIn(ns, unitFor(float64(ns)))
}

// wastedIn is ns in unit u, "0" when there is none; in ns, whole
// ("9879ns", not "9879.0ns"): a wasted time is a sum of whole ns.
func wastedIn(ns uint64, u timeUnit) string {
	if ns == 0 {
		return "0"
	}
	if u.ns == 1 {
		return strconv.FormatUint(ns, 10) + u.name
	}
	return u.format(float64(ns))
}

// wastedPair is a before -> after pair of wasted times in one unit,
// the larger one's, as the timing lines share theirs: "10.0µs -> 8.5µs",
// not "10.0µs -> 8483.0ns".
func wastedPair(a, b uint64) (string, string) {
	u := unitFor(float64(max(a, b)))
	return wastedIn(a, u), wastedIn(b, u)
}

// ratioDefined: compare computed the ratio (a positive baseline, figures
// exact on both sides) and it is finite.
func ratioDefined(q compare.Ratio) bool {
	return q.Defined && finite(q.Mean) && finite(q.Spread) && finite(q.Median)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func ratio2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// CompareJSON writes r as one pretty-printed (2-space indent) JSON object
// followed by a newline; the schema is in SCHEMA.md ("once compare JSON
// report"). Commands, paths, comm, the workload, the machine strings and
// the reproduce commands are byte strings, encoded with surrogateescape
// like in JSON.
func CompareJSON(w io.Writer, r *compare.Result) error {
	if r == nil {
		return errNilCompare
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(buildCompareJSON(r))
}

// The types below are the compare JSON schema; field order is output
// order and no field is omitted. Keep SCHEMA.md in sync.

type jsonCompare struct {
	SchemaVersion int              `json:"schema_version"`
	Workload      jstr             `json:"workload"`
	Runs          int              `json:"runs"`
	Warmup        int              `json:"warmup"`
	Before        jsonCompareSide  `json:"before"`
	After         jsonCompareSide  `json:"after"`
	Ratio         jsonCompareRatio `json:"ratio"`
	Machine       jsonMachine      `json:"machine"`
	Reproduce     []jstr           `json:"reproduce"`
	Plot          jstr             `json:"plot"`
	// Added in schema version 1 without a bump: new keys only.
	OutlierMADs float64  `json:"outlier_mads"`
	Warnings    []string `json:"warnings"`
}

type jsonCompareSide struct {
	Command          []jstr            `json:"command"`
	WallNs           jsonStats         `json:"wall_ns"`
	UserNs           jsonStats         `json:"user_ns"`
	SysNs            jsonStats         `json:"sys_ns"`
	CPUNs            jsonStats         `json:"cpu_ns"`
	CPUSource        string            `json:"cpu_source"`
	CPUExact         bool              `json:"cpu_exact"`
	UserSysExact     bool              `json:"user_sys_exact"`
	FailedRuns       int               `json:"failed_runs"`
	Opens            int               `json:"opens"`
	FailedOpens      int               `json:"failed_opens"`
	DuplicateOpens   int               `json:"duplicate_opens"`
	DuplicateFiles   int               `json:"duplicate_files"`
	FailedExecProbes int               `json:"failed_exec_probes"`
	WastedExecNs     uint64            `json:"wasted_exec_ns"`
	WastedOpenNs     uint64            `json:"wasted_open_ns"`
	Lookups          int               `json:"lookups"`
	FailedLookups    int               `json:"failed_lookups"`
	WasteByKind      []jsonKindTotal   `json:"waste_by_kind"`
	Patterns         []jsonPattern     `json:"patterns"`
	Processes        []jsonProcessOpen `json:"processes"`
	EventsLost       *uint64           `json:"events_lost"` // null when not traced
	Samples          []jsonSample      `json:"samples"`
}

type jsonStats struct {
	N      int    `json:"n"`
	Min    jfloat `json:"min"`
	Median jfloat `json:"median"`
	Mean   jfloat `json:"mean"`
	Stddev jfloat `json:"stddev"`
	Max    jfloat `json:"max"`
	// Outliers and SlowFirstRun: see compare.Stats.
	Outliers     int  `json:"outliers"`
	SlowFirstRun bool `json:"slow_first_run"`
}

type jsonPattern struct {
	Role      jstr   `json:"role"`
	Syscall   string `json:"syscall"`
	Flags     uint64 `json:"flags"`
	FlagsText string `json:"flags_text"`
	PerFile   int    `json:"per_file"`
	Files     int    `json:"files"`
}

type jsonProcessOpen struct {
	Pid         uint32 `json:"pid"`
	Comm        jstr   `json:"comm"`
	Opens       int    `json:"opens"`
	Files       int    `json:"files"`
	DupFiles    int    `json:"dup_files"`
	FailedExecs int    `json:"failed_execs"`
}

type jsonSample struct {
	WallNs   int64 `json:"wall_ns"`
	UserNs   int64 `json:"user_ns"`
	SysNs    int64 `json:"sys_ns"`
	ExitCode int   `json:"exit_code"`
	CPUNs    int64 `json:"cpu_ns"`
}

type jsonCompareRatio struct {
	Wall *jsonRatio `json:"wall"` // null when undefined (zero baseline)
	User *jsonRatio `json:"user"`
	Sys  *jsonRatio `json:"sys"`
	CPU  *jsonRatio `json:"cpu"`
}

type jsonRatio struct {
	Mean   jfloat `json:"mean"`
	Spread jfloat `json:"spread"`
	Median jfloat `json:"median"`
	// The ratio as hyperfine's relative speed (compare.Ratio.Relative).
	Factor       jfloat `json:"factor"`
	FactorStddev jfloat `json:"factor_stddev"`
	Speed        string `json:"speed"`
	MedianFactor jfloat `json:"median_factor"`
	MedianSpeed  string `json:"median_speed"`
	Summary      string `json:"summary"`
}

type jsonMachine struct {
	Kernel jstr `json:"kernel"`
	CPUs   int  `json:"cpus"`
	CPU    jstr `json:"cpu"`
}

// jfloat is a float64 that encodes NaN and infinities, which JSON cannot
// hold, as null instead of failing the whole document.
type jfloat float64

func (f jfloat) MarshalJSON() ([]byte, error) {
	if !finite(float64(f)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func buildCompareJSON(r *compare.Result) jsonCompare {
	sides := cmpSides(r)
	return jsonCompare{
		SchemaVersion: CompareSchemaVersion,
		Workload:      jstr(r.Workload),
		Runs:          r.Runs,
		Warmup:        r.Warmup,
		Before:        jsonSide(sides[0]),
		After:         jsonSide(sides[1]),
		Ratio: jsonCompareRatio{
			Wall: jsonRatioOf(r.Wall, measures[0]),
			User: jsonRatioOf(r.User, measures[2]),
			Sys:  jsonRatioOf(r.Sys, measures[3]),
			CPU:  jsonRatioOf(r.CPU, measures[1]),
		},
		Machine:     jsonMachine{Kernel: jstr(r.Machine.Kernel), CPUs: r.Machine.CPUs, CPU: jstr(r.Machine.CPU)},
		Reproduce:   jstrs(r.Reproduce),
		Plot:        jstr(r.Plot),
		OutlierMADs: compare.OutlierMADs,
		Warnings:    append(append([]string{}, compareWarnings(r)...), statWarnings(r, tableUnit(r))...),
	}
}

func jsonSide(s *compare.Side) jsonCompareSide {
	js := jsonCompareSide{
		Command:          jstrs(s.Command),
		WallNs:           jsonStatsOf(s.Wall),
		UserNs:           jsonStatsOf(s.User),
		SysNs:            jsonStatsOf(s.Sys),
		CPUNs:            jsonStatsOf(s.CPU),
		CPUSource:        string(s.CPUSource),
		CPUExact:         s.CPUExact,
		UserSysExact:     s.SplitExact,
		FailedRuns:       s.Failed,
		Opens:            s.Opens,
		FailedOpens:      s.FailedOpens,
		DuplicateOpens:   s.DuplicateOpens,
		DuplicateFiles:   s.DuplicateFiles,
		FailedExecProbes: s.FailedExecs,
		WastedExecNs:     s.WastedExecNs,
		WastedOpenNs:     s.WastedOpenNs,
		Lookups:          s.Lookups,
		FailedLookups:    s.FailedLookups,
		WasteByKind:      kindTotalsJSON(s.Waste),
		Patterns:         make([]jsonPattern, len(s.Patterns)),
		Processes:        make([]jsonProcessOpen, len(s.PerProcessOpens)),
		Samples:          make([]jsonSample, len(s.Samples)),
	}
	for i, p := range s.Patterns {
		js.Patterns[i] = jsonPattern{Role: jstr(p.Role), Syscall: p.Syscall, Flags: p.Flags,
			FlagsText: OpenFlags(p.Flags), PerFile: p.PerFile, Files: p.Files}
	}
	for i, p := range s.PerProcessOpens {
		js.Processes[i] = jsonProcessOpen{Pid: p.Pid, Comm: jstr(p.Comm), Opens: p.Opens, Files: p.Files,
			DupFiles: p.DupFiles, FailedExecs: p.ExecProbe}
	}
	for i, x := range s.Samples {
		js.Samples[i] = jsonSample{WallNs: x.Wall.Nanoseconds(), UserNs: x.User.Nanoseconds(),
			SysNs: x.Sys.Nanoseconds(), ExitCode: x.ExitCode, CPUNs: x.CPU.Nanoseconds()}
	}
	if s.Trace != nil {
		lost := s.Trace.Counters.Lost()
		js.EventsLost = &lost
	}
	return js
}

func jsonStatsOf(st compare.Stats) jsonStats {
	return jsonStats{N: st.N, Min: jfloat(st.Min), Median: jfloat(st.Median), Mean: jfloat(st.Mean), Stddev: jfloat(st.Stddev),
		Max: jfloat(st.Max), Outliers: st.Outliers, SlowFirstRun: st.SlowFirst}
}

func jsonRatioOf(q compare.Ratio, m measure) *jsonRatio {
	if !ratioDefined(q) {
		return nil
	}
	f, sd, speed := q.Relative()
	mf, mspeed := q.MedianRelative()
	return &jsonRatio{Mean: jfloat(q.Mean), Spread: jfloat(q.Spread), Median: jfloat(q.Median),
		Factor: jfloat(f), FactorStddev: jfloat(sd), Speed: speed.String(),
		MedianFactor: jfloat(mf), MedianSpeed: mspeed.String(), Summary: relativeText(m, q)}
}
