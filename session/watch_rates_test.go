package session

import (
	"context"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
)

// TestWatchRatesPerInterval: each tick's rows carry what they did since
// the tick before, not since the start: a process done before the first
// tick shows nothing in the second, one started between them only its
// own; the snapshot's Interval is the time between the ticks.
func TestWatchRatesPerInterval(t *testing.T) {
	log := &callLog{}
	src := newFake(log)
	k := &recSink{log: log, name: "a"}
	s := New(src, detect.New(detect.Options{Policy: detect.Bounded(0, 0)}), k)
	keys := make(chan byte, 4)
	sorts := []detect.SortKey{detect.SortDup, detect.SortTime}
	n := 0
	input := func(b []byte) WatchInput {
		for _, c := range b {
			if c == 'q' {
				return WatchInput{Quit: true}
			}
			n++ // every other key: a new order, so a tick now
		}
		return WatchInput{Sort: sorts[n%2]}
	}
	src.push(false, proc(10, "/a", 3)...)
	done := make(chan error, 1)
	go func() {
		done <- Watch(context.Background(), s, WatchOptions{Interval: time.Hour, Keys: keys, Input: input, Sort: detect.SortDup})
	}()
	time.Sleep(200 * time.Millisecond)
	keys <- 'x' // tick 1
	time.Sleep(200 * time.Millisecond)
	src.push(false, proc(11, "/b", 2)...)
	time.Sleep(200 * time.Millisecond)
	keys <- 'x' // tick 2
	time.Sleep(200 * time.Millisecond)
	keys <- 'q'
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not end the watch")
	}
	if len(k.ticks) < 2 {
		t.Fatalf("%d ticks, want 2 and the final", len(k.ticks))
	}
	delta := func(snap *detect.Snapshot, pid uint32) (detect.Delta, bool) {
		for _, r := range snap.Rows {
			if r.Pid == pid {
				return r.Delta, true
			}
		}
		return detect.Delta{}, false
	}
	first, second := k.ticks[0], k.ticks[1]
	if d, ok := delta(first, 10); !ok || d.Opens != 3 || d.WastedNs != 2000 {
		t.Errorf("tick 1, pid 10: %+v (row %v), want 3 opens, 2000 ns wasted", d, ok)
	}
	if first.Delta.WastedNs != 2000 {
		t.Errorf("tick 1: the watch's wasted ns %d, want 2000", first.Delta.WastedNs)
	}
	if d, ok := delta(second, 10); !ok || d != (detect.Delta{}) {
		t.Errorf("tick 2, pid 10: %+v (row %v), want nothing new", d, ok)
	}
	if d, ok := delta(second, 11); !ok || d.Opens != 2 || d.WastedNs != 1000 {
		t.Errorf("tick 2, pid 11: %+v (row %v), want 2 opens, 1000 ns wasted", d, ok)
	}
	if second.Delta.WastedNs != 1000 || second.Interval < 300*time.Millisecond || second.Interval > 3*time.Second {
		t.Errorf("tick 2: the watch's %+v over %v, want 1000 ns wasted over about 400ms", second.Delta, second.Interval)
	}
	// Totals still count from the start.
	if r := second.Rows; len(r) != 2 || second.Totals.DuplicateOpens != 3 {
		t.Errorf("tick 2: %d rows, %d duplicate opens in all; want 2 and 3", len(r), second.Totals.DuplicateOpens)
	}
}
