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
		{Kind: trace.KindDuplicateStat, WastedNs: 40, FileDetail: trace.FileDetail{Path: "/etc", Count: 5}},
	}
	s := &Side{Trace: &trace.Result{Findings: fs, Waste: trace.TotalsOf(fs), Lookups: 9, FailedLookups: 2}}
	summarise(s, nil)
	if s.Lookups != 9 || s.FailedLookups != 2 {
		t.Errorf("lookups %d (%d failed), want 9 (2 failed)", s.Lookups, s.FailedLookups)
	}
	// Every kind, the lookups' too, in the registry's order.
	if len(s.Waste) != len(trace.Kinds) {
		t.Fatalf("%d kinds' totals, want %d", len(s.Waste), len(trace.Kinds))
	}
	for i, ki := range trace.Kinds {
		want := trace.KindTotal{Kind: ki.Kind}
		switch ki.Kind {
		case trace.KindDuplicateStat:
			want = trace.KindTotal{Kind: ki.Kind, Findings: 1, Avoidable: 4, WastedNs: 40}
		case trace.KindFailedOpenProbes:
			want = trace.KindTotal{Kind: ki.Kind, Findings: 1, Avoidable: 2, WastedNs: 5}
		case trace.KindDuplicateOpen, trace.KindFailedExecProbes, trace.KindExecShellFallback:
			want = s.Trace.KindTotal(ki.Kind)
		}
		if s.Waste[i] != want {
			t.Errorf("totals of %s: %+v, want %+v", ki.Kind, s.Waste[i], want)
		}
	}
	if s.DuplicateFiles != 1 || s.DuplicateOpens != 2 || s.WastedOpenNs != 300 {
		t.Errorf("duplicates: %d files, %d extra opens, %d ns; want 1, 2, 300", s.DuplicateFiles, s.DuplicateOpens, s.WastedOpenNs)
	}
	if s.FailedExecs != 7 || s.WastedExecNs != 75 {
		t.Errorf("exec searches: %d failed, %d ns; want 7, 75", s.FailedExecs, s.WastedExecNs)
	}

	// A process's row is its exact totals: every open strace counts, an
	// O_PATH one's and a device's too, whatever its lists keep.
	p := &trace.Process{Pid: 7, Comm: "sh", Totals: trace.ProcessTotals{Opens: 5, Files: 3, DupFiles: 1},
		Opens:        []*trace.FileOpens{{Path: "/src", Count: 2}},
		SpecialOpens: []*trace.FileOpens{{Path: "/dev/null", Count: 2}},
		PathOpens:    []*trace.FileOpens{{Path: "/dir", Count: 1}}}
	s = &Side{Trace: &trace.Result{Processes: []*trace.Process{p}}}
	summarise(s, nil)
	if len(s.PerProcessOpens) != 1 || s.PerProcessOpens[0] != (ProcessOpens{Pid: 7, Comm: "sh", Opens: 5, Files: 3, DupFiles: 1}) {
		t.Errorf("per process: %+v, want the totals (5 opens, 3 files, 1 duplicated)", s.PerProcessOpens)
	}
}

// TestRelative: the ratio B/A of the means as hyperfine words it, a factor
// of at least 1 "faster" or "slower", its σ propagated from both sides'
// relative standard deviations. The figures are worked by hand: before
// 10, 12, 14 ms (mean 12, σ 2), after 5, 6, 7 ms (mean 6, σ 1); the
// relative σ of each side is 1/6, their hypotenuse sqrt(2)/6 = 0.235702,
// so 2 × 0.235702 = 0.471405 of the factor 2.
func TestRelative(t *testing.T) {
	ms := func(v ...float64) Side {
		var s Side
		for _, x := range v {
			s.Samples = append(s.Samples, Sample{Wall: time.Duration(x * 1e6)})
		}
		return s
	}
	tests := []struct {
		name           string
		a, b           Side
		factor, stddev float64
		speed          Speed
		median         float64
		medianSpeed    Speed
	}{
		{"twice as fast", ms(10, 12, 14), ms(5, 6, 7), 2, 0.471405, Faster, 2, Faster},
		{"twice as slow", ms(5, 6, 7), ms(10, 12, 14), 2, 0.471405, Slower, 2, Slower},
		// 100/80 = 1.25; σ: before 10/100, after 0; 1.25 × 0.1 = 0.125.
		{"a quarter faster, one side steady", ms(90, 100, 110), ms(80, 80, 80), 1.25, 0.125, Faster, 1.25, Faster},
		// Means 12 and 12: the same; the medians 12 and 11: 12/11 faster.
		// After's σ is sqrt((1+1+4)/2) = sqrt(3); hypot(2/12, sqrt(3)/12)
		// = sqrt(7)/12 = 0.220479.
		{"same mean, faster median", ms(10, 12, 14), ms(11, 11, 14), 1, 0.220479, Same, 12.0 / 11, Faster},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{A: tc.a, B: tc.b}
			Compute(r)
			f, sd, s := r.Wall.Relative()
			if math.Abs(f-tc.factor) > 1e-6 || math.Abs(sd-tc.stddev) > 1e-6 || s != tc.speed {
				t.Errorf("Relative() = %v ± %v %v; want %v ± %v %v", f, sd, s, tc.factor, tc.stddev, tc.speed)
			}
			if m, ms := r.Wall.MedianRelative(); math.Abs(m-tc.median) > 1e-6 || ms != tc.medianSpeed {
				t.Errorf("MedianRelative() = %v %v; want %v %v", m, ms, tc.median, tc.medianSpeed)
			}
		})
	}
}
