package detect

import (
	"testing"

	"github.com/oncetool/once/trace"
)

// TestRowOrderCountsLookups: sorted by wasted time, a row ranks by the
// time its WASTED column shows, avoidable lookups included: a python3
// that lost 1.4 ms to lookups ranked below one that lost 0.7 ms to exec
// probes.
func TestRowOrderCountsLookups(t *testing.T) {
	lookups := Waste{OpenNs: 100, LookupNs: 1300}
	execs := Waste{ExecNs: 700}
	if c := rowOrder(SortTime, &lookups, &execs, trace.ImageKey{Pid: 2}, trace.ImageKey{Pid: 1}); c >= 0 {
		t.Errorf("rowOrder(1.4ms with lookups, 0.7ms) = %d, want the first first", c)
	}
}
