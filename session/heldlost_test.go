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
// counted in counts_lost (but first opens and lookups of a process the
// engine never saw go into the totals: no finding needs them), and stays counted when the kernel's counters
// are read after it (they were assigned over it: the count vanished).
func TestDrainHeldLost(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kernelLost uint64
		held       trace.ProcRecord
		pid        uint32
		want       uint64
		// The totals' opens and lookups after it.
		opens, lookups uint64
	}{
		{"none held", 0, trace.ProcRecord{}, 4242, 0, 0, 0},
		// A quiet process older than the watch (or one a --pid or
		// --uid filter never saw fork or exec) made only first opens
		// and lookups: counted, in the totals, none lost.
		{"unsent opens and lookups of a process with no image", 0, trace.ProcRecord{Unsent: 3, LookupsUnsent: 2}, 4242, 0, 3, 2},
		{"and repeats of a miss, and the kernel's", 2, trace.ProcRecord{Unsent: 3, LookupsUnsent: 1, MissRepeats: trace.Repeats{N: 4}}, 4242, 6, 3, 1},
		{"no pid (a pid namespace): all lost", 0, trace.ProcRecord{Unsent: 3, LookupsUnsent: 1}, 0, 4, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &heldSource{fakeSource: newFake(&callLog{}), kernelLost: tc.kernelLost}
			if tc.held != (trace.ProcRecord{}) {
				src.held = []trace.Event{{Kind: trace.EventUnsent, Task: trace.Task{Pid: tc.pid, Tid: tc.pid}, Proc: tc.held}}
			}
			eng := detect.New(detect.Options{})
			s := New(src, eng)
			if err := s.Drain(time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := s.Counters().CountsLost; got != tc.want {
				t.Errorf("counts_lost %d, want %d", got, tc.want)
			}
			if tot := eng.Totals(); tot.Opens != tc.opens || tot.Lookups != tc.lookups {
				t.Errorf("totals: %d opens, %d lookups; want %d, %d", tot.Opens, tot.Lookups, tc.opens, tc.lookups)
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
