package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/internal/term"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/sink"
	"github.com/oncetool/once/trace"
	"golang.org/x/sys/unix"
)

// watchOutputs is what watch writes to, from its flags.
type watchOutputs struct {
	out, stderr io.Writer
	dw          *output.Degrading // -o: going on when the file can't take it
	repaired    int               // lines of the -o file repaired at its open
	exp         *metrics.Exporter // --metrics
	stacks      trace.StackSource // --stacks: the stacks finding lines name
}

// watchSession runs s with the sinks f chooses: the live screen on a
// terminal, else a table per interval, event lines (--events), JSON lines
// (--format json), metrics (--metrics), and the loss warning.
func watchSession(ctx context.Context, s *session.Session, f watchFlags, o watchOutputs, opts session.WatchOptions) error {
	var bw sink.Records = o.dw
	if o.dw == nil {
		bw = output.NewRecordWriter(o.out, 64<<10)
	}
	defer bw.Flush()
	opts.LinesRepaired = o.repaired
	s.AddSink(&sink.LossWarning{W: o.stderr})
	if o.dw != nil {
		s.AddSink(sink.Dropped{D: o.dw})
	}
	if o.exp != nil {
		m := &sink.Metrics{Exp: o.exp, Eng: s.Engine()}
		if o.dw != nil {
			m.BytesDropped = func() uint64 { _, b := o.dw.Dropped(); return b }
		}
		s.AddSink(m)
	}
	// The records still queued at the end get 5s: a SIGTERM's grace
	// (the DaemonSet's 10s) is the drain's too.
	if k, err := f.otlp.sink(o.stacks, o.stderr, 5*time.Second); err != nil {
		return err
	} else if k != nil {
		s.AddSink(k)
	}
	if beforeRender != nil {
		s.AddSink(renderHook{})
	}
	var ev *sink.Events
	if f.events {
		ev = sink.NewEvents(bw, f.format, f.clock == "wall", collector.WallOffset())
		ev.CallsOnly, ev.Failed = true, f.failed
		if ev.EP != nil {
			ev.EP.SetWide(f.wide)
		}
		s.AddSink(ev)
	}
	switch {
	case f.format == "json":
		jl := report.NewJSONLines(bw)
		if ev != nil {
			jl = ev.JL
		}
		jl.SetClock(collector.WallOffset())
		if o.stacks != nil {
			jl.SetStacks(o.stacks)
		}
		s.AddSink(&sink.JSONLines{JL: jl, W: bw, Findings: !f.events, FinalOnly: f.events})
	case f.events:
		s.AddSink(&sink.Table{W: bw, FinalOnly: true})
	case f.output == "" && term.IsTerminal(o.out):
		// Keys only from a terminal: raw mode (no echo, a key at a
		// time) is put back on any way out, a signal included (it
		// ends the watch's context, and these defers run).
		raw, keys := term.RawKeys(os.Stdin)
		defer raw.Restore()
		// Like top: an alternate screen, left on any way out (q, a
		// signal, a panic: deferred). The summary goes to the
		// terminal's own screen, under what the shell showed before.
		screen := term.OpenScreen(o.out)
		defer screen.Close()
		if !f.topGiven {
			opts.Top = screenRows
		}
		live := newScreenSink(screen, bw, &opts, f.top)
		s.AddSink(live)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		opts.Stopped, opts.Resized, opts.Redraw = screen.Close, winch, live.Redraw
		// Ctrl-Z as top takes it: the terminal given back to the shell
		// (its mode, its screen, the cursor) before once stops, and
		// taken again when it is continued.
		tstp := make(chan os.Signal, 1)
		signal.Notify(tstp, syscall.SIGTSTP)
		defer signal.Stop(tstp)
		opts.Suspended = tstp
		opts.Suspend = func() {
			raw.Restore()
			screen.Suspend()
			stopSelf()
			raw.Resume()
			screen.Resume()
		}
		if keys != nil {
			opts.Keys, opts.Input = keys, live.Input
		}
	default:
		s.AddSink(&sink.Table{W: bw})
	}
	if err := session.Watch(ctx, s, opts); err != nil {
		return err
	}
	return bw.Flush()
}

// renderHook runs beforeRender (tests) at each tick, before the table or
// the summary.
type renderHook struct{ session.NopSink }

func (renderHook) Tick(*detect.Snapshot, bool) error {
	beforeRender()
	return nil
}

// stopSelf stops once as Ctrl-Z stops a program that does not catch
// it, and returns when once is continued. By SIGSTOP, as top does: Go
// keeps its own handler for SIGTSTP once notified of it, which drops the
// signal when nothing listens. Sent to this thread: sent to the process,
// another thread may take it while this one goes on to take the
// terminal back before the stop.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
}

// stopGrace is how long watch may take to stop once told to: past the
// OTLP sink's 5s for its queue, within a DaemonSet's 10s of grace.
const stopGrace = 8 * time.Second

// stopGuard ends once if, stopGrace after ctx is done (a signal,
// --duration), the watch has not ended (done): its drain loop is then
// blocked writing to a reader that stopped reading and holds the pipe
// open, where it never sees the stop. The kernel lets go of the programs
// as the process exits; what was not written is lost, and said so.
func stopGuard(ctx context.Context, done <-chan struct{}, stderr io.Writer) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	select {
	case <-done:
	case <-time.After(stopGrace):
		fmt.Fprintf(stderr, "once: stopped without the rest of its output: a write to its output had not returned %v after the stop (a reader that stopped reading?)\n", stopGrace)
		os.Exit(exitTrace)
	}
}

// followCgroup keeps --cgroup on its path every second: a cgroup
// removed and made again (a service restarted) is another cgroup, which
// the kernel's filter would never pass. Each change is said on stderr.
func followCgroup(ctx context.Context, tr *collector.Tracer, path string, stderr io.Writer) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	said := "" // the last error said: not said again every second
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		switch ch, err := tr.FollowCgroupPath(); {
		case err != nil:
			if err.Error() != said {
				said = err.Error()
				fmt.Fprintf(stderr, "once: WARNING: --cgroup: %s\n", report.Escape(said))
			}
		case ch == collector.CgroupGone:
			fmt.Fprintf(stderr, "once: WARNING: cgroup %s was removed: nothing matches until it is made again\n", report.Escape(path))
		case ch == collector.CgroupRemade:
			fmt.Fprintf(stderr, "once: cgroup %s was made again: watching the new one\n", report.Escape(path))
		}
	}
}
