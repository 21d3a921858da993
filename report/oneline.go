package report

import (
	"fmt"

	"github.com/oncetool/once/trace"
)

// What a record of one finding says in a line, for outputs that carry
// findings one at a time (the OTLP logs): escaped, so valid UTF-8 with no
// control character, whatever the traced system named its files.

// FindingLine is f in one line: "cc1: duplicate opens of
// /usr/include/stddef.h: 13 opens, 4.1ms wasted".
func FindingLine(f *trace.Finding) string {
	ki := f.Info()
	return fmt.Sprintf("%s: %s of %s: %d %s, %s wasted", Escape(f.Comm), ki.Title, Escape(f.Subject()), f.Amount(), ki.Amount, Duration(f.WastedNs))
}

// Suggestion is what f alone suggests changing (the report's suggestion
// for a group of one finding), escaped.
func Suggestion(f *trace.Finding, src trace.StackSource) string {
	g := &findingGroup{kind: f.Kind, comm: f.Comm, subject: f.Subject(), findings: []*trace.Finding{f},
		procs: 1, wasted: f.WastedNs, min: f.Amount(), max: f.Amount()}
	return suggest(g, src, Escape)
}

// SiteLine is the one-line form of call site id: its first program
// frames, innermost first ("check_for_data ← copy_file ← copy ← main
// (copy.rs:120)"), escaped.
func SiteLine(src trace.StackSource, id trace.StackID) string { return siteLine(src, id) }
