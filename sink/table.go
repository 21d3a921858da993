package sink

import (
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/term"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
)

// KeysHelp is the last line of the live screen.
const KeysHelp = "keys: d sort by duplicate opens, e by exec probes, t by wasted time, q quit"

// Table writes watch's table: at every tick, or at the final one only
// (FinalOnly: beside --events lines), or drawn in place on a live
// Screen at every tick, the final one written to W.
type Table struct {
	session.NopSink
	W         Records
	Screen    *term.Screen
	FinalOnly bool
	last      *detect.Snapshot // the screen's, for a redraw on resize
}

// Tick writes or draws snap.
func (t *Table) Tick(snap *detect.Snapshot, final bool) error {
	switch {
	case t.FinalOnly && !final:
		return nil
	case t.Screen != nil && !final:
		t.last = snap
		return t.draw(snap)
	}
	t.W.WriteString("\n")
	return report.WatchTable(t.W, snap)
}

// Redraw paints the last table again (a resized terminal).
func (t *Table) Redraw() {
	if t.Screen != nil && t.last != nil {
		t.draw(t.last)
	}
}

// draw paints the live screen in place, every line fitted to the
// terminal's size, without clearing it first (no flicker).
func (t *Table) draw(snap *detect.Snapshot) error {
	cols, rows := t.Screen.Size()
	return t.Screen.Draw(report.WatchScreen(snap, cols, rows, KeysHelp))
}

// Flush writes the buffered table.
func (t *Table) Flush() error { return t.W.Flush() }
