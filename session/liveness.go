package session

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout is how long the reader may go without completing a
// poll before it is taken as stalled.
const DefaultStallTimeout = 30 * time.Second

// Liveness is the reader's heartbeat, for those who watch it from other
// goroutines (a health endpoint, the metrics): the drain loop beats each
// time it completes a poll, whether or not events came, so an idle system
// is live and only a loop that is stuck (an unwinder blocked on a file, a
// renderer blocked on its output) is stalled. Its methods are safe for
// concurrent use.
type Liveness struct {
	timeout time.Duration
	last    atomic.Int64  // UnixNano of the last beat
	events  atomic.Uint64 // events read as of the last beat
	stalls  atomic.Uint64
	stalled atomic.Bool // the current stall was counted
}

// NewLiveness returns a heartbeat, beating now, whose reader is stalled
// past timeout without a beat (DefaultStallTimeout when not positive).
func NewLiveness(timeout time.Duration) *Liveness {
	if timeout <= 0 {
		timeout = DefaultStallTimeout
	}
	l := &Liveness{timeout: timeout}
	l.last.Store(time.Now().UnixNano())
	return l
}

// beat records that the loop completed a poll at now, having read events
// in all.
func (l *Liveness) beat(now time.Time, events uint64) {
	l.last.Store(now.UnixNano())
	l.events.Store(events)
	if l.stalled.Load() {
		l.stalled.Store(false)
	}
}

// Timeout is the threshold past which the reader is stalled.
func (l *Liveness) Timeout() time.Duration { return l.timeout }

// LastProgress is when the loop last completed a poll.
func (l *Liveness) LastProgress() time.Time { return time.Unix(0, l.last.Load()) }

// EventsRead is the events the reader had read at its last poll.
func (l *Liveness) EventsRead() uint64 { return l.events.Load() }

// Stalls is how many times the reader was seen stalled.
func (l *Liveness) Stalls() uint64 { return l.stalls.Load() }

// Check returns nil while the reader is live at now, else an error of one
// line saying for how long it has not polled. The first check that sees
// a stall counts it.
func (l *Liveness) Check(now time.Time) error {
	age := now.Sub(l.LastProgress())
	if age <= l.timeout {
		return nil
	}
	if l.stalled.CompareAndSwap(false, true) {
		l.stalls.Add(1)
	}
	return fmt.Errorf("reader stalled: no poll of the ring buffer completed for %s (--stall-timeout %s)", age.Round(time.Millisecond), l.timeout)
}

// Watchdog checks the reader every quarter of the timeout until ctx is
// done, so that a stall is counted even when no one asks.
func (l *Liveness) Watchdog(ctx context.Context) {
	t := time.NewTicker(l.timeout / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			_ = l.Check(now)
		}
	}
}
