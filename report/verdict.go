package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/oncetool/once/trace"
)

// The verdict: the line a report opens with, what the run's findings
// cost against what the command took. The waste model is in SCHEMA.md.

// runWasted is the run's total waste: exactly the sum of its findings'
// WastedNs, the JSON's wasted_ns.
func runWasted(r *trace.Result) uint64 {
	var n uint64
	for i := range r.Findings {
		n += r.Findings[i].WastedNs
	}
	return n
}

// share is ns as a fraction of d, 0 when d is unknown (zero).
func share(ns uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(ns) / float64(d.Nanoseconds())
}

// percent renders a fraction with two significant digits at most, and
// never as 0 when it is not: "12%", "1.5%", "0.044%", "<0.001%".
func percent(f float64) string {
	p := f * 100
	switch {
	case p == 0:
		return "0%"
	case p < 0.001:
		return "<0.001%"
	}
	return strconv.FormatFloat(roundSig(p, 2), 'f', -1, 64) + "%"
}

// roundSig rounds p to n significant digits.
func roundSig(p float64, n int) float64 {
	s := strconv.FormatFloat(p, 'e', n-1, 64)
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// shareOf is "0.044% of 1.5s wall time", or "wall time unknown".
func shareOf(ns uint64, d time.Duration, what string) string {
	if d <= 0 {
		return what + " time unknown"
	}
	return percent(share(ns, d)) + " of " + Duration(uint64(d)) + " " + what + " time"
}

// verdictLine is the first line of the text and Markdown reports: the
// total waste, its share of the command's wall and CPU time, the
// findings, and the events lost.
func verdictLine(r *trace.Result) string {
	lost := "no events lost"
	if n := r.Counters.Lost(); n > 0 {
		lost = fmt.Sprintf("%d events lost: counts are lower bounds", n)
	}
	if r.Counters.StacksMapsLost > 0 {
		lost += "; " + mappingRecords(&r.Counters) + " lost: some stacks may end at an unknown mapping"
	}
	if len(r.Findings) == 0 {
		return "wasted: nothing (no findings); " + lost
	}
	ns := runWasted(r)
	wall := shareOf(ns, r.Duration, "wall")
	if share(ns, r.Duration) > 1 {
		// The calls' times are summed over processes, which may run
		// side by side or go on after the command exits (--linger).
		wall += ", summed over processes run in parallel or after it"
	}
	cpu := shareOf(ns, r.CPU, "CPU")
	if share(ns, r.CPU) > 1 {
		// wait4's rusage has no orphan nobody reaped (a daemon), and a
		// call's latency counts its waits (a disk, a lock) off the CPU.
		cpu += ", of the processes waited for, and the calls' time counts their waits off CPU"
	}
	return fmt.Sprintf("wasted: %s (%s, %s) in %s; %s", Duration(ns),
		wall, cpu, plural(len(r.Findings), "finding", "findings"), lost)
}
