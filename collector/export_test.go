package collector

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// RunForTest runs cmd traced by tr through the whole pipeline (session,
// exact engine) and returns its result. It is set by the external test
// package (runcmd_test.go), which can import the session package that
// this one, under test, cannot.
var RunForTest func(ctx context.Context, tr *Tracer, cmd *exec.Cmd, linger time.Duration, onStart func(int)) (*trace.Result, error)

// WithoutBTFCasts has the tracers t opens load the kernel side as for a
// kernel before 6.2 (no BTF casts: every field read with CO-RE), until t
// ends.
func WithoutBTFCasts(t testing.TB) {
	noBTFCasts = true
	t.Cleanup(func() { noBTFCasts = false })
}

// SetExecArgsSeen has tr call f with each exec's strings record (sent at
// the exec's entry) before joining it to the exec's exit record, from the
// goroutine that calls Next.
func SetExecArgsSeen(tr *Tracer, f func(*trace.Event)) { tr.execArgsSeen = f }

// SetRepeatSeen has tr call f with each open that came as a repeat record
// (the thread's last open sent in full, again), once expanded, from the
// goroutine that calls Next.
func SetRepeatSeen(tr *Tracer, f func(*trace.Event)) { tr.repeatSeen = f }

// WithoutHook has the tracers t opens find the attachment name
// ("raw_tp:sched_prepare_exec") missing, as on a kernel without it, until
// t ends.
func WithoutHook(t testing.TB, name string) {
	attachHook = func(n string) error {
		if n == name {
			return fmt.Errorf("tracepoint %s: %w", n, os.ErrNotExist)
		}
		return nil
	}
	t.Cleanup(func() { attachHook = nil })
}
