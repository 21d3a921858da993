package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// scalePoint is once watch (aggregated) holding a number of distinct
// (process, file) pairs at once.
type scalePoint struct {
	Pairs int `json:"pairs"`
	Procs int `json:"processes"`
	Files int `json:"files_per_process"`
	// Burst: the processes open concurrently (all CPUs producing events)
	// instead of one after another.
	Burst bool `json:"burst"`

	IdleRSSKB int64 `json:"idle_rss_kb"` // attached, before the workload
	PeakRSSKB int64 `json:"peak_rss_kb"` // VmHWM after it
	EndRSSKB  int64 `json:"end_rss_kb"`  // VmRSS after it
	CPUNs     int64 `json:"cpu_ns"`      // once's CPU for the workload and its backlog
	OpenNs    int64 `json:"open_phase_ns"`

	// From once's final summary (system-wide, so a few more opens than
	// the workload's own).
	SummaryOpens int64  `json:"summary_opens"`
	Processes    int64  `json:"summary_processes"`
	FilesCapped  int64  `json:"files_capped"`
	Evicted      int64  `json:"evicted"`
	Lost         int64  `json:"events_lost"`
	Error        string `json:"error,omitempty"`
}

// The layout of each point. One process can't show 100,000 pairs: once
// watch remembers at most 4,096 files per process image (by design, its
// memory bound), so the large points spread over processes. The processes
// open one after another, leaving a CPU to the tracer; the last point is
// the same 100,000 as a burst from every CPU, which is what overflows a
// ring buffer.
var scaleLayout = []struct {
	procs, files int
	burst        bool
}{
	{1, 10, false},     // 10 pairs
	{10, 100, false},   // 1,000
	{100, 1000, false}, // 100,000
	{100, 1000, true},  // 100,000, all at once
}

func (b *bench) scaleCurve() []scalePoint {
	maxFiles := 0
	for _, l := range scaleLayout {
		maxFiles = max(maxFiles, l.files)
	}
	var pts []scalePoint
	for i := 0; i < maxFiles; i++ {
		if err := os.WriteFile(filepath.Join(b.data.scaleIn, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			return []scalePoint{{Error: err.Error()}}
		}
	}
	// once watch aggregated, as in its row, but only for the workload's
	// processes: whatever else runs on the machine stays out of the
	// figures (a filtered-out process costs once a map lookup in the
	// kernel and nothing in user space).
	watch := &tracer{Key: "once-watch-scale", mode: modeSystem,
		start: func(dir string) ([]procSpec, []string) {
			out := filepath.Join(dir, "watch.jsonl")
			errf := filepath.Join(dir, "watch.stderr")
			return []procSpec{{argv: []string{b.progs.once, "watch", "--comm", "fanopen", "--format", "json", "-o", out},
				stdout: filepath.Join(dir, "watch.stdout"), stderr: errf, readyFile: errf, readyText: "once: watching", attachedAtReady: true}}, []string{out}
		}}
	for _, l := range scaleLayout {
		p := scalePoint{Pairs: l.procs * l.files, Procs: l.procs, Files: l.files, Burst: l.burst}
		if err := b.scalePoint(watch, &p); err != nil {
			p.Error = err.Error()
		}
		logf("scale %7d pairs (burst %v): peak RSS %.1f MiB, CPU %v, lost %d %s", p.Pairs, p.Burst, float64(p.PeakRSSKB)/1024,
			time.Duration(p.CPUNs).Round(time.Millisecond), p.Lost, p.Error)
		pts = append(pts, p)
	}
	return pts
}

func (b *bench) scalePoint(watch *tracer, p *scalePoint) error {
	dir := filepath.Join(b.outDir, "scale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sess, err := startSession(watch, dir, b.env)
	if err != nil {
		return err
	}
	// Past the first summary tick, so the idle figure is the steady one.
	time.Sleep(1200 * time.Millisecond)
	pid := sess.pids()[0]
	_, p.IdleRSSKB, _ = memKB(pid)
	cpu0 := cpuTimeAll(sess.pids())
	how := "seq"
	if p.Burst {
		how = "par"
	}
	r, err := run([]string{b.progs.fanopen, b.data.scaleIn, strconv.Itoa(p.Procs), strconv.Itoa(p.Files), how}, b.env, 2*time.Minute)
	if err != nil {
		sess.finish()
		return err
	}
	var o struct {
		OpenNs int64 `json:"open_phase_ns"`
	}
	if err := jsonIn(r.stdout, &o); err != nil {
		sess.finish()
		return err
	}
	p.OpenNs = o.OpenNs
	sess.drain()
	p.CPUNs = int64(cpuTimeAll(sess.pids()) - cpu0)
	p.PeakRSSKB, p.EndRSSKB, _ = memKB(pid)
	sess.finish()
	if sess.Error != "" {
		return fmt.Errorf("%s", sess.Error)
	}
	// The last summary line is the final one.
	var last []byte
	if err := scanLines(sess.outs[0], func(line string) {
		if len(line) > 0 {
			last = []byte(line)
		}
	}); err != nil {
		return err
	}
	var sum struct {
		Type        string `json:"type"`
		Opens       int64  `json:"opens"`
		Processes   int64  `json:"processes"`
		FilesCapped int64  `json:"files_capped"`
		Evicted     int64  `json:"evicted"`
		EventsLost  int64  `json:"events_lost"`
	}
	if err := json.Unmarshal(last, &sum); err != nil || sum.Type != "summary" {
		return fmt.Errorf("no final summary in once watch's output")
	}
	p.SummaryOpens, p.Processes, p.FilesCapped, p.Evicted, p.Lost = sum.Opens, sum.Processes, sum.FilesCapped, sum.Evicted, sum.EventsLost
	return nil
}
