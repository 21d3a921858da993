package session

import (
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// heldSource is a fakeSource with held counts (CollectHeld) and a kernel
// counter of counts lost, which KernelCounters sets, as the tracer's
// does: every kernel counter is assigned, not added to.
type heldSource struct {
	*fakeSource
	held       []trace.Event
	kernelLost uint64
}

func (h *heldSource) CollectHeld(c *trace.Counters) []trace.Event { return h.held }

func (h *heldSource) KernelCounters(c *trace.Counters) error {
	err := h.fakeSource.KernelCounters(c)
	c.CountsLost = h.kernelLost
	return err
}

// TestDrainHeldLost: what a thread held that no live image takes is
// counted in counts_lost, and stays counted when the kernel's counters
// are read after it (they were assigned over it: the count vanished).
func TestDrainHeldLost(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kernelLost uint64
		held       trace.ProcRecord
		want       uint64
	}{
		{"none held", 0, trace.ProcRecord{}, 0},
		{"unsent opens", 0, trace.ProcRecord{Unsent: 3}, 3},
		{"and the kernel's", 2, trace.ProcRecord{Unsent: 3, LookupsUnsent: 1, MissRepeats: trace.Repeats{N: 4}}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &heldSource{fakeSource: newFake(&callLog{}), kernelLost: tc.kernelLost}
			if tc.held != (trace.ProcRecord{}) {
				src.held = []trace.Event{{Kind: trace.EventUnsent, Task: trace.Task{Pid: 4242, Tid: 4242}, Proc: tc.held}}
			}
			s := New(src, detect.New(detect.Options{}))
			if err := s.Drain(time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := s.Counters().CountsLost; got != tc.want {
				t.Errorf("counts_lost %d, want %d", got, tc.want)
			}
			// Read again (a watch's last summary): still counted once.
			if err := s.ReadCounters(); err != nil {
				t.Fatal(err)
			}
			if got := s.Counters().CountsLost; got != tc.want {
				t.Errorf("counts_lost after another read %d, want %d", got, tc.want)
			}
		})
	}
}
