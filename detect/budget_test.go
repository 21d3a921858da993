package detect

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// TestHostileFloodIsBounded: what any local user can make once keep (here
// 64 directories x 1,024 basenames of ~3.9 KB paths, all failing, then as
// many exec probes) stays within the byte budgets, under both policies,
// while every count stays exact and the capped detail is counted.
func TestHostileFloodIsBounded(t *testing.T) {
	for _, pol := range []struct {
		name string
		p    Policy
	}{{"watch", Bounded(0, 0)}, {"run", KeepAll("")}} {
		t.Run(pol.name, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			e := New(Options{Policy: pol.p})
			pt := task(77, 77, 1, 1, "hostile")
			long := strings.Repeat("d", 3800)
			ev := trace.Event{Kind: trace.EventOpen, Task: pt}
			for d := 0; d < 64; d++ {
				for b := 0; b < 1024; b++ {
					ev.Open = trace.OpenRecord{Syscall: trace.SysOpenat, Ret: enoent, EnterNs: 0, ExitNs: 100,
						Fname: fmt.Sprintf("/tmp/%s/%02d/name%04d", long, d, b)}
					e.Handle(&ev, t0)
				}
			}
			for i := 0; i < 1000; i++ {
				ev := trace.Event{Kind: trace.EventExec, Task: pt, Exec: trace.ExecRecord{Syscall: trace.SysExecve,
					Filename: fmt.Sprintf("/tmp/%s/%04d/x", long, i), Ret: enoent, ExitNs: 1000}}
				e.Handle(&ev, t0)
			}
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapInuse) - int64(before.HeapInuse)
			// The budget, and the few small entries charged whatever it
			// says: the basenames pending.
			if e.bytes > pol.p.MaxImageBytes+128<<10 {
				t.Errorf("%d bytes charged, budget %d per image", e.bytes, pol.p.MaxImageBytes)
			}
			if slack := int64(8 << 20); grew > pol.p.MaxImageBytes*2+slack {
				t.Errorf("the heap grew %d MiB for a %d MiB budget", grew>>20, pol.p.MaxImageBytes>>20)
			}
			tt := e.Totals()
			if tt.FailedOpens != 64*1024 || tt.FailedExecs != 1000 || tt.DetailDropped == 0 {
				t.Errorf("totals %+v: want every failure counted and the dropped detail too", tt)
			}
			e.Finish(t0)
			var execFailed, openFailed int
			for _, f := range e.Drain() {
				switch f.Kind {
				case trace.KindFailedExecProbes:
					execFailed += f.Failed
					if len(f.Attempts)+f.AttemptsOmitted != f.Failed {
						t.Errorf("exec chain: %d kept + %d omitted != %d failed", len(f.Attempts), f.AttemptsOmitted, f.Failed)
					}
				case trace.KindFailedOpenProbes:
					openFailed += f.Failed
				}
			}
			if execFailed != 1000 {
				t.Errorf("exec probe findings count %d failures, want 1000 (exact past the cap)", execFailed)
			}
			t.Logf("%s: heap +%d KiB, %d bytes charged, %d details dropped, open probe failures in findings %d",
				pol.name, grew>>10, e.bytes, tt.DetailDropped, openFailed)
		})
	}
}
