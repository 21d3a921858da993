package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/oncetool/once/trace"
)

// Text writes the human-readable report, the answer first: one verdict
// line (what the findings wasted, its share of the command's wall and CPU
// time, the findings, the events lost), the command, then the findings
// grouped across processes (program, kind, subject), most wasted first,
// each with what to change; and last exactly one summary line with the
// totals and the counters that are not zero. TextDetails adds each
// process's findings and the process tables. Every string from the
// traced system goes through Escape, so the output holds no control byte
// other than the newlines that end its lines.
func Text(w io.Writer, r *trace.Result) error { return writeText(w, r, false) }

// TextDetails is Text with, after the groups, the findings of each
// process with findings, up to detailProcesses of them (their tables and
// call sites), the
// process table and the devices, FIFOs and sockets opened again.
func TextDetails(w io.Writer, r *trace.Result) error { return writeText(w, r, true) }

func writeText(w io.Writer, r *trace.Result, details bool) error {
	if r == nil {
		return errNilResult
	}
	bw := bufio.NewWriter(w)
	src := stackSource(r)
	bw.WriteString(verdictLine(r))
	bw.WriteString("\n")
	fmt.Fprintf(bw, "command: %s (%s)\n", commandLine(r.Command), runNotes(r))
	if v := checkVerdict(r); v != "" {
		fmt.Fprintf(bw, "check: %s\n", v)
		for _, line := range r.Violations {
			fmt.Fprintf(bw, "  %s\n", Escape(line))
		}
	}
	bw.WriteString("\n")

	if len(r.Findings) == 0 {
		bw.WriteString("findings: none\n")
	} else {
		ranked := groupAcross(r)
		fmt.Fprintf(bw, "findings (%d) in %s, most wasted first:\n", len(r.Findings), plural(len(ranked), "group", "groups"))
		if err := writeGroups(bw, ranked, src); err != nil {
			return err
		}
		if details {
			if err := writeDetails(bw, r, ranked, src); err != nil {
				return err
			}
		}
	}
	if details {
		if err := writeProcesses(bw, r); err != nil {
			return err
		}
	} else if len(r.Processes) > 0 {
		fmt.Fprintf(bw, "\n--details shows %s and the table of the %s\n", detailsHint(r), plural(len(r.Processes), "process", "processes"))
	}

	bw.WriteString("\n")
	if r.Counters.Lost() > 0 {
		bw.WriteString(lostWarning(r))
		bw.WriteString("\n")
	}
	if n := r.Counters.CompatImages; n > 0 {
		bw.WriteString(compatWarning(n))
		bw.WriteString("\n")
	}
	bw.WriteString(SummaryLine(r))
	bw.WriteString("\n")
	return bw.Flush()
}

// detailsHint is what --details shows of r's findings: "each process's
// findings", or past detailProcesses how many processes' of how many.
func detailsHint(r *trace.Result) string {
	_, left := detailFindings(r, groupAcross(r))
	if left.processes == 0 {
		return "each process's findings"
	}
	return fmt.Sprintf("the findings of %d of the %d processes with findings (those of the top groups first)", left.shown, left.shown+left.processes)
}

// writeGroups writes the ranked groups' table, each row followed by its
// suggestion, and the line that counts the groups left out.
func writeGroups(bw *bufio.Writer, ranked []*findingGroup, src trace.StackSource) error {
	t, cut, rest := findingsTableCut(ranked)
	var buf bytes.Buffer
	if err := t.render(&buf, "  "); err != nil {
		return err
	}
	// One line per row (cells never wrap): the header, then row i.
	for i, line := range strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		bw.WriteString(strings.TrimSuffix(line, "\n") + "\n")
		if i > 0 {
			bw.WriteString("    → " + suggest(ranked[i-1], src, quoteArg) + "\n")
		}
	}
	if rest != "" {
		bw.WriteString("  " + rest + "\n")
	}
	if cut {
		fmt.Fprintf(bw, "  a SUBJECT wider than %d columns is cut in the middle with …; --format json has it whole, as --details for the processes it shows\n", maxSubjectWidth)
	}
	return nil
}

// writeDetails writes the findings of the processes detailFindings
// picks, a section per process, the count of those left out, and the
// notes on their stacks.
func writeDetails(bw *bufio.Writer, r *trace.Result, ranked []*findingGroup, src trace.StackSource) error {
	detail := &trace.Result{Processes: r.Processes}
	fs, left := detailFindings(r, ranked)
	for _, f := range fs {
		detail.Findings = append(detail.Findings, *f)
	}
	for _, g := range groupFindings(detail) {
		bw.WriteString("\n")
		bw.WriteString(processLine(g))
		bw.WriteString("\n")
		for i, kg := range byKind(g.findings) {
			if i > 0 {
				bw.WriteString("\n")
			}
			fmt.Fprintf(bw, "  %s:\n", kg.title)
			if err := kg.table().render(bw, "    "); err != nil {
				return err
			}
			writeSectionSites(bw, kg.findings, src, "    ")
		}
	}
	if left.processes > 0 {
		fmt.Fprintf(bw, "\n%s with findings (%s, %s wasted) left out: --format json lists every one\n",
			plural(left.processes, "more process", "more processes"), plural(left.findings, "finding", "findings"), Duration(left.wasted))
	}
	if notes := stackNotes(detailPtrs(detail), src); len(notes) > 0 {
		bw.WriteString("\nstacks through modules without full debug information:\n")
		for _, n := range notes {
			bw.WriteString("  " + n + "\n")
		}
	}
	return nil
}

// writeProcesses writes the process table (a row per program past
// groupProcessesOver processes, unless --processes all) and the special
// opens.
func writeProcesses(bw *bufio.Writer, r *trace.Result) error {
	fmt.Fprintf(bw, "\nprocesses (%d):\n", len(r.Processes))
	procTable := processTable(r.Processes)
	if len(r.Processes) > groupProcessesOver && r.ProcessesListed != trace.ProcessesAll {
		bw.WriteString("  by program, each column the range over its processes:\n")
		procTable = programTable(r.Processes)
	}
	if err := procTable.render(bw, "  "); err != nil {
		return err
	}
	if st, rest := specialTable(r.Processes); st != nil {
		fmt.Fprintf(bw, "\n%s:\n", specialTitle)
		if err := st.render(bw, "  "); err != nil {
			return err
		}
		if rest != "" {
			bw.WriteString("  " + rest + "\n")
		}
	}
	return nil
}

// stackSource is r as the source of its findings' stacks, nil when the
// run had no --stacks.
func stackSource(r *trace.Result) trace.StackSource {
	if r.Counters.Stacks || len(r.Stacks) > 0 {
		return r
	}
	return nil
}

func detailPtrs(r *trace.Result) []*trace.Finding {
	out := make([]*trace.Finding, len(r.Findings))
	for i := range r.Findings {
		out[i] = &r.Findings[i]
	}
	return out
}
