package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"
)

// results is latest.json: the configuration, every raw sample and
// session, and the per-row summaries the Markdown is made from.
type results struct {
	Date        string            `json:"date"`
	DurationNs  int64             `json:"duration_ns"`
	Machine     machine           `json:"machine"`
	Tools       map[string]string `json:"tools"`
	Config      config            `json:"config"`
	Rounds      int               `json:"rounds_done"`
	W2Opens     int64             `json:"w2_opens_by_cp"`
	Tracers     []*tracer         `json:"tracers"`
	Rows        []*rowSummary     `json:"rows"`
	Targets     []targetResult    `json:"targets"`
	Samples     []*sample         `json:"samples"`
	Sessions    []*session        `json:"sessions"`
	Scale       []scalePoint      `json:"scale,omitempty"`
	W4          []w4Point         `json:"w4,omitempty"`
	WatchEvents *watchEventsPoint `json:"watch_events,omitempty"`
	Startup     []startupPoint    `json:"startup,omitempty"`
	BPFCost     []bpfCost         `json:"bpf_cost,omitempty"`
	W5          *w5Results        `json:"w5,omitempty"`
	Warnings    []string          `json:"warnings,omitempty"`
	// RestWaits and RestWaitNs: how often, and how long in all, the bench
	// waited after a tracer's exit for the kernel to let go of its
	// tracepoints before the next run or start (settle).
	RestWaits  int   `json:"rest_waits"`
	RestWaitNs int64 `json:"rest_wait_ns"`
	// WarmUps: untimed runs of a workload made right before an untraced
	// run that came after such a wait or after another workload
	// (warmUntraced).
	WarmUps int `json:"warm_ups"`
}

// fidelity is what a row reported of one workload's events, over all its
// runs.
type fidelity struct {
	Seen     int64 `json:"seen"`
	Expected int64 `json:"expected"`
	Runs     int   `json:"runs"`
}

// rowSummary holds a row's medians over rounds. Pointers are absent
// figures (the row failed, or the figure does not apply).
type rowSummary struct {
	Key         string   `json:"key"`
	Label       string   `json:"label"`
	Unavailable string   `json:"unavailable,omitempty"`
	Errors      []string `json:"errors,omitempty"`

	W1NsPerCall  *float64             `json:"w1_ns_per_call"`
	W1Ratio      *float64             `json:"w1_ratio"`
	W1AddedNs    *float64             `json:"w1_added_ns_per_open"`
	W1ByKind     map[string]float64   `json:"w1_ns_per_call_by_kind,omitempty"`
	W2WallNs     *float64             `json:"w2_wall_ns"`
	W2WallRatio  *float64             `json:"w2_wall_ratio"`
	W2SysNs      *float64             `json:"w2_sys_ns"`
	W2SysRatio   *float64             `json:"w2_sys_ratio"`
	W2AddedNs    *float64             `json:"w2_added_ns_per_open"`
	W3VpeNs      *float64             `json:"w3_execvpe_median_ns"`
	W3VpeRatio   *float64             `json:"w3_execvpe_ratio"`
	W3AbsNs      *float64             `json:"w3_absolute_median_ns"`
	W3AbsRatio   *float64             `json:"w3_absolute_ratio"`
	W3AddedNs    *float64             `json:"w3_added_ns_per_exec"`
	StartupNs    *float64             `json:"startup_ns"`
	StartupHow   string               `json:"startup_how"`
	PeakRSSKB    *float64             `json:"peak_rss_kb"`
	RSSByWL      map[string]float64   `json:"wrapped_peak_rss_kb_by_workload,omitempty"`
	CPUNs        *float64             `json:"tracer_cpu_ns_per_cell"`
	Fidelity     map[string]*fidelity `json:"events"`
	LostDeclared *int64               `json:"events_lost_declared"`
	IRQWorkPerK  *float64             `json:"w1_irq_work_per_1000_opens"`
	W1DrainNs    *float64             `json:"w1_drain_ns"`
	// PairedRounds: rounds whose W1, W2 and W3 execvpe figures above compare the
	// cell with the untraced runs made just before it (pairedBaseline),
	// the median over those rounds. 0: against the untraced row's
	// medians, as the Unpaired figures below always are.
	PairedRounds        int      `json:"paired_rounds"`
	W1AddedNsUnpaired   *float64 `json:"w1_added_ns_per_open_unpaired"`
	W2WallRatioUnpaired *float64 `json:"w2_wall_ratio_unpaired"`
	W3VpeRatioUnpaired  *float64 `json:"w3_execvpe_ratio_unpaired"`
	ForeignCells        int      `json:"cells_with_foreign_tracers"`
}

func median(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &m
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	r := *a / *b
	return &r
}

// perEvent is (traced − untraced) / events per run.
func perEvent(traced, untraced *float64, events float64) *float64 {
	if traced == nil || untraced == nil || events <= 0 {
		return nil
	}
	d := (*traced - *untraced) / events
	return &d
}

func (r *results) summarize() {
	r.Rows = nil
	var base *rowSummary
	for _, t := range r.Tracers {
		row := &rowSummary{Key: t.Key, Label: t.Label, Unavailable: t.Unavailable, Fidelity: map[string]*fidelity{}}
		vals := map[string][]float64{}
		byKind := map[string][]float64{}
		errs := map[string]bool{}
		foreignRounds := map[int]bool{}
		var lost int64
		lostKnown := false
		for _, s := range r.Samples {
			if s.Tracer != t.Key {
				continue
			}
			if s.Foreign {
				foreignRounds[s.Round] = true
			}
			if s.Error != "" {
				errs[s.Workload+": "+s.Error] = true
				continue
			}
			switch s.Workload {
			case w1:
				vals["w1"] = append(vals["w1"], s.NsPerCall)
				for k, v := range s.ByKind {
					byKind[k] = append(byKind[k], v)
				}
				vals["startup"] = append(vals["startup"], float64(s.StartupNs))
				if s.Calls > 0 {
					vals["iwi"] = append(vals["iwi"], float64(s.IRQWork)*1000/float64(s.Calls))
				}
				if t.mode == modeSystem {
					vals["drain"] = append(vals["drain"], float64(s.DrainNs))
				}
			case w2:
				vals["w2wall"] = append(vals["w2wall"], float64(s.WallNs))
				vals["w2sys"] = append(vals["w2sys"], float64(s.SysNs))
			case w3vpe:
				vals["w3vpe"] = append(vals["w3vpe"], float64(s.MedianNs))
			case w3abs:
				vals["w3abs"] = append(vals["w3abs"], float64(s.MedianNs))
			}
			if s.TracerMaxRSSKB > 0 {
				vals["rss"] = append(vals["rss"], float64(s.TracerMaxRSSKB))
				if row.RSSByWL == nil {
					row.RSSByWL = map[string]float64{}
				}
				row.RSSByWL[s.Workload] = math.Max(row.RSSByWL[s.Workload], float64(s.TracerMaxRSSKB))
			}
			if s.LostDeclared != nil {
				lost += *s.LostDeclared
				lostKnown = true
			}
			if s.Seen >= 0 {
				f := row.Fidelity[s.Workload]
				if f == nil {
					f = &fidelity{}
					row.Fidelity[s.Workload] = f
				}
				f.Seen += s.Seen
				f.Expected += s.Expected
				f.Runs++
			}
		}
		for _, s := range r.Sessions {
			if s.Tracer != t.Key {
				continue
			}
			if s.Error != "" {
				errs["session: "+s.Error] = true
			}
			if s.Killed != "" {
				errs[fmt.Sprintf("round %d: %s (its timings kept, its output not counted)", s.Round, s.Killed)] = true
			}
			if s.Error != "" && s.AttachedNs == 0 {
				continue
			}
			if s.ReadyNs > 0 {
				vals["ready"] = append(vals["ready"], float64(s.ReadyNs))
			}
			vals["attached"] = append(vals["attached"], float64(s.AttachedNs))
			vals["rss"] = append(vals["rss"], float64(s.PeakRSSKB))
			vals["cpu"] = append(vals["cpu"], float64(s.CPUNs))
			if s.LostKnown {
				lost += s.Lost
				lostKnown = true
			}
			if len(s.Foreign) > 0 {
				foreignRounds[s.Round] = true
			}
		}
		for e := range errs {
			row.Errors = append(row.Errors, e)
		}
		sort.Strings(row.Errors)
		row.ForeignCells = len(foreignRounds)
		row.W1NsPerCall = median(vals["w1"])
		if len(byKind) > 0 {
			row.W1ByKind = map[string]float64{}
			for k, v := range byKind {
				row.W1ByKind[k] = *median(v)
			}
		}
		row.W2WallNs, row.W2SysNs = median(vals["w2wall"]), median(vals["w2sys"])
		row.W3VpeNs, row.W3AbsNs = median(vals["w3vpe"]), median(vals["w3abs"])
		row.IRQWorkPerK = median(vals["iwi"])
		row.W1DrainNs = median(vals["drain"])
		row.CPUNs = median(vals["cpu"])
		if len(vals["rss"]) > 0 {
			m := vals["rss"][0]
			for _, v := range vals["rss"] {
				m = math.Max(m, v)
			}
			row.PeakRSSKB = &m
		}
		if lostKnown {
			row.LostDeclared = &lost
		}
		switch t.mode {
		case modeSystem:
			if len(vals["ready"]) > 0 {
				row.StartupNs, row.StartupHow = median(vals["ready"]), "ready line"
			} else {
				row.StartupNs, row.StartupHow = median(vals["attached"]), "last attach"
			}
		default:
			row.StartupNs, row.StartupHow = median(vals["startup"]), "launch → workload start"
		}
		if t.Key == "none" {
			base = row
		}
		r.Rows = append(r.Rows, row)
	}
	if r.W5 != nil {
		r.W5.summarize()
	}
	if base == nil {
		r.Targets = r.targets()
		return
	}
	for _, row := range r.Rows {
		row.W1Ratio = ratio(row.W1NsPerCall, base.W1NsPerCall)
		row.W1AddedNs = perEvent(row.W1NsPerCall, base.W1NsPerCall, 1) // one open per call
		row.W2WallRatio = ratio(row.W2WallNs, base.W2WallNs)
		row.W2SysRatio = ratio(row.W2SysNs, base.W2SysNs)
		row.W2AddedNs = perEvent(row.W2WallNs, base.W2WallNs, float64(r.W2Opens))
		row.W3VpeRatio = ratio(row.W3VpeNs, base.W3VpeNs)
		row.W3AbsRatio = ratio(row.W3AbsNs, base.W3AbsNs)
		row.W3AddedNs = perEvent(row.W3VpeNs, base.W3VpeNs, float64(r.Config.W3K))
		row.W1AddedNsUnpaired, row.W2WallRatioUnpaired = row.W1AddedNs, row.W2WallRatio
		row.W3VpeRatioUnpaired = row.W3VpeRatio
		if row != base {
			r.pair(row)
		}
	}
	r.Targets = r.targets()
}

// paired reports whether any row was judged against paired baselines.
func (r *results) paired() bool {
	for _, row := range r.Rows {
		if row.PairedRounds > 0 {
			return true
		}
	}
	return false
}

// pair replaces row's W1, W2 and W3 execvpe comparisons with paired ones
// where the run has them: per round, the cell's median against the median
// of the untraced runs made right before it (or its runs), then the median
// over rounds.
func (r *results) pair(row *rowSummary) {
	type side struct{ w1, wall, sys, vpe []float64 }
	traced, untraced := map[int]*side{}, map[int]*side{}
	for _, s := range r.Samples {
		var m map[int]*side
		switch {
		case s.Error != "":
			continue
		case s.Tracer == row.Key && s.PairedWith == "":
			m = traced
		case s.Tracer == "none" && s.PairedWith == row.Key:
			m = untraced
		default:
			continue
		}
		if m[s.Round] == nil {
			m[s.Round] = &side{}
		}
		switch s.Workload {
		case w1:
			m[s.Round].w1 = append(m[s.Round].w1, s.NsPerCall)
		case w2:
			m[s.Round].wall = append(m[s.Round].wall, float64(s.WallNs))
			m[s.Round].sys = append(m[s.Round].sys, float64(s.SysNs))
		case w3vpe:
			m[s.Round].vpe = append(m[s.Round].vpe, float64(s.MedianNs))
		}
	}
	var w1Ratio, w1Added, wallRatio, sysRatio, w2Added, vpeRatio, vpeAdded []float64
	for round, t := range traced {
		u := untraced[round]
		if u == nil {
			continue
		}
		row.PairedRounds++
		if a, b := median(t.w1), median(u.w1); a != nil && b != nil {
			w1Ratio = append(w1Ratio, *ratio(a, b))
			w1Added = append(w1Added, *a-*b)
		}
		if a, b := median(t.wall), median(u.wall); a != nil && b != nil {
			wallRatio = append(wallRatio, *ratio(a, b))
			if r.W2Opens > 0 {
				w2Added = append(w2Added, (*a-*b)/float64(r.W2Opens))
			}
		}
		if a, b := median(t.sys), median(u.sys); a != nil && b != nil && *b > 0 {
			sysRatio = append(sysRatio, *ratio(a, b))
		}
		if a, b := median(t.vpe), median(u.vpe); a != nil && b != nil && *b > 0 {
			vpeRatio = append(vpeRatio, *ratio(a, b))
			vpeAdded = append(vpeAdded, (*a-*b)/float64(max(1, r.Config.W3K)))
		}
	}
	if row.PairedRounds == 0 {
		return
	}
	row.W1Ratio, row.W1AddedNs = median(w1Ratio), median(w1Added)
	row.W2WallRatio, row.W2SysRatio, row.W2AddedNs = median(wallRatio), median(sysRatio), median(w2Added)
	if len(vpeRatio) > 0 {
		row.W3VpeRatio, row.W3AddedNs = median(vpeRatio), median(vpeAdded)
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Number formatting for the tables.

func fmtNs(p *float64) string {
	if p == nil {
		return "—"
	}
	v := *p
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.2f s", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.1f ms", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.0f µs", v/1e3)
	case a >= 1e3:
		return fmt.Sprintf("%.2f µs", v/1e3)
	}
	return fmt.Sprintf("%.0f ns", v)
}

func fmtRatio(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("×%.2f", *p)
}

func fmtAdded(p *float64) string {
	if p == nil {
		return "—"
	}
	s := fmtNs(p)
	if *p >= 0 {
		s = "+" + s
	}
	return s
}

func fmtKB(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f MiB", *p/1024)
}

func fmtInt(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func fmtFidelity(f *fidelity) string {
	if f == nil {
		return "n/a"
	}
	if f.Expected == 0 {
		return fmtInt(f.Seen) + "/?"
	}
	if f.Seen == f.Expected {
		return "100%"
	}
	// Not all (or more than all): the difference, so that a rounded
	// 100.0% does not hide a handful of missing events.
	return fmt.Sprintf("%.1f%% (%+d)", 100*float64(f.Seen)/float64(f.Expected), f.Seen-f.Expected)
}

func fp(v float64) *float64 { return &v }

// nonzero is fp of v, or nil (not measured) for 0: a figure a run made
// before the bench measured it.
func nonzero(v int64) *float64 {
	if v == 0 {
		return nil
	}
	return fp(float64(v))
}

// markdown renders latest.md.
func (r *results) markdown() string {
	var b strings.Builder
	m := r.Machine
	cfg := r.Config
	fmt.Fprintf(&b, "# once bench — %s\n\n", r.Date)
	virt := ""
	if m.Virtualized {
		virt = ", virtual machine"
	}
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %s, %.1f GiB%s. Total run time %v, %d interleaved rounds.\n\n",
		m.Kernel, m.CPUs, m.CPU, float64(m.MemoryKB)/(1<<20), virt, time.Duration(r.DurationNs).Round(time.Second), r.Rounds)
	fmt.Fprintf(&b, "Tools: %s; bpftrace %s; %s; libbpf-tools %s; %s; %s.\n\n",
		r.Tools["once"], strings.TrimPrefix(r.Tools["bpftrace"], "bpftrace "), r.Tools["strace"], r.Tools["libbpf-tools"], r.Tools["cp"], r.Tools["go"])
	if len(r.Tracers) == 0 && r.W5 != nil {
		// -only W5: its section alone.
		b.WriteString("Only W5 ran (`-only W5`).\n\n")
		r.targetsMarkdown(&b)
		b.WriteString("\n" + r.W5.markdown(cfg))
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", mdEscape(w))
		}
		return b.String()
	}
	w1reps, w2reps, w3cpu, w3why := "", "", "", ""
	if cfg.W3CPU >= 0 {
		w3cpu = fmt.Sprintf(" -cpu %d", cfg.W3CPU)
		w3why = "; pinned to one CPU, the tracers' readers free to run on the others: unpinned, a child often starts on the other, idle vCPU, " +
			"and waking it dominates the median (untraced, 430 µs against 231 µs pinned on this VM), which then measures how idle that vCPU was"
	}
	if cfg.W1Reps > 1 {
		w1reps = fmt.Sprintf(", run %d times per round under the rows judged against the floor or a tight limit (floor, once run, once watch with and without --events) and untraced, once under the others, each run a sample", cfg.W1Reps)
	}
	if cfg.W2Reps > 1 {
		w2reps = fmt.Sprintf("; run %d times per round under those rows and untraced, %d under the others but strace (once), each run a sample", cfg.W2Reps, min(5, cfg.W2Reps))
	}
	fmt.Fprintf(&b, "Workloads: **W1** %s open+close of one tmpfs file, a third each via open, openat, openat2 (ns per call, timed inside the program%s); "+
		"**W2** `cp -r` of %s files of %d B on tmpfs (cp's wall and system time via wait4%s); "+
		"**W3** `reflaunch -n %d -k %d%s`, strategies execvpe (%d failed execve per launch) and absolute (median per fork+exec+wait)%s.\n\n",
		fmtInt(int64(cfg.W1N)), w1reps, fmtInt(int64(cfg.W2Files)), cfg.W2Size, w2reps, cfg.W3N, cfg.W3K, w3cpu, cfg.W3K-1, w3why)

	b.WriteString("## Overhead on the traced programs\n\n")
	b.WriteString("Medians over samples; × is traced / untraced; +ns is the added time per traced event: (traced − untraced) / events per run.")
	if r.paired() {
		b.WriteString(" W1, W2 and W3 execvpe are **paired**: each cell against as many untraced runs made right before it " +
			"(a wrapping tracer's: each run against one made right before it), " +
			"then the median over rounds, because this VM's speed drifts by up to 30% within seconds. " +
			"W3 absolute is against the untraced row's median. The untraced row's medians include those runs.")
	}
	b.WriteString("\n\n")
	b.WriteString("| tracer | W1 ns/call | W1 × | W1 +ns/open | W2 cp wall | W2 × | W2 sys × | W2 +ns/open | W3 execvpe | W3 × | W3 +ns/exec | W3 absolute | W3 abs × |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.Rows {
		if row.Unavailable != "" {
			fmt.Fprintf(&b, "| %s | not run: %s |||||||||||| \n", row.Label, row.Unavailable)
			continue
		}
		if row.W1NsPerCall == nil && row.W2WallNs == nil && row.W3VpeNs == nil {
			fmt.Fprintf(&b, "| %s | failed: %s |||||||||||| \n", row.Label, mdEscape(strings.Join(row.Errors, "; ")))
			continue
		}
		w1 := "—"
		if row.W1NsPerCall != nil {
			w1 = fmt.Sprintf("%.0f", *row.W1NsPerCall)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Label,
			w1, fmtRatio(row.W1Ratio), fmtAdded(row.W1AddedNs),
			fmtNs(row.W2WallNs), fmtRatio(row.W2WallRatio), fmtRatio(row.W2SysRatio), fmtAdded(row.W2AddedNs),
			fmtNs(row.W3VpeNs), fmtRatio(row.W3VpeRatio), fmtAdded(row.W3AddedNs),
			fmtNs(row.W3AbsNs), fmtRatio(row.W3AbsRatio))
	}

	if r.paired() {
		b.WriteString("\nThe same comparisons unpaired (each row's median against the untraced row's), for reference:\n\n")
		b.WriteString("| tracer | W1 +ns/open, unpaired | W2 ×, unpaired | W3 execvpe ×, unpaired | rounds paired |\n|---|--:|--:|--:|--:|\n")
		for _, row := range r.Rows {
			if row.Key == "none" || row.PairedRounds == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", row.Label, fmtAdded(row.W1AddedNsUnpaired), fmtRatio(row.W2WallRatioUnpaired),
				fmtRatio(row.W3VpeRatioUnpaired), row.PairedRounds)
		}
	}

	r.targetsMarkdown(&b)

	b.WriteString("\n## Cost and fidelity\n\n")
	b.WriteString("Events seen / happened, summed over rounds (n/a: the output cannot tell). Lost: what the tracer itself admitted to losing. " +
		"IRQ work: IRQ-work interrupts per 1,000 W1 opens, i.e. how often the traced CPU woke the tracer's reader. " +
		"Drain: how long a system-wide tracer kept consuming after W1 ended.\n\n")
	b.WriteString("| tracer | start-up | peak RSS | tracer CPU/cell | W1 seen | W2 seen | W3 execvpe seen | W3 abs seen | lost | IRQ work /1k opens | drain after W1 |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.Rows {
		if row.Unavailable != "" {
			fmt.Fprintf(&b, "| %s | not run: %s |||||||||| \n", row.Label, row.Unavailable)
			continue
		}
		if row.W1NsPerCall == nil && row.W2WallNs == nil && row.W3VpeNs == nil {
			fmt.Fprintf(&b, "| %s | failed (see Warnings) |||||||||| \n", row.Label)
			continue
		}
		startup := fmtNs(row.StartupNs)
		switch row.StartupHow {
		case "last attach":
			startup += " †"
		case "launch → workload start":
			startup += " ‡"
		}
		lost := "—"
		if row.LostDeclared != nil {
			lost = fmtInt(*row.LostDeclared)
		}
		iwi := "—"
		if row.IRQWorkPerK != nil {
			iwi = fmt.Sprintf("%.0f", *row.IRQWorkPerK)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Label, startup, fmtKB(row.PeakRSSKB),
			fmtNs(row.CPUNs), fmtFidelity(row.Fidelity[w1]), fmtFidelity(row.Fidelity[w2]),
			fmtFidelity(row.Fidelity[w3vpe]), fmtFidelity(row.Fidelity[w3abs]), lost, iwi, fmtNs(row.W1DrainNs))
	}
	for _, row := range r.Rows {
		if row.RSSByWL == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%s peak RSS by workload:", row.Label)
		for i, wl := range workloadOrder {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s %s", sep, wl, fmtKB(fp(row.RSSByWL[wl])))
		}
		b.WriteString(".\n")
	}
	b.WriteString("\nStart-up: launch → the tool's ready line (`once: watching`, bpftrace's `Attaching N probes...`); " +
		"† launch → its last probe attached (no ready line visible); ‡ wrapping tracers: launch → the workload's first instruction (the untraced row is the bare exec cost). " +
		"Every start, as every run, comes once the kernel has let go of the syscall tracepoints of the tracer before it (the bench waits, see below: a start meanwhile waits for the kernel in its attach; " +
		"the start-up table below has once watch started right after another once exited). " +
		"Peak RSS: VmHWM of a system-wide tracer just before it is stopped (max over cells); for a wrapping tracer its ru_maxrss, from a small C parent's wait4 (max with its workload).\n\n")

	b.WriteString("## W1 per syscall (ns per call, open+close)\n\n| tracer | open | openat | openat2 |\n|---|--:|--:|--:|\n")
	for _, row := range r.Rows {
		if row.W1ByKind == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f |\n", row.Label, row.W1ByKind["open"], row.W1ByKind["openat"], row.W1ByKind["openat2"])
	}
	if md := r.bpfCostMarkdown(); md != "" {
		b.WriteString("\n" + md)
	}

	if len(r.Startup) > 0 {
		b.WriteString("\n## once watch start-up, with and without its link cache\n\n")
		b.WriteString("Launch → `once: watching`, in turn: with the link cache warm (what every start but the first on a kernel sees, and what the rows' once starts saw: " +
			"these starts ran before the rounds, the first of them, not shown, filling the bench's own cache) " +
			"and with none (`ONCE_CACHE_DIR=`: the first start on a new kernel or a new once, which decodes the kernel's BTF), " +
			"each at rest (once the kernel had let go of the start before's tracepoints, as the rows' system-wide starts are); " +
			"then warm again, started right as the start before exited, while the kernel was letting go of its tracepoints (see docs/performance.md).\n\n")
		b.WriteString("| link cache | started | starts | median | min | max |\n|---|---|--:|--:|--:|--:|\n")
		for _, p := range r.Startup {
			v := make([]float64, len(p.ReadyNs))
			for i, ns := range p.ReadyNs {
				v[i] = float64(ns)
			}
			when := "at rest"
			if p.After {
				when = "right after an exit"
			}
			line := fmt.Sprintf("| %s | %s | %d | %s | %s | %s |", p.Cache, when, len(v), fmtNs(median(v)), fmtNs(minOf(v)), fmtNs(maxOf(v)))
			if p.Error != "" {
				line += " failed: " + mdEscape(p.Error)
			}
			b.WriteString(line + "\n")
		}
	}

	if len(r.Scale) > 0 {
		b.WriteString("\n## once watch (aggregated) at scale\n\n")
		b.WriteString("P processes each open the same F files and stay alive until all are done, so P×F distinct (process, file) pairs are live in once at the same time " +
			"(once watch keeps at most 4,096 files per process image, so the large points spread over processes). " +
			"The processes open one after another, leaving a CPU to the tracer, except in the burst row, where they all open at once. One run per point, each in a fresh " +
			"`once watch --comm fanopen --format json -o FILE`: the kernel-side filter keeps other processes on the machine out of the figures. " +
			"CPU: once's CPU time for the workload and its backlog. Opens in summary: once's own count, after losses.\n\n")
		b.WriteString("| pairs | processes × files | idle RSS | peak RSS | CPU | opens in summary | lost | files capped |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, p := range r.Scale {
			if p.Error != "" {
				fmt.Fprintf(&b, "| %s | %d × %d | failed: %s |||||| \n", fmtInt(int64(p.Pairs)), p.Procs, p.Files, mdEscape(p.Error))
				continue
			}
			layout := fmt.Sprintf("%d × %s", p.Procs, fmtInt(int64(p.Files)))
			if p.Burst {
				layout += ", burst"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", fmtInt(int64(p.Pairs)), layout,
				fmtKB(fp(float64(p.IdleRSSKB))), fmtKB(fp(float64(p.PeakRSSKB))), fmtNs(fp(float64(p.CPUNs))),
				fmtInt(p.SummaryOpens), fmtInt(p.Lost), fmtInt(p.FilesCapped))
		}
	}

	if len(r.W4) > 0 {
		b.WriteString("\n## W4: once run on a build-like tree\n\n")
		b.WriteString("N jobs, two at a time (make -j2), each a fork and exec of a process that opens M distinct files once; every 100th opens one " +
			"of them twice more (a duplicate). `once run --format json -o FILE` with the default report (`--files duplicates`) and with `--files all`. " +
			"Report: from the command's exit to the report in place; exit: to once's own exit (the kernel lets go of its syscall tracepoints after it, see docs/performance.md). Same findings: the two reports' findings agree (kind, program, subject, count).\n\n")
		b.WriteString("| jobs × files | untraced | report | peak RSS | report after exit | once's exit after exit | report size | processes | findings | lost | same findings |\n|--:|--:|--|--:|--:|--:|--:|--:|--:|--:|--|\n")
		for _, p := range r.W4 {
			if p.Error != "" {
				fmt.Fprintf(&b, "| %s × %d | failed: %s ||||||||||\n", fmtInt(int64(p.Jobs)), p.Files, mdEscape(p.Error))
				continue
			}
			for _, run := range p.Runs {
				fmt.Fprintf(&b, "| %s × %d | %s | %s | %s | %s | %s | %.1f MB | %s | %s | %s | %v |\n", fmtInt(int64(p.Jobs)), p.Files,
					fmtNs(fp(float64(p.UntracedNs))), run.Files, fmtKB(fp(float64(run.PeakRSSKB))), fmtNs(nonzero(run.ReportAfterExit)), fmtNs(fp(float64(run.AfterExit))),
					float64(run.ReportSize)/1e6, fmtInt(int64(run.Processes)), fmtInt(int64(run.Findings)), fmtInt(run.Lost), p.SameFindings)
			}
		}
	}
	if e := r.WatchEvents; e != nil {
		b.WriteString("\n## once watch --events over a churn of processes\n\n")
		fmt.Fprintf(&b, "`once watch --events --comm buildtree` printing to a pipe while %s jobs (two at a time) each open %s distinct files and exit. ",
			fmtInt(int64(e.Jobs)), fmtInt(int64(e.Files)))
		if e.Error != "" {
			fmt.Fprintf(&b, "Failed: %s\n", mdEscape(e.Error))
		} else {
			fmt.Fprintf(&b, "Idle RSS %s, peak RSS %s (+%s), %s lines printed.\n", fmtKB(fp(float64(e.IdleRSSKB))),
				fmtKB(fp(float64(e.PeakRSSKB))), fmtKB(fp(float64(e.PeakRSSKB-e.IdleRSSKB))), fmtInt(e.Lines))
		}
	}

	if r.W5 != nil {
		b.WriteString("\n" + r.W5.markdown(cfg))
	}

	b.WriteString("\n## Rows\n\n")
	for _, t := range r.Tracers {
		fmt.Fprintf(&b, "- **%s**: `%s`", t.Label, t.Command)
		if t.Note != "" {
			fmt.Fprintf(&b, ". %s", t.Note)
		}
		b.WriteString(".\n")
	}
	fmt.Fprintf(&b, "\nW2's events that happened (%s open-family calls by cp on this tree) come from one strace run before the rounds. "+
		"W1 and W3 counts are exact by construction. System-wide rows are started before a cell's workloads and stopped after them; "+
		"after each workload the bench waits until the tracer's CPU time stops moving, so no workload pays for the previous one's backlog. "+
		"After a tracer exits, the next run or start waits until the kernel has let go of its syscall tracepoints (once leaves that to the kernel, about a second; "+
		"meanwhile every syscall on the machine takes the tracing path, and a tracer's attach waits for the kernel's lock): %d waits, %s in all.",
		fmtInt(r.W2Opens), r.RestWaits, fmtNs(fp(float64(r.RestWaitNs))))
	if r.WarmUps > 0 {
		fmt.Fprintf(&b, " An untraced run after such a wait, or after a run of another workload, comes after one untimed run of its workload "+
			"(%d in all): on this VM the first run after either is slower than the next by up to a third, while a wrapping tracer's run "+
			"comes right after its untraced pair and its own busy start.", r.WarmUps)
	}
	b.WriteString("\n")

	var notes []string
	notes = append(notes, r.Warnings...)
	for _, row := range r.Rows {
		for _, e := range row.Errors {
			notes = append(notes, fmt.Sprintf("%s: %s", row.Label, e))
		}
		if row.ForeignCells > 0 {
			notes = append(notes, fmt.Sprintf("%s: another tracer was running on the machine during %d of its cells (see latest.json sessions/samples)", row.Label, row.ForeignCells))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	return b.String()
}

// targetsMarkdown writes the targets table.
func (r *results) targetsMarkdown(b *strings.Builder) {
	b.WriteString("\n## Targets\n\n")
	b.WriteString("The performance targets once is held to, judged on this run's figures")
	if len(r.Rows) > 0 {
		b.WriteString(" above")
	}
	if r.paired() {
		b.WriteString(" (W1, W2 and W3 execvpe paired)")
	}
	b.WriteString(". Each compares rows of this one run; on a noisy machine a ratio of two small figures moves from run to run.\n\n")
	b.WriteString("| target | measured | limit | met |\n|---|--:|---|---|\n")
	for _, t := range r.Targets {
		met := "not measured"
		if t.Met != nil {
			met = "no"
			if *t.Met {
				met = "yes"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Target, t.Value, t.Limit, met)
	}
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}
