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

// TestVerdictLineCPU: a waste above the command's CPU time says why it
// can be: the CPU time is of the processes waited for (a daemon's, an
// orphan nobody reaped, is not in it), and a call's time counts its waits
// off the CPU.
func TestVerdictLineCPU(t *testing.T) {
	for _, c := range []struct {
		name        string
		wasted      uint64
		cpu         time.Duration
		want, never string
	}{
		{"below the CPU time", 1_000_000, 10 * time.Millisecond, "10% of 10ms CPU time) in 1 finding", "waited"},
		{"above it", 3_200_000, 1100 * time.Microsecond, "290% of 1.1ms CPU time, of the processes waited for, and the calls' time counts their waits off CPU) in 1 finding", ""},
	} {
		r := &trace.Result{Duration: time.Second, CPU: c.cpu, Findings: []trace.Finding{{WastedNs: c.wasted}}}
		got := verdictLine(r)
		if !strings.Contains(got, c.want) || (c.never != "" && strings.Contains(got, c.never)) {
			t.Errorf("%s: %q, want %q (and not %q)", c.name, got, c.want, c.never)
		}
	}
}
