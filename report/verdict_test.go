package report

import (
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// TestVerdictLine: a waste above the command's wall time says why it
// can be: the calls' times are summed over processes, some of which may
// run in parallel or outlive the command.
func TestVerdictLine(t *testing.T) {
	for _, c := range []struct {
		name        string
		wasted      uint64
		wall        time.Duration
		want, never string
	}{
		{"below the wall time", 1_000_000, 10 * time.Millisecond, "wasted: 1ms (10% of 10ms wall time, CPU time unknown) in 1 finding", "summed"},
		{"above it", 5_000_000, 2500 * time.Microsecond, "wasted: 5ms (200% of 2.5ms wall time, summed over processes run in parallel or after it, CPU time unknown)", ""},
	} {
		r := &trace.Result{Duration: c.wall, Findings: []trace.Finding{{WastedNs: c.wasted}}}
		got := verdictLine(r)
		if !strings.Contains(got, c.want) || (c.never != "" && strings.Contains(got, c.never)) {
			t.Errorf("%s: %q, want %q (and not %q)", c.name, got, c.want, c.never)
		}
	}
}
