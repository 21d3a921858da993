package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/internal/term"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// watcher renders a watch session: the live table, event lines, JSON
// lines and metrics, at each interval.
type watcher struct {
	f      watchFlags
	s      *session.Session
	exp    *metrics.Exporter
	stacks trace.StackSource // --stacks: the stacks finding lines name
	// undecided: events of a new container's cgroup dropped while its
	// runtime had not yet named it (--container, --pod, --namespace).
	undecided uint64
	sort      detect.SortKey
	group     detect.Group
	out       io.Writer
	stderr    io.Writer
	start     time.Time

	bw          records
	dw          *output.Degrading // -o: bw, going on when the file can't take it
	screen      *term.Screen
	last        *detect.Snapshot // the screen's, for a redraw on resize
	repaired    int              // lines of the -o file repaired at its open
	interactive bool
	lines       *eventLines       // --events, --format json
	jl          *report.JSONLines // --format json: its findings and summaries too
	lastEvents  uint64
	lastTick    time.Time
	warnedLoss  uint64
}

func (w *watcher) run(ctx context.Context) (int, error) {
	if w.bw = w.dw; w.dw == nil {
		w.bw = output.NewRecordWriter(w.out, 64<<10)
	}
	defer w.bw.Flush()
	w.interactive = w.f.format == "text" && !w.f.events && w.f.output == "" && term.IsTerminal(w.out)
	opts := session.WatchOptions{Start: w.start, Interval: w.f.interval, Tick: w.tick,
		Key: w.key, Redraw: w.redraw, Poll: w.findings}
	if w.interactive {
		restore, ch := term.RawKeys(os.Stdin)
		defer restore()
		opts.Keys = ch
		// Like top: an alternate screen, left on any way out (q, a
		// signal, a panic: deferred). The final table goes to the
		// terminal's own screen, under what the shell showed before.
		w.screen = term.OpenScreen(w.out)
		defer w.screen.Close()
		opts.Stopped = w.screen.Close
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		opts.Resized = winch
	}
	if w.f.format == "json" || w.f.events {
		w.lines = newEventLines(w.bw, w.f.format, w.f.clock)
	}
	if w.f.format == "json" {
		w.jl = w.lines.jl
		if w.stacks != nil {
			w.jl.SetStacks(w.stacks)
		}
	}
	w.s.OnEvent = w.event
	w.lastTick = w.start
	if err := session.Watch(ctx, w.s, opts); err != nil {
		return 0, err
	}
	return 0, w.bw.Flush()
}

// key sorts the table by d, e or t: true when the order changed.
func (w *watcher) key(k byte) bool {
	switch k {
	case 'd':
		w.sort = detect.SortDup
	case 'e':
		w.sort = detect.SortExec
	case 't':
		w.sort = detect.SortTime
	default:
		return false
	}
	return true
}

// redraw paints the last table again (a resized terminal).
func (w *watcher) redraw() {
	if w.last != nil {
		w.draw(w.last)
	}
}

// event passes one event, with what the engine made of it, to the metrics
// and the event lines.
func (w *watcher) event(ev *trace.Event, ann detect.Annotation) {
	if w.exp != nil {
		who := whoOf(ev.Task.Comm, ann.Proc)
		switch ev.Kind {
		case trace.EventOpen:
			if ev.Open.Unsent > 0 {
				w.exp.Opens(who, uint64(ev.Open.Unsent), 0)
			}
			if ev.Open.LookupsUnsent > 0 {
				w.exp.Lookups(who, uint64(ev.Open.LookupsUnsent))
			}
			if ev.Open.Syscall.IsLookup() {
				w.exp.Lookup(who, ev.Open.Ret < 0)
				break
			}
			w.exp.Open(who, ev.Open.Ret < 0)
			if ann.Extra > 0 {
				w.exp.DuplicateOpen(who)
			}
		case trace.EventExec:
			w.exp.Exec(who, ev.Exec.Ret < 0)
		case trace.EventUnsent:
			if comm, ok := w.s.Engine().Comm(ev.Task.Image()); ok {
				who.Comm = comm
			}
			w.exp.Opens(who, uint64(ev.Proc.Unsent), 0)
			if ev.Proc.LookupsUnsent > 0 {
				w.exp.Lookups(who, uint64(ev.Proc.LookupsUnsent))
			}
		case trace.EventTally:
			w.exp.Opens(who, ev.Tally.Opens, ann.Extra)
		}
	}
	if !w.f.events || ev.Kind == trace.EventTally || ev.Kind == trace.EventKeptStack {
		return
	}
	if w.f.failed {
		switch {
		case ev.Kind == trace.EventOpen && ev.Open.Ret >= 0, ev.Kind == trace.EventExec && ev.Exec.Ret >= 0:
			return
		}
	}
	w.lines.event(ev, ann)
}

// findings passes the findings completed since the last call to the
// metrics and the JSON lines: at every poll, not only at a tick, so that
// what the engine completes is not held for a whole interval.
func (w *watcher) findings(now time.Time) error {
	findings := w.s.Engine().Drain()
	for i := range findings {
		fd := &findings[i]
		if w.exp != nil {
			who := whoOf(fd.Comm, fd.Proc)
			w.exp.Finding(who, fd.Kind, fd.Avoidable(), fd.WastedNs)
			if fd.Info().ExecSearch {
				w.exp.ExecProbes(who, fd.Failed, fd.WastedNs)
			}
		}
		if w.jl != nil && !w.f.events {
			if err := w.jl.Finding(fd, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// tick refreshes the counters, emits completed findings and draws the
// table or writes a summary line.
func (w *watcher) tick(now time.Time, final bool) error {
	if err := w.s.ReadCounters(); err != nil {
		return err
	}
	c := w.s.Counters()
	c.UnnamedDropped = w.undecided
	w.outputDropped(&c)
	eng := w.s.Engine()
	if lost := c.Lost(); lost > w.warnedLoss {
		fmt.Fprintf(w.stderr, "once: WARNING: %d events lost so far (dropped %d, map-full %d, missed-enter %d); counts are lower bounds\n",
			lost, c.DroppedEvents, c.EnterMapFull, c.MissedEnter)
		w.warnedLoss = lost
	}
	if err := w.findings(now); err != nil {
		return err
	}
	eng.Expire(now)
	totals := eng.Totals()
	rate := 0.0
	if d := now.Sub(w.lastTick).Seconds(); d > 0 {
		rate = float64(totals.Events-w.lastEvents) / d
	}
	w.lastEvents, w.lastTick = totals.Events, now
	if w.exp != nil {
		w.exp.SetCounters(&c)
		w.exp.SetProcesses(eng.Images())
	}
	if beforeRender != nil {
		beforeRender()
	}
	snap := &detect.Snapshot{Time: now, Uptime: now.Sub(w.start), EventsPerSec: rate, Counters: c, LinesRepaired: w.repaired,
		Totals: totals.WithKernel(&c), Processes: eng.Images(), Sort: w.sort, Group: w.group, Rows: eng.Rows(w.sort, w.f.top, w.group)}
	bw := w.bw
	switch {
	case w.jl != nil:
		if !w.f.events || final {
			if err := w.jl.Summary(snap); err != nil {
				return err
			}
		}
	case w.f.events:
		if final {
			fmt.Fprintf(bw, "\n")
			if err := report.WatchTable(bw, snap); err != nil {
				return err
			}
		}
	case w.interactive && !final:
		w.last = snap
		return w.draw(snap)
	default:
		bw.WriteString("\n")
		if err := report.WatchTable(bw, snap); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// keysHelp is the last line of the live screen.
const keysHelp = "keys: d sort by duplicate opens, e by exec probes, t by wasted time, q quit"

// draw paints the live screen in place, every line fitted to the
// terminal's size, without clearing it first (no flicker).
func (w *watcher) draw(snap *detect.Snapshot) error {
	cols, rows := w.screen.Size()
	return w.screen.Draw(report.WatchScreen(snap, cols, rows, keysHelp))
}

// whoOf is the metric labels of a process: its comm and its container's
// namespace, pod and name when it ran in one.
func whoOf(comm string, p *trace.Process) metrics.Who {
	w := metrics.Who{Comm: comm}
	if p != nil && p.Container != nil {
		c := p.Container
		w.Namespace, w.Pod, w.Container = c.Namespace, c.Pod, c.Name
		if w.Container == "" && len(c.ID) >= 12 {
			// An unnamed container (runc run without a runtime that
			// names it) is known by its short ID, as docker ps shows.
			w.Container = c.ID[:12]
		}
	}
	return w
}
