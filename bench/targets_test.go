package main

import (
	"strings"
	"testing"

	"github.com/oncetool/once/internal/golden"
)

// TestTargetsFromResults judges the targets on the committed results: every
// row a target needs is there, so every target must come out measured, and
// the Markdown must carry the table.
func TestTargetsFromResults(t *testing.T) {
	r, err := loadResults("results/latest.json")
	if err != nil {
		t.Fatal(err)
	}
	// 13 of the rows, 4 for each W4 point, 1 for watch --events at scale,
	// 3 for W5.
	w5 := 0
	if r.W5 != nil {
		w5 = 3
	}
	if want := 13 + 4*len(r.W4) + 1 + w5; len(r.Targets) != want || len(r.W4) != 2 {
		t.Fatalf("%d targets (%d W4 points), want %d and 2", len(r.Targets), len(r.W4), want)
	}
	for _, tg := range r.Targets {
		if tg.Met == nil {
			t.Errorf("%s: not measured (value %s)", tg.Target, tg.Value)
		}
	}
	md := r.markdown()
	if !strings.Contains(md, "## Targets") || !strings.Contains(md, "| once watch start-up (launch → watching) |") {
		t.Errorf("markdown lacks the targets table:\n%s", md)
	}
}

// TestPairedAgainstNeighbours: a tracer costing 10% on a machine whose speed
// halves between rounds. Against the untraced medians it looks like a
// speed-up; against the runs made right before each cell it is 10%.
func TestPairedAgainstNeighbours(t *testing.T) {
	w2 := func(tracer, paired string, round int, ms float64) *sample {
		return &sample{Tracer: tracer, PairedWith: paired, Round: round, Workload: w2, WallNs: int64(ms * 1e6), SysNs: int64(ms * 1e6)}
	}
	w1 := func(tracer, paired string, round int, ns float64) *sample {
		return &sample{Tracer: tracer, PairedWith: paired, Round: round, Workload: w1, NsPerCall: ns}
	}
	r := &results{
		Config:  config{W3K: 7},
		W2Opens: 1000,
		Tracers: []*tracer{{Key: "none", mode: modeNone}, {Key: "x", mode: modeSystem}},
		Samples: []*sample{
			w2("none", "", 1, 100), w1("none", "", 1, 1000),
			w2("none", "x", 1, 100), w1("none", "x", 1, 1000),
			w2("x", "", 1, 110), w1("x", "", 1, 1500),
			w2("none", "", 2, 100), w1("none", "", 2, 1000),
			w2("none", "x", 2, 50), w1("none", "x", 2, 500),
			w2("x", "", 2, 55), w1("x", "", 2, 1000),
		},
	}
	r.summarize()
	x := r.Rows[1]
	if x.PairedRounds != 2 {
		t.Fatalf("paired rounds %d, want 2", x.PairedRounds)
	}
	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || *got < want-1e-9 || *got > want+1e-9 {
			t.Errorf("%s = %v, want %v", name, fmtAdded(got), want)
		}
	}
	near("paired W2 ratio", x.W2WallRatio, 1.10)
	near("paired W2 sys ratio", x.W2SysRatio, 1.10)
	near("paired W2 +ns/open", x.W2AddedNs, (7.5e6)/1000)
	near("paired W1 +ns", x.W1AddedNs, 500)
	near("unpaired W2 ratio", x.W2WallRatioUnpaired, 82.5/100)
	near("unpaired W1 +ns", x.W1AddedNsUnpaired, 1250-1000)
	if r.Rows[0].PairedRounds != 0 {
		t.Errorf("the untraced row is paired with itself")
	}
}

// TestPerfDocCurrent: docs/performance.md is the rendering of the
// committed results, so it can't go stale (a mismatch shows the diff;
// go test ./bench -run TestPerfDocCurrent -update rewrites it).
func TestPerfDocCurrent(t *testing.T) {
	r, err := loadResults("results/latest.json")
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, perfDocPath, []byte(perfDoc(r)))
}

// TestW5Targets: the three W5 targets, judged on the stat loop's ns added
// per call against the floor's, each round's cell against the untraced
// runs made right before it; the other workloads' figures are per lookup
// (strace's count), not per run.
func TestW5Targets(t *testing.T) {
	stat := func(tracer, paired string, round int, ns float64) *w5Sample {
		return &w5Sample{Round: round, Tracer: tracer, PairedWith: paired, Workload: w5stat, NsPerCall: ns}
	}
	find := func(tracer, paired string, round int, ms float64) *w5Sample {
		return &w5Sample{Round: round, Tracer: tracer, PairedWith: paired, Workload: w5find, WallNs: int64(ms * 1e6)}
	}
	// cells: the added ns per stat of each row, in both rounds; the
	// machine runs twice as fast in round 2, untraced and traced alike.
	cases := []struct {
		name                   string
		run, other, watch      float64
		runMet, otherMet, wMet bool
	}{
		{"all met", 300, 200, 500, true, true, true},
		{"all at the limit", 600, 400, 800, true, true, true},
		{"run over 1.5×", 601, 400, 800, false, true, true},
		{"outside the tree over the floor", 600, 401, 800, true, false, true},
		{"watch over 2×", 600, 400, 801, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &w5Results{Lookups: map[string]int64{w5stat: 1000, w5find: 10000}}
			for _, row := range []struct {
				key   string
				added float64
			}{{"none", 0}, {"floor", 400}, {"once-run", c.run}, {"once-run-other", c.other}, {"once-watch", c.watch}} {
				w.Rows = append(w.Rows, &w5Row{Key: row.key})
				for round, base := range map[int]float64{1: 2000, 2: 1000} {
					if row.key == "none" {
						w.Samples = append(w.Samples, stat("none", "", round, base))
						continue
					}
					w.Samples = append(w.Samples, stat("none", row.key, round, base), stat(row.key, "", round, base+row.added),
						find("none", row.key, round, 20), find(row.key, "", round, 20+row.added*10000/1e6))
				}
			}
			r := &results{W5: w}
			r.summarize()
			want := map[string]bool{
				"W5: once run, ns added per stat":                          c.runMet,
				"W5: a process outside once run's tree, ns added per stat": c.otherMet,
				"W5: once watch, ns added per stat":                        c.wMet,
			}
			if len(r.Targets) != len(want) {
				t.Fatalf("%d targets, want %d: %+v", len(r.Targets), len(want), r.Targets)
			}
			for _, tg := range r.Targets {
				if tg.Met == nil || *tg.Met != want[tg.Target] {
					t.Errorf("%s: met %v (%s, limit %s), want %v", tg.Target, tg.Met, tg.Value, tg.Limit, want[tg.Target])
				}
			}
			if got := w.row("once-run").AddedNs[w5find]; got < c.run-0.01 || got > c.run+0.01 {
				t.Errorf("find +ns/lookup %v, want %v", got, c.run)
			}
			if !strings.Contains(r.markdown(), "## W5: stat storms") {
				t.Errorf("markdown lacks the W5 section")
			}
		})
	}
}
