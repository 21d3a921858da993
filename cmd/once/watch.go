package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/container"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
)

type watchFlags struct {
	stacks       stackFlags
	sel          containerSelect
	interval     time.Duration
	sort         string
	events       bool
	failed       bool
	pids         intList
	tree         bool
	comms        stringList
	excludeComms stringList
	uids         uidList
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
	group        string
	clock        string
}

func cmdWatch(args []string, stdout, stderr io.Writer) (int, error) {
	var f watchFlags
	c := newCLI("watch", "once watch [flags]",
		"Watch the whole system (or the processes the filters select) for duplicate\n"+
			"opens and failed exec and open probes: a live table on a terminal, a table\n"+
			"per interval on a pipe, one line per event (--events), JSON lines, metrics.")
	c.stray = " (once watch takes only flags)"
	c.examples = []string{
		"sudo once watch",
		"sudo once watch --events --failed --comm make",
		"sudo once watch --format json -o once.jsonl --metrics 9469 --group comm",
	}
	c.exits = `  0  stopped (q, Ctrl-C, SIGTERM or --duration)
  2  a usage error
  3  something is missing: privileges, BTF, tracefs, a kernel too old
  4  tracing failed`
	fs := c.fs
	durationFlag(fs, &f.interval, "interval", time.Second, "refresh the table (or write a JSON summary) every `D`")
	fs.StringVar(&f.clock, "time", "wall", "the time of --events lines: `wall` (HH:MM:SS.ms) or boot (seconds since boot)")
	fs.StringVar(&f.sort, "sort", "time", "sort the table by `KEY`: dup (extra opens), exec (failed exec probes) or time (wasted time)")
	fs.BoolVar(&f.events, "events", false, "print one line per event as it happens instead of the table (without it, the kernel counts a file's first open instead of sending it)")
	fs.BoolVar(&f.failed, "failed", false, "with --events: only failed opens and execs")
	fs.Var(&f.pids, "pid", "only process `PID` (repeatable or comma-separated)")
	fs.BoolVar(&f.tree, "tree", false, "with --pid: also every process it forks from now on")
	fs.Var(&f.comms, "comm", "only tasks named `COMM` (repeatable)")
	fs.Var(&f.excludeComms, "exclude-comm", "never tasks named `COMM` (repeatable)")
	fs.Var(&f.uids, "uid", "only tasks of real user id `UID` (repeatable)")
	fs.StringVar(&f.cgroup, "cgroup", "", "only tasks in the cgroup v2 directory `PATH` or below (containers)")
	fs.Var(&f.sel.containers, "container", "only tasks of the container `ID|NAME` (an id prefix of 4+ hex digits, or its name; repeatable), ones started later included")
	fs.Var(&f.sel.pods, "pod", "only tasks of the Kubernetes pod `NAME` (repeatable)")
	fs.Var(&f.sel.namespaces, "namespace", "only tasks of pods in the Kubernetes namespace `NS` (repeatable)")
	durationFlag(fs, &f.duration, "duration", 0, "stop after `D` and print the summary (default: until Ctrl-C)")
	fs.StringVar(&f.format, "format", "text", "output format: text or json (JSON lines)")
	fs.StringVar(&f.output, "o", "", "write to `FILE` (created 0600, appended, never through a symlink) instead of stdout")
	fs.StringVar(&f.metricsAddr, "metrics", "", "serve Prometheus metrics on `ADDR` (default host 127.0.0.1; all interfaces only when asked, e.g. 0.0.0.0:9469)")
	fs.Var(&f.ignore, "ignore", "leave files matching `GLOB` out of findings (repeatable)")
	intFlag(fs, &f.top, "top", 20, 1, "rows in the table")
	fs.StringVar(&f.group, "group", "pid", "a table row per `KIND`: pid (a process image), exe (an executable), comm or container, with a count of processes")
	intFlag(fs, &f.maxProcs, "max-processes", 65536, 1, "most process images held at once; past it the oldest are evicted (counted)")
	intFlag(fs, &f.ringBuf, "ring-size", collector.DefaultRingBufferSize, 0, "BPF ring buffer size in `BYTES` (a power of two, 4096 to 2147483648)")
	fs.BoolVar(&f.redact, "redact-args", false, "record every argument after argv[0] as sha256:<12 hex digits> of it")
	f.stacks.register(fs)
	fs.BoolVar(&verbose, "v", false, "show long errors whole")
	if help, err := c.parse(args, stdout); help || err != nil {
		return 0, err
	}
	sortKey := detect.SortKey(f.sort)
	switch {
	case sortKey != detect.SortDup && sortKey != detect.SortExec && sortKey != detect.SortTime:
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
		return 0, usagef("watch: --top %d: must be at least 1", f.top)
	case f.group != string(detect.GroupPid) && f.group != string(detect.GroupExe) && f.group != string(detect.GroupComm) &&
		f.group != string(detect.GroupContainer):
		return 0, usagef("watch: unknown --group %q (want pid, exe, comm or container)", f.group)
	case f.maxProcs < 1:
		return 0, usagef("watch: --max-processes %d: must be at least 1", f.maxProcs)
	}
	if err := f.stacks.check("watch"); err != nil {
		return 0, err
	}
	f.ringBuf = f.stacks.ringSize(f.ringBuf, c.given("ring-size"))
	if err := checkRingSize("watch", f.ringBuf); err != nil {
		return 0, err
	}
	if err := output.Check(f.output); err != nil {
		return 0, usagef("watch: %v", err)
	}
	ignore, err := ignoreRules("watch", f.ignore)
	if err != nil {
		return 0, err
	}
	if f.clock != "wall" && f.clock != "boot" {
		return 0, usagef("watch: unknown --time %q (want wall or boot)", f.clock)
	}
	filter := collector.Filter{Pids: f.pids, Tree: f.tree, Comms: f.comms, ExcludeComms: f.excludeComms, CgroupPath: f.cgroup,
		UIDs: f.uids}
	for _, l := range []struct {
		flag string
		vals stringList
	}{{"container", f.sel.containers}, {"pod", f.sel.pods}, {"namespace", f.sel.namespaces}} {
		for _, v := range l.vals {
			if v == "" {
				return 0, usagef("watch: --%s \"\": want a name", l.flag)
			}
		}
	}
	resolver := container.New(container.Options{})
	if f.sel.active() {
		// The kernel filters on the cgroup v2 id: the containers there
		// now, and every cgroup made from now on until it is named.
		filter.ByCgroupID = true
		filter.CgroupIDs = f.sel.selectedCgroups(resolver)
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
	repaired := 0
	if f.output != "" {
		file, err := output.OpenStream(f.output)
		if err != nil {
			return 0, usagef("watch: -o: %v", err)
		}
		defer file.Close()
		out = file
		if file.Repaired {
			repaired = 1
			fmt.Fprintf(stderr, "once: WARNING: %s did not end with a newline (an unclean stop cut its last line): going on on a new line\n", report.Escape(f.output))
		}
	}

	tr, err := collector.Open(collector.Options{Filter: filter, RingBufferSize: f.ringBuf, RedactArgs: f.redact, BatchWakeups: true, LinkCacheDir: cacheDir(),
		SendOpensPerKind: sendOpens(f.events, 1), FirstOpensUnsent: !f.events, StackSize: f.stacks.kernelSize(), KeptStacks: keptStacks(f.events)})
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

	eng := detect.New(detect.Options{Policy: detect.Bounded(f.maxProcs, 0), Ignore: ignore, Label: containerLabelsOf(resolver), Stacks: f.stacks.on})
	w := &watcher{f: f, s: session.New(tr, eng), sort: sortKey, out: out, stderr: stderr, start: time.Now(), repaired: repaired,
		group: detect.Group(f.group)}
	if f.stacks.on {
		ss, err := openStacks()
		if err != nil {
			return 0, err
		}
		defer ss.Close()
		w.s.Stacks, w.stacks = ss, ss.Table()
	}
	if f.sel.active() {
		w.s.Accept = f.sel.accept(tr, resolver, &w.undecided)
		// A container started between the walk and the attach of
		// cgroup_mkdir: found by a second walk.
		for _, id := range f.sel.selectedCgroups(resolver) {
			if err := tr.SelectCgroup(id); err != nil {
				return 0, exitError{exitTrace, fmt.Sprintf("--container: %v", err)}
			}
		}
	}
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
	if f.ByCgroupID {
		parts = append(parts, fmt.Sprintf("the selected containers (%d cgroups now, and those made from now on)", len(f.CgroupIDs)))
	}
	if len(parts) == 0 {
		return "every process"
	}
	return strings.Join(parts, ", ")
}
