package trace

import (
	"reflect"
	"strings"
	"testing"
)

// uintFields is every uint64 field of Counters by name.
func uintFields(t *testing.T) []string {
	t.Helper()
	var names []string
	ty := reflect.TypeFor[Counters]()
	for i := range ty.NumField() {
		if ty.Field(i).Type.Kind() == reflect.Uint64 {
			names = append(names, ty.Field(i).Name)
		}
	}
	if len(names) < 30 {
		t.Fatalf("only %d counters found by reflection", len(names))
	}
	return names
}

// one is Counters with only the named field set to v.
func one(name string, v uint64) *Counters {
	var c Counters
	reflect.ValueOf(&c).Elem().FieldByName(name).SetUint(v)
	return &c
}

// TestShownKeysUnique: every output keys the counters by JSON name, metric
// kind and, within a group, label: none may be given twice.
func TestShownKeysUnique(t *testing.T) {
	for _, key := range []struct {
		name string
		of   func(CounterSpec) string
	}{
		{"JSON", func(s CounterSpec) string { return s.JSON }},
		{"metric", func(s CounterSpec) string { return s.Metric }},
		{"group and label", func(s CounterSpec) string { return string(rune('0'+s.Group)) + " " + s.Label }},
	} {
		t.Run(key.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, s := range Shown {
				k := key.of(s)
				if k == "" {
					continue
				}
				if seen[k] {
					t.Errorf("%s %q is given twice", key.name, k)
				}
				seen[k] = true
			}
		})
	}
}

// TestShownEntries: each entry is complete for its group: a JSON key in
// snake case, a label, a metric kind exactly for the lost counters, a
// known group, a value.
func TestShownEntries(t *testing.T) {
	for _, s := range Shown {
		if s.JSON == "" || strings.Trim(s.JSON, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("JSON key %q is not snake case", s.JSON)
		}
		if s.Label == "" {
			t.Errorf("%s has no label", s.JSON)
		}
		if (s.Metric != "") != (s.Group == CounterLost) {
			t.Errorf("%s: metric kind %q in group %d: only lost counters have one, and each has", s.JSON, s.Metric, s.Group)
		}
		if s.Group < CounterLost || s.Group > CounterStacks {
			t.Errorf("%s: unknown group %d", s.JSON, s.Group)
		}
		if s.Value == nil {
			t.Errorf("%s has no value", s.JSON)
		} else if v := s.Value(&Counters{}); v != 0 {
			t.Errorf("%s is %d in zero counters", s.JSON, v)
		}
	}
}

// TestShownCoversEveryCounter: every counter field reaches some output
// through Shown (the package's promise: none is hidden), and each entry
// reads counters of its own.
func TestShownCoversEveryCounter(t *testing.T) {
	readBy := map[string][]string{} // field -> JSON keys that read it
	for _, f := range uintFields(t) {
		c := one(f, 1)
		for _, s := range Shown {
			if s.Value(c) != 0 {
				readBy[f] = append(readBy[f], s.JSON)
			}
		}
	}
	for _, f := range uintFields(t) {
		if len(readBy[f]) != 1 {
			t.Errorf("counter %s is shown by %q, want exactly one entry", f, readBy[f])
		}
	}
	// The sums: an entry that reads two fields.
	for _, tc := range []struct {
		json   string
		fields []string
	}{
		{"tallies_evicted", []string{"TalliesEvicted", "TalliesLate"}},
		{"files_capped", []string{"FilesCapped", "FilesUntracked"}},
	} {
		var got []string
		for f, keys := range readBy {
			if len(keys) == 1 && keys[0] == tc.json {
				got = append(got, f)
			}
		}
		if len(got) != len(tc.fields) {
			t.Errorf("%s reads %q, want %q", tc.json, got, tc.fields)
		}
	}
}

func TestLost(t *testing.T) {
	tests := []struct {
		name string
		c    Counters
		want uint64
	}{
		{"nothing", Counters{}, 0},
		{"dropped", Counters{DroppedEvents: 3}, 3},
		{"every lost counter", Counters{DroppedEvents: 1, EnterMapFull: 2, MissedEnter: 4, DecodeErrors: 8, TrackedFull: 16, TalliesEvicted: 32, TalliesLate: 64}, 127},
		{"truncations and notes are no loss", Counters{FnameTruncated: 5, PathUnresolved: 6, OpensTallied: 7, EventsSent: 9, StacksDropped: 10, FilesCapped: 11}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Lost(); got != tc.want {
				t.Errorf("Lost() = %d, want %d", got, tc.want)
			}
		})
	}
	// Lost is the sum of the lost group, whichever counter it is.
	for _, f := range uintFields(t) {
		c := one(f, 7)
		var want uint64
		for _, s := range Group(CounterLost) {
			want += s.Value(c)
		}
		if got := c.Lost(); got != want {
			t.Errorf("%s = 7: Lost() = %d, the lost group sums %d", f, got, want)
		}
	}
}

// TestGroup: the groups split Shown, each in Shown's order.
func TestGroup(t *testing.T) {
	var all []string
	for g := CounterLost; g <= CounterStacks; g++ {
		specs := Group(g)
		if len(specs) == 0 {
			t.Errorf("group %d is empty", g)
		}
		for _, s := range specs {
			if s.Group != g {
				t.Errorf("Group(%d) gives %s of group %d", g, s.JSON, s.Group)
			}
			all = append(all, s.JSON)
		}
	}
	if len(all) != len(Shown) {
		t.Fatalf("the groups hold %d counters, Shown %d", len(all), len(Shown))
	}
	pos := map[string]int{}
	for i, s := range Shown {
		pos[s.JSON] = i
	}
	for g := CounterLost; g <= CounterStacks; g++ {
		specs := Group(g)
		for i := 1; i < len(specs); i++ {
			if pos[specs[i-1].JSON] > pos[specs[i].JSON] {
				t.Errorf("Group(%d): %s before %s, not in Shown's order", g, specs[i-1].JSON, specs[i].JSON)
			}
		}
	}
	if Group(0) != nil || Group(CounterStacks+1) != nil {
		t.Error("an unknown group has counters")
	}
}

// TestKernelCounters: each kernel counter has its own name and its own
// field (the collector holds the order to bpf/once.h).
func TestKernelCounters(t *testing.T) {
	var c Counters
	names, fields := map[string]bool{}, map[*uint64]string{}
	for i, k := range KernelCounters {
		if !strings.HasPrefix(k.Name, "CNT_") || names[k.Name] {
			t.Errorf("counter %d: name %q is not a new CNT_ name", i, k.Name)
		}
		names[k.Name] = true
		p := k.Field(&c)
		if p == nil {
			t.Errorf("%s has no field", k.Name)
			continue
		}
		if other, ok := fields[p]; ok {
			t.Errorf("%s and %s share a field", other, k.Name)
		}
		fields[p] = k.Name
	}
}

func TestTalliesLost(t *testing.T) {
	for _, tc := range []struct {
		evicted, late, want uint64
	}{{0, 0, 0}, {1, 0, 1}, {0, 2, 2}, {3, 4, 7}} {
		c := Counters{TalliesEvicted: tc.evicted, TalliesLate: tc.late}
		if got := c.TalliesLost(); got != tc.want {
			t.Errorf("evicted %d late %d: TalliesLost() = %d, want %d", tc.evicted, tc.late, got, tc.want)
		}
	}
}
