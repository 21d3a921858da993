package report

import (
	"bytes"
	"math"
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

// TestNoiseNotes: a ratio whose means these runs cannot tell apart
// (Welch's t-test, 5% two-sided) gets a warning; one they can, a side of
// one run (no σ) and equal means get none. The t and degrees of freedom
// are Welch's, as scipy.stats.ttest_ind(a, b, equal_var=False) gives them.
func TestNoiseNotes(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want string // "" for no warning
	}{
		{"three runs, within the noise", []float64{185.0, 200.0, 214.7}, []float64{150.0, 171.0, 194.1},
			"warning: wall time: the difference of the means is within the runs' noise (Welch's t-test: t = 1.84 on 3.5 degrees of freedom, under 2.94 at 5%, two-sided): these runs show neither side faster. More --runs, or a quieter machine, may tell."},
		{"the same spread, more runs", []float64{185.0, 200.0, 214.7, 185.0, 200.0, 214.7, 185.0, 200.0, 214.7, 185.0, 200.0, 214.7},
			[]float64{150.0, 171.0, 194.1, 150.0, 171.0, 194.1, 150.0, 171.0, 194.1, 150.0, 171.0, 194.1}, ""},
		{"slower, within the noise", []float64{10, 12, 14}, []float64{11, 13, 15},
			"warning: wall time: the difference of the means is within the runs' noise (Welch's t-test: t = 0.61 on 4.0 degrees of freedom, under 2.78 at 5%, two-sided): these runs show neither side faster. More --runs, or a quieter machine, may tell."},
		{"far apart", []float64{100, 101, 102}, []float64{50, 51, 52}, ""},
		{"one run each", []float64{100}, []float64{99}, ""},
		{"equal means", []float64{10, 12, 14}, []float64{14, 12, 10}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zero := make([]float64, max(len(tc.a), len(tc.b)))
			r := &compare.Result{Runs: len(tc.a),
				A: compare.Side{Label: "before", Samples: samples(tc.a, zero, zero)},
				B: compare.Side{Label: "after", Samples: samples(tc.b, zero, zero)}}
			cpuFrom(r, compare.CPURusage)
			compare.Compute(r)
			got := strings.Join(noiseNotes(r), "\n")
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestTCrit975: Student's t at 97.5%, against printed tables' rows and
// between them (the quantile of its density integrated numerically).
func TestTCrit975(t *testing.T) {
	for _, tc := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {3, 3.182}, {3.5, 2.940}, {30, 2.042},
		{40, 2.021}, {60, 2.000}, {120, 1.980}, {1e9, 1.960}, {48, 2.011},
	} {
		if got := tCrit975(tc.df); math.Abs(got-tc.want) > 0.0005 {
			t.Errorf("tCrit975(%v) = %.4f, want %.4f", tc.df, got, tc.want)
		}
	}
}
