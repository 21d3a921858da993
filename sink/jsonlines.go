package sink

import (
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// JSONLines is watch --format json: a line per finding as it is made
// (Findings), and a summary line at every tick, or only at the final one
// (FinalOnly: beside --events lines).
type JSONLines struct {
	session.NopSink
	JL        *report.JSONLines
	W         Records
	Findings  bool
	FinalOnly bool
}

// Finding writes f's line.
func (j *JSONLines) Finding(f *trace.Finding, now time.Time) error {
	if !j.Findings {
		return nil
	}
	return j.JL.Finding(f, now)
}

// Tick writes the summary line.
func (j *JSONLines) Tick(snap *detect.Snapshot, final bool) error {
	if j.FinalOnly && !final {
		return nil
	}
	return j.JL.Summary(snap)
}

// Flush writes the buffered lines.
func (j *JSONLines) Flush() error { return j.W.Flush() }
