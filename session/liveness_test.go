package session

import (
	"strings"
	"testing"
	"time"
)

// TestLiveness: a reader that beats is live however long no event comes;
// one that stops beating is stalled past the timeout, each stall counted
// once, and live again at its next beat.
func TestLiveness(t *testing.T) {
	l := NewLiveness(time.Second)
	t0 := time.Now()
	type step struct {
		beat    time.Duration // beat at t0+beat (negative: no beat)
		check   time.Duration // then check at t0+check
		stalled bool
		stalls  uint64
	}
	for i, s := range []step{
		{beat: 0, check: 900 * time.Millisecond},                // idle, beating
		{beat: 1 * time.Second, check: 1900 * time.Millisecond}, // still
		{beat: -1, check: 2100 * time.Millisecond, stalled: true, stalls: 1},
		{beat: -1, check: 5 * time.Second, stalled: true, stalls: 1}, // the same stall
		{beat: 5 * time.Second, check: 5 * time.Second, stalls: 1},   // live again
		{beat: -1, check: 7 * time.Second, stalled: true, stalls: 2}, // a second stall
	} {
		if s.beat >= 0 {
			l.beat(t0.Add(s.beat), uint64(i))
		}
		err := l.Check(t0.Add(s.check))
		if (err != nil) != s.stalled || l.Stalls() != s.stalls {
			t.Errorf("step %d: Check %v, %d stalls; want stalled %v, %d stalls", i, err, l.Stalls(), s.stalled, s.stalls)
		}
		if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "stalled")) {
			t.Errorf("step %d: %q: want one line saying it stalled", i, err)
		}
	}
	if l.EventsRead() != 4 {
		t.Errorf("EventsRead %d, want 4 (the last beat's)", l.EventsRead())
	}
}
