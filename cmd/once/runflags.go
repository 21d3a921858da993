package main

import (
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/internal/term"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

type runFlags struct {
	format  string
	output  string
	events  bool
	ignore  cliflag.Strings
	user    string
	linger  time.Duration
	ringBuf int
	rings   int // --rings: 0 for DefaultRings
	timeout time.Duration
	redact  bool
	files   string
	// processes: which processes the report lists one by one
	// (trace.ProcessesFindings or trace.ProcessesAll).
	processes string
	// --events: where the lines go, and their clock.
	eventsOut string
	clock     string
	// clockGiven: --time was on the command line (its default is
	// wall: one given where it does nothing is refused).
	clockGiven bool
	wide       bool // --wide: the UID, LAT(us) and FLAGS columns of --events
	stacks     stackFlags
	otlp       otlpFlags
	ringGiven  bool // --ring-size was on the command line
	// details: --details or -v, each process's findings and the
	// process tables after the ranked groups (text and markdown).
	details bool
	// cmd is the command the flags are of ("run", "check"), which
	// messages name.
	cmd string
}

// runExits is what once run exits with.
const runExits = `  CMD's own status (128+N when signal N killed it)
  124  --timeout stopped CMD
  126  CMD was found but could not run (not executable, permission denied)
  127  CMD was not found
  2    a usage error
  3    something is missing: privileges, BTF, tracefs, a kernel too old
  4    tracing failed or saw nothing, or the report could not be written`

// newRunCLI is the flags once run, check and compare share.
func newRunCLI(name, usage, about string, f *runFlags) *cli {
	c := newCLI(name, usage, about)
	f.cmd = name
	c.stray = " before --"
	fs := c.fs
	fs.StringVar(&f.format, "format", "text", "report format: text, json, markdown, pprof (a profile of the findings' calls by stack, for go tool pprof; needs -o) or folded (flame graph input); pprof and folded imply --stacks")
	cliflag.NonEmpty(fs, &f.output, "o", "", "write the report to `FILE` (created 0600; - for stdout) instead of stderr")
	fs.BoolVar(&f.events, "events", false, "also print every open, exec and lookup (stat, access) as it happens, one line each (JSON lines with --format json)")
	cliflag.NonEmpty(fs, &f.eventsOut, "events-o", "", "write the --events lines to `FILE` (created 0600 or appended to; - for stdout) instead of stderr; implies --events")
	fs.StringVar(&f.clock, "time", "wall", "the time of --events lines: `wall` (HH:MM:SS.ms) or boot (seconds since boot)")
	fs.BoolVar(&f.wide, "wide", false, wideUsage)
	fs.Var(&f.ignore, "ignore", "leave files matching `GLOB` out of findings (repeatable; ** matches any directories)")
	cliflag.NonEmpty(fs, &f.user, "user", "", "run the command as `NAME` (default: $SUDO_USER under sudo, else unchanged)")
	cliflag.Duration(fs, &f.linger, "linger", time.Second, "after the command exits, wait `D` for descendants still running")
	cliflag.Bytes(fs, &f.ringBuf, "ring-size", collector.DefaultRingBufferSize, "size of each BPF ring buffer in `BYTES` (a power of two, 4096 to 2147483648, or with a K, M or G suffix: 16M; default 8 MiB each up to 4 rings, then 32 MiB shared, at least 1 MiB each)")
	cliflag.IntVar(fs, &f.rings, "rings", 0, 0, "write events to `N` BPF ring buffers, CPU c to ring c mod N (default 0: one per 4 CPUs, at most 32; at most one per CPU)")
	timedOut := "exit 124"
	if name == "check" {
		timedOut = "fail the check (exit 1)"
	}
	cliflag.Duration(fs, &f.timeout, "timeout", 0, "SIGTERM the command after `D` (SIGKILL 2s later), report, and "+timedOut+" (default: no limit)")
	fs.BoolVar(&f.redact, "redact-args", false, "record every argument after argv[0] as sha256:<12 hex digits> of it, in every output")
	fs.StringVar(&f.files, "files", trace.FilesDuplicates, "which files each process lists in the JSON report: `duplicates` (opened or failed more than once) or all (text and markdown show the findings' files)")
	fs.StringVar(&f.processes, "processes", trace.ProcessesFindings, "which processes the JSON report lists one by one: `findings` (those with findings or files listed, with a row per program for all of them) or all (--details' table has every one)")
	f.stacks.register(fs)
	f.otlp.register(fs)
	fs.BoolVar(&f.details, "details", false, "after the ranked findings, each process's findings, call sites and the process tables (text, markdown)")
	fs.BoolVar(&verbose, "v", false, "--details, and show long errors (BPF verifier log) whole")
	return c
}

// checkTerminal refuses --format pprof -o - when stdout is a terminal, as
// gzip does: compressed bytes are no terminal's (run and check alike).
func (f *runFlags) checkTerminal(stdout io.Writer) error {
	if f.format == "pprof" && stdStream(f.output) == "stdout" && term.IsTerminal(stdout) {
		return usagef("%s: --format pprof -o -: stdout is a terminal; give -o FILE or redirect it", f.cmd)
	}
	return nil
}

// clockCheck refuses a --time given where it does nothing, as --wide
// is: it times the text --events lines only (JSON lines carry both
// clocks, ts and ts_ns).
func clockCheck(cmd string, given, events bool, format string) error {
	switch {
	case given && !events:
		return usagef("%s: --time needs --events: it is the clock of their lines", cmd)
	case given && format == "json":
		return usagef("%s: --time sets the clock of the text --events lines; JSON lines carry both, ts (wall) and ts_ns (since boot)", cmd)
	}
	return nil
}

// wideUsage is --wide's help, on run, check and watch.
const wideUsage = "with --events: also the UID, LAT(us) (the call's latency, as strace -T) and FLAGS (open flags and mode, access mode, AT_* flags, as strace prints them) columns, as opensnoop -U -e"

// stdStream is which of once's own streams an output flag's value writes
// to, the report's and the events' default (stderr) included; "" for a
// file.
func stdStream(path string) string {
	switch path {
	case "", "/dev/stderr":
		return "stderr"
	case "-", "/dev/stdout":
		return "stdout"
	}
	return ""
}

// oneFile says whether -o and --events-o name one file: the same path
// however spelled, or one file by two names. The standard streams and
// /dev/null are no such file (stdStream's rule is apart).
func oneFile(a, b string) bool {
	if a == "" || b == "" || stdStream(a) != "" || stdStream(b) != "" || a == os.DevNull || b == os.DevNull {
		return false
	}
	pa, errA := filepath.Abs(a)
	pb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && pa == pb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// check validates what the flags of run, check and compare share, the
// output path included: before anything runs.
func (f *runFlags) check(cmd string) (detect.Ignore, error) {
	if f.timeout < 0 {
		return detect.Ignore{}, usagef("%s: --timeout %v: must not be negative", cmd, f.timeout)
	}
	if f.linger < 0 {
		return detect.Ignore{}, usagef("%s: --linger %v: must not be negative", cmd, f.linger)
	}
	if err := checkRingSize(cmd, f.ringBuf); err != nil {
		return detect.Ignore{}, err
	}
	if err := output.Check(f.output); err != nil {
		return detect.Ignore{}, usagef("%s: %v", cmd, err)
	}
	if f.eventsOut != "" {
		f.events = true // where to write them: asking for them
	}
	if err := output.Check(f.eventsOut); err != nil {
		return detect.Ignore{}, usagef("%s: --events%v", cmd, err)
	}
	if oneFile(f.output, f.eventsOut) {
		// The report is renamed into place whole at the end: over the
		// events, which would be lost without a word.
		return detect.Ignore{}, usagef("%s: -o and --events-o name one file (%s): the report, written whole at the end, would replace the events", cmd, report.Escape(f.output))
	}
	if f.clock != "wall" && f.clock != "boot" {
		return detect.Ignore{}, usagef("%s: unknown --time %q (want wall or boot)", cmd, f.clock)
	}
	if err := clockCheck(cmd, f.clockGiven, f.events, f.format); err != nil {
		return detect.Ignore{}, err
	}
	if f.wide && !f.events {
		return detect.Ignore{}, usagef("%s: --wide needs --events", cmd)
	}
	if f.wide && f.format == "json" {
		return detect.Ignore{}, usagef("%s: --wide widens the text --events lines; JSON lines carry uid, ns and flags_text already", cmd)
	}
	if cmd == "check" && f.events && f.format == "json" && stdStream(f.eventsOut) == "stderr" {
		// check's verdict is on stderr, whatever -o says: JSON lines
		// there would not parse on their own.
		return detect.Ignore{}, usagef("check: --events with --format json: give --events-o FILE (or - for stdout), so that the JSON lines parse apart from check's verdict on stderr")
	}
	if f.events && f.format == "json" && stdStream(f.output) != "" && stdStream(f.output) == stdStream(f.eventsOut) {
		return detect.Ignore{}, usagef("%s: --events with --format json: give -o FILE for the report or --events-o FILE for the events, so that each stream parses on its own", cmd)
	}
	if f.details && f.format != "text" && f.format != "markdown" && f.format != "md" {
		// Its sections are text's and markdown's: JSON lists every
		// finding of every process it names already, and a profile
		// has no sections.
		return detect.Ignore{}, usagef("%s: --details adds sections to the text and markdown reports; --format %s has none (JSON lists each process's findings: --processes all names every process)", cmd, f.format)
	}
	if profileFormat(f.format) {
		f.stacks.on = true
	}
	if f.format == "pprof" && f.output == "" {
		return detect.Ignore{}, usagef("%s: --format pprof writes a gzipped protobuf: give -o FILE", cmd)
	}
	if err := f.stacks.check(cmd); err != nil {
		return detect.Ignore{}, err
	}
	if err := f.otlp.check(cmd); err != nil {
		return detect.Ignore{}, err
	}
	f.ringBuf = ringSize(f.stacks.ringSize(f.ringBuf, f.ringGiven), f.ringGiven, f.rings)
	if f.files != trace.FilesDuplicates && f.files != trace.FilesAll {
		return detect.Ignore{}, usagef("%s: unknown --files %q (want duplicates or all)", cmd, f.files)
	}
	if f.processes != trace.ProcessesFindings && f.processes != trace.ProcessesAll {
		return detect.Ignore{}, usagef("%s: unknown --processes %q (want findings or all)", cmd, f.processes)
	}
	return ignoreRules(cmd, f.ignore)
}
