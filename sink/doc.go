// Package sink holds the outputs of a session (session.Sink): the watch
// table and live screen, JSON lines, event lines, Prometheus metrics and
// the loss warning. cmd/once chooses them from its flags; session drives
// them.
//
// None of them may block the drain loop, and each bounds itself:
//   - Table, JSONLines and Events write whole records to a Records
//     writer: 64 KiB buffered, flushed at each tick (watch) or poll
//     (run). To an -o file that writer is an output.Degrading, which
//     drops and counts (Dropped) what the file can't take. To stdout or
//     stderr it writes as fast as the reader of that pipe reads: a
//     consumer that stops reading stalls once, as it always has (and
//     the stall is counted, and seen by /healthz).
//   - Metrics sets in-memory counters whose series are capped by the
//     exporter (comm and workload labels), read by the scrape on its
//     own goroutine.
//   - LossWarning writes one line to stderr when the events lost grew, and
//     one when the mapping records --stacks lost grew.
//
// The OTLP sink, which talks to the network, is a package of its own
// (otlp): a queue bounded in bytes, one sender, drops counted.
package sink

import (
	"io"

	"github.com/oncetool/once/session"
)

// Records is where the text sinks write: whole records, buffered.
type Records interface {
	io.Writer
	io.StringWriter
	Flush() error
}

var (
	_ session.Sink     = (*Table)(nil)
	_ session.Sink     = (*JSONLines)(nil)
	_ session.Sink     = (*Events)(nil)
	_ session.Sink     = (*Metrics)(nil)
	_ session.Sink     = (*LossWarning)(nil)
	_ session.Counting = Dropped{}
)
