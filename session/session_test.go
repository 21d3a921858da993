package session

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// inOrder reports whether want occur in log in that order (others may
// come between).
func inOrder(log string, want ...string) bool {
	i := 0
	for _, w := range want {
		j := strings.Index(log[i:], w)
		if j < 0 {
			return false
		}
		i += j + len(w)
	}
	return true
}

// TestWatch runs Watch over a fake source: events read while it runs and
// those still queued when it stops reach every sink, in order, before
// the final tick; nothing after the detach does; the shutdown is ordered
// (detach, flush, the queued events, tallies, counters, final tick,
// close); the counters are the source's, the kernel's and the sinks'.
func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ready         []trace.Event // read while the watch runs
		pending       []trace.Event // still queued at the stop: the final drain's
		afterDetach   []trace.Event // made after the detach: never seen
		kernelDropped uint64
		sinkDropped   uint64
		wantDups      []string // paths of duplicate_open findings
	}{
		{name: "idle"},
		{name: "events while running", ready: proc(10, "/a", 3), wantDups: []string{"/a"}},
		{name: "events queued at the stop", pending: proc(11, "/b", 2), wantDups: []string{"/b"}},
		{name: "both", ready: proc(10, "/a", 2), pending: proc(11, "/b", 2), wantDups: []string{"/a", "/b"}},
		{name: "nothing after the detach", pending: proc(11, "/b", 2), afterDetach: proc(12, "/c", 4), wantDups: []string{"/b"}},
		// No exit: the image is live at the stop, its duplicate a
		// finding only once the engine is finished, before the final tick.
		{name: "a live image finished", ready: proc(13, "/d", 2)[:2], wantDups: []string{"/d"}},
		{name: "kernel loss counted", ready: proc(10, "/a", 1), kernelDropped: 4},
		{name: "a sink's drops counted", ready: proc(10, "/a", 1), sinkDropped: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &callLog{}
			src := newFake(log)
			src.dropped = tc.kernelDropped
			src.push(false, tc.ready...)
			src.push(true, tc.pending...)
			src.onDetach = func() { src.push(false, tc.afterDetach...) }
			a := &recSink{log: log, name: "a", dropped: tc.sinkDropped}
			b := &recSink{log: log, name: "b"}
			s := New(src, detect.New(detect.Options{Policy: detect.Bounded(0, 0)}), a, b)
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			if err := Watch(ctx, s, WatchOptions{Interval: 20 * time.Millisecond, Top: 5}); err != nil {
				t.Fatal(err)
			}

			want := len(tc.ready) + len(tc.pending)
			for _, k := range []*recSink{a, b} {
				if len(k.events) != want {
					t.Errorf("sink %s got %d events, want %d", k.name, len(k.events), want)
				}
				if k.finals != 1 || k.closes != 1 || k.closed[0] != nil {
					t.Errorf("sink %s: %d final ticks, %d closes (%v); want one each, closed with no result", k.name, k.finals, k.closes, k.closed)
				}
				if len(k.ticks) < 2 {
					t.Errorf("sink %s: %d ticks in 150ms at a 20ms interval", k.name, len(k.ticks))
				}
				var dups []string
				for _, f := range k.findings {
					if f.Kind == trace.KindDuplicateOpen {
						dups = append(dups, f.Path)
					}
				}
				slices.Sort(dups)
				if !slices.Equal(dups, tc.wantDups) {
					t.Errorf("sink %s: duplicate opens of %v, want %v", k.name, dups, tc.wantDups)
				}
			}
			if src.refused != uint64(len(tc.afterDetach)) {
				t.Errorf("%d events refused after the detach, want %d", src.refused, len(tc.afterDetach))
			}

			order := []string{"detach", "flush", "tallies", "counters", "a final tick", "b final tick", "a close", "b close"}
			if len(tc.pending) > 0 {
				// The final drain's events, read after the flush and
				// before the final tick, fanned out in sink order.
				order = []string{"detach", "flush", "a event", "b event", "tallies", "counters", "a final tick", "b final tick", "a close", "b close"}
			}
			if got := log.String(); !inOrder(got, order...) {
				t.Errorf("shutdown:\n got %s\nwant in order %s", got, strings.Join(order, ", "))
			}
			if got := log.String(); strings.Contains(got[strings.Index(got, "a final tick"):], "event") {
				t.Errorf("an event after the final tick: %s", got)
			}

			c := a.ticks[len(a.ticks)-1].Counters
			if c.EventsReceived != uint64(want) || c.EventsSent != src.sent {
				t.Errorf("final counters: received %d, sent %d; want %d and %d", c.EventsReceived, c.EventsSent, want, src.sent)
			}
			if c.DroppedEvents != tc.kernelDropped || c.Lost() != tc.kernelDropped {
				t.Errorf("final counters: dropped %d, lost %d; want %d", c.DroppedEvents, c.Lost(), tc.kernelDropped)
			}
			if c.OutputDropped != tc.sinkDropped {
				t.Errorf("final counters: output dropped %d, want %d (the sink's)", c.OutputDropped, tc.sinkDropped)
			}
			if tot := a.ticks[len(a.ticks)-1].Totals; tot.Events != uint64(want) {
				t.Errorf("final totals: %d events, want %d", tot.Events, want)
			}
		})
	}
}

// TestWatchErrors: a read failure or a sink's failure ends the watch with
// that error, the sinks closed all the same; a read failure skips the
// final tick (there is no trustworthy final state).
func TestWatchErrors(t *testing.T) {
	errSink := errors.New("sink: injected")
	for _, tc := range []struct {
		name      string
		readErr   error
		tickErr   error
		want      error
		wantFinal int
	}{
		{name: "read failure", readErr: errRead, want: errRead},
		{name: "sink failure", tickErr: errSink, want: errSink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &callLog{}
			src := newFake(log)
			src.readErr = tc.readErr
			k := &recSink{log: log, name: "a", tickErr: tc.tickErr}
			s := New(src, detect.New(detect.Options{Policy: detect.Bounded(0, 0)}), k)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := Watch(ctx, s, WatchOptions{Interval: 10 * time.Millisecond})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Watch: %v, want %v", err, tc.want)
			}
			if k.closes != 1 || k.finals != tc.wantFinal {
				t.Errorf("%d closes, %d final ticks; want 1 and %d", k.closes, k.finals, tc.wantFinal)
			}
		})
	}
}

// TestWatchKeys: q ends the watch; d, e and t sort the table and tick at
// once.
func TestWatchKeys(t *testing.T) {
	log := &callLog{}
	src := newFake(log)
	k := &recSink{log: log, name: "a"}
	s := New(src, detect.New(detect.Options{Policy: detect.Bounded(0, 0)}), k)
	keys := make(chan byte, 4)
	keys <- 'd'
	done := make(chan error, 1)
	go func() {
		done <- Watch(context.Background(), s, WatchOptions{Interval: time.Hour, Keys: keys, Sort: detect.SortTime})
	}()
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
	// A tick for d (an hour's interval would have none), the final one.
	if len(k.ticks) != 2 || k.ticks[0].Sort != detect.SortDup || k.finals != 1 {
		t.Errorf("%d ticks (first sorted by %q), %d final; want the d tick sorted by dup, then the final", len(k.ticks), k.ticks[0].Sort, k.finals)
	}
}

// TestLoop: the loop ticks at least every poll while idle, and ends on
// tick's word or error, or a read failure.
func TestLoop(t *testing.T) {
	errTick := errors.New("tick: injected")
	for _, tc := range []struct {
		name      string
		readErr   error
		tickErr   error
		stopAfter int
		want      error
	}{
		{name: "stop", stopAfter: 3},
		{name: "tick error", stopAfter: 100, tickErr: errTick, want: errTick},
		{name: "read failure", stopAfter: 100, readErr: errRead, want: errRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake(&callLog{})
			src.push(false, proc(10, "/a", 2)...)
			src.readErr = tc.readErr
			k := &recSink{log: &callLog{}, name: "a"}
			s := New(src, detect.New(detect.Options{Policy: detect.Bounded(0, 0)}), k)
			ticks := 0
			start := time.Now()
			err := s.Loop(5*time.Millisecond, func(time.Time) (bool, error) {
				ticks++
				return ticks >= tc.stopAfter, tc.tickErr
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Loop: %v, want %v", err, tc.want)
			}
			if len(k.events) != 3 {
				t.Errorf("%d events reached the sink, want 3 (read before anything else)", len(k.events))
			}
			if tc.want == nil && (ticks != tc.stopAfter || time.Since(start) > time.Second) {
				t.Errorf("%d ticks in %v, want %d at a 5ms poll", ticks, time.Since(start), tc.stopAfter)
			}
		})
	}
}

// TestRun runs a command over a fake launcher: the events still queued
// when it ends are drained into the result, whose counters the sinks'
// Close sees; a run that saw nothing says so; a source that can't start
// a command is refused.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pending  []trace.Event
		launcher bool
		want     error
	}{
		{name: "events drained at the end", pending: proc(10, "/a", 3), launcher: true},
		{name: "nothing traced", launcher: true, want: ErrNothingTraced},
		{name: "not a launcher", pending: proc(10, "/a", 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &callLog{}
			fake := newFake(log)
			fake.push(true, tc.pending...)
			var src Source = fake
			if !tc.launcher {
				src = struct{ Source }{fake}
			}
			k := &recSink{log: log, name: "a", dropped: 2}
			s := New(src, detect.New(detect.Options{Policy: detect.KeepAll(trace.FilesAll)}), k)
			res, err := Run(context.Background(), s, exec.Command("true"), RunOptions{Linger: 20 * time.Millisecond})
			switch {
			case !tc.launcher:
				if err == nil || res != nil {
					t.Fatalf("Run over a source that can't start a command: %v, %v; want an error", res, err)
				}
				if k.closes != 1 || k.closed[0] != nil {
					t.Errorf("sink closed %d times (%v); want once, with no result", k.closes, k.closed)
				}
				return
			case !errors.Is(err, tc.want):
				t.Fatalf("Run: %v, want %v", err, tc.want)
			}
			if res.Counters.EventsReceived != uint64(len(tc.pending)) || res.Counters.OutputDropped != 2 {
				t.Errorf("result counters: received %d, output dropped %d; want %d and 2",
					res.Counters.EventsReceived, res.Counters.OutputDropped, len(tc.pending))
			}
			if len(k.events) != len(tc.pending) || k.closes != 1 || k.closed[0] != res {
				t.Errorf("sink: %d events, %d closes; want %d and one close with the result", len(k.events), k.closes, len(tc.pending))
			}
			if got := log.String(); !inOrder(got, "detach", "flush", "counters", "a close") {
				t.Errorf("shutdown: %s", got)
			}
			if fake.followed {
				t.Error("once's children still followed after the command started")
			}
		})
	}
}
