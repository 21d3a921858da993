package sink

import (
	"fmt"
	"io"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// LossWarning says on W, at a tick, that events were lost, each time
// their number grew.
type LossWarning struct {
	session.NopSink
	W      io.Writer
	warned uint64
}

// Tick warns when the loss grew.
func (l *LossWarning) Tick(snap *detect.Snapshot, _ bool) error {
	c := &snap.Counters
	if lost := c.Lost(); lost > l.warned {
		fmt.Fprintf(l.W, "once: WARNING: %d events lost so far (dropped %d, map-full %d, missed-enter %d); counts are lower bounds\n",
			lost, c.DroppedEvents, c.EnterMapFull, c.MissedEnter)
		l.warned = lost
	}
	return nil
}

// Dropped counts the records an output file could not take
// (Counters.OutputDropped): a session.Counting sink.
type Dropped struct {
	session.NopSink
	D *output.Degrading
}

// Counters puts the records dropped so far in c.
func (d Dropped) Counters(c *trace.Counters) {
	c.OutputDropped, _ = d.D.Dropped()
}
