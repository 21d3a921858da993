package main

import "fmt"

// targetResult is one of the performance targets once is held to (the
// project's performance issue), judged on this run's medians.
type targetResult struct {
	Target string `json:"target"`
	Value  string `json:"value"` // what this run measured
	Limit  string `json:"limit"`
	Met    *bool  `json:"met"` // nil: a row it needs did not run
}

// targets judges the targets. Ratios compare rows of this one run, so the
// machine's noise (hundreds of ns on W1 here) applies to both sides.
func (r *results) targets() []targetResult {
	rows := map[string]*rowSummary{}
	for _, row := range r.Rows {
		if row.Unavailable == "" {
			rows[row.Key] = row
		}
	}
	get := func(key string, f func(*rowSummary) *float64) *float64 {
		if row := rows[key]; row != nil {
			return f(row)
		}
		return nil
	}
	w1 := func(row *rowSummary) *float64 { return row.W1AddedNs }
	var out []targetResult
	add := func(target, limit string, value *float64, show func(float64) string, ok func(float64) bool) {
		t := targetResult{Target: target, Limit: limit, Value: "—"}
		if value != nil {
			t.Value = show(*value)
			met := ok(*value)
			t.Met = &met
		}
		out = append(out, t)
	}
	ns := func(v float64) string { return fmtAdded(&v) }
	times := func(v float64) string { return fmt.Sprintf("×%.2f", v) }
	// vsRow: value of key's figure relative to base's, limit: at most k
	// times base's.
	vsRow := func(target, key, base string, k float64, f func(*rowSummary) *float64) {
		v, b := get(key, f), get(base, f)
		limit := fmt.Sprintf("≤ %.3g × %s", k, base)
		if v != nil && b != nil {
			limit = fmt.Sprintf("≤ %.3g × %s = %s", k, fmtAdded(b), fmtAdded(fp(k**b)))
			add(target, limit, v, ns, func(x float64) bool { return x <= k**b })
			return
		}
		add(target, limit, nil, ns, nil)
	}
	w5 := func() {
		if r.W5 == nil {
			return
		}
		// W5's are judged on the stat loop, the only one of its
		// workloads whose per-lookup figure is steadier than the noise.
		stat := func(key string) *float64 {
			if row := r.W5.row(key); row != nil {
				if v, ok := row.AddedNs[w5stat]; ok {
					return &v
				}
			}
			return nil
		}
		w5vs := func(target, key string, k float64) {
			v, b := stat(key), stat("floor")
			limit := fmt.Sprintf("≤ %.3g × floor", k)
			if v == nil || b == nil {
				add(target, limit, nil, ns, nil)
				return
			}
			add(target, fmt.Sprintf("≤ %.3g × %s = %s", k, fmtAdded(b), fmtAdded(fp(k**b))), v, ns, func(x float64) bool { return x <= k**b })
		}
		w5vs("W5: once run, ns added per stat", "once-run", 1.5)
		w5vs("W5: a process outside once run's tree, ns added per stat", "once-run-other", 1)
		w5vs("W5: once watch, ns added per stat", "once-watch", 2)
	}
	if len(r.Rows) == 0 { // only W5 ran
		w5()
		return out
	}
	vsRow("W1: once watch, ns added per open", "once-watch", "floor", 2, w1)
	vsRow("W1: once watch --events, ns added per open", "once-watch-events", "floor", 2, w1)
	vsRow("W1: once run, ns added per open", "once-run", "floor", 1.5, w1)
	vsRow("W1: a process outside once run's tree, ns added per open", "once-run-other", "floor", 1, w1)
	// W2's first opens: a tracer's ratio within 0.10 of the floor's, which
	// pays the tracepoints themselves on this run's machine.
	w2 := func(r *rowSummary) *float64 { return r.W2WallRatio }
	for _, key := range []string{"once-run", "once-watch"} {
		target := map[string]string{"once-run": "W2: once run, cp -r wall", "once-watch": "W2: once watch, cp -r wall"}[key]
		if f, v := get("floor", w2), get(key, w2); f != nil && v != nil {
			add(target, fmt.Sprintf("≤ floor's ×%.2f + 0.10", *f), v, times, func(x float64) bool { return x <= *f+0.10+1e-9 })
		} else {
			add(target, "≤ floor's + 0.10", nil, times, nil)
		}
	}
	add("W2: once run --stacks, cp -r wall", "≤ ×1.35", get("once-run-stacks", func(r *rowSummary) *float64 { return r.W2WallRatio }),
		times, func(x float64) bool { return x <= 1.35 })
	add("W3: once run, fork+execvpe median", "≤ ×1.08", get("once-run", func(r *rowSummary) *float64 { return r.W3VpeRatio }),
		times, func(x float64) bool { return x <= 1.08 })
	// The traced calls that happened in one of once watch's cells: W1 and
	// W2 run W1Reps and W2Reps times in it (see cellWorkloads).
	cfg := r.Config
	perCell := float64(cfg.W1N*max(1, cfg.W1Reps)) + float64(r.W2Opens*int64(max(1, cfg.W2Reps))) +
		float64(cfg.W3N*cfg.W3K) + float64(cfg.W3N)
	var cpu *float64
	if c := get("once-watch", func(r *rowSummary) *float64 { return r.CPUNs }); c != nil && perCell > 0 {
		cpu = fp(*c / perCell)
	}
	add("once watch CPU per traced call (a cell's CPU / its calls)", "≤ 1 µs", cpu, ns, func(x float64) bool { return x <= 1000 })
	add("once watch start-up (launch → watching)", "≤ 50 ms", get("once-watch", func(r *rowSummary) *float64 { return r.StartupNs }),
		func(v float64) string { return fmtNs(&v) }, func(x float64) bool { return x <= 50e6 })
	add("once watch peak RSS", "< 50 MiB", get("once-watch", func(r *rowSummary) *float64 { return r.PeakRSSKB }),
		func(v float64) string { return fmtKB(&v) }, func(x float64) bool { return x < 50*1024 })
	var lost *float64
	if row := rows["once-watch"]; row != nil && row.LostDeclared != nil {
		lost = fp(float64(*row.LostDeclared))
	}
	add("once watch, events lost (default ring, W1 at full speed)", "0", lost,
		func(v float64) string { return fmtInt(int64(v)) }, func(x float64) bool { return x == 0 })
	var lostEvents *float64
	if row := rows["once-watch-events"]; row != nil && row.LostDeclared != nil {
		lostEvents = fp(float64(*row.LostDeclared))
	}
	add("once watch --events, events lost (default ring, W1 at full speed)", "0", lostEvents,
		func(v float64) string { return fmtInt(int64(v)) }, func(x float64) bool { return x == 0 })
	kb := func(v float64) string { return fmtKB(&v) }
	for _, p := range r.W4 {
		name := fmt.Sprintf("W4 %s × %d: once run", fmtInt(int64(p.Jobs)), p.Files)
		var rss, after, size, same *float64
		if p.Error == "" && len(p.Runs) == 2 {
			d := p.Runs[0]
			rss, after, size = fp(float64(d.PeakRSSKB)), nonzero(d.ReportAfterExit), fp(float64(d.ReportSize))
			same = fp(0)
			if p.SameFindings {
				same = fp(1)
			}
		}
		add(name+" peak RSS (default report)", "≤ 150 MiB", rss, kb, func(x float64) bool { return x <= 150*1024 })
		add(name+", command exit to report written", "≤ 1 s", after, func(v float64) string { return fmtNs(&v) }, func(x float64) bool { return x <= 1e9 })
		add(name+", default JSON report", "≤ 5 MB", size, func(v float64) string { return fmt.Sprintf("%.1f MB", v/1e6) }, func(x float64) bool { return x <= 5e6 })
		add(name+", findings the same as --files all", "yes", same, func(v float64) string {
			if v == 1 {
				return "yes"
			}
			return "no"
		}, func(x float64) bool { return x == 1 })
	}
	if e := r.WatchEvents; e != nil {
		var grew *float64
		if e.Error == "" {
			grew = fp(float64(e.PeakRSSKB - e.IdleRSSKB))
		}
		add(fmt.Sprintf("once watch --events over %s × %s: RSS above idle", fmtInt(int64(e.Jobs)), fmtInt(int64(e.Files))), "≤ 20 MiB",
			grew, kb, func(x float64) bool { return x <= 20*1024 })
	}
	w5()
	return out
}
