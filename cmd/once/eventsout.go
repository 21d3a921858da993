package main

import (
	"fmt"
	"io"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/sink"
)

// addEventsSink adds run's and check's --events lines to s: to stderr,
// or the --events-o stream or file. A stream that can't take the lines (a
// file on a full disk, a closed pipe, /dev/full) costs them, counted in
// the report, not the trace. The returned func closes the file.
func addEventsSink(s *session.Session, f runFlags, stdout, stderr io.Writer) (func(), error) {
	closeFile := func() {}
	dest, name := io.Writer(stderr), "stderr"
	if std := (output.Std{Stdout: stdout, Stderr: stderr}).Pick(f.eventsOut); std != nil {
		dest, name = std, "stdout"
		if std == stderr {
			name = "stderr"
		}
	} else if f.eventsOut != "" {
		file, err := output.OpenStream(f.eventsOut)
		if err != nil {
			return nil, usagef("run: --events-o: %v", err)
		}
		closeFile = func() { file.Close() }
		dest, name = file, report.Escape(f.eventsOut)
	}
	dw := output.NewDegrading(dest, name, 64<<10, func(s string) { fmt.Fprintln(stderr, s) })
	s.AddSink(sink.Dropped{D: dw})
	// Flushed by the session at each poll of its loop: lines as they
	// happen, not when the buffer fills.
	ev := sink.NewEvents(dw, f.format, f.clock == "wall", collector.WallOffset())
	if ev.EP != nil {
		ev.EP.SetWide(f.wide)
	}
	// A file of its own says what it lacks; stderr has the warnings
	// already.
	ev.LossLine = dest != stderr
	ev.EndLine = true
	s.AddSink(ev)
	return closeFile, nil
}
