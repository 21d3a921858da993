package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// w4Point is once run on W4, a build-like tree: N jobs, two at a time,
// each a process that opens M distinct files once (every 100th opens one
// of them twice more), in the default report and in --files all.
type w4Point struct {
	Jobs  int `json:"jobs"`
	Files int `json:"files_per_job"`

	UntracedNs int64 `json:"untraced_ns"`
	// Per report kind ("duplicates": the default, "all": --files all).
	Runs []w4Run `json:"runs"`
	// SameFindings: the two reports' findings are the same (kind,
	// program, subject, count) once pids are set aside.
	SameFindings bool   `json:"same_findings"`
	Error        string `json:"error,omitempty"`
}

type w4Run struct {
	Files     string `json:"files"`
	PeakRSSKB int64  `json:"peak_rss_kb"`
	WallNs    int64  `json:"wall_ns"`
	AfterExit int64  `json:"after_exit_ns"` // command exit to once's exit
	// ReportAfterExit: command exit to the report in place (renamed
	// into its name). once writes the report before the kernel has let
	// go of its syscall tracepoints, and exits after (see
	// docs/performance.md, "After the command: detaching").
	ReportAfterExit int64 `json:"report_after_exit_ns"`
	ReportSize      int64 `json:"report_bytes"`
	Processes       int   `json:"processes"`
	Findings        int   `json:"findings"`
	Lost            int64 `json:"events_lost"`
	findings        []string
}

var w4Layout = []struct{ jobs, files int }{{2000, 300}, {20000, 300}}

func (b *bench) w4() []w4Point {
	in := filepath.Join(b.cfg.Work, "w4")
	if err := os.MkdirAll(in, 0o755); err != nil {
		return []w4Point{{Error: err.Error()}}
	}
	defer os.RemoveAll(in)
	maxFiles := 0
	for _, l := range w4Layout {
		maxFiles = max(maxFiles, l.files)
	}
	for i := 0; i < maxFiles; i++ {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			return []w4Point{{Error: err.Error()}}
		}
	}
	var pts []w4Point
	for _, l := range w4Layout {
		p := w4Point{Jobs: l.jobs, Files: l.files}
		if err := b.w4Point(in, &p); err != nil {
			p.Error = err.Error()
		}
		for _, r := range p.Runs {
			logf("W4 %d×%d --files %s: peak RSS %.1f MiB, report %v and once's exit %v after the command's, report %.1f MB, %d findings, lost %d",
				l.jobs, l.files, r.Files, float64(r.PeakRSSKB)/1024, time.Duration(r.ReportAfterExit).Round(time.Millisecond),
				time.Duration(r.AfterExit).Round(time.Millisecond),
				float64(r.ReportSize)/1e6, r.Findings, r.Lost)
		}
		pts = append(pts, p)
	}
	return pts
}

func (b *bench) w4Point(in string, p *w4Point) error {
	argv := []string{b.progs.buildtree, in, strconv.Itoa(p.Jobs), strconv.Itoa(p.Files), "2"}
	start := time.Now()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("untraced: %v: %s", err, out)
	}
	p.UntracedNs = int64(time.Since(start))
	for _, files := range []string{"duplicates", "all"} {
		report := filepath.Join(b.outDir, "w4.json")
		// Through timecmd, whose rusage of once is once's own: the
		// bench's would carry the bench's memory (a vfork shares it).
		cmd := exec.Command(b.progs.timecmd, append([]string{b.progs.once, "run", "--format", "json", "--files", files, "-o", report, "--"}, argv...)...)
		cmd.Env = b.env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		landed, err := newLandingWatch(b.outDir, filepath.Base(report))
		if err != nil {
			return fmt.Errorf("inotify on %s: %w", b.outDir, err)
		}
		start := time.Now()
		err = cmd.Run()
		end := time.Now()
		landedAt := landed.stop()
		if err != nil {
			return fmt.Errorf("once run --files %s: %v: %s", files, err, stderr.Bytes())
		}
		r := w4Run{Files: files, WallNs: int64(end.Sub(start))}
		var done struct {
			End    int64 `json:"end_unix_ns"`
			MaxRSS int64 `json:"maxrss_kb"`
		}
		for _, line := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
			if err := json.Unmarshal(line, &done); err != nil {
				return fmt.Errorf("buildtree or timecmd: %q: %v", line, err)
			}
		}
		if done.End == 0 || done.MaxRSS == 0 {
			return fmt.Errorf("no end time or RSS in %q", stdout.String())
		}
		r.PeakRSSKB = done.MaxRSS
		r.AfterExit = end.UnixNano() - done.End
		if landedAt == 0 {
			return fmt.Errorf("once run --files %s: the report never landed in %s", files, report)
		}
		r.ReportAfterExit = landedAt - done.End
		if err := r.read(report); err != nil {
			return err
		}
		os.Remove(report)
		p.Runs = append(p.Runs, r)
	}
	p.SameFindings = slices.Equal(p.Runs[0].findings, p.Runs[1].findings)
	return nil
}

// read takes the figures out of a report, and its findings in a form that
// two runs of the same tree share.
func (r *w4Run) read(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r.ReportSize = int64(len(data))
	var doc struct {
		Lost   int64 `json:"events_lost"`
		Totals struct {
			Processes int `json:"processes"`
		} `json:"totals"`
		Findings []struct {
			Kind   string `json:"kind"`
			Comm   string `json:"comm"`
			Path   string `json:"path"`
			Target string `json:"target"`
			Count  int    `json:"count"`
			Failed int    `json:"failed"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.Lost, r.Processes, r.Findings = doc.Lost, doc.Totals.Processes, len(doc.Findings)
	for _, f := range doc.Findings {
		r.findings = append(r.findings, fmt.Sprintf("%s %s %s%s %d %d", f.Kind, f.Comm, f.Path, f.Target, f.Count, f.Failed))
	}
	slices.Sort(r.findings)
	return nil
}

// watchEventsPoint is once watch --events over a churn of processes that
// each open many distinct files and exit: its memory must not grow with
// the opens it has printed.
type watchEventsPoint struct {
	Jobs      int    `json:"jobs"`
	Files     int    `json:"files_per_job"`
	IdleRSSKB int64  `json:"idle_rss_kb"`
	PeakRSSKB int64  `json:"peak_rss_kb"`
	Lines     int64  `json:"lines"`
	Error     string `json:"error,omitempty"`
}

func (b *bench) watchEventsScale() watchEventsPoint {
	p := watchEventsPoint{Jobs: 1000, Files: 1000}
	if err := b.watchEventsRun(&p); err != nil {
		p.Error = err.Error()
	}
	logf("watch --events, %d×%d: idle RSS %.1f MiB, peak %.1f MiB, %d lines %s", p.Jobs, p.Files,
		float64(p.IdleRSSKB)/1024, float64(p.PeakRSSKB)/1024, p.Lines, p.Error)
	return p
}

func (b *bench) watchEventsRun(p *watchEventsPoint) error {
	in := filepath.Join(b.cfg.Work, "w4ev")
	if err := os.MkdirAll(in, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(in)
	for i := 0; i < p.Files; i++ {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			return err
		}
	}
	// Every line is printed (to a pipe, counted and dropped): what grows
	// with them is what is measured.
	cmd := exec.Command(b.progs.once, "watch", "--events", "--comm", "buildtree")
	cmd.Env = b.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	errR, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		var seen []byte
		for {
			n, err := errR.Read(buf)
			seen = append(seen, buf[:n]...)
			if bytes.Contains(seen, []byte("once: watching")) && ready != nil {
				close(ready)
				ready = nil
			}
			if err != nil {
				return
			}
		}
	}()
	lines := make(chan int64, 1)
	go func() {
		var n int64
		buf := make([]byte, 64<<10)
		for {
			k, err := out.Read(buf)
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			if err != nil {
				lines <- n
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("once watch did not start")
	}
	time.Sleep(1200 * time.Millisecond)
	_, p.IdleRSSKB, _ = memKB(cmd.Process.Pid)
	if o, err := exec.Command(b.progs.buildtree, in, strconv.Itoa(p.Jobs), strconv.Itoa(p.Files), "2").CombinedOutput(); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("buildtree: %v: %s", err, o)
	}
	time.Sleep(2 * time.Second) // its backlog
	p.PeakRSSKB, _, _ = memKB(cmd.Process.Pid)
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	p.Lines = <-lines
	if err != nil {
		return fmt.Errorf("once watch: %v", err)
	}
	return nil
}
