package sink

import (
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
)

// Table writes watch's table: at every tick, or at the final one only
// (FinalOnly: beside --events lines, or after the live screen, which
// report.WatchUI draws).
type Table struct {
	session.NopSink
	W         Records
	FinalOnly bool
}

// Tick writes snap.
func (t *Table) Tick(snap *detect.Snapshot, final bool) error {
	if t.FinalOnly && !final {
		return nil
	}
	t.W.WriteString("\n")
	return report.WatchTable(t.W, snap)
}

// Flush writes the buffered table.
func (t *Table) Flush() error { return t.W.Flush() }
