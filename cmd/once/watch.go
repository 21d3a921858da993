package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/container"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/internal/memlimit"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/sink"
)

func cmdWatch(args []string, stdout, stderr io.Writer) (int, error) {
	var f watchFlags
	c := newWatchCLI(&f)
	if help, err := c.parse(args, stdout); help || err != nil {
		return 0, err
	}
	f.settle(c)
	sortKey := detect.SortKey(f.sort)
	switch {
	case sortKey != detect.SortDup && sortKey != detect.SortExec && sortKey != detect.SortLookup && sortKey != detect.SortTime:
		return 0, usagef("watch: unknown --sort %q (want dup, exec, lookup or time)", f.sort)
	case f.format != "text" && f.format != "json":
		return 0, usagef("watch: unknown --format %q (want text or json)", f.format)
	case f.interval < 10*time.Millisecond:
		return 0, usagef("watch: --interval %v is too short (at least 10ms)", f.interval)
	case f.duration < 0:
		return 0, usagef("watch: --duration must not be negative")
	case f.failed && !f.events:
		return 0, usagef("watch: --failed needs --events")
	case f.wide && !f.events:
		return 0, usagef("watch: --wide needs --events")
	case c.given("time") && (!f.events || f.format == "json"):
		return 0, clockCheck("watch", true, f.events, f.format)
	case f.wide && f.format == "json":
		return 0, usagef("watch: --wide widens the text --events lines; JSON lines carry uid, ns and flags_text already")
	case f.events && tableFlag(c) != "":
		return 0, usagef("watch: --%s shapes the table, which --events replaces with a line per call", tableFlag(c))
	case f.tree && len(f.pids) == 0:
		return 0, usagef("watch: --tree needs --pid")
	case f.top < 1:
		return 0, usagef("watch: --top %d: must be at least 1", f.top)
	case f.group != string(detect.GroupPid) && f.group != string(detect.GroupExe) && f.group != string(detect.GroupComm) &&
		f.group != string(detect.GroupContainer):
		return 0, usagef("watch: unknown --group %q (want pid, exe, comm or container)", f.group)
	case f.maxProcs < 1:
		return 0, usagef("watch: --max-processes %d: must be at least 1", f.maxProcs)
	case f.stallTimeout < time.Second:
		return 0, usagef("watch: --stall-timeout %v is too short (at least 1s)", f.stallTimeout)
	}
	if err := f.stacks.check("watch"); err != nil {
		return 0, err
	}
	if err := f.otlp.check("watch"); err != nil {
		return 0, err
	}
	f.ringBuf = watchRingSize(&f, c.given("ring-size"))
	if err := checkRingSize("watch", f.ringBuf); err != nil {
		return 0, err
	}
	// The headroom measured is for the default ring: more or larger
	// rings' pages are charged to the cgroup too.
	if _, _, err := memlimit.SetupMounts(f.memLimit, c.given("memory-limit"), "/", selfMountinfo(), int64(ringCount(f.rings)*f.ringBuf-collector.DefaultRingBufferSize)); err != nil {
		return 0, usagef("watch: --memory-limit %v", err)
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
		vals cliflag.Strings
	}{{"container", f.sel.Containers}, {"pod", f.sel.Pods}, {"namespace", f.sel.Namespaces}} {
		for _, v := range l.vals {
			if v == "" {
				return 0, usagef("watch: --%s \"\": want a name", l.flag)
			}
		}
	}
	resolver := container.New(container.Options{Mountinfo: selfMountinfo()})
	if f.sel.Active() {
		// The kernel filters on the cgroup v2 id: the containers there
		// now, and every cgroup made from now on until it is named.
		filter.ByCgroupID = true
		filter.CgroupIDs = f.sel.SelectedCgroups(resolver)
	}
	if err := filter.Validate(); err != nil {
		return 0, usagef("watch: %v", err)
	}
	var metricsAddr string
	// Given empty (a template's unset port) is refused, not taken as
	// no --metrics.
	if f.metricsAddr != "" || c.given("metrics") {
		a, err := metrics.NormalizeAddr(f.metricsAddr, false)
		if err != nil {
			return 0, usagef("watch: --metrics: %v", err)
		}
		metricsAddr = a
	}

	o := watchOutputs{out: stdout, stderr: stderr}
	if w := (output.Std{Stdout: stdout, Stderr: stderr}).Pick(f.output); w != nil {
		o.out = w
	} else if f.output != "" {
		file, err := output.OpenStream(f.output)
		if err != nil {
			return 0, usagef("watch: -o: %v", err)
		}
		defer file.Close()
		o.out = file
		// A full file system (or a quota) must not stop the watch:
		// what the file can't take is dropped and counted.
		o.dw = output.NewDegrading(file, report.Escape(f.output), 64<<10, func(s string) { fmt.Fprintln(stderr, s) })
		if file.Repaired {
			o.repaired = 1
			fmt.Fprintf(stderr, "once: WARNING: %s did not end with a newline (an unclean stop cut its last line): going on on a new line\n", report.Escape(f.output))
		}
	}

	tr, err := collector.Open(collector.Options{Filter: filter, RingBufferSize: f.ringBuf, Rings: f.rings, RedactArgs: f.redact, BatchWakeups: true, LinkCacheDir: cacheDir(),
		SendOpensPerKind: sendOpens(f.events, 1), FirstOpensUnsent: !f.events, StackSize: f.stacks.kernelSize(), KeptStacks: keptStacks(f.events)})
	if err != nil {
		return 0, err
	}
	defer tr.Close()
	batchThreads(stderr)

	// SIGHUP (the terminal gone) stops it as Ctrl-C does, unless it was
	// ignored (nohup): Notify would undo that.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}

	// In a pid namespace with its own /proc, /proc/PID is not the
	// process the kernel's pid names: its cgroup is not read there.
	resolver.SetNoPidFiles(!session.ProcHostPids(tr.SelfTgid()))
	eng := detect.New(detect.Options{Policy: detect.Bounded(f.maxProcs, 0), Ignore: ignore, Label: session.ContainerLabels(resolver),
		ParentComm: session.NewParentComms(tr.SelfTgid()).Comm, Stacks: f.stacks.on})
	s := session.New(tr, eng)
	start := time.Now()
	live := session.NewLiveness(f.stallTimeout)
	s.Live = live
	go live.Watchdog(ctx) // reader_stalls counts, --metrics or not
	if f.stacks.on {
		ss, err := openStacks(0)
		if err != nil {
			return 0, err
		}
		defer ss.Close()
		s.Stacks, o.stacks = ss, ss.Table()
		if (len(f.pids) > 0 || len(f.comms) > 0) && session.ProcHostPids(tr.SelfTgid()) {
			ss.SeedRunning(f.namesRunning) // not every process's: see SeedRunning
		}
	}
	if f.sel.Active() {
		if err := s.Select(&f.sel, resolver); err != nil {
			return 0, exitError{exitTrace, fmt.Sprintf("--container: %v", err)}
		}
	}
	if metricsAddr != "" {
		o.exp = metrics.New(0)
		o.exp.SetProgress(live)
		addr, errs, err := metrics.Serve(ctx, metricsAddr, true, o.exp.Handler(), metrics.Health(live.Check))
		if err != nil {
			return 0, exitError{exitTrace, fmt.Sprintf("--metrics %s: %v", metricsAddr, err)}
		}
		go func() {
			if err := <-errs; err != nil {
				fmt.Fprintf(stderr, "once: metrics server: %v\n", err)
			}
		}()
		fmt.Fprintf(stderr, "once: serving metrics on http://%s/metrics (liveness: /healthz)\n", addr)
	}
	if verbose {
		fmt.Fprintln(stderr, startupLine(tr.Startup()))
	}
	if w := tr.PidNamespaceWarning(); w != "" {
		fmt.Fprintf(stderr, "once: WARNING: %s\n", w)
	}
	if filter.CgroupPath != "" {
		go followCgroup(ctx, tr, filter.CgroupPath, stderr)
	}
	// Said last: tests and scripts wait for this line.
	fmt.Fprintf(stderr, "once: watching %s; Ctrl-C to stop\n", sink.FilterText(filter))
	done := make(chan struct{})
	defer close(done) // a panic main recovers too: the guard must not end once after it
	go stopGuard(ctx, done, stderr)
	err = watchSession(ctx, s, f, o, session.WatchOptions{Start: start, Interval: f.interval, Sort: sortKey, Group: detect.Group(f.group), Top: f.top,
		Gone: session.ProcessGone(), GoneAlways: filterDropsExits(filter)})
	if o.dw != nil {
		if n, b := o.dw.Dropped(); n > 0 {
			fmt.Fprintf(stderr, "once: WARNING: %d records (%d bytes) could not be written to %s\n", n, b, report.Escape(f.output))
		}
	}
	return 0, err
}

// filterDropsExits: the kernel decides an exit event by the attribute
// filters (comm, uid, cgroup) of the thread that ends its process last,
// which may no longer pass (a process renamed, a named worker thread
// ending last): the watch then asks /proc which held processes are gone.
func filterDropsExits(f collector.Filter) bool {
	return len(f.Comms) > 0 || len(f.ExcludeComms) > 0 || len(f.UIDs) > 0 || f.CgroupPath != "" || f.ByCgroupID
}

// tableFlag is the first of the flags that shape the table given, "" for
// none: --events prints no table for them to shape.
func tableFlag(c *cli) string {
	for _, name := range []string{"sort", "top", "group"} {
		if c.given(name) {
			return name
		}
	}
	return ""
}
