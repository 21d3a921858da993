package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"-n", "0"}, "-n must be 1..10000000, got 0"},
		{[]string{"-n", "10000001"}, "-n must be 1..10000000"},
		{[]string{"-n", "many"}, `invalid value "many" for flag -n`},
		{[]string{"-k", "0"}, "-k must be 1..64, got 0"},
		{[]string{"-k", "65"}, "-k must be 1..64, got 65"},
		{[]string{"-strategy", "vfork"}, `unknown -strategy "vfork"`},
		{[]string{"-frobnicate"}, "flag provided but not defined: -frobnicate"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-cpu", "-2"}, "-cpu must be a CPU number, got -2"},
		{[]string{"-cpu", "100000"}, "-cpu 100000: not a CPU this process may run on"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.msg) || !strings.HasPrefix(msg, "reflaunch: ") {
				t.Errorf("stderr %q lacks %q", msg, tc.msg)
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Errorf("want exactly one line, got %q", msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestPinned: -cpu runs the launches on that CPU and says so.
func TestPinned(t *testing.T) {
	rep := runJSON(t, "-n", "3", "-k", "2", "-strategy", "execvpe", "-cpu", "0")
	if rep.CPU == nil || *rep.CPU != 0 || len(rep.Strategies) != 1 || rep.Strategies[0].N != 3 {
		t.Errorf("report %+v, want 3 execvpe launches on CPU 0", rep)
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-h"}, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "usage: reflaunch") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// runJSON runs reflaunch in this process with -json and decodes the report.
func runJSON(t *testing.T, args ...string) report {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "-json"), &stdout, &stderr); code != exitOK {
		t.Fatalf("reflaunch %q: exit %d: %s", args, code, stderr.String())
	}
	var rep report
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decoding %q: %v", stdout.String(), err)
	}
	return rep
}

func TestQuickRunEachStrategy(t *testing.T) {
	const n, k = 50, 3
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			rep := runJSON(t, "-n", "50", "-k", "3", "-strategy", s.name)
			if rep.N != n || rep.K != k || len(rep.Strategies) != 1 {
				t.Fatalf("report %+v, want n=%d k=%d and one strategy", rep, n, k)
			}
			r := rep.Strategies[0]
			if r.Name != s.name || r.N != n {
				t.Errorf("strategy %q with n=%d, want %q with %d", r.Name, r.N, s.name, n)
			}
			if !(0 < r.MinNS && r.MinNS <= r.MedianNS && r.MedianNS <= r.P90NS && r.MinNS <= r.MeanNS) {
				t.Errorf("implausible times: min %d median %d mean %d p90 %d", r.MinNS, r.MedianNS, r.MeanNS, r.P90NS)
			}
			// A fork, an exec and a wait cannot take a whole second.
			if r.MedianNS > 1e9 {
				t.Errorf("median %d ns", r.MedianNS)
			}
			want := 0
			if s.name == "execvpe" || s.name == "spawnp" {
				want = k - 1
			}
			if r.FailedExecs != want {
				t.Errorf("failed execs per iteration %d, want %d", r.FailedExecs, want)
			}
			if (r.LookupNS != nil) != (s.name == "resolved") {
				t.Errorf("lookup_ns present: %v", r.LookupNS != nil)
			}
			if s.name == "resolved" && r.LookupProbes != k {
				t.Errorf("lookup probed %d entries, want %d", r.LookupProbes, k)
			}
			if rep.Ratios != nil {
				t.Errorf("ratios %+v for a single strategy", rep.Ratios)
			}
		})
	}
}

func TestAllStrategiesText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-n", "20", "-k", "2"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	var names []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 7 && findStrategy(f[0]) != nil {
			names = append(names, f[0])
		}
	}
	if !slices.Equal(names, []string{"execvpe", "spawnp", "absolute", "resolved"}) {
		t.Errorf("table rows %q\n%s", names, stdout.String())
	}
	ratio := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "median ratio: ") {
			ratio = l
		}
	}
	if !strings.HasPrefix(ratio, "median ratio: execvpe/absolute ") || !strings.Contains(ratio, ", execvpe/resolved ") {
		t.Errorf("median ratio line %q, want both ratios\n%s", ratio, stdout.String())
	}
}

func TestKeep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	rep := runJSON(t, "-n", "1", "-k", "3", "-strategy", "absolute", "-keep", dir)
	if len(rep.Strategies) != 1 {
		t.Fatalf("report %+v", rep)
	}
	for _, d := range []string{"d1", "d2"} {
		if ents, err := os.ReadDir(filepath.Join(dir, d)); err != nil || len(ents) != 0 {
			t.Errorf("%s: %v entries, err %v; want an empty directory", d, len(ents), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "d3", targetName)); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("target: %v, %v", fi, err)
	}

	// The same directory again is not empty any more: refuse it.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-n", "1", "-keep", dir}, &stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "not empty") {
		t.Errorf("reusing -keep dir: exit %d, stderr %q", code, stderr.String())
	}
}

func TestTempDirRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	runJSON(t, "-n", "1", "-k", "2", "-strategy", "resolved")
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in TMPDIR: %v", ents)
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []int64
		want summary
	}{
		{[]int64{7}, summary{N: 1, Min: 7, Median: 7, Mean: 7, P90: 7}},
		{[]int64{4, 1, 3, 2}, summary{N: 4, Min: 1, Median: 2, Mean: 3, P90: 4}}, // median of 2 and 3 rounds down; mean 2.5 rounds to 3
		{[]int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, summary{N: 10, Min: 1, Median: 5, Mean: 6, P90: 9}},
		{[]int64{5, 1, 100}, summary{N: 3, Min: 1, Median: 5, Mean: 35, P90: 100}},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.in)
		if got := summarize(in); got != tc.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("summarize reordered its input to %v", in)
		}
	}
}
