package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// bpfCostRuns is how many runs of each workload the BPF-time section makes
// per tracer; it keeps the median.
const bpfCostRuns = 3

// bpfCost is what one system-wide tracer's BPF programs spent, by the
// kernel's own account (BPF_ENABLE_STATS), while W1, W2 and W3 execvpe ran
// under it.
// Unlike the traced programs' wall time, this does not move with the
// machine's noise by hundreds of ns: it is the figure to compare once's
// programs with the empty ones of the floor row.
type bpfCost struct {
	Tracer string `json:"tracer"`
	Label  string `json:"label"`
	// NsPerEvent: median over runs of the programs' summed run time
	// divided by the run's traced calls (open-family calls, or execve
	// calls for W3: each fires an entry and an exit program), by
	// workload. W3's includes the fork, exec and exit programs of its
	// processes.
	NsPerEvent map[string]float64 `json:"ns_per_event"`
	// Programs: run time per invocation of each program (by name) that
	// ran at least once per four traced calls (W1 splits its opens over three syscalls), from the last W1 and W2 run.
	Programs map[string]map[string]float64 `json:"ns_per_run_by_program"`
	Error    string                        `json:"error,omitempty"`
}

type progStat struct {
	name     string
	ns, runs uint64
}

// progStats reads the run time and count of every BPF program loaded now.
func progStats() (map[ebpf.ProgramID]progStat, error) {
	out := map[ebpf.ProgramID]progStat{}
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // unloaded meanwhile
		}
		info, err := p.Info()
		if err != nil {
			p.Close()
			continue
		}
		st, err := p.Stats()
		p.Close()
		if err != nil {
			continue
		}
		out[id] = progStat{name: info.Name, ns: uint64(st.Runtime), runs: st.RunCount}
	}
}

// bpfCosts runs W1, W2 and W3 execvpe bpfCostRuns times each under every system-wide
// row, with the kernel's BPF statistics on. They are on only here: they
// cost every program two clock reads per run, which the rounds must not
// pay. That cost is in every figure of this section alike, the floor's
// empty programs included.
func (b *bench) bpfCosts(rows []*tracer) []bpfCost {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.res.Warnings = append(b.res.Warnings, "BPF time per call not measured: enabling BPF statistics: "+err.Error())
		return nil
	}
	defer stats.Close()
	none := &tracer{Key: "none", mode: modeNone}
	var out []bpfCost
	for _, t := range rows {
		if t.mode != modeSystem || t.Unavailable != "" {
			continue
		}
		logf("BPF time per call under %s", t.Key)
		c := bpfCost{Tracer: t.Key, Label: t.Label, NsPerEvent: map[string]float64{}, Programs: map[string]map[string]float64{}}
		c.Error = b.bpfCost(t, none, &c)
		out = append(out, c)
	}
	return out
}

func (b *bench) bpfCost(t, none *tracer, c *bpfCost) string {
	before, s, done, err := b.costSession(t)
	if err != "" {
		return err
	}
	defer done()
	for _, wl := range []string{w1, w2, w3vpe} {
		var perEvent []float64
		for range bpfCostRuns {
			a, err := progStats()
			if err != nil {
				return "listing programs: " + err.Error()
			}
			smp := b.runOne(0, none, wl, b.workloadArgv(wl, b.cfg.W1N), b.cfg.W1N)
			if smp.Error != "" {
				return wl + ": " + smp.Error
			}
			s.drain()
			z, err := progStats()
			if err != nil {
				return "listing programs: " + err.Error()
			}
			// The open programs; not the exec and sched ones, which
			// run a few times per workload (its own fork and exec by
			// the bench).
			ns, progs := progDelta(before, a, z, b.expected(wl, b.cfg.W1N)/4)
			if ev := b.expected(wl, b.cfg.W1N); ev > 0 {
				perEvent = append(perEvent, float64(ns)/float64(ev))
			}
			c.Programs[wl] = progs
		}
		if m := median(perEvent); m != nil {
			c.NsPerEvent[wl] = *m
		}
	}
	return ""
}

// bpfCostMarkdown is the section's table.
func (r *results) bpfCostMarkdown() string {
	if len(r.BPFCost) == 0 {
		return ""
	}
	var floor map[string]float64
	for _, c := range r.BPFCost {
		if c.Tracer == "floor" && c.Error == "" {
			floor = c.NsPerEvent
		}
	}
	out := "## BPF time per traced call\n\n" +
		"The tracer's own BPF programs' run time by the kernel's statistics (`BPF_ENABLE_STATS`, on only for this section), " +
		"summed over its programs and divided by the workload's open-family calls, or its execve calls for W3 (each runs an entry and an exit program; " +
		"W3's figure includes the programs that run at each fork, exec and exit of its processes), " +
		fmt.Sprintf("median of %d runs per workload after the rounds. ", bpfCostRuns) +
		"Steadier than the wall-clock figures above, it includes the statistics' own two clock reads per program run, the floor's empty programs too. " +
		"It leaves out what any syscall tracepoint costs outside the programs (the syscall slow path for every task).\n\n" +
		"| tracer | W1 ns/open | above floor | W2 ns/open | above floor | W3 execvpe ns/exec | above floor | open programs in W1, ns per run |\n|---|--:|--:|--:|--:|--:|--:|---|\n"
	for _, c := range r.BPFCost {
		if c.Error != "" {
			out += fmt.Sprintf("| %s | failed: %s |||||||\n", c.Label, mdEscape(c.Error))
			continue
		}
		cell := func(wl string) (string, string) {
			v, ok := c.NsPerEvent[wl]
			if !ok {
				return "—", "—"
			}
			above := "—"
			if f, ok := floor[wl]; ok && c.Tracer != "floor" {
				above = fmtAdded(fp(v - f))
			}
			return fmt.Sprintf("%.0f", v), above
		}
		w1v, w1a := cell(w1)
		w2v, w2a := cell(w2)
		w3v, w3a := cell(w3vpe)
		var names []string
		for n := range c.Programs[w1] {
			names = append(names, n)
		}
		sort.Strings(names)
		var progs []string
		for _, n := range names {
			progs = append(progs, fmt.Sprintf("%s %.0f", mdEscape(n), c.Programs[w1][n]))
		}
		out += fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Label, w1v, w1a, w2v, w2a, w3v, w3a, strings.Join(progs, ", "))
	}
	return out + "\n"
}

// costSession starts t for a BPF-cost measurement: the programs loaded
// before it (not the tracer's), the session, and what ends it; or why
// it could not start.
func (b *bench) costSession(t *tracer) (map[ebpf.ProgramID]progStat, *session, func(), string) {
	before, err := progStats()
	if err != nil {
		return nil, nil, nil, "listing programs: " + err.Error()
	}
	dir, err := os.MkdirTemp(b.tmp, "bpfcost-")
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	s, err := startSession(t, dir, b.env)
	if err != nil {
		_ = s.stop()
		os.RemoveAll(dir)
		return nil, nil, nil, err.Error()
	}
	return before, s, func() { s.stop(); os.RemoveAll(dir) }, ""
}

// progDelta is what the tracer's programs (those not in before) spent
// between the listings a and z: their time in all, and the time per run
// of each that ran at least minRuns times.
func progDelta(before, a, z map[ebpf.ProgramID]progStat, minRuns int64) (uint64, map[string]float64) {
	var ns uint64
	progs := map[string]float64{}
	for id, after := range z {
		if _, old := before[id]; old {
			continue // not the tracer's
		}
		d, n := after.ns-a[id].ns, after.runs-a[id].runs
		ns += d
		if n > 0 && int64(n) >= minRuns {
			progs[after.name] = float64(d) / float64(n)
		}
	}
	return ns, progs
}
