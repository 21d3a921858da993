package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

type intList []int

func (l *intList) String() string { return fmt.Sprint(*l) }
func (l *intList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive number, got %q", s)
		}
		*l = append(*l, n)
	}
	return nil
}

type watchFlags struct {
	interval     time.Duration
	sort         string
	events       bool
	failed       bool
	pids         intList
	tree         bool
	comms        stringList
	excludeComms stringList
	uids         intList
	cgroup       string
	duration     time.Duration
	format       string
	output       string
	metricsAddr  string
	ignore       stringList
	top          int
	maxProcs     int
	ringBuf      int
	redact       bool
}

func cmdWatch(args []string, stdout, stderr io.Writer) (int, error) {
	var f watchFlags
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&f.interval, "interval", time.Second, "refresh the table (or write a JSON summary) every `D`")
	fs.StringVar(&f.sort, "sort", "time", "sort the table by `KEY`: dup (extra opens), exec (failed exec probes) or time (wasted time)")
	fs.BoolVar(&f.events, "events", false, "print one line per event as it happens instead of the table (without it, the kernel counts a file's first open instead of sending it)")
	fs.BoolVar(&f.failed, "failed", false, "with --events: only failed opens and execs")
	fs.Var(&f.pids, "pid", "only process `PID` (repeatable or comma-separated)")
	fs.BoolVar(&f.tree, "tree", false, "with --pid: also every process it forks from now on")
	fs.Var(&f.comms, "comm", "only tasks named `COMM` (repeatable)")
	fs.Var(&f.excludeComms, "exclude-comm", "never tasks named `COMM` (repeatable)")
	fs.Var(&f.uids, "uid", "only tasks of real user id `UID` (repeatable)")
	fs.StringVar(&f.cgroup, "cgroup", "", "only tasks in the cgroup v2 directory `PATH` or below (containers)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after `D` and print the summary (default: until Ctrl-C)")
	fs.StringVar(&f.format, "format", "text", "output format: text or json (JSON lines)")
	fs.StringVar(&f.output, "o", "", "write to `FILE` (created 0600, appended, never through a symlink) instead of stdout")
	fs.StringVar(&f.metricsAddr, "metrics", "", "serve Prometheus metrics on `ADDR` (default host 127.0.0.1; all interfaces only when asked, e.g. 0.0.0.0:9469)")
	fs.Var(&f.ignore, "ignore", "leave files matching `GLOB` out of findings (repeatable)")
	fs.IntVar(&f.top, "top", 20, "rows in the table")
	fs.IntVar(&f.maxProcs, "max-processes", 65536, "most process images held at once; past it the oldest are evicted (counted)")
	fs.IntVar(&f.ringBuf, "ring-size", collector.DefaultRingBufferSize, "BPF ring buffer size in `BYTES` (power of two)")
	fs.BoolVar(&f.redact, "redact-args", false, "record every argument after argv[0] as sha256:<12 hex digits> of it")
	fs.BoolVar(&verbose, "v", false, "show long errors whole")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: once watch [flags]")
		fs.PrintDefaults()
	}
	if help, err := parseFlags("watch", fs, args, " (once watch takes only flags)"); help || err != nil {
		return 0, err
	}
	sortKey := collector.SortKey(f.sort)
	switch {
	case sortKey != collector.SortDup && sortKey != collector.SortExec && sortKey != collector.SortTime:
		return 0, usagef("watch: unknown --sort %q (want dup, exec or time)", f.sort)
	case f.format != "text" && f.format != "json":
		return 0, usagef("watch: unknown --format %q (want text or json)", f.format)
	case f.interval < 10*time.Millisecond:
		return 0, usagef("watch: --interval %v is too short (at least 10ms)", f.interval)
	case f.duration < 0:
		return 0, usagef("watch: --duration must not be negative")
	case f.failed && !f.events:
		return 0, usagef("watch: --failed needs --events")
	case f.tree && len(f.pids) == 0:
		return 0, usagef("watch: --tree needs --pid")
	case f.top < 1:
		return 0, usagef("watch: --top must be at least 1")
	}
	if err := checkGlobs("watch", f.ignore); err != nil {
		return 0, err
	}
	filter := collector.Filter{Pids: f.pids, Tree: f.tree, Comms: f.comms, ExcludeComms: f.excludeComms, CgroupPath: f.cgroup}
	for _, u := range f.uids {
		filter.UIDs = append(filter.UIDs, uint32(u))
	}
	if err := filter.Validate(); err != nil {
		return 0, usagef("watch: %v", err)
	}
	var metricsAddr string
	if f.metricsAddr != "" {
		a, err := metrics.NormalizeAddr(f.metricsAddr, false)
		if err != nil {
			return 0, usagef("watch: --metrics: %v", err)
		}
		metricsAddr = a
	}

	out := stdout
	if f.output != "" {
		file, err := openStream(f.output)
		if err != nil {
			return 0, exitError{exitTrace, err.Error()}
		}
		defer file.Close()
		out = file
	}

	tr, err := collector.Open(collector.Options{Filter: filter, RingBufferSize: f.ringBuf, RedactArgs: f.redact, BatchWakeups: true, LinkCacheDir: cacheDir(),
		SendOpensPerKind: sendOpens(f.events, 1), FirstOpensUnsent: !f.events})
	if err != nil {
		return 0, err
	}
	defer tr.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}

	w := &watcher{f: f, tr: tr, sort: sortKey, out: out, stderr: stderr,
		live:  collector.NewLive(collector.LiveOptions{MaxProcesses: f.maxProcs, Ignore: f.ignore}),
		start: time.Now()}
	if metricsAddr != "" {
		w.exp = metrics.New(0)
		addr, errs, err := metrics.Serve(ctx, metricsAddr, true, w.exp.Handler())
		if err != nil {
			return 0, exitError{exitTrace, fmt.Sprintf("--metrics %s: %v", metricsAddr, err)}
		}
		go func() {
			if err := <-errs; err != nil {
				fmt.Fprintf(stderr, "once: metrics server: %v\n", err)
			}
		}()
		fmt.Fprintf(stderr, "once: serving metrics on http://%s/metrics\n", addr)
	}
	// Said last: tests and scripts wait for this line.
	fmt.Fprintf(stderr, "once: watching %s; Ctrl-C to stop\n", describeFilter(filter))
	return w.run(ctx)
}

// openStream opens a file for a long-running stream of output: created
// 0600, appended to, and never through a symlink someone planted there.
func openStream(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("open %s: it is a symlink; refusing to write through it", path)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

type watcher struct {
	f      watchFlags
	tr     *collector.Tracer
	live   *collector.Live
	exp    *metrics.Exporter
	sort   collector.SortKey
	out    io.Writer
	stderr io.Writer
	start  time.Time

	counters   trace.Counters
	lastEvents uint64
	lastTick   time.Time
	warnedLoss uint64
}

func (w *watcher) run(ctx context.Context) (int, error) {
	bw := bufio.NewWriterSize(w.out, 64<<10)
	defer bw.Flush()
	interactive := w.f.format == "text" && !w.f.events && w.f.output == "" && isTerminal(w.out)
	var keys <-chan byte
	if interactive {
		restore, ch := rawKeys(os.Stdin)
		defer restore()
		keys = ch
	}
	var printer *report.EventPrinter
	var jl *report.JSONLines
	if w.f.format == "json" {
		jl = report.NewJSONLines(bw)
	} else if w.f.events {
		printer = report.NewEventPrinter(bw)
	}

	var ev trace.Event
	now := time.Now()
	next := now.Add(w.f.interval)
	w.lastTick = w.start
	var armed time.Time // the deadline Next was last given
	for n := uint(1); ; n++ {
		// The kernel wakes us only when the ring fills up (BatchWakeups):
		// poll often enough that events and keys feel immediate. The
		// deadline is set again only once it has passed.
		if !now.Before(armed) {
			armed = now.Add(50 * time.Millisecond)
			if next.Before(armed) {
				armed = next
			}
			w.tr.SetDeadline(armed)
		}
		err := w.tr.Next(&ev, &w.counters)
		switch {
		case err == nil:
			// Under a flood, the clock, the keys and the interval
			// are looked at every 256 events, not at each one: a
			// clock read and a deadline update per event were a
			// tenth of the collector's time.
			if n%256 != 0 {
				w.handle(&ev, now, printer, jl)
				continue
			}
			now = time.Now()
			w.handle(&ev, now, printer, jl)
		case errors.Is(err, collector.ErrTimeout):
			now = time.Now()
			// Re-armed whatever the clock says: the poller rounds
			// its timeout to milliseconds and may wake a little
			// early, and waiting out the rest of the old deadline
			// would spin.
			armed = time.Time{}
		default:
			return 0, err
		}
		// Keys are read at every poll, so q and the sort keys answer
		// within 50 ms; a new sort order redraws at once.
		quit, redraw := ctx.Err() != nil, false
		for keys != nil && !quit {
			select {
			case k := <-keys:
				switch k {
				case 'q', 'Q', 3: // 3: Ctrl-C in raw mode
					quit = true
				case 'd':
					w.sort, redraw = collector.SortDup, true
				case 'e':
					w.sort, redraw = collector.SortExec, true
				case 't':
					w.sort, redraw = collector.SortTime, true
				}
				continue
			default:
			}
			break
		}
		if !quit && !redraw && now.Before(next) {
			continue
		}
		if quit {
			break
		}
		w.syncTallies(now, printer, jl)
		if err := w.tick(now, bw, jl, interactive, false); err != nil {
			return 0, err
		}
		next = now.Add(w.f.interval)
	}
	// Detach first so nothing new arrives (a flood would otherwise keep
	// the drain below going), then read what is already in the ring,
	// then the final summary.
	if err := w.tr.Detach(); err != nil {
		return 0, err
	}
	if err := w.tr.Flush(); err == nil {
		w.tr.SetDeadline(time.Time{})
		now = time.Now()
		for w.tr.Next(&ev, &w.counters) == nil {
			w.handle(&ev, now, printer, jl)
		}
	}
	now = time.Now()
	w.syncTallies(now, printer, jl)
	w.live.Finish(now)
	if err := w.tick(now, bw, jl, interactive, true); err != nil {
		return 0, err
	}
	return 0, bw.Flush()
}

// syncTallies brings in the opens the kernel counted without sending.
func (w *watcher) syncTallies(now time.Time, printer *report.EventPrinter, jl *report.JSONLines) {
	for _, ev := range w.tr.SyncTallies(&w.counters) {
		w.handle(&ev, now, printer, jl)
	}
}

func (w *watcher) handle(ev *trace.Event, now time.Time, printer *report.EventPrinter, jl *report.JSONLines) {
	dups := w.live.Totals.DuplicateOpens
	w.live.Handle(ev, now)
	if w.exp != nil {
		switch ev.Kind {
		case trace.EventOpen:
			if ev.Open.Unsent > 0 {
				w.exp.Opens(ev.Task.Comm, uint64(ev.Open.Unsent), 0)
			}
			w.exp.Open(ev.Task.Comm, ev.Open.Ret < 0)
			if w.live.Totals.DuplicateOpens > dups {
				w.exp.DuplicateOpen(ev.Task.Comm)
			}
		case trace.EventExec:
			w.exp.Exec(ev.Task.Comm, ev.Exec.Ret < 0)
		case trace.EventUnsent:
			comm, ok := w.live.Comm(ev.Task.Image())
			if !ok {
				comm = ev.Task.Comm
			}
			w.exp.Opens(comm, uint64(ev.Proc.Unsent), 0)
		case trace.EventTally:
			w.exp.Opens(ev.Task.Comm, ev.Tally.Opens, w.live.Totals.DuplicateOpens-dups)
		}
	}
	if !w.f.events || ev.Kind == trace.EventTally {
		return
	}
	if w.f.failed {
		switch {
		case ev.Kind == trace.EventOpen && ev.Open.Ret >= 0, ev.Kind == trace.EventExec && ev.Exec.Ret >= 0:
			return
		}
	}
	if jl != nil {
		_ = jl.Event(ev)
	} else if printer != nil {
		printer.Print(ev)
	}
}

// tick refreshes the counters, emits completed findings and draws the
// table or writes a summary line.
func (w *watcher) tick(now time.Time, bw *bufio.Writer, jl *report.JSONLines, interactive, final bool) error {
	if err := w.tr.KernelCounters(&w.counters); err != nil {
		return err
	}
	if lost := w.counters.Lost(); lost > w.warnedLoss {
		fmt.Fprintf(w.stderr, "once: WARNING: %d events lost so far (dropped %d, map-full %d, missed-enter %d); counts are lower bounds\n",
			lost, w.counters.DroppedEvents, w.counters.EnterMapFull, w.counters.MissedEnter)
		w.warnedLoss = lost
	}
	findings := w.live.Drain()
	for i := range findings {
		fd := &findings[i]
		if w.exp != nil && fd.Kind == trace.KindFailedExecProbes {
			w.exp.ExecProbes(fd.Comm, fd.Failed, fd.WastedNs)
		}
		if jl != nil && !w.f.events {
			if err := jl.Finding(fd, now); err != nil {
				return err
			}
		}
	}
	w.live.Expire(now)
	events := w.live.Totals.Events
	rate := 0.0
	if d := now.Sub(w.lastTick).Seconds(); d > 0 {
		rate = float64(events-w.lastEvents) / d
	}
	w.lastEvents, w.lastTick = events, now
	if w.exp != nil {
		c := w.counters
		w.exp.SetLoss("ringbuf_full", c.DroppedEvents)
		w.exp.SetLoss("enter_map_full", c.EnterMapFull)
		w.exp.SetLoss("missed_enter", c.MissedEnter)
		w.exp.SetLoss("decode_error", c.DecodeErrors)
		w.exp.SetLoss("tracked_full", c.TrackedFull)
		w.exp.SetLoss("tally_evicted", c.TalliesLost())
		w.exp.SetProcessed(c.EventsReceived)
		w.exp.SetOpensUntimed(c.OpensUntimed)
		w.exp.SetCompatImages(c.CompatImages)
		w.exp.SetProcesses(w.live.Len())
		w.exp.SetEvicted(w.live.Totals.Evicted)
	}
	if beforeRender != nil {
		beforeRender()
	}
	snap := &collector.Snapshot{Time: now, Uptime: now.Sub(w.start), EventsPerSec: rate, Counters: w.counters,
		Totals: w.live.Totals.WithKernel(&w.counters), Processes: w.live.Len(), Sort: w.sort, Rows: w.live.Rows(w.sort, w.f.top)}
	switch {
	case jl != nil:
		if !w.f.events || final {
			if err := jl.Summary(snap); err != nil {
				return err
			}
		}
	case w.f.events:
		if final {
			fmt.Fprintf(bw, "\n")
			if err := report.WatchTable(bw, snap); err != nil {
				return err
			}
		}
	default:
		if interactive && !final {
			bw.WriteString("\x1b[H\x1b[2J") // home, clear: redraw in place
		} else if !interactive {
			bw.WriteString("\n")
		}
		if err := report.WatchTable(bw, snap); err != nil {
			return err
		}
		if interactive && !final {
			bw.WriteString("\nkeys: d sort by duplicate opens, e by exec probes, t by wasted time, q quit\n")
		}
	}
	return bw.Flush()
}

// rawKeys puts a terminal in non-canonical, no-echo mode and delivers
// single key presses; restore puts it back.
func rawKeys(in *os.File) (restore func(), keys <-chan byte) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}, nil
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return func() {}, nil
	}
	ch := make(chan byte, 16)
	go func() {
		b := make([]byte, 1)
		for {
			n, err := in.Read(b)
			if err != nil {
				return
			}
			if n == 1 {
				ch <- b[0]
			}
		}
	}()
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, ch
}

func describeFilter(f collector.Filter) string {
	var parts []string
	if len(f.Pids) > 0 {
		s := fmt.Sprintf("pids %v", f.Pids)
		if f.Tree {
			s += " and their descendants"
		}
		parts = append(parts, s)
	}
	if len(f.Comms) > 0 {
		parts = append(parts, "comm "+report.Escape(strings.Join(f.Comms, ",")))
	}
	if len(f.ExcludeComms) > 0 {
		parts = append(parts, "not comm "+report.Escape(strings.Join(f.ExcludeComms, ",")))
	}
	if len(f.UIDs) > 0 {
		parts = append(parts, fmt.Sprintf("uid %v", f.UIDs))
	}
	if f.CgroupPath != "" {
		parts = append(parts, "cgroup "+report.Escape(f.CgroupPath))
	}
	if len(parts) == 0 {
		return "every process"
	}
	return strings.Join(parts, ", ")
}
