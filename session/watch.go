package session

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/oncetool/once/detect"
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Start is when the watch began (zero: now); ticks follow it every
	// Interval.
	Start    time.Time
	Interval time.Duration
	// Keys, when not nil, are the terminal's keystrokes, read at every
	// poll: q, Q and Ctrl-C end the watch; d, e and t sort the table
	// (by duplicate opens, exec probes, wasted time) and tick at once.
	Keys <-chan byte
	// Input, when set with Keys, takes the keys instead: at every poll
	// the bytes read since the last (none too, so that a lone Esc can be
	// told from the start of an arrow key by the pause after it). What
	// it returns says whether to quit and how to order and group the
	// table (empty: as it is); a change ticks at once.
	Input func(b []byte) WatchInput
	// Resized, when it receives (SIGWINCH), calls Redraw.
	Resized <-chan os.Signal
	Redraw  func()
	// Suspended, when it receives (SIGTSTP: Ctrl-Z), calls Suspend,
	// which gives the terminal back and stops once until it is
	// continued, then Redraw. Between polls, so that no frame is drawn
	// over the shell's screen.
	Suspended <-chan os.Signal
	Suspend   func()
	// Stopped, when set, runs when the loop has ended, before the
	// final drain (the live screen closed, so the final table goes to
	// the terminal's own screen).
	Stopped func()
	// The table each tick's snapshot carries: its order, its rows' kind
	// and how many.
	Sort  detect.SortKey
	Group detect.Group
	Top   int
	// LinesRepaired is put in every snapshot: the output file's cut
	// last line, ended when once opened it.
	LinesRepaired int
	// Gone, when set, reports whether a process (its pid and start time,
	// trace.ProcKey) has exited (ProcessGone):
	// for a while after events were lost, the live images quiet for
	// goneQuiet whose process it says is gone are ended, their exit
	// taken for one of the lost, so that their files are not held until
	// evicted.
	Gone func(pid uint32, start uint64) bool
	// GoneAlways asks Gone at every goneEvery, not only after a loss:
	// the kernel's attribute filters (--comm, --exclude-comm, --uid,
	// --cgroup) decide an exit event by the thread that ends its process
	// last, and drop it when that thread no longer passes (a process
	// that renamed itself, a named worker thread ending last, a setuid):
	// its image would show running, its files held, until evicted.
	GoneAlways bool
}

// After a loss, for goneWindow, every goneEvery Gone is asked about at
// most goneChecks images quiet for goneQuiet, each at most once per
// goneRecheck. Variables for the tests.
var (
	goneQuiet   = 200 * time.Millisecond
	goneEvery   = 250 * time.Millisecond
	goneRecheck = 5 * time.Second
	goneWindow  = time.Minute
	goneChecks  = 256
)

// WatchInput is what a key handler asks of the watch.
type WatchInput struct {
	Quit  bool
	Sort  detect.SortKey
	Group detect.Group
}

// pollWatch is how often the watch loop looks at the keys and the clock.
const pollWatch = 50 * time.Millisecond

// sortKeys are the keys that sort the live table.
var sortKeys = map[byte]detect.SortKey{'d': detect.SortDup, 'e': detect.SortExec, 'l': detect.SortLookup, 't': detect.SortTime}

// Watch reads events into the session's engine until ctx ends or a key
// says to quit. At every poll the findings the engine completed go to
// the sinks (held until a tick, a minute of a churn's findings was most
// of once's memory); at each interval, with the kernel's tallies brought
// in, a snapshot does (Sink.Tick). Then Watch detaches, reads what is
// already in the ring (so a flood can't keep the drain going), finishes
// the engine, ticks a last time, final, and closes the sinks.
func Watch(ctx context.Context, s *Session, opts WatchOptions) error {
	w := watch{s: s, opts: opts, start: opts.Start}
	if w.start.IsZero() {
		w.start = time.Now()
	}
	w.lastTick = w.start
	next := w.start.Add(opts.Interval)
	err := s.Loop(pollWatch, func(now time.Time) (bool, error) {
		quit, tick := ctx.Err() != nil, false
		select {
		case <-opts.Resized:
			if opts.Redraw != nil {
				opts.Redraw()
			}
		case <-opts.Suspended:
			if opts.Suspend != nil {
				opts.Suspend()
			}
			if opts.Redraw != nil {
				opts.Redraw()
			}
		default:
		}
		if opts.Input != nil && opts.Keys != nil && !quit {
			var in WatchInput
			in, tick = w.input()
			quit = in.Quit
		}
	keys:
		for opts.Input == nil && opts.Keys != nil && !quit {
			select {
			case k := <-opts.Keys:
				switch k {
				case 'q', 'Q', 3: // 3: Ctrl-C in raw mode
					quit = true
				default:
					if key, ok := sortKeys[k]; ok {
						w.opts.Sort, tick = key, true
					}
				}
			default:
				break keys
			}
		}
		if quit {
			return true, nil
		}
		if err := s.findings(now); err != nil {
			return false, err
		}
		if err := w.endGone(now); err != nil {
			return false, err
		}
		if !tick && now.Before(next) {
			return false, nil
		}
		s.SyncTallies(now)
		next = now.Add(opts.Interval)
		return false, w.tick(now, false)
	})
	if err == nil {
		err = w.stop()
	}
	return errors.Join(err, s.closeSinks(nil))
}

// input hands the keys read since the last poll to opts.Input and
// applies what it asks: tick says the table changed.
func (w *watch) input() (in WatchInput, tick bool) {
	w.keyBuf = w.keyBuf[:0]
	for len(w.keyBuf) < 256 {
		select {
		case k := <-w.opts.Keys:
			w.keyBuf = append(w.keyBuf, k)
			continue
		default:
		}
		break
	}
	in = w.opts.Input(w.keyBuf)
	if in.Sort != "" && in.Sort != w.opts.Sort {
		w.opts.Sort, tick = in.Sort, true
	}
	if in.Group != "" && in.Group != w.opts.Group {
		w.opts.Group, tick = in.Group, true
	}
	return in, tick
}

// watch is the state of one Watch between its ticks.
type watch struct {
	s          *Session
	opts       WatchOptions
	start      time.Time
	lastTick   time.Time
	lastEvents uint64
	// What the previous tick's totals were, for the rates of the
	// next: opens and lookups.
	lastOpens, lastLookups uint64
	keyBuf                 []byte
	// lost: the events lost as of the last tick; lossAt when that
	// count last grew.
	lost   uint64
	lossAt time.Time
	goneAt time.Time // when Gone was last asked
}

// stop ends the watch in order: the loop has ended; the drain reads
// every event queued before, the engine finishes, a final tick.
func (w *watch) stop() error {
	if w.opts.Stopped != nil {
		w.opts.Stopped()
	}
	now := time.Now()
	if err := w.s.Drain(now); err != nil {
		return err
	}
	w.s.eng.Finish(now)
	return w.tick(now, true)
}

// tick reads the counters, passes on the completed findings, and gives
// every sink the snapshot of now.
func (w *watch) tick(now time.Time, final bool) error {
	s := w.s
	if err := s.ReadCounters(); err != nil {
		return err
	}
	if err := s.findings(now); err != nil {
		return err
	}
	if final {
		// Every finding passed on: what a sink sends elsewhere is sent
		// now, so that the final counters say what it could not.
		s.flushFinal()
	}
	c := s.Counters()
	eng := s.eng
	w.sawLoss(now)
	eng.Expire(now)
	totals := eng.Totals()
	rate := 0.0
	interval := now.Sub(w.lastTick)
	if d := interval.Seconds(); d > 0 {
		rate = float64(totals.Events-w.lastEvents) / d
	}
	w.lastEvents, w.lastTick = totals.Events, now
	o := &w.opts
	shown := totals.WithKernel(&c)
	rows, all := eng.Table(o.Sort, o.Top, o.Group)
	// The rows carry what each did since the last tick; Mark starts the
	// next interval's counts.
	delta := eng.Mark()
	delta.Opens, delta.Lookups = sub(shown.Opens, w.lastOpens), sub(shown.Lookups, w.lastLookups)
	w.lastOpens, w.lastLookups = shown.Opens, shown.Lookups
	snap := &detect.Snapshot{Time: now, Uptime: now.Sub(w.start), EventsPerSec: rate, Counters: c, LinesRepaired: o.LinesRepaired,
		Totals: shown, Processes: eng.Images(), Sort: o.Sort, Group: o.Group, Rows: rows, RowsAll: all,
		Interval: interval, Delta: delta}
	for _, k := range s.sinks {
		if err := k.Tick(snap, final); err != nil {
			return err
		}
	}
	return s.flush()
}

// endGone, for a while after a loss, ends the images whose process has
// exited unseen (WatchOptions.Gone): not at every poll, at every
// goneEvery, the kernel's counters read then to see a loss.
func (w *watch) endGone(now time.Time) error {
	if w.opts.Gone == nil || now.Sub(w.goneAt) < goneEvery {
		return nil
	}
	w.goneAt = now
	if err := w.s.ReadCounters(); err != nil {
		return err
	}
	w.sawLoss(now)
	if !w.opts.GoneAlways && (w.lossAt.IsZero() || now.Sub(w.lossAt) >= goneWindow) {
		return nil
	}
	w.s.eng.EndGone(now.Add(-goneQuiet), now, goneRecheck, goneChecks, w.opts.Gone)
	return nil
}

// sawLoss notes when the count of events lost last grew.
func (w *watch) sawLoss(now time.Time) {
	c := w.s.Counters()
	if lost := c.Lost(); lost > w.lost {
		w.lost, w.lossAt = lost, now
	}
}

// sub is a - b, 0 when b is larger (a count the kernel's unsent tally
// brought forward, then the images' own caught up with).
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
