// Command bench is `make bench`: what tracing every open and exec costs
// the traced programs, for once and for the tools people would otherwise
// reach for, on this machine, in about ten minutes.
//
// Workloads (each measures itself, so a tracer's start-up and final report
// stay outside the number):
//
//	W1  openloop: 200,000 open+close of one tmpfs file, a third each through
//	    open(2), openat(2) and openat2(2) (raw syscalls); ns per call.
//	W2  timecmd cp -r: the system cp copies 3000 files of 4 KiB (tmpfs);
//	    cp's wall and system time from wait4.
//	W3  reflaunch -n 2000 -k 7, strategies execvpe (6 failed execve per
//	    launch) and absolute; median ns per fork+exec+wait.
//	W5  stat storms, in a section of their own after W4 (w5.go): 200,000
//	    newfstatat, find, git status, bash's PATH search; ns added per
//	    lookup under the floor, once run and once watch. -only W5 runs
//	    this section alone.
//
// Rows: untraced, the floor (programs that return at once on the same 30
// syscall tracepoints, attached as once attaches its own: floor.go), the
// same empty programs under bpftrace, once run, once watch (aggregated and
// --events), strace -f, a bpftrace opensnoop/execsnoop-like script, and
// libbpf-tools opensnoop + execsnoop -x. The rounds are interleaved: every round runs
// every row once, in a rotating order, so a machine that drifts (other
// jobs, thermal) drifts for all rows alike; medians over rounds, ratios to
// the untraced median of the same run. A system-wide tracer is started
// before a cell's workloads and stopped after them, so no other cell runs
// under it.
//
// Then the scale curve: once watch's memory and CPU with 10, 1,000 and
// 100,000 distinct (process, file) pairs live at once.
//
// It writes bench/results/latest.md (also printed) and latest.json (every
// raw sample). It needs root; a row whose tool is missing or fails is
// printed with the reason, never dropped.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

type config struct {
	Bin string `json:"bin"`
	// Settle: wait for the kernel to let go of a tracer's tracepoints
	// before the next run or start (settle); off, to see what not
	// waiting changes.
	Settle    bool          `json:"settle"`
	Rounds    int           `json:"rounds"`
	Budget    time.Duration `json:"budget_ns"`
	W1N       int           `json:"w1_opens"`
	W1Reps    int           `json:"w1_reps"`
	W2Reps    int           `json:"w2_reps"`
	W1StraceN int           `json:"w1_opens_strace"`
	W2Files   int           `json:"w2_files"`
	W2Size    int           `json:"w2_file_size"`
	W3N       int           `json:"w3_iterations"`
	W3K       int           `json:"w3_path_dirs"`
	W3CPU     int           `json:"w3_cpu"` // -1: not pinned
	Work      string        `json:"work_dir"`
	Only      string        `json:"only,omitempty"`
	Scale     bool          `json:"scale"`
	W4        bool          `json:"w4"`
	// W5, stat storms (see w5.go); W5Only: -only W5, the W5 section
	// alone.
	W5          bool          `json:"w5"`
	W5Only      bool          `json:"w5_only,omitempty"`
	W5N         int           `json:"w5_stats,omitempty"`
	W5FindFiles int           `json:"w5_find_files,omitempty"`
	W5GitFiles  int           `json:"w5_git_files,omitempty"`
	W5Cmds      int           `json:"w5_bash_commands,omitempty"`
	W5PathDirs  int           `json:"w5_path_dirs,omitempty"`
	W5Reps      int           `json:"w5_reps,omitempty"`
	W5Rounds    int           `json:"w5_rounds,omitempty"`
	QuietWait   time.Duration `json:"quiet_wait_ns"`
	// Paired: W1, W2 and W3 execvpe run untraced right before every
	// traced cell or run (see pairedBaseline).
	Paired bool `json:"paired"`
	// BPFCost: measure the BPF time section after the rounds.
	BPFCost bool `json:"bpf_cost"`
	out     string
}

type bench struct {
	cfg   config
	progs programs
	data  data
	tmp   string // compiled workloads and scripts (an exec-capable file system)
	self  string // this executable: the floor row's tracer (runFloor)
	// outDir holds the tracers' output, on the tmpfs with the data: a
	// 200 MB once run report written to disk would leave writeback
	// running into the next cell.
	outDir string
	env    []string // every child's environment
	// w2Opens is how many open-family calls cp makes on the W2 tree,
	// counted once under strace before the rounds.
	w2Opens int64
	res     *results
	// persistent are foreign tracers that outlasted a whole quiet wait:
	// waiting for them again would only burn the budget.
	persistent map[string]bool
	// rest tells when the kernel has let go of the tracepoints of the
	// tracer before (nil: not made yet, or restFailed: no tracepoint to
	// probe with, and runs are not held back).
	rest       *restProbe
	restFailed bool
	// tracerExited: a tracer exited since the last settle, and the
	// kernel may still be letting go of its tracepoints.
	tracerExited bool
	// lastWorkload: the workload of the last run, W1-W3's or W5's.
	lastWorkload string
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == floorArg {
		if err := runFloor(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	flag.StringVar(&cfg.Bin, "bin", "bin", "directory holding once and reflaunch (make build)")
	flag.IntVar(&cfg.Rounds, "rounds", 5, "interleaved rounds (fewer if the budget runs out)")
	flag.DurationVar(&cfg.Budget, "budget", 16*time.Minute, "no new round starts once it would end past this (the scale curve comes after); a round waits about 40 s in all for the kernel to let go of once run's tracepoints (settle)")
	flag.IntVar(&cfg.W1N, "w1-opens", 200000, "W1: open+close calls per run")
	flag.IntVar(&cfg.W1Reps, "w1-reps", 4, "W1: runs per cell, each a sample, for the rows judged against the floor or a tight limit (the others run it once)")
	flag.IntVar(&cfg.W2Reps, "w2-reps", 9, "W2: runs per cell, each a sample, for the rows judged against the floor or a tight limit (the others at most 5, strace once)")
	flag.IntVar(&cfg.W1StraceN, "w1-opens-strace", 20000, "W1 under strace")
	flag.IntVar(&cfg.W2Files, "w2-files", 3000, "W2: files in the tree")
	flag.IntVar(&cfg.W2Size, "w2-size", 4096, "W2: bytes per file")
	flag.IntVar(&cfg.W3N, "w3-n", 2000, "W3: launches per run")
	flag.IntVar(&cfg.W3K, "w3-k", 7, "W3: PATH entries")
	flag.IntVar(&cfg.W3CPU, "w3-cpu", runtime.NumCPU()-1, "W3: run the launcher and its children on this CPU (-1: any); see reflaunch -cpu")
	flag.StringVar(&cfg.Work, "work", "/dev/shm/oncebench", "tmpfs directory for the workloads' files (recreated)")
	flag.StringVar(&cfg.out, "out", "bench/results", "where latest.md and latest.json go")
	flag.StringVar(&cfg.Only, "only", "", "comma-separated row keys to run (untraced always runs), for debugging; W5: only the W5 section")
	flag.BoolVar(&cfg.Scale, "scale", true, "measure the once watch scale curve")
	flag.BoolVar(&cfg.W4, "w4", true, "measure W4, once run on a build-like tree, and once watch --events over a churn of processes")
	flag.BoolVar(&cfg.Settle, "settle", true, "before each run and tracer start, wait until the kernel has let go of the tracepoints of a tracer that exited (off: start at once, as a user's next command would)")
	flag.BoolVar(&cfg.W5, "w5", true, "measure W5, stat storms (a stat loop, find, git status, bash's PATH search) under the floor, once run and once watch")
	flag.IntVar(&cfg.W5N, "w5-stats", 200000, "W5: newfstatat calls per stat loop run")
	flag.IntVar(&cfg.W5FindFiles, "w5-find-files", 10000, "W5: files find walks")
	flag.IntVar(&cfg.W5GitFiles, "w5-git-files", 5000, "W5: files in the git repository")
	flag.IntVar(&cfg.W5Cmds, "w5-commands", 2000, "W5: commands bash runs")
	flag.IntVar(&cfg.W5PathDirs, "w5-path-dirs", 7, "W5: PATH entries bash searches")
	flag.IntVar(&cfg.W5Reps, "w5-reps", 3, "W5: runs of each workload per cell")
	flag.IntVar(&cfg.W5Rounds, "w5-rounds", 3, "W5: interleaved rounds")
	flag.BoolVar(&cfg.BPFCost, "bpf-cost", true, "after the rounds, measure each system-wide tracer's BPF programs' own time per call (BPF statistics)")
	flag.BoolVar(&cfg.Paired, "paired", true, "run W1, W2 and W3 execvpe untraced right before every traced cell (or run), and judge each against those runs")
	flag.DurationVar(&cfg.QuietWait, "quiet-wait", 5*time.Second, "before a cell, wait up to this long for other tracers on the machine to go")
	render := flag.String("render", "", "render a results JSON again (new tables, no new measurement) into -out")
	flag.Parse()
	if strings.EqualFold(strings.TrimSpace(cfg.Only), "W5") {
		cfg.Only, cfg.W5, cfg.W5Only = "", true, true
	}
	run := func() error { return mainErr(cfg) }
	if *render != "" {
		run = func() error { return rerender(*render, cfg.out) }
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// loadResults reads a results JSON and summarizes it with this version's
// code (the targets table, for one).
func loadResults(path string) (*results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// How each row ran is not in the JSON: take it from the row list.
	modes := map[string]mode{}
	for _, t := range (&bench{cfg: r.Config}).tracers() {
		modes[t.Key] = t.mode
	}
	for _, t := range r.Tracers {
		t.mode = modes[t.Key]
	}
	r.summarize()
	return &r, nil
}

// rerender writes a results JSON's Markdown and JSON again into out.
func rerender(in, out string) error {
	r, err := loadResults(in)
	if err != nil {
		return err
	}
	md := r.markdown()
	if err := os.WriteFile(filepath.Join(out, "latest.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, "latest.json"), r); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

func mainErr(cfg config) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (the tracers load BPF programs or ptrace): sudo make bench")
	}
	if cfg.W1N < 3 || cfg.W1StraceN < 3 || cfg.W2Files < 1 || cfg.W3N < 1 || cfg.W3K < 1 || cfg.Rounds < 1 {
		return errors.New("counts and rounds must be positive (W1 at least 3)")
	}
	if cfg.W5 && (cfg.W5N < 2 || cfg.W5FindFiles < 1 || cfg.W5GitFiles < 1 || cfg.W5Cmds < 1 || cfg.W5PathDirs < 1 || cfg.W5Rounds < 1) {
		return errors.New("W5 counts and rounds must be positive (the stat loop at least 2)")
	}
	start := time.Now()
	b := &bench{cfg: cfg, persistent: map[string]bool{}}
	defer func() { b.rest.close() }()
	var err error
	if b.self, err = os.Executable(); err != nil {
		return fmt.Errorf("finding the bench's own executable (the floor row runs it): %w", err)
	}
	b.tmp, err = os.MkdirTemp("", "oncebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	defer os.RemoveAll(cfg.Work)
	// Interrupted: stop the tracer running (a Ctrl-C reaches it too, but
	// a SIGTERM of the bench alone does not) and leave nothing behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		logf("%v: stopping", s)
		stopActive()
		os.RemoveAll(b.tmp)
		os.RemoveAll(cfg.Work)
		os.Exit(130)
	}()

	// A fixed, minimal environment: no SUDO_* (once run would switch to
	// that user), C locale (no locale files opened), a short PATH.
	b.env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
		"HOME=" + os.Getenv("HOME"), "TMPDIR=/tmp", "ONCE_CACHE_DIR=" + onceCacheDir(b.tmp)}

	logf("building the workloads")
	if b.progs, err = buildPrograms(b.tmp); err != nil {
		return err
	}
	for _, p := range []struct {
		dst  *string
		name string
	}{{&b.progs.once, "once"}, {&b.progs.reflaunch, "reflaunch"}} {
		path, err := filepath.Abs(filepath.Join(cfg.Bin, p.name))
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s missing: run make build first", path)
		}
		*p.dst = path
	}
	for name, src := range map[string][]byte{"snoop.bt": snoopBT, "floor.bt": floorBT} {
		if err := os.WriteFile(filepath.Join(b.tmp, name), src, 0o644); err != nil {
			return err
		}
	}
	logf("generating %d files of %d bytes in %s", cfg.W2Files, cfg.W2Size, cfg.Work)
	if b.data, err = prepareData(cfg.Work, cfg.W2Files, cfg.W2Size); err != nil {
		return err
	}
	b.outDir = filepath.Join(cfg.Work, "out")
	if err := os.MkdirAll(b.outDir, 0o755); err != nil {
		return err
	}

	b.res = &results{Date: start.UTC().Format(time.RFC3339), Machine: machineFacts(), Config: cfg}
	b.res.Tools = toolVersions(b.progs)

	if cfg.W5Only {
		return b.finish(start)
	}
	rows := b.tracers()
	if cfg.Only != "" {
		keep := map[string]bool{"none": true}
		for _, k := range strings.Split(cfg.Only, ",") {
			keep[strings.TrimSpace(k)] = true
		}
		var sel []*tracer
		for _, t := range rows {
			if keep[t.Key] {
				sel = append(sel, t)
			}
		}
		rows = sel
	}
	for _, t := range rows {
		t.checkAvailable()
		if t.Unavailable != "" {
			logf("row %q will not run: %s", t.Label, t.Unavailable)
		}
	}
	b.res.Tracers = rows

	if err := b.warmUp(); err != nil {
		return err
	}
	if slices.ContainsFunc(rows, func(t *tracer) bool { return t.Key == "once-watch" && t.Unavailable == "" }) {
		b.res.Startup = b.startupPair()
	}
	b.rounds(rows, start)
	// What follows starts and stops tracers without timing a workload
	// against an untraced run; W5 settles after them.
	if cfg.BPFCost {
		b.res.BPFCost = b.bpfCosts(rows)
	}
	if cfg.Scale {
		b.res.Scale = b.scaleCurve()
	}
	if cfg.W4 {
		b.res.W4 = b.w4()
		ev := b.watchEventsScale()
		b.res.WatchEvents = &ev
	}
	b.tracerExited = true
	return b.finish(start)
}

// finish runs W5 and writes the results.
func (b *bench) finish(start time.Time) error {
	cfg := b.cfg
	if cfg.W5 {
		b.res.W5 = b.w5()
	}
	b.res.DurationNs = int64(time.Since(start))
	b.res.summarize()

	md := b.res.markdown()
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "latest.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(cfg.out, "latest.json"), b.res); err != nil {
		return err
	}
	if cfg.W5Only {
		// A partial run: docs/performance.md stays the full run's.
		logf("only W5: docs/performance.md left as it is")
	} else if err := writePerfDoc(b.res, filepath.Join(filepath.Dir(filepath.Clean(cfg.out)), "..", "docs")); err != nil {
		logf("docs/performance.md not written: %v", err)
	}
	fmt.Print(md)
	logf("wrote %s and %s in %v", filepath.Join(cfg.out, "latest.md"), filepath.Join(cfg.out, "latest.json"),
		time.Since(start).Round(time.Second))
	return nil
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

// warmUp runs every workload once untraced (page cache, dentries, the
// CPU's frequency) and counts cp's opens on the tree under strace: the
// "happened" figure for W2, which has no count by construction.
func (b *bench) warmUp() error {
	logf("warm-up")
	none := &tracer{Key: "warmup", mode: modeNone}
	for _, wl := range workloadOrder {
		if s := b.runOne(0, none, wl, b.workloadArgv(wl, b.cfg.W1N), b.cfg.W1N); s.Error != "" {
			return fmt.Errorf("warm-up %s: %s", wl, s.Error)
		}
	}
	out := filepath.Join(b.outDir, "calibrate.strace")
	argv := append([]string{"strace", "-f", "-qq", "-e", "trace=open,openat,openat2,creat", "-o", out}, b.workloadArgv(w2, 0)...)
	cal := &tracer{Key: "calibration", mode: modeWrap}
	s := b.runOne(0, cal, w2, argv, 0)
	if s.Error != "" {
		b.res.Warnings = append(b.res.Warnings, "W2 calibration under strace failed ("+s.Error+"): W2 loss is not shown")
		return nil
	}
	x, err := indexStrace(out, b.data.w1File)
	if err != nil {
		return err
	}
	b.w2Opens = x.opens[task{s.Pid, ""}]
	b.res.W2Opens = b.w2Opens
	logf("cp makes %d open-family calls on the tree", b.w2Opens)
	return os.Remove(out)
}

// rounds runs the interleaved rounds within the budget.
func (b *bench) rounds(rows []*tracer, start time.Time) {
	for r := 1; r <= b.cfg.Rounds; r++ {
		rs := time.Now()
		// Rotate the order so no row always runs right after the same one.
		n := len(rows)
		for i := 0; i < n; i++ {
			t := rows[(i+r-1)%n]
			if t.Unavailable != "" || !t.inRound(r) {
				continue
			}
			b.cell(r, t)
		}
		b.res.Rounds = r
		took := time.Since(rs)
		logf("round %d/%d took %v", r, b.cfg.Rounds, took.Round(time.Second))
		if r < b.cfg.Rounds && time.Since(start)+took > b.cfg.Budget {
			b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("stopped after %d of %d rounds: the next would end past the %v budget", r, b.cfg.Rounds, b.cfg.Budget))
			logf("stopping: the budget (%v) would be exceeded", b.cfg.Budget)
			return
		}
	}
}

// quiet waits (a bounded time) for tracers that are not the bench's to go
// away, and returns those still there.
func (b *bench) quiet() []string {
	deadline := time.Now().Add(b.cfg.QuietWait)
	for {
		f := foreignTracers(nil)
		known := true
		for _, s := range f {
			known = known && b.persistent[s]
		}
		if len(f) == 0 || known {
			return f
		}
		if time.Now().After(deadline) {
			for _, s := range f {
				b.persistent[s] = true
			}
			return f
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// cell runs every workload once under one tracer.
func (b *bench) cell(round int, t *tracer) {
	foreign := b.quiet()
	if len(foreign) > 0 {
		logf("note: other tracers running: %s", strings.Join(foreign, " "))
	}
	w1N := b.cfg.W1N
	if t.w1N > 0 {
		w1N = t.w1N
	}
	if t.mode == modeSystem && b.cfg.Paired {
		base := b.pairedBaseline(round, t)
		for _, s := range base {
			s.Foreign = len(foreign) > 0
		}
		b.res.Samples = append(b.res.Samples, base...)
		logf("round %d %-18s %s (untraced, before %s)", round, "none", brief(base), t.Key)
	}
	cellStart := time.Now()
	var samples []*sample
	switch t.mode {
	case modeNone:
		for _, wl := range b.cellWorkloads(t) {
			samples = append(samples, b.runOne(round, t, wl, b.workloadArgv(wl, w1N), w1N))
		}
	case modeWrap:
		for _, wl := range b.cellWorkloads(t) {
			if b.cfg.Paired && wl != w3abs {
				// Each run of a wrapping tracer is its own start: its
				// untraced pair runs right before it.
				base := b.runOne(round, none, wl, b.workloadArgv(wl, b.cfg.W1N), b.cfg.W1N)
				base.PairedWith, base.Foreign = t.Key, len(foreign) > 0
				b.res.Samples = append(b.res.Samples, base)
			}
			out := filepath.Join(b.outDir, t.Key+".out")
			s := b.runOne(round, t, wl, t.wrap(out, b.workloadArgv(wl, w1N)), w1N)
			if wl == w3vpe || wl == w3abs {
				s.Pid = 0 // the process started was the tracer
			}
			if s.Error == "" {
				if x, err := t.index([]string{out}, nil, b.data.w1File); err != nil {
					s.Error = "counting: " + err.Error()
				} else {
					s.Seen = x.seen(wl, s, true)
					if x.lostKnown {
						s.LostDeclared = &x.lost
					}
				}
			}
			os.Remove(out)
			samples = append(samples, s)
		}
	case modeSystem:
		dir := filepath.Join(b.outDir, t.Key)
		_ = os.MkdirAll(dir, 0o755)
		waited, _ := b.settle(fmt.Sprintf("round %d %s", round, t.Key))
		sess, err := startSession(t, dir, b.env)
		sess.Round, sess.Foreign, sess.RestWaitNs = round, foreign, waited
		if err != nil {
			sess.Error = err.Error()
		} else {
			for _, wl := range b.cellWorkloads(t) {
				s := b.runOne(round, t, wl, b.workloadArgv(wl, w1N), w1N)
				s.DrainNs = int64(sess.drain())
				samples = append(samples, s)
			}
			sess.finish()
			if sess.Killed != "" {
				// Its timings stand; its output may be cut, so what it
				// saw is not counted.
				logf("round %d %s: %s", round, t.Key, sess.Killed)
			} else if x, err := t.index(sess.outs, sess.stderrs, b.data.w1File); err != nil {
				sess.Error = joinErr(sess.Error, "counting: "+err.Error())
			} else {
				sess.Lost, sess.LostKnown = x.lost, x.lostKnown
				for _, s := range samples {
					if s.Error == "" {
						s.Seen = x.seen(s.Workload, s, false)
					}
				}
			}
		}
		b.tracerExited = true
		os.RemoveAll(dir)
		b.res.Sessions = append(b.res.Sessions, sess)
		if sess.Error != "" {
			logf("round %d %s: %s", round, t.Key, sess.Error)
		}
	}
	for _, s := range samples {
		s.Foreign = len(foreign) > 0
		b.res.Samples = append(b.res.Samples, s)
	}
	logf("round %d %-18s %s (%v)", round, t.Key, brief(samples), time.Since(cellStart).Round(100*time.Millisecond))
}

// none is the untraced "tracer" of paired runs.
var none = &tracer{Key: "none", mode: modeNone}

// pairedBaseline runs W3 execvpe once, and W1 and W2 as many times as the
// cell does (reps), untraced, right before a system-wide
// tracer's cell: the runs its W1, W2 and W3 execvpe are judged against.
// This VM's speed drifts by up to 30% within seconds (untraced cp -r went
// from 65 to 33 ms over two seconds, back to back), and a round is over a
// minute long: a cell compared with the round's untraced cell, or with the
// untraced median, carries that drift into its ratio. The cell then runs
// them in the mirror order (cellWorkloads), W2 first, so each sits close
// to its own baseline. (A wrapping tracer's cell pairs each run with an
// untraced one right before it.) W3 absolute, the reference, is not
// paired: that would take another 40 s.
func (b *bench) pairedBaseline(round int, t *tracer) []*sample {
	var out []*sample
	for _, wl := range []string{w3vpe, w1, w2} {
		for range b.reps(t, wl) {
			s := b.runOne(round, none, wl, b.workloadArgv(wl, b.cfg.W1N), b.cfg.W1N)
			s.PairedWith = t.Key
			out = append(out, s)
		}
	}
	return out
}

// cellWorkloads is what one cell runs, in order: every workload, W1 and W2
// reps times in a row (each its own sample), W2 first and W3 execvpe after
// W1: the mirror of pairedBaseline.
func (b *bench) cellWorkloads(t *tracer) []string {
	var out []string
	for _, wl := range []string{w2, w1, w3vpe, w3abs} {
		for range b.reps(t, wl) {
			out = append(out, wl)
		}
	}
	return out
}

// reps is how many runs of wl a cell of t makes, and its paired baseline.
// One W1 run is a third of a second, one W2 run a thirtieth, and on a
// shared 2-CPU VM one W1 run swings by ±400 ns per call, one W2 run by
// ±40%. The rows judged against the floor or a tight limit (precise), and
// the untraced row, take W1Reps and W2Reps; the others, whose figures are
// far from any limit (their W1 run takes seconds), W1 once and W2 5 times;
// strace, which also runs a reduced W1, each once.
func (b *bench) reps(t *tracer, wl string) int {
	precise := t.precise || t.mode == modeNone
	switch {
	case t.w1N != 0:
		return 1
	case wl == w1 && precise:
		return max(1, b.cfg.W1Reps)
	case wl == w2 && precise:
		return max(1, b.cfg.W2Reps)
	case wl == w2:
		return min(5, max(1, b.cfg.W2Reps))
	}
	return 1
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// brief is a one-line progress report of a cell.
func brief(ss []*sample) string {
	var parts []string
	for _, s := range ss {
		switch {
		case s.Error != "":
			parts = append(parts, s.Workload+" failed: "+s.Error)
		case s.Workload == w1:
			parts = append(parts, fmt.Sprintf("W1 %.0f ns/call", s.NsPerCall))
		case s.Workload == w2:
			parts = append(parts, fmt.Sprintf("W2 %.1f ms", float64(s.WallNs)/1e6))
		default:
			parts = append(parts, fmt.Sprintf("%s %.0f µs", s.Workload, float64(s.MedianNs)/1e3))
		}
	}
	return strings.Join(parts, ", ")
}

// runOne runs one workload (argv may wrap it in a tracer) and reads its
// report.
func (b *bench) runOne(round int, t *tracer, wl string, argv []string, w1N int) *sample {
	s := &sample{Round: round, Tracer: t.Key, Workload: wl, Expected: b.expected(wl, w1N), Seen: -1}
	_, rested := b.settle(fmt.Sprintf("round %d %s %s", round, t.Key, wl))
	b.warmUntraced(t, wl, rested, func() {
		if b.beforeRun(wl) == nil {
			_, _ = run(argv, b.env, 5*time.Minute)
		}
	})
	if t.mode == modeWrap {
		defer func() { b.tracerExited = true }()
	}
	if err := b.beforeRun(wl); err != nil {
		s.Error = err.Error()
		return s
	}
	if t.mode == modeWrap {
		// Through timecmd, for the tracer's ru_maxrss: the bench's own
		// would be wrong, as Go starts children with vfork and the kernel
		// then counts the bench's resident set in the child's peak.
		argv = append([]string{b.progs.timecmd}, argv...)
	}
	iwi := irqWork()
	r, err := run(argv, b.env, 5*time.Minute)
	s.IRQWork = irqWork() - iwi
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if t.mode == modeWrap {
		// timecmd's line is the last; the workload's comes first.
		out := bytes.TrimSpace(r.stdout)
		var tc struct {
			StartNs  int64 `json:"start_ns"`
			MaxRSSKB int64 `json:"maxrss_kb"`
		}
		if err := jsonIn(out[bytes.LastIndexByte(out, '\n')+1:], &tc); err != nil {
			s.Error = "timecmd: " + err.Error()
			return s
		}
		// Start-up counts from timecmd's fork of the tracer, as the
		// untraced row's counts from the bench's fork of the workload.
		s.TracerMaxRSSKB, r.launch = tc.MaxRSSKB, tc.StartNs
	}
	if err := parseWorkload(wl, r, s); err != nil {
		s.Error = err.Error()
	}
	return s
}
