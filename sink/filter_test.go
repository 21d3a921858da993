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
	} {
		if got := FilterText(tc.f); got != tc.want {
			t.Errorf("FilterText(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}
