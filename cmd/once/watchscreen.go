package main

import (
	"strings"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/term"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/sink"
	"github.com/oncetool/once/trace"
)

// screenSink is the live screen: report.WatchUI holds its state and
// draws it; this only moves bytes between it and the terminal. Every
// method runs on the watch loop's goroutine (ticks, findings, keys and
// redraws alike), so none locks.
type screenSink struct {
	session.NopSink
	ui     report.WatchUI
	screen *term.Screen
	w      sink.Records // the summary at the end, on the shell's screen
	top    int          // the summary's rows (--top)
}

func newScreenSink(screen *term.Screen, w sink.Records, opts *session.WatchOptions, top int) *screenSink {
	k := &screenSink{screen: screen, w: w, top: top}
	k.ui.View = report.WatchView{Sort: opts.Sort, Group: opts.Group}
	return k
}

// Finding keeps f for the detail of its row.
func (k *screenSink) Finding(f *trace.Finding, _ time.Time) error {
	k.ui.Findings.Add(f)
	return nil
}

// Tick draws snap, or writes the summary (final: the screen is closed).
func (k *screenSink) Tick(snap *detect.Snapshot, final bool) error {
	if final {
		// The screen scrolled through every row; the summary left on
		// the shell's screen keeps to --top's.
		sum := *snap
		sum.Rows = sum.Rows[:min(len(sum.Rows), k.top)]
		cols, _ := k.screen.Size()
		k.w.WriteString("\n")
		return report.WatchSummary(k.w, &sum, cols)
	}
	k.ui.Snapshot(snap)
	return k.draw()
}

// Input takes the keys read at a poll (session.WatchOptions.Input).
func (k *screenSink) Input(b []byte) session.WatchInput {
	if k.ui.Input(b) {
		k.draw()
	}
	v := &k.ui.View
	return session.WatchInput{Quit: v.Quit, Sort: v.Sort, Group: v.Group}
}

// Redraw paints the screen again (a resized terminal).
func (k *screenSink) Redraw() { k.draw() }

// draw paints a frame: the rows of ended processes dim, the selected one
// in reverse across the width.
func (k *screenSink) draw() error {
	cols, rows := k.screen.Size()
	f := k.ui.Frame(cols, rows)
	lines := make([]string, len(f.Lines))
	for i, l := range f.Lines {
		dim := i < len(f.Dim) && f.Dim[i]
		switch {
		case i == f.Cursor:
			sgr := "\x1b[7m"
			if dim {
				sgr = "\x1b[2;7m"
			}
			l = sgr + l + strings.Repeat(" ", max(cols-report.Width(l), 0)) + "\x1b[0m"
		case dim:
			l = "\x1b[2m" + l + "\x1b[0m"
		}
		lines[i] = l
	}
	return k.screen.Draw(lines)
}

// Flush writes the buffered summary.
func (k *screenSink) Flush() error { return k.w.Flush() }
