package main

import (
	"slices"
	"time"

	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/session"
)

type watchFlags struct {
	stacks       stackFlags
	otlp         otlpFlags
	sel          session.Selection
	interval     time.Duration
	sort         string
	events       bool
	failed       bool
	wide         bool
	pids         cliflag.PositiveInts
	tree         bool
	comms        cliflag.Strings
	excludeComms cliflag.Strings
	uids         cliflag.UIDs
	cgroup       string
	duration     time.Duration
	format       string
	output       string
	metricsAddr  string
	stallTimeout time.Duration
	ignore       cliflag.Strings
	top          int
	maxProcs     int
	ringBuf      int
	rings        int // --rings: 0 for DefaultRings
	redact       bool
	group        string
	topGiven     bool // --top was given: the live screen keeps to it
	clock        string
	memLimit     string
}

// newWatchCLI is once watch's flags.
func newWatchCLI(f *watchFlags) *cli {
	c := newCLI("watch", "once watch [flags]",
		"Watch the whole system (or the processes the filters select) for duplicate\n"+
			"opens and stats, repeated misses, and failed exec, open and stat probes: a\n"+
			"live table on a terminal (? lists its keys: scroll, filter, a row's detail),\n"+
			"a table per interval on a pipe, one line per event (--events), JSON lines,\n"+
			"metrics.")
	c.stray = " (once watch takes only flags)"
	c.examples = []string{
		"sudo once watch",
		"sudo once watch --events --failed --comm make",
		"sudo once watch --format json -o once.jsonl --metrics 9469 --group comm",
	}
	c.exits = `  0  stopped (q, Ctrl-C, SIGTERM or --duration)
  2  a usage error
  3  something is missing: privileges, BTF, tracefs, a kernel too old
  4  tracing failed, or the output could not be written (a reader that stopped
     reading held the stop back 8s: the rest of the output is lost)`
	fs := c.fs
	cliflag.Duration(fs, &f.interval, "interval", time.Second, "refresh the table (or write a JSON summary) every `D`")
	fs.StringVar(&f.clock, "time", "wall", "the time of --events lines: `wall` (HH:MM:SS.ms) or boot (seconds since boot)")
	fs.StringVar(&f.sort, "sort", "time", "sort the table by `KEY`: dup (extra opens), exec (failed exec probes), lookup (avoidable lookups) or time (wasted time)")
	fs.BoolVar(&f.events, "events", false, "print one line per event as it happens instead of the table (without it, the kernel counts a file's first open instead of sending it)")
	fs.BoolVar(&f.failed, "failed", false, "with --events: only failed calls: opens, lookups (stat, access) and execs")
	fs.BoolVar(&f.wide, "wide", false, wideUsage)
	fs.Var(&f.pids, "pid", "only process `PID` (repeatable or comma-separated)")
	fs.BoolVar(&f.tree, "tree", false, "with --pid: also every process it forks from now on")
	fs.Var(&f.comms, "comm", "only processes named `COMM` (repeatable): a thread whose own or whose process's comm is COMM, and the exec that named one so")
	fs.Var(&f.excludeComms, "exclude-comm", "never a thread whose own or whose process's comm is `COMM` (repeatable)")
	fs.Var(&f.uids, "uid", "only tasks of real user `UID`, a number or a name (repeatable or comma-separated)")
	cliflag.NonEmpty(fs, &f.cgroup, "cgroup", "", "only tasks in the cgroup v2 directory `PATH` or below (containers)")
	fs.Var((*cliflag.Strings)(&f.sel.Containers), "container", "only tasks of the container `ID|NAME` (an id prefix of 4+ hex digits, or its name; repeatable), ones started later included")
	fs.Var((*cliflag.Strings)(&f.sel.Pods), "pod", "only tasks of the Kubernetes pod `NAME` (repeatable)")
	fs.Var((*cliflag.Strings)(&f.sel.Namespaces), "namespace", "only tasks of pods in the Kubernetes namespace `NS` (repeatable)")
	cliflag.Duration(fs, &f.duration, "duration", 0, "stop after `D` and print the summary (default: until Ctrl-C)")
	fs.StringVar(&f.format, "format", "text", "output format: text or json (JSON lines)")
	cliflag.NonEmpty(fs, &f.output, "o", "", "write to `FILE` (created 0600, appended, never through a symlink) instead of stdout")
	fs.StringVar(&f.metricsAddr, "metrics", "", "serve Prometheus metrics on `ADDR` (default host 127.0.0.1; all interfaces only when asked, e.g. 0.0.0.0:9469)")
	cliflag.Duration(fs, &f.stallTimeout, "stall-timeout", session.DefaultStallTimeout, "the reader is stalled (counted; with --metrics, /healthz fails) once it has not polled the ring buffer for `D` (stuck, not idle)")
	fs.Var(&f.ignore, "ignore", "leave files matching `GLOB` out of findings (repeatable; ** matches any directories)")
	cliflag.IntVar(fs, &f.top, "top", 20, 1, "`N` rows in the table on a pipe and in the summary at the end; the live screen shows every row, scrolled, unless --top is given")
	cliflag.NonEmpty(fs, &f.group, "group", "", "a table row per `KIND`: pid (a process image), exe (an executable), comm or container, with a count of processes (default comm; pid with --format json)")
	cliflag.IntVar(fs, &f.maxProcs, "max-processes", 65536, 1, "hold at most `N` process images at once; past it the oldest are evicted (counted)")
	cliflag.Bytes(fs, &f.ringBuf, "ring-size", findingsRingSize, "size of each BPF ring buffer in `BYTES` (a power of two, 4096 to 2147483648, or with a K, M or G suffix: 16M; default 4 MiB each up to 4 rings, then 16 MiB shared; with --events 8 MiB, then 32 MiB; at least 1 MiB each)")
	cliflag.IntVar(fs, &f.rings, "rings", 0, 0, "write events to `N` BPF ring buffers, CPU c to ring c mod N (default 0: one per 4 CPUs, at most 32; at most one per CPU)")
	fs.BoolVar(&f.redact, "redact-args", false, "record every argument after argv[0] as sha256:<12 hex digits> of it")
	fs.StringVar(&f.memLimit, "memory-limit", "", "the Go runtime's soft memory limit, `BYTES` with an optional K, M or G suffix, 0 or none for no limit (default: the memory cgroup's limit less 64 MiB, or GOMEMLIMIT)")
	f.stacks.register(fs)
	f.otlp.register(fs)
	fs.BoolVar(&verbose, "v", false, "show long errors whole, and where start-up went")
	return c
}

// screenRows is how many rows the live screen's snapshots carry without
// --top: every row for a scroll, within a bound that keeps a tick's
// table small under a churn of short processes (--group pid).
const screenRows = 5000

// settle fills the defaults that depend on other flags. --group: comm,
// so that many short-lived processes of one program (fifty `cat`s) make
// one row ranked by what they wasted together, where a row per pid
// spread them thin below the long-lived ones; with --format json, pid,
// as before: the summary lines' top rows are processes.
func (f *watchFlags) settle(c *cli) {
	f.topGiven = c.given("top")
	f.stacks.sizeGiven = c.given("stack-size")
	if f.group == "" {
		f.group = "comm"
		if f.format == "json" {
			f.group = "pid"
		}
	}
}

// namesRunning says whether --pid and --comm (less --exclude-comm) name
// the running process pid, comm: --stacks reads the mappings of those at
// the start.
func (f *watchFlags) namesRunning(pid int, comm string) bool {
	return (len(f.pids) == 0 || slices.Contains(f.pids, pid)) &&
		(len(f.comms) == 0 || slices.Contains(f.comms, comm)) && !slices.Contains(f.excludeComms, comm)
}
