package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oncetool/once/trace"
)

// RunOptions configure Run.
type RunOptions struct {
	// Linger is how long to keep tracing, after the command exits, for
	// descendants still running (daemons, orphans). Those still alive then
	// are reported as running.
	Linger time.Duration
	// OnLoss, when set, is called as soon as the loss counters, or the
	// mapping records --stacks lost, go up (checked four times a second),
	// with the counters so far: loss is said the moment it starts, not
	// only in the final report.
	OnLoss func(trace.Counters)
	// Signals are once's own SIGINT and SIGTERM. A SIGTERM is passed on
	// to the command; so is a Ctrl-C (SIGINT) that may have come before
	// the command existed (it reached only once), if the command is
	// still running shortly after, and a later one the command could not
	// have had (see signalRelay). Any other Ctrl-C reached the command
	// too (one process group): the command decides, and what it did is
	// reported. Result.Interrupted names a signal passed on.
	Signals <-chan os.Signal
	// OnStart, when set, is called with the command's pid right after it
	// started.
	OnStart func(pid int)
	// Timeout, when positive, bounds how long the command may run: past
	// it the command gets SIGTERM, and SIGKILL KillAfter later if it is
	// still there. Result.TimedOut says so. Descendants are not signalled
	// (like timeout --foreground); those that outlive it are reported
	// running after Linger.
	Timeout time.Duration
	// KillAfter is the grace between SIGTERM and SIGKILL on Timeout;
	// zero means DefaultKillAfter.
	KillAfter time.Duration
	// Gone says whether the process pid that started at start (trace.ProcKey)
	// has exited; nil: ProcessGone. After events were lost, a process
	// not seen exiting that is gone when the trace ends had its exit
	// lost: it is not reported as still running.
	Gone func(pid uint32, start uint64) bool
}

// DefaultKillAfter is the grace a timed-out command gets between SIGTERM
// and SIGKILL.
const DefaultKillAfter = 2 * time.Second

// ErrNothingTraced is returned by Run when not a single event was seen: a
// tracer that matched nothing must never look like a clean run.
var ErrNothingTraced = errors.New("traced nothing: no event was seen from the command")

// pollRun is how often Run looks at the command while events flow.
const pollRun = 25 * time.Millisecond

// Run starts cmd (not yet started) traced from its first instruction and
// returns when it and its descendants have exited (or Linger passed). The
// source must be a Launcher (a tracer opened with Options.Tracked), and
// the engine made with once's own pid as its Spawner. The sinks are
// flushed at every poll (event lines as they happen) and closed with the
// result. The Result's ExitCode is the command's, shell style
// (128+signal).
func Run(ctx context.Context, s *Session, cmd *exec.Cmd, opts RunOptions) (_ *trace.Result, rerr error) {
	closed := false
	defer func() {
		// On a way out without a result, the sinks are closed all the
		// same (their buffered lines written).
		if !closed {
			if err := s.closeSinks(nil); err != nil && rerr == nil {
				rerr = fmt.Errorf("output: %w", err)
			}
		}
	}()
	tr, ok := s.src.(Launcher)
	if !ok {
		return nil, fmt.Errorf("run: the source (%T) can't start a command traced", s.src)
	}
	self := os.Getpid()
	started := time.Now()
	killAfter := opts.KillAfter
	if killAfter <= 0 {
		killAfter = DefaultKillAfter
	}

	relay := relaySignals(opts.Signals)
	defer relay.stop()

	// Follow what once forks, start the command, stop following: the
	// child is in the tracked set before it runs a single instruction.
	if err := tr.FollowChildren(self); err != nil {
		return nil, fmt.Errorf("follow children: %w", err)
	}
	err := startCommand(s, cmd)
	if cmd.Process != nil {
		relay.pid.Store(int64(cmd.Process.Pid))
	}
	relay.startedAt.Store(time.Now().UnixNano())
	if uerr := tr.Unfollow(self); uerr != nil && err == nil {
		err = fmt.Errorf("stop following once's children: %w", uerr)
	}
	type waitResult struct {
		err error
		at  time.Time
	}
	waited := make(chan waitResult, 1)
	var startErrno syscall.Errno
	var pe *fs.PathError
	switch {
	case err == nil:
		if opts.OnStart != nil {
			opts.OnStart(cmd.Process.Pid)
		}
		go func() {
			err := cmd.Wait()
			waited <- waitResult{err, time.Now()}
		}()
	case errors.As(err, &pe) && pe.Op == "fork/exec" && errors.As(pe.Err, &startErrno):
		// The command's own execve failed in the child once forked: it
		// was traced like any exec, and is reported; the child is gone.
		waited <- waitResult{err, time.Now()}
	default:
		return nil, err
	}

	var exitedAt, termAt, lastLossCheck, earlyAt time.Time
	interrupted := "" // the signal of once's own passed on, if any
	var exitCode int
	var exitSignal string
	var reportedLoss, reportedMaps uint64
	rootDone, killed, timedOut := false, false, false
	const lossEvery = 250 * time.Millisecond
	err = s.Loop(pollRun, func(now time.Time) (bool, error) {
		// Lines as they happen, not when a buffer fills. A sink's
		// failure to write is its own to count, not the trace's end.
		_ = s.flush()
		if opts.OnLoss != nil && now.Sub(lastLossCheck) >= lossEvery {
			// A dozen map reads: not at every poll of an idle run.
			lastLossCheck = now
			if s.ReadCounters() == nil {
				if c := s.Counters(); c.Lost() > reportedLoss || c.StacksMapsLost > reportedMaps {
					reportedLoss, reportedMaps = c.Lost(), c.StacksMapsLost
					opts.OnLoss(c)
				}
			}
		}
		if !rootDone {
			select {
			case w := <-waited:
				rootDone, exitedAt = true, w.at
				exitCode = exitStatus(cmd, startErrno)
				exitSignal = killedBy(cmd)
			case <-ctx.Done():
				_ = cmd.Process.Kill()
			case sig := <-relay.out:
				_ = cmd.Process.Signal(sig)
				interrupted = signalName(sig)
			case <-relay.early:
				earlyAt = now
			default:
				switch {
				case !earlyAt.IsZero() && now.Sub(earlyAt) >= earlyGrace:
					// Still running: the Ctrl-C reached once alone.
					earlyAt = time.Time{}
					_ = cmd.Process.Signal(os.Interrupt)
					interrupted = "SIGINT"
				case opts.Timeout <= 0:
				case termAt.IsZero() && now.Sub(started) >= opts.Timeout:
					timedOut, termAt = true, now
					_ = cmd.Process.Signal(syscall.SIGTERM)
				case !termAt.IsZero() && !killed && now.Sub(termAt) >= killAfter:
					killed = true
					_ = cmd.Process.Kill()
				}
			}
			return false, nil
		}
		// The command has exited; its exit event may still be in flight,
		// and descendants may outlive it.
		eng := s.eng
		done := eng.Running() == 0 && (startErrno != 0 || eng.Exited(cmd.Process.Pid))
		return done || now.Sub(exitedAt) > opts.Linger || ctx.Err() != nil, nil
	})
	if err != nil {
		return nil, err
	}
	// Everything already in the ring belongs to this run; detached first,
	// so descendants still running can't keep the drain going.
	if err := s.Drain(time.Now()); err != nil {
		return nil, err
	}
	if c := s.Counters(); c.Lost() > 0 {
		gone := opts.Gone
		if gone == nil {
			gone = ProcessGone()
		}
		if gone != nil {
			s.eng.GoneUnseen(gone)
		}
	}
	out := s.eng.Result()
	s.markGenerated(out.Findings)
	out.Command, out.ExitCode, out.ExitSignal, out.Started = cmd.Args, exitCode, exitSignal, started
	if tr.RedactsArgs() {
		out.Command, out.ArgvRedacted = trace.RedactCommand(cmd.Args), true
	}
	out.TimedOut, out.Timeout, out.Interrupted = timedOut, opts.Timeout, interrupted
	out.StartErrno = int32(startErrno)
	if startErrno != 0 {
		out.StartReason = ExecFailure(cmd.Path, int32(startErrno))
	}
	out.Duration = exitedAt.Sub(started)
	if ps := cmd.ProcessState; ps != nil {
		out.CPU = ps.UserTime() + ps.SystemTime()
	}
	// The stacks first: symbolizing them counts what their files' caps
	// and the names' cut.
	if s.Stacks != nil {
		s.Stacks.Export(out)
	}
	// The sinks flushed first: what they could not write is counted.
	ferr := s.flush()
	out.Counters = s.Counters()
	closed = true
	// The sinks send what is left (--otlp: up to its flush timeout, 10
	// s, against a collector that does not answer): a signal to once
	// then (a second Ctrl-C, the first having ended the command) ends
	// that sending at once, what was not sent counted.
	stopWatch := abortOnSignal(s, relay, opts.Signals)
	cerr := s.closeSinks(out)
	stopWatch()
	if err := errors.Join(ferr, cerr); err != nil {
		defer func() {
			if rerr == nil {
				rerr = fmt.Errorf("output: %w", err)
			}
		}()
	}
	if out.Counters.EventsReceived == 0 {
		// A damaged link cache can load programs that see nothing: on
		// doubt, the next start resolves from the kernel's BTF again.
		if tr.DiscardCachedLink() {
			return out, fmt.Errorf("%w (the link cache was discarded: the next run resolves from the kernel's BTF)", ErrNothingTraced)
		}
		return out, ErrNothingTraced
	}
	return out, nil
}

// signalRelay passes on to the command the signals of once's own it
// should get (RunOptions.Signals), read at once, as they come.
//
// A Ctrl-C reached the command too if the command was in once's process
// group when it came. Go tells once of a signal some time after it came,
// so one told just before or after the command started may have come
// before its fork (once alone got it) or after (both did). Such a
// SIGINT goes to early: Run passes it on if the command is still
// running earlyGrace later. A command that got it is gone by then: its
// handlers were the defaults across its exec, and a SIGINT kills.
//
// A SIGINT told later reached the command as well when it came from the
// terminal and the command is still in once's process group. When the
// command has a group of its own (setsid, a job-control shell), nothing
// but once can pass it on, and once does at once; else a second one is
// passed on (once alone was signalled: kill -INT, or a command that
// ignored the first).
type signalRelay struct {
	startedAt atomic.Int64 // UnixNano when the command was started; 0 before
	pid       atomic.Int64 // the command's pid once started
	out       chan os.Signal
	early     chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
	exited    chan struct{} // closed when the relay's goroutine returned
}

// earlyWindow: a SIGINT told this long after the command started may
// still have come before it; earlyGrace: how long Run waits to see
// whether the command got it.
const (
	earlyWindow = 50 * time.Millisecond
	earlyGrace  = 100 * time.Millisecond
)

func relaySignals(in <-chan os.Signal) *signalRelay {
	r := &signalRelay{out: make(chan os.Signal, 4), early: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	if in == nil {
		close(r.exited)
		return r
	}
	go func() {
		defer close(r.exited)
		lateInt := false // a SIGINT past earlyWindow was told
		for {
			select {
			case sig := <-in:
				at := r.startedAt.Load()
				switch {
				case sig == syscall.SIGTERM:
					select {
					case r.out <- sig:
					default:
					}
				case at == 0 || time.Since(time.Unix(0, at)) < earlyWindow:
					select {
					case r.early <- struct{}{}:
					default:
					}
				case lateInt || ownGroup(int(r.pid.Load())):
					select {
					case r.out <- sig:
					default:
					}
				default:
					lateInt = true
				}
			case <-r.done:
				return
			}
		}
	}()
	return r
}

func (r *signalRelay) stop() { r.stopOnce.Do(func() { close(r.done) }) }

// aborter is a sink whose last sending a signal can cut short (the
// OTLP sink): what it did not send it counts.
type aborter interface{ Abort() }

// abortOnSignal ends the relay, whose signals were the command's, and
// until the returned stop has every aborter sink of s end its sending on
// the next of once's signals (in). Signals the relay passed on and the
// command no longer needs are dropped first: they came before.
func abortOnSignal(s *Session, relay *signalRelay, in <-chan os.Signal) (stop func()) {
	relay.stop()
	<-relay.exited // no signal read from in after this but by the watch
	for drained := false; !drained; {
		select {
		case <-relay.out:
		case <-relay.early:
		default:
			drained = true
		}
	}
	var any bool
	for _, k := range s.sinks {
		_, ok := k.(aborter)
		any = any || ok
	}
	if in == nil || !any {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-in:
			for _, k := range s.sinks {
				if a, ok := k.(aborter); ok {
					a.Abort()
				}
			}
		case <-done:
		}
	}()
	return func() { close(done) }
}

// signalName is "SIGTERM" for syscall.SIGTERM.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		switch s {
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGINT:
			return "SIGINT"
		}
	}
	return sig.String()
}

// ownGroup says whether pid is in a process group other than once's: a
// terminal's Ctrl-C, sent to once's group, did not reach it.
func ownGroup(pid int) bool {
	if pid <= 0 {
		return false
	}
	pg, err := syscall.Getpgid(pid)
	return err == nil && pg != syscall.Getpgrp()
}

// StartError is a command that can't be started, in a shell's words:
// Code 127, not found; 126, found but not executable.
type StartError struct {
	Code   int
	Name   string // the command as given
	Reason string // "command not found", "permission denied"
}

func (e *StartError) Error() string { return e.Name + ": " + e.Reason }

// LookCommand finds a command as a shell does: a name with a slash is run
// as given (if its exec fails, that is traced and reported like any
// other), a bare name is searched in $PATH; a *StartError if it is not
// there, or is there but not executable.
func LookCommand(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, exec.ErrDot) {
		// Found through a relative PATH entry ("." or "", "bin"): a
		// shell runs it, from the working directory; Go's LookPath
		// only tells. With a slash it is run as that path, not
		// looked up again.
		if !strings.Contains(path, "/") {
			path = "./" + path
		}
		return path, nil
	}
	// A file of that name that is not executable: a shell's (and env's)
	// "Permission denied".
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() {
			return "", &StartError{Code: 126, Name: name, Reason: "permission denied"}
		}
	}
	return "", &StartError{Code: 127, Name: name, Reason: "command not found"}
}

// LookRunnable is LookCommand for a command run untraced too (once
// compare's timed runs), whose exec failing leaves nothing traced to say
// why: a path is refused up front as a shell would fail it, one not
// there (127) apart from one there that cannot run, a directory or a
// file without the execute bit (126); a bare name as given, or as
// LookCommand finds it through a relative PATH entry ("./name").
func LookRunnable(name string) (string, error) {
	_, err := exec.LookPath(name)
	if !strings.Contains(name, "/") {
		if err == nil {
			return name, nil // as given: run as exec.Command finds it
		}
		return LookCommand(name)
	}
	switch {
	case err == nil:
		return name, nil
	case errors.Is(err, syscall.EISDIR):
		return "", &StartError{Code: 126, Name: name, Reason: "is a directory"}
	case errors.Is(err, fs.ErrPermission):
		return "", &StartError{Code: 126, Name: name, Reason: "permission denied"}
	}
	return "", &StartError{Code: 127, Name: name, Reason: "command not found"}
}

// ExecFailure says, like a shell, why the command name never ran when its
// execve failed with errno: the error's text, or for an ENOENT of a file
// that is there, that its #! interpreter or ELF interpreter (the dynamic
// loader) was not found, as bash's "bad interpreter" says.
func ExecFailure(name string, errno int32) string {
	if syscall.Errno(errno) == syscall.ENOENT {
		if p, err := exec.LookPath(name); err == nil || errors.Is(err, exec.ErrDot) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return "its #! interpreter or ELF loader was not found"
			}
		}
	}
	return syscall.Errno(errno).Error()
}

// killedBy is the name of the signal that killed the command ("SIGKILL",
// or "signal N" for one without a name), "" when it exited or never ran.
func killedBy(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return ""
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	return trace.SignalName(ws.Signal())
}

// exitStatus is the command's exit status as a shell gives it: 128+signal
// for a signal death; for an exec that failed, 127 when the file (or its
// interpreter) was not found, 126 when it was there but could not run.
func exitStatus(cmd *exec.Cmd, startErrno syscall.Errno) int {
	switch {
	case startErrno == syscall.ENOENT || startErrno == syscall.ENOTDIR:
		return 127
	case startErrno != 0:
		return 126
	case cmd.ProcessState == nil:
		return 127
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
	return cmd.ProcessState.ExitCode()
}
