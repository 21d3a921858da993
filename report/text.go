package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/oncetool/once/trace"
)

// Text writes the human-readable report: the findings, most wasteful first,
// grouped by process image with one table per finding kind; then a table of
// every process; then a warning if events were lost; and last exactly one
// summary line with every counter. Every string from the traced system goes
// through Escape, so the output holds no control byte other than the
// newlines that end its lines.
func Text(w io.Writer, r *trace.Result) error {
	if r == nil {
		return errNilResult
	}
	bw := bufio.NewWriter(w)
	src := stackSource(r)
	fmt.Fprintf(bw, "command: %s (%s)\n", commandLine(r.Command), runNotes(r))
	bw.WriteString("\n")

	if len(r.Findings) == 0 {
		bw.WriteString("findings: none\n")
	} else {
		fmt.Fprintf(bw, "findings (%d):\n", len(r.Findings))
		ranked := groupAcross(r)
		t, rest := findingsTable(ranked)
		if err := t.render(bw, "  "); err != nil {
			return err
		}
		if rest != "" {
			bw.WriteString("  " + rest + "\n")
		}
		detail := &trace.Result{Processes: r.Processes}
		for _, f := range detailFindings(r, ranked) {
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
				for _, f := range kg.findings {
					writeCallSites(bw, f, src, "    ")
				}
			}
		}
		if notes := stackNotes(detailPtrs(detail), src); len(notes) > 0 {
			bw.WriteString("\nstacks through modules without full debug information:\n")
			for _, n := range notes {
				bw.WriteString("  " + n + "\n")
			}
		}
	}

	fmt.Fprintf(bw, "\nprocesses (%d):\n", len(r.Processes))
	procTable := processTable(r.Processes)
	if len(r.Processes) > groupProcessesOver {
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

	bw.WriteString("\n")
	if r.Counters.Lost() > 0 {
		bw.WriteString(lostWarning(r))
		bw.WriteString("\n")
	}
	if n := r.Counters.CompatImages; n > 0 {
		bw.WriteString(compatWarning(n))
		bw.WriteString("\n")
	}
	bw.WriteString(summaryLine(r))
	bw.WriteString("\n")
	return bw.Flush()
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
