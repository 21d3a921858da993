package session

import (
	"context"
	"os"
	"time"
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Start is when the watch began (zero: now); ticks follow it every
	// Interval.
	Start    time.Time
	Interval time.Duration
	// Keys, when not nil, are the terminal's keystrokes, read at every
	// poll: q, Q and Ctrl-C end the watch; Key gets the others, and a
	// true from it ticks at once (a new sort order redraws).
	Keys <-chan byte
	Key  func(k byte) (tick bool)
	// Resized, when it receives (SIGWINCH), calls Redraw.
	Resized <-chan os.Signal
	Redraw  func()
	// Tick renders: every Interval, and once more, final, after the
	// ring is drained and the engine finished. Stopped, when set, runs
	// when the loop has ended, before that drain.
	Tick    func(now time.Time, final bool) error
	Stopped func()
	// Poll, when set, runs at every poll, between ticks: what must not
	// wait for the interval (the findings the engine completed: held
	// until a tick, a minute of a churn's findings was most of once's
	// memory).
	Poll func(now time.Time) error
}

// pollWatch is how often the watch loop looks at the keys and the clock.
const pollWatch = 50 * time.Millisecond

// Watch reads events into the session's engine until ctx ends or a key
// says to quit, ticking at each interval with the kernel's tallies
// brought in; then detaches, reads what is already in the ring (so a
// flood can't keep the drain going), finishes the engine and ticks a
// last time.
func Watch(ctx context.Context, s *Session, opts WatchOptions) error {
	start := opts.Start
	if start.IsZero() {
		start = time.Now()
	}
	next := start.Add(opts.Interval)
	err := s.Loop(pollWatch, func(now time.Time) (bool, error) {
		quit, tick := ctx.Err() != nil, false
		select {
		case <-opts.Resized:
			if opts.Redraw != nil {
				opts.Redraw()
			}
		default:
		}
	keys:
		for opts.Keys != nil && !quit {
			select {
			case k := <-opts.Keys:
				switch k {
				case 'q', 'Q', 3: // 3: Ctrl-C in raw mode
					quit = true
				default:
					if opts.Key != nil && opts.Key(k) {
						tick = true
					}
				}
			default:
				break keys
			}
		}
		if quit {
			return true, nil
		}
		if opts.Poll != nil {
			if err := opts.Poll(now); err != nil {
				return false, err
			}
		}
		if !tick && now.Before(next) {
			return false, nil
		}
		s.SyncTallies(now)
		next = now.Add(opts.Interval)
		return false, opts.Tick(now, false)
	})
	if err != nil {
		return err
	}
	if opts.Stopped != nil {
		opts.Stopped()
	}
	now := time.Now()
	if err := s.Drain(now); err != nil {
		return err
	}
	s.eng.Finish(now)
	return opts.Tick(now, true)
}
