package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/compare"
)

// TestRelativeText: the ratio as hyperfine words it, the factors worked
// by hand: a ratio of 0.5 ± 0.1 is 1/0.5 = 2 times faster, ± 2 × 0.1/0.5
// = 0.4; 1.25 ± 0.25 is 1.25 times slower, ± 1.25 × 0.25/1.25 = 0.25; a
// CPU ratio of 0.8 ± 0.04 is 1.25 times less, ± 1.25 × 0.05 = 0.0625.
func TestRelativeText(t *testing.T) {
	wall, cpu := measures[0], measures[1]
	tests := []struct {
		m    measure
		q    compare.Ratio
		want string
	}{
		{wall, compare.Ratio{Mean: 0.5, Spread: 0.1, Median: 0.5, Defined: true},
			"after ran 2.00 ± 0.40 times faster than before (medians: 2.00 times faster)"},
		{wall, compare.Ratio{Mean: 1.25, Spread: 0.25, Median: 1.1, Defined: true},
			"after ran 1.25 ± 0.25 times slower than before (medians: 1.10 times slower)"},
		{wall, compare.Ratio{Mean: 1, Spread: 0.05, Median: 0.8, Defined: true},
			"after ran 1.00 ± 0.05 times as fast as before (medians: 1.25 times faster)"},
		{wall, compare.Ratio{Mean: 1, Spread: 0.05, Median: 1, Defined: true},
			"after ran 1.00 ± 0.05 times as fast as before (medians: the same)"},
		{cpu, compare.Ratio{Mean: 0.8, Spread: 0.04, Median: 0.8, Defined: true},
			"CPU time: after used 1.25 ± 0.06 times less than before (medians: 1.25 times less)"},
		{cpu, compare.Ratio{Mean: 2, Spread: 0, Median: 2, Defined: true},
			"CPU time: after used 2.00 ± 0.00 times more than before (medians: 2.00 times more)"},
		{wall, compare.Ratio{Mean: 0.5, Spread: 0.1, Median: 0.5}, ""},
	}
	for _, tc := range tests {
		if got := relativeText(tc.m, tc.q); got != tc.want {
			t.Errorf("relativeText(%s, %+v) =\n  %q\nwant\n  %q", tc.m.name, tc.q, got, tc.want)
		}
	}
}

// TestOneUnitPerTable: every time of the timing table is in the unit the
// wall time's mean chose, the user and sys times too: 900 µs of user time
// beside 12 ms of wall time reads 0.9 (ms).
func TestOneUnitPerTable(t *testing.T) {
	side := func(label string, wall ...float64) compare.Side {
		s := compare.Side{Label: label, Command: []string{label}, CPUSource: compare.CPUCgroup2, CPUExact: true}
		for _, w := range wall {
			s.Samples = append(s.Samples, compare.Sample{Wall: ms(w), CPU: ms(1.2), User: 900 * time.Microsecond, Sys: 300 * time.Microsecond})
		}
		return s
	}
	tests := []struct {
		name       string
		a, b       []float64
		unit, want string
	}{
		{"ms", []float64{10, 12, 14}, []float64{5, 6, 7}, "ms", "  before  mean ± σ    12.0 ± 2.0  1.2 ± 0.0  0.9 ± 0.0  0.3 ± 0.0\n"},
		{"µs below 10 ms", []float64{1, 1.2, 1.4}, []float64{0.5, 0.6, 0.7}, "µs", "          median               600.0           1200.0          900.0          300.0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &compare.Result{Runs: 3, A: side("before", tc.a...), B: side("after", tc.b...)}
			compare.Compute(r)
			var buf bytes.Buffer
			if err := CompareText(&buf, r); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			times, _, _ := strings.Cut(out[strings.Index(out, "times ("):], "\n\n")
			if !strings.HasPrefix(times, "times ("+tc.unit+"):\n") || !strings.Contains(times+"\n", tc.want) {
				t.Errorf("want %q in unit %s:\n%s", tc.want, tc.unit, times)
			}
			if m := regexp.MustCompile(`[0-9](ns|µs|ms|s)`).FindString(times); m != "" {
				t.Errorf("a cell names its own unit (%q):\n%s", m, times)
			}
		})
	}
}
