package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RunOptions configure RunCommand.
type RunOptions struct {
	// Ignore holds path.Match globs of files left out of findings.
	Ignore []string
	// Linger is how long to keep tracing, after the command exits, for
	// descendants still running (daemons, orphans). Those still alive then
	// are reported as running.
	Linger time.Duration
	// OnEvent, when set, sees every decoded event as it is read.
	OnEvent func(*Event)
	// OnLoss, when set, is called as soon as the kernel side's loss
	// counters go up (checked four times a second), with the
	// counters so far: loss is said the moment it starts, not only in
	// the final report.
	OnLoss func(Counters)
	// Signals are passed on to the command while it runs (once run
	// forwards SIGTERM); one sent before the command started is passed
	// on as soon as it has.
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
}

// DefaultKillAfter is the grace a timed-out command gets between SIGTERM
// and SIGKILL.
const DefaultKillAfter = 2 * time.Second

// ErrNothingTraced is returned by RunCommand when not a single event was
// seen: a tracer that matched nothing must never look like a clean run.
var ErrNothingTraced = errors.New("traced nothing: no event was seen from the command")

// RunCommand starts cmd (not yet started) traced from its first instruction
// and returns when it and its descendants have exited (or Linger passed).
// The tracer must have been opened with Options.Tracked. The returned
// Result's ExitCode is the command's, shell style (128+signal).
func RunCommand(ctx context.Context, tr *Tracer, cmd *exec.Cmd, opts RunOptions) (*Result, error) {
	self := os.Getpid()
	st := NewState(self, opts.Ignore)
	res := &Result{Command: cmd.Args, Started: time.Now()}
	if tr.RedactsArgs() {
		res.Command, res.ArgvRedacted = RedactCommand(cmd.Args), true
	}
	killAfter := opts.KillAfter
	if killAfter <= 0 {
		killAfter = DefaultKillAfter
	}

	// Follow what once forks, start the command, stop following: the
	// child is in the tracked set before it runs a single instruction.
	if err := tr.FollowChildren(self); err != nil {
		return nil, fmt.Errorf("follow children: %w", err)
	}
	err := startCommand(cmd)
	if uerr := tr.Unfollow(self); uerr != nil && err == nil {
		err = fmt.Errorf("stop following once's children: %w", uerr)
	}
	if err != nil {
		return nil, err
	}
	if opts.OnStart != nil {
		opts.OnStart(cmd.Process.Pid)
	}

	type waitResult struct {
		err error
		at  time.Time
	}
	waited := make(chan waitResult, 1)
	go func() {
		err := cmd.Wait()
		waited <- waitResult{err, time.Now()}
	}()

	var ev Event
	var c Counters
	var exitedAt, termAt time.Time
	rootDone, killed := false, false
	handle := func() {
		st.Handle(&ev)
		if opts.OnEvent != nil {
			opts.OnEvent(&ev)
		}
	}
	const checkEvery = 25 * time.Millisecond
	lastCheck := time.Now()
	lastSync := lastCheck
	var lastLossCheck time.Time
	const lossEvery = 250 * time.Millisecond
	var reportedLoss uint64
	for {
		// The reader can't also wait on the command, so it wakes up
		// now and then to check on it; a command that never lets the
		// ring go quiet is checked on as often.
		tr.SetDeadline(time.Now().Add(checkEvery))
		err := tr.Next(&ev, &c)
		switch {
		case err == nil:
			handle()
			if time.Since(lastCheck) < checkEvery {
				continue
			}
		case errors.Is(err, ErrTimeout):
		default:
			return nil, err
		}
		if time.Since(lastSync) >= time.Second {
			// Read back long loops' tallies while they run, so an
			// eviction of one could only lose a second of its count.
			lastSync = time.Now()
			for _, t := range tr.SyncTallies(&c) {
				ev = t
				handle()
			}
		}
		lastCheck = time.Now()
		if opts.OnLoss != nil && lastCheck.Sub(lastLossCheck) >= lossEvery {
			// A dozen map reads: not at every poll of an idle run.
			lastLossCheck = lastCheck
			k := c
			if tr.KernelCounters(&k) == nil && k.Lost() > reportedLoss {
				reportedLoss = k.Lost()
				opts.OnLoss(k)
			}
		}
		if !rootDone {
			select {
			case w := <-waited:
				rootDone, exitedAt = true, w.at
				res.ExitCode = exitCode(cmd, w.err)
			case <-ctx.Done():
				_ = cmd.Process.Kill()
			case sig := <-opts.Signals:
				_ = cmd.Process.Signal(sig)
			default:
				switch {
				case opts.Timeout <= 0:
				case termAt.IsZero() && time.Since(res.Started) >= opts.Timeout:
					res.TimedOut, termAt = true, time.Now()
					_ = cmd.Process.Signal(syscall.SIGTERM)
				case !termAt.IsZero() && !killed && time.Since(termAt) >= killAfter:
					killed = true
					_ = cmd.Process.Kill()
				}
			}
			continue
		}
		// The command has exited; its exit event may still be in flight,
		// and descendants may outlive it.
		if (st.Exited(cmd.Process.Pid) && st.Live() == 0) || time.Since(exitedAt) > opts.Linger || ctx.Err() != nil {
			break
		}
	}
	// Everything already in the ring belongs to this run; detached
	// first, so descendants still running can't keep the drain going.
	if err := tr.Detach(); err != nil {
		return nil, fmt.Errorf("detach: %w", err)
	}
	if err := tr.Flush(); err != nil {
		return nil, fmt.Errorf("flush ring buffer: %w", err)
	}
	tr.SetDeadline(time.Time{})
	for {
		err := tr.Next(&ev, &c)
		if err != nil {
			break
		}
		handle()
	}
	for _, t := range tr.SyncTallies(&c) {
		ev = t
		handle()
	}
	if err := tr.KernelCounters(&c); err != nil {
		return nil, err
	}
	out := st.Result()
	out.Command, out.ExitCode, out.Started = res.Command, res.ExitCode, res.Started
	out.ArgvRedacted, out.TimedOut, out.Timeout = res.ArgvRedacted, res.TimedOut, opts.Timeout
	out.Duration = exitedAt.Sub(res.Started)
	out.Counters = c
	if c.EventsReceived == 0 {
		return out, ErrNothingTraced
	}
	return out, nil
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
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

// startCommand starts cmd. When it is to run as another user
// (SysProcAttr.Credential), the thread that forks it first empties its
// inheritable capability set: the kernel clears the permitted, effective
// and ambient sets when the child's uid changes from 0, but it keeps the
// inheritable one, and a command once runs as a user must hold no
// capability at all. Capabilities are per thread, so this is done on a
// thread of its own that the runtime discards afterwards (a goroutine that
// ends while locked to its thread takes the thread with it).
func startCommand(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- fmt.Errorf("read capabilities: %w", err)
			return
		}
		if data[0].Inheritable|data[1].Inheritable != 0 {
			data[0].Inheritable, data[1].Inheritable = 0, 0
			if err := unix.Capset(&hdr, &data[0]); err != nil {
				done <- fmt.Errorf("clear inheritable capabilities: %w", err)
				return
			}
		}
		done <- cmd.Start()
	}()
	return <-done
}
