package sink

import (
	"testing"

	"github.com/oncetool/once/collector"
)

// TestFilterText: the line once watch starts with names pids and uids
// as a person would, each once: not Go's "[0 0 65534]".
func TestFilterText(t *testing.T) {
	for _, tc := range []struct {
		f    collector.Filter
		want string
	}{
		{collector.Filter{}, "every process"},
		{collector.Filter{Pids: []int{7}}, "pid 7"},
		{collector.Filter{Pids: []int{7, 9}, Tree: true}, "pids 7, 9 and their descendants"},
		{collector.Filter{UIDs: []uint32{0, 0, 65534}}, "uids 0, 65534"},
		{collector.Filter{UIDs: []uint32{0, 0}, Comms: []string{"make"}}, "comm make, uid 0"},
		{collector.Filter{Pids: []int{7}, Tree: true}, "pid 7 and its descendants"},
		// One comm with a comma in it is not two comms.
		{collector.Filter{Comms: []string{"du,pA"}}, `comm "du,pA"`},
		{collector.Filter{Comms: []string{"du", "pA", "du"}}, "comms du, pA"},
		{collector.Filter{ExcludeComms: []string{"kworker/0:1", "a b"}}, `not comms kworker/0:1, "a b"`},
		{collector.Filter{Comms: []string{"ev\x1b[31mil"}}, `comm ev\x1b[31mil`},
		{collector.Filter{Comms: []string{"a \x1b"}}, `comm "a \x1b"`},
	} {
		if got := FilterText(tc.f); got != tc.want {
			t.Errorf("FilterText(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}
