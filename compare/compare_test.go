package compare

import (
	"github.com/oncetool/once/trace"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"cp -r {src} {dst}", []string{"cp", "-r", "{src}", "{dst}"}, false},
		{`sh -c 'echo a b'`, []string{"sh", "-c", "echo a b"}, false},
		{`a "b \"c\" d" e\ f`, []string{"a", `b "c" d`, "e f"}, false},
		{"  ", nil, false},
		{"'open", nil, true},
		{`"open`, nil, true},
	}
	for _, tc := range tests {
		got, err := SplitWords(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestStatsAndRatio(t *testing.T) {
	ms := func(v ...int) []Sample {
		var s []Sample
		for _, x := range v {
			s = append(s, Sample{Wall: time.Duration(x) * time.Millisecond})
		}
		return s
	}
	a := stats(ms(10, 12, 14), func(s Sample) time.Duration { return s.Wall })
	if a.N != 3 || a.Min != 10e6 || a.Median != 12e6 || a.Mean != 12e6 || math.Abs(a.Stddev-2e6) > 1 {
		t.Errorf("stats %+v", a)
	}
	b := stats(ms(5, 6, 7, 8), func(s Sample) time.Duration { return s.Wall })
	if b.Median != 6.5e6 {
		t.Errorf("even median %v", b.Median)
	}
	r := ratio(a, b)
	if math.Abs(r.Mean-6.5/12) > 1e-9 || r.Spread <= 0 {
		t.Errorf("ratio %+v", r)
	}
}

// TestOutliers: hyperfine's rule, on hyperfine's own examples among others.
func TestOutliers(t *testing.T) {
	tests := []struct {
		name      string
		v         []float64
		outliers  int
		slowFirst bool
	}{
		{"one run", []float64{50}, 0, false},
		{"two runs far apart", []float64{1000, 1}, 0, false},
		{"low variance", []float64{9.8, 10, 10.2}, 0, false},
		{"three runs are too few", []float64{40, 10, 10.2}, 0, false},
		{"one far out", []float64{9.8, 10, 10.2, 14}, 1, false},
		{"a slow first run", []float64{0.5, 0.30, 0.29, 0.31, 0.30}, 1, true},
		{"a fast first run is no slow one", []float64{0.1, 0.30, 0.29, 0.31, 0.30}, 1, false},
		{"normal", []float64{1002.33, 1001.42, 999.42, 999.69, 1002.29, 1000.76, 998.93, 999.04, 998.84, 1001.11}, 0, false},
		{"two added", []float64{1002.33, 1001.42, 999.42, 999.69, 1002.29, 1000.76, 998.93, 999.04, 998.84, 1001.11, 1020, 500}, 2, false},
		{"MAD 0", []float64{10, 10, 10, 10, 10, 10, 10, 100}, 1, false},
		{"MAD 0, two", []float64{10, 10, 10, 10, 10, 10, 10, 100, 100}, 2, false},
		{"all equal", []float64{7, 7, 7}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var smp []Sample
			for _, x := range tc.v {
				smp = append(smp, Sample{Wall: time.Duration(x * 1e6)})
			}
			st := stats(smp, func(s Sample) time.Duration { return s.Wall })
			if st.Outliers != tc.outliers || st.SlowFirst != tc.slowFirst {
				t.Errorf("%d outliers, slow first %v; want %d, %v", st.Outliers, st.SlowFirst, tc.outliers, tc.slowFirst)
			}
			if st.First != float64(smp[0].Wall) || st.Max < st.Median || st.Min > st.Median {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestComputeRatios: a ratio only of figures exact on both sides.
func TestComputeRatios(t *testing.T) {
	smp := []Sample{{Wall: 10, CPU: 8, User: 4, Sys: 4}, {Wall: 12, CPU: 9, User: 4, Sys: 5}}
	for _, tc := range []struct {
		a, b                 CPUSource
		cpu, split, wallOnly bool
	}{
		{CPUCgroup2, CPUCgroup2, true, false, false},
		{CPUCgroup1, CPUCgroup2, true, false, false},
		{CPUCgroup2, CPURusage, false, false, true},
		{CPURusage, CPURusage, false, false, true},
	} {
		r := &Result{A: Side{Samples: smp, CPUSource: tc.a, CPUExact: tc.a.Exact()},
			B: Side{Samples: smp, CPUSource: tc.b, CPUExact: tc.b.Exact()}}
		Compute(r)
		if !r.Wall.Defined || r.CPU.Defined != tc.cpu || r.User.Defined || r.Sys.Defined {
			t.Errorf("%s/%s: ratios wall %v cpu %v user %v sys %v", tc.a, tc.b, r.Wall.Defined, r.CPU.Defined, r.User.Defined, r.Sys.Defined)
		}
		if r.A.CPU.Mean != 8.5 || r.B.User.Max != 4 {
			t.Errorf("%s/%s: stats %+v", tc.a, tc.b, r.A)
		}
		r.A.SplitExact, r.B.SplitExact = true, true
		Compute(r)
		if !r.User.Defined || !r.Sys.Defined || r.Sys.Mean != 1 {
			t.Errorf("exact splits: user %+v sys %+v", r.User, r.Sys)
		}
	}
	zero := &Result{A: Side{Samples: []Sample{{Wall: 0}}}, B: Side{Samples: []Sample{{Wall: 5}}}}
	if Compute(zero); zero.Wall.Defined {
		t.Errorf("a ratio over a zero baseline: %+v", zero.Wall)
	}
}

func TestGenerateTreeAndLink(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := GenerateTree(src, 250, 100); err != nil {
		t.Fatal(err)
	}
	n := 0
	filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n++
			if info.Size() != 100 {
				t.Errorf("%s: size %d", p, info.Size())
			}
		}
		return nil
	})
	if n != 250 {
		t.Errorf("%d files, want 250", n)
	}
	if err := LinkTree(src, filepath.Join(dir, "copy")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "copy", "d002", "f00249")); err != nil {
		t.Error(err)
	}
}

// summarise reads the run's totals per kind: a script without #! makes an
// exec_shell_fallback, whose failed execve the run's report counts, and
// so must compare.
func TestSummariseReadsTheRunsTotals(t *testing.T) {
	fs := []trace.Finding{
		{Kind: trace.KindDuplicateOpen, WastedNs: 300, FileDetail: trace.FileDetail{Path: "/src", Count: 3}},
		{Kind: trace.KindFailedExecProbes, WastedNs: 60, ChainDetail: trace.ChainDetail{Target: "sh", Failed: 6}},
		{Kind: trace.KindExecShellFallback, WastedNs: 15, ChainDetail: trace.ChainDetail{Target: "./run", Failed: 1}},
		{Kind: trace.KindFailedOpenProbes, WastedNs: 5, ChainDetail: trace.ChainDetail{Target: "libz.so.1", Failed: 2}},
	}
	s := &Side{Trace: &trace.Result{Findings: fs, Waste: trace.TotalsOf(fs)}}
	summarise(s, nil)
	if s.DuplicateFiles != 1 || s.DuplicateOpens != 2 || s.WastedOpenNs != 300 {
		t.Errorf("duplicates: %d files, %d extra opens, %d ns; want 1, 2, 300", s.DuplicateFiles, s.DuplicateOpens, s.WastedOpenNs)
	}
	if s.FailedExecs != 7 || s.WastedExecNs != 75 {
		t.Errorf("exec searches: %d failed, %d ns; want 7, 75", s.FailedExecs, s.WastedExecNs)
	}
}
