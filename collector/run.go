package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
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
}

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

	// Follow what once forks, start the command, stop following: the
	// child is in the tracked set before it runs a single instruction.
	if err := tr.FollowChildren(self); err != nil {
		return nil, fmt.Errorf("follow children: %w", err)
	}
	err := cmd.Start()
	if uerr := tr.Unfollow(self); uerr != nil && err == nil {
		err = fmt.Errorf("stop following once's children: %w", uerr)
	}
	if err != nil {
		return nil, err
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
	var exitedAt time.Time
	rootDone := false
	handle := func() {
		st.Handle(&ev)
		if opts.OnEvent != nil {
			opts.OnEvent(&ev)
		}
	}
	for {
		// The reader can't also wait on the command, so it wakes up
		// now and then to check on it.
		tr.SetDeadline(time.Now().Add(25 * time.Millisecond))
		err := tr.Next(&ev, &c)
		switch {
		case err == nil:
			handle()
			continue
		case errors.Is(err, ErrTimeout):
		default:
			return nil, err
		}
		if !rootDone {
			select {
			case w := <-waited:
				rootDone, exitedAt = true, w.at
				res.ExitCode = exitCode(cmd, w.err)
			case <-ctx.Done():
				_ = cmd.Process.Kill()
			default:
			}
			continue
		}
		// The command has exited; its exit event may still be in flight,
		// and descendants may outlive it.
		if (st.Exited(cmd.Process.Pid) && st.Live() == 0) || time.Since(exitedAt) > opts.Linger || ctx.Err() != nil {
			break
		}
	}
	// Everything already in the ring belongs to this run.
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
	if err := tr.KernelCounters(&c); err != nil {
		return nil, err
	}
	out := st.Result()
	out.Command, out.ExitCode, out.Started = res.Command, res.ExitCode, res.Started
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
