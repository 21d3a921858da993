package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/container"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/internal/privdrop"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/sink"
	"github.com/oncetool/once/trace"
)

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var f runFlags
	c := newRunCLI("run", "once run [flags] -- CMD [ARGS...]",
		"Run CMD traced from its first instruction, with every process it starts, and\n"+
			"report per process the files it opened or stat-ed more than once, the lookups\n"+
			"it failed again and again, and the exec, open and stat searches that failed\n"+
			"on the way. The report goes to stderr, or to -o FILE.", &f)
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
	f.clockGiven = c.given("time")
	f.stacks.sizeGiven = c.given("stack-size")
	render, err := renderer("run", f.format, f.details || verbose)
	if err != nil {
		return 0, err
	}
	ignore, err := f.check("run")
	if err != nil {
		return 0, err
	}
	if err := f.checkTerminal(stdout); err != nil {
		return 0, err
	}
	res, err := traceCommand(command, f, detect.KeepAll(f.files), ignore, stdout, stderr)
	if res == nil {
		return 0, err
	}
	if werr := writeReport(f.output, stderr, stdout, stderr, func(w io.Writer) error { return render(w, res) }); werr != nil {
		return 0, exitError{exitTrace, werr.Error()}
	}
	if f.format == "folded" {
		// Folded stacks have no room for what was lost or cut: the
		// summary line says it beside them, on stderr. When the stacks
		// go there too (no -o), it still does, or a run that lost
		// events would say nothing of it; worded so that flame graph
		// tools, which take a line's last word for its count, skip it
		// rather than read it as a stack.
		fmt.Fprintln(stderr, foldedSummary(res, stdStream(f.output) == "stderr"))
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

// firstCallsKept says whether the kernel may keep, not send, an image's
// first open of a file, with its stack and its call (collector.Options's
// FirstOpensUnsent with stacks): where each call's stack is captured and
// the report lists only what repeats. Every file listed (--files all), a
// file an assertion names, or an event stream needs every first open.
func firstCallsKept(f runFlags, p detect.Policy) bool {
	return f.stacks.on && !f.events && p.Files != trace.FilesAll && p.KeepFile == nil
}

// traceCommand runs command under a tree-following tracer, its events
// fed to an exact engine with policy p.
func traceCommand(command []string, f runFlags, p detect.Policy, ignore detect.Ignore, stdout, stderr io.Writer) (*trace.Result, error) {
	path, err := lookCommand(command[0])
	if err != nil {
		return nil, err
	}
	if p.MaxListBytes, err = listBytes(p.MaxListBytes); err != nil {
		return nil, err
	}
	cmd := exec.Command(path, command[1:]...)
	cmd.Args = command
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cred, err := privdrop.Credential(f.user)
	if err != nil {
		return nil, usagef("%s: %v", f.cmd, err)
	}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}

	// Signals are caught before anything is loaded: a SIGTERM that comes
	// while the programs attach must not kill once with them half set up.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A closed pipe (--events-o - | head) costs the lines written to
	// it, counted, not the trace: left to Go, the first write to a
	// closed stdout or stderr ends once with SIGPIPE, the command left
	// running untraced and no report written. Caught, the write fails
	// with EPIPE instead, the report still goes to -o FILE (or fails
	// to be written: exit 4). Kept past the trace, for the report's
	// own write; the command gets SIGPIPE's default again at its exec.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	tr, err := collector.Open(collector.Options{Tracked: true, RingBufferSize: f.ringBuf, Rings: f.rings, RedactArgs: f.redact, BatchWakeups: true, LinkCacheDir: cacheDir(),
		SendOpensPerKind: sendOpens(f.events, p.MaxCalls), StackSize: f.stacks.kernelSize(), KeptStacks: keptStacks(f.events),
		FirstOpensUnsent: firstCallsKept(f, p)})
	if err != nil {
		return nil, err
	}
	defer tr.Close()

	s := session.New(tr, detect.New(detect.Options{Policy: p, Ignore: ignore, Spawner: os.Getpid(), Label: session.ContainerLabels(container.New(container.Options{Mountinfo: selfMountinfo()})),
		ParentComm: session.NewParentComms(tr.SelfTgid()).Comm, Stacks: f.stacks.on}))
	if f.stacks.on {
		ss, err := openStacks(os.Getpid())
		if err != nil {
			return nil, err
		}
		defer ss.Close()
		s.Stacks = ss
	}
	// Sent at the end, with the result's counters; what the collector
	// did not get is in the report's otlp_dropped.
	if k, err := f.otlp.sink(nil, stderr, 0); err != nil {
		return nil, err
	} else if k != nil {
		s.AddSink(k)
	}
	opts := session.RunOptions{Linger: f.linger, Timeout: f.timeout, Signals: sigs}
	// Once the command runs (it must not inherit the policy), once's own
	// threads stop preempting it (internal/schedbatch).
	opts.OnStart = func(int) { batchThreads(stderr) }
	var warned sink.Warned
	opts.OnLoss = func(c trace.Counters) { warned.Warn(stderr, &c) }
	if f.events {
		closeEvents, err := addEventsSink(s, f, stdout, stderr)
		if err != nil {
			return nil, err
		}
		defer closeEvents()
	}
	res, err := session.Run(context.Background(), s, cmd, opts)
	if res != nil {
		res.ProcessesListed = f.processes
	}
	return res, err
}

// listBytes is the listing's byte budget (detect.Policy.MaxListBytes):
// def, or for tests $ONCE_LIST_BYTES, which makes it small enough for a
// small tree to pass it.
func listBytes(def int64) (int64, error) {
	s := os.Getenv("ONCE_LIST_BYTES")
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, usagef("ONCE_LIST_BYTES=%q: want a number of bytes", s)
	}
	return n, nil
}

// lookCommand is session.LookCommand, its failure in once's exit codes.
func lookCommand(name string) (string, error) {
	return startErr(session.LookCommand(name))
}

// startErr is a command lookup's result, a *session.StartError as an
// exitError with its code.
func startErr(path string, err error) (string, error) {
	var se *session.StartError
	if errors.As(err, &se) {
		return "", exitError{se.Code, fmt.Sprintf("%s: %s", report.Escape(se.Name), se.Reason)}
	}
	return path, err
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

// renderer is the report writer of format; details: --details (or -v).
func renderer(cmd, format string, details bool) (report.Renderer, error) {
	if r := report.ForFormat(format, details); r != nil {
		return r, nil
	}
	return nil, usagef("%s: unknown --format %q (want %s)", cmd, format, report.Formats)
}

// startError is session.ExecFailure with the name and errno, escaped.
func startError(name string, errno int32) string {
	return fmt.Sprintf("%s: %s (execve failed with %s)", report.Escape(name), session.ExecFailure(name, errno), report.ErrnoName(errno))
}

// writeReport is output.WriteReport, after the test hook: to path, or
// def when path is empty; "-" and /dev/stdout are stdout, /dev/stderr is
// stderr.
func writeReport(path string, def, stdout, stderr io.Writer, write func(io.Writer) error) error {
	if beforeRender != nil {
		beforeRender()
	}
	return output.WriteReport(path, def, output.Std{Stdout: stdout, Stderr: stderr}, write)
}

// beforeRender, when set (by tests only), runs before a report or a watch
// table is rendered: a test makes it panic to check that every BPF object
// is released on that path too.
var beforeRender func()
