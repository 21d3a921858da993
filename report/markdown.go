package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/oncetool/once/trace"
)

// Markdown writes a report meant to be pasted into a pull request or issue:
// a heading, the verdict (what the findings wasted and its share of the
// command's wall and CPU time), a table of the findings grouped across
// processes (most wasted first) with what to change, and the counters
// line (preceded by a warning when events were lost). MarkdownDetails
// adds a section per top group with its attempts or calls in a fenced
// code block.
//
// Strings from the traced system are escaped with Escape (and quoted when
// they hold spaces, like in Text) and then, outside code blocks, every
// character Markdown or GitHub would act on is backslash-escaped. Code blocks are fenced with more backticks than the
// longest backtick run they contain, so no line can close them early.
func Markdown(w io.Writer, r *trace.Result) error { return writeMarkdown(w, r, false) }

// MarkdownDetails is Markdown with a section per top group and the
// devices, FIFOs and sockets opened again.
func MarkdownDetails(w io.Writer, r *trace.Result) error { return writeMarkdown(w, r, true) }

func writeMarkdown(w io.Writer, r *trace.Result, details bool) error {
	if r == nil {
		return errNilResult
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("## once report\n\n")
	fmt.Fprintf(bw, "**%s**\n\n", mdPunct(verdictLine(r)))
	fmt.Fprintf(bw, "Command: %s (%s)\n\n", mdPunct(commandLine(r.Command)), runNotes(r))
	if v := checkVerdict(r); v != "" {
		fmt.Fprintf(bw, "Check: %s\n\n", v)
		for _, line := range r.Violations {
			fmt.Fprintf(bw, "- %s\n", mdPunct(Escape(line)))
		}
		if len(r.Violations) > 0 {
			bw.WriteString("\n")
		}
	}

	if len(r.Findings) == 0 {
		bw.WriteString("No findings.\n\n")
	} else {
		ranked := groupAcross(r)
		src := stackSource(r)
		bw.WriteString("| # | Kind | Program | Processes | Subject | Each | Wasted | Suggestion |\n")
		bw.WriteString("|--:|------|---------|----------:|---------|-----:|-------:|------------|\n")
		for i, g := range ranked[:min(len(ranked), topGroups)] {
			fmt.Fprintf(bw, "| %d | %s | %s | %d | %s | %s | %s | %s |\n",
				i+1, mdText(string(g.kind)), mdPunct(quoteArg(g.comm)), g.procs, mdPunct(quoteArg(g.subject)), g.each(), Duration(g.wasted),
				mdPunct(suggest(g, src, quoteArg)))
		}
		if _, rest := findingsTable(ranked); rest != "" {
			fmt.Fprintf(bw, "\n%s\n", mdPunct(rest))
		}
		bw.WriteString("\n")
		if details {
			if err := mdDetails(bw, r, ranked, src); err != nil {
				return err
			}
		}
	}

	if st, rest := specialTable(r.Processes); details && st != nil {
		// A code block, like a finding's calls: its cells are the text
		// report's, escaped for a terminal.
		var body bytes.Buffer
		if err := st.render(&body, ""); err != nil {
			return err
		}
		if rest != "" {
			body.WriteString(rest + "\n")
		}
		fence := codeFence(body.String())
		fmt.Fprintf(bw, "%s%s:\n\n%stext\n", strings.ToUpper(specialTitle[:1]), specialTitle[1:], fence)
		bw.Write(body.Bytes())
		bw.WriteString(fence + "\n\n")
	}
	if r.Counters.Lost() > 0 {
		fmt.Fprintf(bw, "> **%s**\n\n", lostWarning(r))
	}
	if n := r.Counters.CompatImages; n > 0 {
		fmt.Fprintf(bw, "> **%s**\n\n", compatWarning(n))
	}
	bw.WriteString(SummaryLine(r))
	bw.WriteString("\n")
	return bw.Flush()
}

// mdDetails writes a section per top group: its first finding's
// process, calls or attempts and call sites.
func mdDetails(bw *bufio.Writer, r *trace.Result, ranked []*findingGroup, src trace.StackSource) error {
	procs := map[trace.ImageKey]*trace.Process{}
	for _, p := range r.Processes {
		if p != nil && procs[p.Key] == nil {
			procs[p.Key] = p
		}
	}
	for i, g := range ranked[:min(len(ranked), detailGroups)] {
		f := g.findings[0]
		if err := mdFinding(bw, i+1, f, procs[f.Key], g, src); err != nil {
			return err
		}
	}
	return nil
}

// findingSummary is the Subject, Count and Wasted cells of a finding's row
// in the findings table. Subject is raw (the caller escapes it).
func findingSummary(f *trace.Finding) (subject, count, wasted string) {
	ki := f.Info()
	if ki.Shape == trace.ShapeMiss {
		return f.Path, strconv.Itoa(f.Count) + " " + ki.Amount, Duration(f.WastedNs)
	}
	if ki.Shape == trace.ShapeFile {
		return f.Path, strconv.Itoa(f.Count) + " " + ki.Amount, strconv.Itoa(f.Avoidable()) + " extra " + ki.Amount
	}
	return f.Target, strconv.Itoa(f.Failed) + " " + ki.Amount, Duration(f.WastedNs)
}

// mdFinding writes the section of a group of findings: a heading, and a
// code block with the first (most wasteful) of them.
func mdFinding(w *bufio.Writer, n int, f *trace.Finding, p *trace.Process, g *findingGroup, src trace.StackSource) error {
	subject, _, _ := findingSummary(f)
	fmt.Fprintf(w, "### %d. %s: %s\n\n", n, mdText(string(f.Kind)), mdPunct(quoteArg(subject)))
	if g.procs > 1 {
		fmt.Fprintf(w, "%d processes of %s, %s each; the first of them:\n\n", g.procs, mdPunct(quoteArg(g.comm)), g.each())
	}

	// The block's content is built first so the fence can be chosen to be
	// longer than any backtick run in it.
	var body bytes.Buffer
	pg := &processGroup{proc: p, findings: []*trace.Finding{f}}
	body.WriteString(processLine(pg))
	body.WriteString("\n\n")
	if f.Info().Shape == trace.ShapeMiss {
		fmt.Fprintf(&body, "%d lookups of %s failed with %s, %s wasted\n\n", f.Count, quoteArg(f.Path), ErrnoName(f.Errno), Duration(f.WastedNs))
		if err := callTable(f.Calls).render(&body, ""); err != nil {
			return err
		}
	} else if f.Info().Shape == trace.ShapeFile {
		fmt.Fprintf(&body, "%d %s of %s (dev:ino %s)\n", f.Count, f.Info().Amount, quoteArg(f.Path), devIno(f.Dev, f.Ino))
		for _, path := range f.Paths {
			fmt.Fprintf(&body, "  spelling: %s\n", quoteArg(path))
		}
		if f.PathsCapped {
			body.WriteString("  spelling: [more, not kept]\n")
		}
		for _, n := range passedNames(f) {
			fmt.Fprintf(&body, "  as passed: %s\n", quoteArg(n))
		}
		body.WriteString("\n")
		if err := callTable(f.Calls).render(&body, ""); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(&body, "target %s: %d failed, %s wasted, found %s\n\n",
			quoteArg(f.Target), f.Failed, Duration(f.WastedNs), foundString(f.Found))
		t := newTable("ATTEMPT", "RESULT", "TIME").alignRight(2)
		for _, a := range f.Attempts {
			t.add(quoteArg(a.Path), attemptResult(a.Errno), Duration(a.Ns))
		}
		if f.AttemptsOmitted > 0 {
			t.add(omittedAttempts(f.AttemptsOmitted), "", "")
		}
		if err := t.render(&body, ""); err != nil {
			return err
		}
	}
	if len(f.CallSites) > 0 {
		// The patch's before: which code made each call.
		fmt.Fprintf(w, "%s\n\n", mdSites(f, src))
		bw := bufio.NewWriter(&body)
		bw.WriteString("\n")
		writeCallSites(bw, f, src, "")
		for _, n := range stackNotes([]*trace.Finding{f}, src) {
			bw.WriteString("note: " + n + "\n")
		}
		bw.Flush()
	}
	fence := codeFence(body.String())
	w.WriteString(fence)
	w.WriteString("text\n")
	w.Write(body.Bytes())
	w.WriteString(fence)
	w.WriteString("\n\n")
	return nil
}

// codeFence returns a backtick fence longer than the longest run of
// backticks in content (and at least three long). A fenced block only ends
// at a line of at least as many backticks as opened it, so no content line
// can end it early.
func codeFence(content string) string {
	longest, run := 0, 0
	for i := 0; i < len(content); i++ {
		if content[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// mdSites is the sentence that names a finding's call sites: "3 opens of
// src from check_for_data, check_sparse_detection, copy".
func mdSites(f *trace.Finding, src trace.StackSource) string {
	subject, _, _ := findingSummary(f)
	n := 0
	var names []string
	// Each site named where the sites part, past a wrapper they share;
	// sites in one function (two calls in a row) by their lines too.
	skip := sharedFrames(src, f.CallSites)
	funcs := map[string]int{}
	for _, c := range f.CallSites {
		funcs[siteFuncFrom(src, c.Stack, skip)]++
	}
	for _, c := range f.CallSites {
		n += c.Count
		name := siteFuncFrom(src, c.Stack, skip)
		if name == "" {
			name = "(no stack)"
		} else if l := siteFrameLine(src, c.Stack, skip); funcs[name] > 1 && l != "" {
			name += " (" + l + ")"
		}
		s := "`" + strings.ReplaceAll(name, "`", "'") + "`"
		if c.Count > 1 {
			s += fmt.Sprintf(" ×%d", c.Count)
		}
		names = append(names, s)
	}
	return fmt.Sprintf("Call sites: %d %s of %s from %s.", n, callsNoun(f, n), mdPunct(quoteArg(path.Base(subject))), strings.Join(names, ", "))
}
