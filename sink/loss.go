package sink

import (
	"fmt"
	"io"
	"strings"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// LossWarning says on W, at a tick, that events were lost, each time
// their number grew, and so, apart, for the mapping records --stacks
// lost.
type LossWarning struct {
	session.NopSink
	W      io.Writer
	warned Warned
}

// Tick warns when a loss grew.
func (l *LossWarning) Tick(snap *detect.Snapshot, _ bool) error {
	l.warned.Warn(l.W, &snap.Counters)
	return nil
}

// Warned is what a loss warning said last: a warning is given again only
// when its count grew.
type Warned struct {
	lost, maps uint64
}

// Warn writes to w the warnings for what c lost since the last.
func (d *Warned) Warn(w io.Writer, c *trace.Counters) {
	if lost := c.Lost(); lost > d.lost {
		fmt.Fprintln(w, LossMessage(c))
		d.lost = lost
	}
	if c.StacksMapsLost > d.maps {
		fmt.Fprintln(w, MapsLossMessage(c))
		d.maps = c.StacksMapsLost
	}
}

// MapsLossMessage is the warning line for the mapping records --stacks
// lost (perf's ring for them was full): counted apart from the events,
// whose counts they leave exact, it is the stacks they make unknown.
func MapsLossMessage(c *trace.Counters) string {
	return fmt.Sprintf("once: WARNING: %d mapping records lost so far; "+
		"stacks through the mappings they recorded may end at an unknown mapping", c.StacksMapsLost)
}

// LossMessage is the warning line for c's losses, every loss counter of
// the counter table by its label, and, where the ring buffers' room is
// what ran out (events dropped, or counts lost with their last report),
// the flags that give more.
func LossMessage(c *trace.Counters) string {
	var b strings.Builder
	fmt.Fprintf(&b, "once: WARNING: %d events lost so far (", c.Lost())
	first := true
	for _, spec := range trace.Shown {
		if spec.Group != trace.CounterLost {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s %d", spec.Label, spec.Value(c))
	}
	b.WriteString("); counts are lower bounds")
	if c.DroppedEvents > 0 || c.CountsLost > 0 {
		b.WriteString("; the ring buffers were full: a larger --ring-size, or more --rings, gives the kernel side more room")
	}
	return b.String()
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
