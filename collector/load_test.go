package collector

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// TestLoadOrder: the programs are loaded largest first, so that the
// threads loading them finish about together; the sizes really differ,
// or the order would say nothing.
func TestLoadOrder(t *testing.T) {
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	order := loadOrder(spec)
	if len(order) != len(spec.Programs) {
		t.Fatalf("%d programs in the order, want all %d", len(order), len(spec.Programs))
	}
	size := func(i int) int { return len(spec.Programs[order[i]].Instructions) }
	for i := 1; i < len(order); i++ {
		if size(i) > size(i-1) {
			t.Errorf("%s (%d instructions) after %s (%d)", order[i], size(i), order[i-1], size(i-1))
		}
	}
	if size(0) < 10*size(len(order)-1) {
		t.Errorf("largest %d instructions, smallest %d: want programs of very different sizes", size(0), size(len(order)-1))
	}
}

func TestMapBytes(t *testing.T) {
	for _, c := range []struct {
		m    ebpf.MapSpec
		want int
	}{
		{ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 8 << 20}, 8 << 20},
		{ebpf.MapSpec{Type: ebpf.LRUHash, MaxEntries: 65536, KeySize: 8, ValueSize: 24}, 65536 * 32},
		{ebpf.MapSpec{Type: ebpf.Array, MaxEntries: 1, KeySize: 4, ValueSize: 16}, 20},
		{ebpf.MapSpec{Type: ebpf.TaskStorage, KeySize: 4, ValueSize: 64000}, 0},
	} {
		if got := mapBytes(&c.m); got != c.want {
			t.Errorf("mapBytes(%v %d×%d+%d) = %d, want %d", c.m.Type, c.m.MaxEntries, c.m.KeySize, c.m.ValueSize, got, c.want)
		}
	}
}

// TestLoadFailureReleasesEverything: a program the verifier refuses, the
// first loaded or the last, fails Open with the verifier's whole log, and
// whatever the other threads loaded meanwhile is closed; so does a map the
// kernel refuses.
func TestLoadFailureReleasesEverything(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "leak: a program refused by the verifier (the largest, the smallest), a map refused")
	tr, err := Open(Options{Tracked: true})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr.Released()
	before := testprog.KernelFDs(t)
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	order := loadOrder(spec)
	for _, name := range []string{order[0], order[len(order)-1]} {
		t.Run(name, func(t *testing.T) {
			specHook = func(s *ebpf.CollectionSpec) {
				// Returns R0 unset: the verifier refuses it.
				s.Programs[name].Instructions = asm.Instructions{asm.Return().WithSymbol(name)}
			}
			t.Cleanup(func() { specHook = nil })
			tr, err := Open(Options{Tracked: true})
			if err == nil {
				tr.Close()
				t.Fatalf("Open succeeded with %s refused", name)
			}
			var ve *ebpf.VerifierError
			if !errors.As(err, &ve) && !strings.Contains(err.Error(), "R0 !read_ok") {
				t.Errorf("error %q, want the verifier's", err)
			}
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name %s", err, name)
			}
			if after := testprog.KernelFDs(t); !sameFDs(before, after) {
				t.Errorf("descriptors before Open %v, after its failure %v", before, after)
			}
		})
	}
	// A map the kernel refuses: one made on a thread of its own (the
	// ring), one made with the rest.
	for _, name := range []string{"events", "counters"} {
		t.Run("map "+name, func(t *testing.T) {
			specHook = func(s *ebpf.CollectionSpec) {
				if name == "events" {
					s.Maps[name].MaxEntries = 3 << 20 // not a power of two
				} else {
					s.Maps[name].MaxEntries = 0
				}
			}
			t.Cleanup(func() { specHook = nil })
			tr, err := Open(Options{Tracked: true})
			if err == nil {
				tr.Close()
				t.Fatalf("Open succeeded with map %s refused", name)
			}
			if !strings.Contains(err.Error(), "create BPF maps") || !strings.Contains(err.Error(), name) {
				t.Errorf("error %q, want map %s's creation", err, name)
			}
			if after := testprog.KernelFDs(t); !sameFDs(before, after) {
				t.Errorf("descriptors before Open %v, after its failure %v", before, after)
			}
		})
	}
	row.Inputs, row.Seen = "2 refused programs, 2 refused maps", "refused, nothing held"
}

// TestTallySpecMatchesObject: the open_tallies map Open makes before the
// object is decoded is the object's own, at every size Open gives it.
func TestTallySpecMatchesObject(t *testing.T) {
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	obj := spec.Maps[bpf.OnceMapOpenTallies]
	for _, tc := range []struct {
		name string
		opts Options
		want uint32
	}{
		{"default", Options{SendOpensPerKind: 1}, obj.MaxEntries},
		{"nothing tallied", Options{}, 64},
		{"sized", Options{SendOpensPerKind: 1, TallySlots: 1000}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tallySpec(tc.opts)
			if got.Name != obj.Name || got.Type != obj.Type || got.KeySize != obj.KeySize ||
				got.ValueSize != obj.ValueSize || got.Flags != obj.Flags || got.MaxEntries != tc.want {
				t.Errorf("tallySpec(%+v) = %+v, want the object's %+v with %d entries", tc.opts, got, obj, tc.want)
			}
		})
	}
}

// TestVerifierLogHasSourceLines: programs load without their line info
// (LoadOnceWithoutLines), yet a program the verifier refuses is reported
// with the source line of each instruction in its log.
func TestVerifierLogHasSourceLines(t *testing.T) {
	testprog.RequireRoot(t)
	const name = "exit_open"
	specHook = func(s *ebpf.CollectionSpec) {
		ins := s.Programs[name].Instructions
		if ins[0].Source() != nil {
			t.Errorf("%s decoded with its line info: the loader was to leave it out", name)
		}
		// Reads through R9, unset at a program's start: refused, the
		// program's length and metadata kept.
		bad := asm.LoadMem(asm.R0, asm.R9, 0, asm.DWord)
		bad.Metadata = ins[0].Metadata
		ins[0] = bad
	}
	t.Cleanup(func() { specHook = nil })
	tr, err := Open(Options{Tracked: true})
	if err == nil {
		tr.Close()
		t.Fatalf("Open succeeded with %s refused", name)
	}
	msg := err.Error()
	if !strings.Contains(msg, "R9 !read_ok") {
		t.Fatalf("error %q, want the verifier's refusal", msg)
	}
	if !strings.Contains(msg, "@ open.bpf.h:") {
		t.Errorf("the verifier's log has no source lines: %q", msg)
	}
}
