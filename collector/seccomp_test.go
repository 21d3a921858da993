package collector_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestSeccompRefused: calls a seccomp filter answers run no entry
// tracepoint but their exit's: counted as refused by seccomp, not as
// events lost (once check would call the run incomplete), and the calls
// the filter lets by counted exactly. strace -f of seccompdeny FILE 3
// shows 3 openat2 = -1 ENOSYS, 3 faccessat2 = -1 EPERM and 3 openat of
// FILE.
func TestSeccompRefused(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Seccompdeny)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := collector.Open(collector.Options{Tracked: true})
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := runCommand(ctx, tr, exec.Command(bin, file, "3"), runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 {
		t.Fatalf("seccompdeny exited %d", r.ExitCode)
	}
	c := r.Counters
	if c.SeccompRefused != 6 || c.MissedEnter != 0 || c.Lost() != 0 {
		t.Errorf("seccomp_refused %d, missed_enter %d, lost %d; want 6, 0, 0", c.SeccompRefused, c.MissedEnter, c.Lost())
	}
	var opens int
	for _, p := range r.Processes {
		for _, o := range p.Opens {
			if o.Path == file {
				opens += o.Count
			}
		}
	}
	if opens != 3 {
		t.Errorf("%d opens of %s, want the 3 openat the filter let by", opens, file)
	}
	for _, p := range r.Processes {
		for _, f := range r.Findings {
			if f.Pid == p.Pid && f.Kind != trace.KindDuplicateOpen {
				t.Errorf("finding %s: the refused calls made one", f.Kind)
			}
		}
	}
}

// TestPtraceSkipped: a ptraced thread stopped at a call's entry and
// killed there, or stopped by PTRACE_SYSEMU, never runs the call; the
// tracer's stop comes before the entry tracepoint, the exit's still runs.
// Counted as skipped by ptrace, not as events lost (once check would call
// the run incomplete), and the opens the kernel ran counted exactly.
// ptracestop's child opens the file 4 times (its tracer sees 4 openat
// return) and a fifth that its tracer stops at the entry.
func TestPtraceSkipped(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Ptracestop)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"kill", "emu"} {
		t.Run(mode, func(t *testing.T) {
			r := traceCmd(t, exec.Command(bin, mode, file, "4"), collector.Options{})
			if r.ExitCode != 0 {
				t.Fatalf("ptracestop %s exited %d", mode, r.ExitCode)
			}
			c := r.Counters
			if c.PtraceSkipped != 1 || c.MissedEnter != 0 || c.Lost() != 0 {
				t.Errorf("ptrace_skipped %d, missed_enter %d, lost %d; want 1, 0, 0", c.PtraceSkipped, c.MissedEnter, c.Lost())
			}
			var opens int
			for _, p := range r.Processes {
				for _, o := range p.Opens {
					if o.Path == file {
						opens += o.Count
					}
				}
			}
			if opens != 4 || r.FailedOpens != 0 {
				t.Errorf("%d opens of %s, %d failed; want the 4 the kernel ran, 0", opens, file, r.FailedOpens)
			}
		})
	}
}
