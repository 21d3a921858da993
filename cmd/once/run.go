package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/internal/privdrop"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

type runFlags struct {
	format  string
	output  string
	events  bool
	ignore  stringList
	user    string
	linger  time.Duration
	ringBuf int
	timeout time.Duration
	redact  bool
	files   string
	// --events: where the lines go, and their clock.
	eventsOut string
	clock     string
	stacks    stackFlags
	ringGiven bool // --ring-size was on the command line
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
	c.stray = " before --"
	fs := c.fs
	fs.StringVar(&f.format, "format", "text", "report format: text, json, markdown, pprof (a profile of the findings' calls by stack, for go tool pprof; needs -o) or folded (flame graph input); pprof and folded imply --stacks")
	fs.StringVar(&f.output, "o", "", "write the report to `FILE` (created 0600) instead of stderr")
	fs.BoolVar(&f.events, "events", false, "also print every open and exec as it happens, one line each (JSON lines with --format json)")
	fs.StringVar(&f.eventsOut, "events-o", "", "write the --events lines to `FILE` instead of stderr")
	fs.StringVar(&f.clock, "time", "wall", "the time of --events lines: `wall` (HH:MM:SS.ms) or boot (seconds since boot)")
	fs.Var(&f.ignore, "ignore", "leave files matching `GLOB` out of findings (repeatable; ** matches any directories)")
	fs.StringVar(&f.user, "user", "", "run the command as `NAME` (default: $SUDO_USER under sudo, else unchanged)")
	durationFlag(fs, &f.linger, "linger", time.Second, "after the command exits, wait `D` for descendants still running")
	intFlag(fs, &f.ringBuf, "ring-size", collector.DefaultRingBufferSize, 0, "BPF ring buffer size in `BYTES` (a power of two, 4096 to 2147483648)")
	durationFlag(fs, &f.timeout, "timeout", 0, "SIGTERM the command after `D` (SIGKILL 2s later), report, and exit 124 (default: no limit)")
	fs.BoolVar(&f.redact, "redact-args", false, "record every argument after argv[0] as sha256:<12 hex digits> of it, in every output")
	fs.StringVar(&f.files, "files", trace.FilesDuplicates, "which files each process lists: `duplicates` (opened or failed more than once) or all")
	f.stacks.register(fs)
	fs.BoolVar(&verbose, "v", false, "show long errors (BPF verifier log) whole")
	return c
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
	if err := output.Check(f.eventsOut); err != nil {
		return detect.Ignore{}, usagef("%s: --events-%v", cmd, err)
	}
	if f.clock != "wall" && f.clock != "boot" {
		return detect.Ignore{}, usagef("%s: unknown --time %q (want wall or boot)", cmd, f.clock)
	}
	if f.events && f.format == "json" && f.output == "" && f.eventsOut == "" {
		return detect.Ignore{}, usagef("%s: --events with --format json: give -o FILE for the report or --events-o FILE for the events, so that each stream parses on its own", cmd)
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
	f.ringBuf = f.stacks.ringSize(f.ringBuf, f.ringGiven)
	if f.files != trace.FilesDuplicates && f.files != trace.FilesAll {
		return detect.Ignore{}, usagef("%s: unknown --files %q (want duplicates or all)", cmd, f.files)
	}
	return ignoreRules(cmd, f.ignore)
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var f runFlags
	c := newRunCLI("run", "once run [flags] -- CMD [ARGS...]",
		"Run CMD traced from its first instruction, with every process it starts, and\n"+
			"report per process the files it opened more than once and the exec and open\n"+
			"searches that failed on the way. The report goes to stderr, or to -o FILE.", &f)
	c.examples = []string{
		"sudo once run -- cp -r src/ dst/",
		"sudo once run --format json -o report.json -- make -j8",
		"sudo once run --events --ignore '/usr/lib/**' -- env PATH=/a:/b:/usr/bin sh -c 'cat /etc/hostname'",
	}
	c.exits = runExits
	command, help, err := c.parseCommand(args, stdout)
	if err != nil || help {
		return 0, err
	}
	f.ringGiven = c.given("ring-size")
	render, err := renderer(f.format)
	if err != nil {
		return 0, err
	}
	ignore, err := f.check("run")
	if err != nil {
		return 0, err
	}
	res, err := traceCommand(command, f, detect.KeepAll(f.files), ignore, stderr)
	if res == nil {
		return 0, err
	}
	if werr := writeReport(f.output, stderr, func(w io.Writer) error { return render(w, res) }); werr != nil {
		return 0, exitError{exitTrace, werr.Error()}
	}
	if err != nil {
		// The report was still written: it shows the counters.
		return 0, exitError{exitTrace, err.Error()}
	}
	if res.TimedOut {
		return 0, exitError{exitTimeout, fmt.Sprintf("the command timed out after %v (exit status %d)", f.timeout, res.ExitCode)}
	}
	if res.StartErrno != 0 {
		return 0, exitError{res.ExitCode, startError(command[0], res.StartErrno)}
	}
	return res.ExitCode, nil
}

// traceCommand runs command under a tree-following tracer, its events
// fed to an exact engine with policy p.
func traceCommand(command []string, f runFlags, p detect.Policy, ignore detect.Ignore, stderr io.Writer) (*trace.Result, error) {
	path, err := lookCommand(command[0])
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, command[1:]...)
	cmd.Args = command
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cred, err := privdrop.Credential(f.user)
	if err != nil {
		return nil, usagef("run: %v", err)
	}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}

	// Signals are caught before anything is loaded: a SIGTERM that comes
	// while the programs attach must not kill once with them half set up.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	tr, err := collector.Open(collector.Options{Tracked: true, RingBufferSize: f.ringBuf, RedactArgs: f.redact, BatchWakeups: true, LinkCacheDir: cacheDir(),
		SendOpensPerKind: sendOpens(f.events, p.MaxCalls), StackSize: f.stacks.kernelSize(), KeptStacks: keptStacks(f.events)})
	if err != nil {
		return nil, err
	}
	defer tr.Close()

	// The terminal's Ctrl-C reaches the command too (same process group):
	// let it decide, and report what happened. SIGTERM is passed on, and
	// so is a Ctrl-C that came before the command existed (it reached
	// only once). The session passes them on once the command exists.
	forward := make(chan os.Signal, 4)
	var started atomic.Bool
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM || !started.Load() {
				select {
				case forward <- s:
				default:
				}
			}
		}
	}()

	s := session.New(tr, detect.New(detect.Options{Policy: p, Ignore: ignore, Spawner: os.Getpid(), Label: containerLabels(), Stacks: f.stacks.on}))
	if f.stacks.on {
		ss, err := openStacks()
		if err != nil {
			return nil, err
		}
		defer ss.Close()
		s.Stacks = ss
	}
	opts := session.RunOptions{Linger: f.linger, Timeout: f.timeout, Signals: forward,
		OnStart: func(int) { started.Store(true) }}
	opts.OnLoss = func(c trace.Counters) {
		fmt.Fprintf(stderr, "once: WARNING: %d events lost so far (dropped %d, map-full %d, missed-enter %d); counts will be lower bounds\n",
			c.Lost(), c.DroppedEvents, c.EnterMapFull, c.MissedEnter)
	}
	if f.events {
		var evOut io.Writer = stderr
		if f.eventsOut != "" {
			file, err := output.OpenStream(f.eventsOut)
			if err != nil {
				return nil, usagef("run: --events-o: %v", err)
			}
			defer file.Close()
			evOut = file
		}
		w := output.NewRecordWriter(evOut, 64<<10)
		defer w.Flush()
		offset := collector.WallOffset()
		if f.format == "json" {
			jl := report.NewJSONLines(w)
			jl.SetClock(offset)
			s.OnEvent = func(ev *trace.Event, ann detect.Annotation) {
				jl.Event(ev, ann.Proc)
			}
		} else {
			ep := report.NewEventPrinter(w)
			if f.clock == "wall" {
				ep.SetClock(offset)
			}
			s.OnEvent = func(ev *trace.Event, ann detect.Annotation) {
				ep.Print(ev, ann)
			}
		}
		// Lines as they happen, not when the buffer fills: flushed at
		// each poll of the loop.
		opts.OnTick = func() { w.Flush() }
	}
	return session.Run(context.Background(), s, cmd, opts)
}

// checkRingSize: the kernel wants a power of two, at least a page, that
// fits its 32-bit size.
func checkRingSize(cmd string, n int) error {
	page := os.Getpagesize()
	if n < page || n&(n-1) != 0 || n >= 1<<32 {
		return usagef("%s: --ring-size %d: want a power of two from %d to %d bytes", cmd, n, page, 1<<31)
	}
	return nil
}

// lookCommand finds a command as a shell does: a name with a slash is run
// as given (if its exec fails, that is traced and reported like any
// other), a bare name is searched in $PATH: not found is exit 127, found
// but not executable 126.
func lookCommand(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	// A file of that name that is not executable: a shell's (and env's)
	// "Permission denied".
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() {
			return "", exitError{exitNoExec, fmt.Sprintf("%s: permission denied", report.Escape(name))}
		}
	}
	return "", exitError{exitNotFound, fmt.Sprintf("%s: command not found", report.Escape(name))}
}

// sendOpens is how many repeated opens of one kind the kernel sends before
// it only counts them: every one when each event is shown, else enough for
// what the report keeps (run: the calls kept per file) or the detectors
// need (watch: the first repeat makes a duplicate).
func sendOpens(events bool, perKind int) int {
	if events {
		return 0
	}
	return perKind
}

func renderer(format string) (func(io.Writer, *trace.Result) error, error) {
	switch format {
	case "text":
		return report.Text, nil
	case "json":
		return report.JSON, nil
	case "markdown", "md":
		return report.Markdown, nil
	case "pprof":
		return report.PProf, nil
	case "folded":
		return report.Folded, nil
	}
	return nil, usagef("unknown --format %q (want text, json, markdown, pprof or folded)", format)
}

// startError says, like a shell, why the command never ran.
func startError(name string, errno int32) string {
	return fmt.Sprintf("%s: %v (execve failed with %s)", report.Escape(name), syscall.Errno(errno), report.ErrnoName(errno))
}

// writeReport is output.WriteReport, after the test hook.
func writeReport(path string, def io.Writer, write func(io.Writer) error) error {
	if beforeRender != nil {
		beforeRender()
	}
	return output.WriteReport(path, def, write)
}

// beforeRender, when set (by tests only), runs before a report or a watch
// table is rendered: a test makes it panic to check that every BPF object
// is released on that path too.
var beforeRender func()
