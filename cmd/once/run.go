package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// splitDashDash separates once's flags from the command. The "--" is
// required: it keeps the command's own flags away from once's parser.
func splitDashDash(name string, args []string) (flags, command []string, err error) {
	for i, a := range args {
		if a == "--" {
			if i+1 == len(args) {
				return nil, nil, usagef("%s: no command after --", name)
			}
			return args[:i], args[i+1:], nil
		}
	}
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return args, nil, nil
		}
	}
	return nil, nil, usagef("%s: missing -- before the command (once %s [flags] -- CMD [ARGS...])", name, name)
}

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
}

func newRunFlagSet(name string, f *runFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.format, "format", "text", "report format: text, json or markdown")
	fs.StringVar(&f.output, "o", "", "write the report to `FILE` (created 0600) instead of stderr")
	fs.BoolVar(&f.events, "events", false, "also print every event as it happens, one line each")
	fs.Var(&f.ignore, "ignore", "leave files matching `GLOB` out of findings (repeatable)")
	fs.StringVar(&f.user, "user", "", "run the command as `NAME` (default: $SUDO_USER under sudo, else unchanged)")
	fs.DurationVar(&f.linger, "linger", time.Second, "after the command exits, wait this long for descendants still running")
	fs.IntVar(&f.ringBuf, "ring-size", collector.DefaultRingBufferSize, "BPF ring buffer size in `BYTES` (power of two)")
	fs.DurationVar(&f.timeout, "timeout", 0, "SIGTERM the command after `D` (SIGKILL 2s later), report, and exit 124 (default: no limit)")
	fs.BoolVar(&f.redact, "redact-args", false, "record every argument after argv[0] as sha256:<12 hex digits> of it, in every output")
	fs.BoolVar(&verbose, "v", false, "show long errors (BPF verifier log) whole")
	return fs
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var f runFlags
	fs := newRunFlagSet("run", &f, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: once run [flags] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	command, help, err := parseWithCommand("run", fs, args)
	if err != nil || help {
		return 0, err
	}
	render, err := renderer(f.format)
	if err != nil {
		return 0, err
	}
	if err := checkGlobs("run", f.ignore); err != nil {
		return 0, err
	}
	if f.timeout < 0 {
		return 0, usagef("run: --timeout must not be negative")
	}

	res, err := traceCommand(command, f, stderr)
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
	return res.ExitCode, nil
}

// traceCommand runs command under a tree-following tracer.
func traceCommand(command []string, f runFlags, stderr io.Writer) (*trace.Result, error) {
	path, err := exec.LookPath(command[0])
	if err != nil {
		return nil, exitError{exitNotFound, fmt.Sprintf("%s: command not found", report.Escape(command[0]))}
	}
	cmd := exec.Command(path, command[1:]...)
	cmd.Args = command
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cred, err := credential(f.user)
	if err != nil {
		return nil, err
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
		SendOpensPerKind: sendOpens(f.events, collector.MaxCalls)})
	if err != nil {
		return nil, err
	}
	defer tr.Close()

	// The terminal's Ctrl-C reaches the command too (same process group):
	// let it decide, and report what happened. SIGTERM is passed on.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// RunCommand passes these on once the command exists: a SIGTERM that
	// arrives before the command started is not lost.
	// A Ctrl-C that came before the command existed reached only once:
	// pass that one on too.
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

	opts := collector.RunOptions{Ignore: f.ignore, Linger: f.linger, Timeout: f.timeout, Signals: forward,
		OnStart: func(int) { started.Store(true) }}
	opts.OnLoss = func(c trace.Counters) {
		fmt.Fprintf(stderr, "once: WARNING: %d events lost so far (dropped %d, map-full %d, missed-enter %d); counts will be lower bounds\n",
			c.Lost(), c.DroppedEvents, c.EnterMapFull, c.MissedEnter)
	}
	if f.events {
		w := bufio.NewWriter(stderr)
		defer w.Flush()
		ep := report.NewEventPrinter(w)
		opts.OnEvent = func(ev *trace.Event) {
			ep.Print(ev)
			w.Flush()
		}
	}
	return collector.RunCommand(ctx, tr, cmd, opts)
}

// sendOpens is how many repeated opens of one kind the kernel sends before
// it only counts them: every one when each event is shown, else enough for
// what the report keeps (run: MaxCalls calls per file) or the detectors
// need (watch: the first repeat makes a duplicate).
func sendOpens(events bool, perKind int) int {
	if events {
		return 0
	}
	return perKind
}

// credential picks who the command runs as: --user, else the user behind
// sudo, so build outputs aren't owned by root; nil means unchanged.
func credential(name string) (*syscall.Credential, error) {
	var u *user.User
	var err error
	switch {
	case name != "":
		u, err = user.Lookup(name)
		if err != nil {
			if _, nerr := strconv.Atoi(name); nerr == nil {
				u, err = user.LookupId(name)
			}
		}
		if err != nil {
			return nil, usagef("run: --user %s: %v", name, err)
		}
	case os.Geteuid() == 0 && os.Getenv("SUDO_UID") != "":
		u, err = user.LookupId(os.Getenv("SUDO_UID"))
		if err != nil {
			// A uid without a passwd entry: use the numbers sudo gave.
			uid, _ := strconv.Atoi(os.Getenv("SUDO_UID"))
			gid, _ := strconv.Atoi(os.Getenv("SUDO_GID"))
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
		}
	default:
		return nil, nil
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if name == "" {
		if g, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil {
			gid = g
		}
	}
	groups := []uint32{}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.Atoi(s); err == nil {
				groups = append(groups, uint32(g))
			}
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, nil
}

func renderer(format string) (func(io.Writer, *trace.Result) error, error) {
	switch format {
	case "text":
		return report.Text, nil
	case "json":
		return report.JSON, nil
	case "markdown", "md":
		return report.Markdown, nil
	}
	return nil, usagef("unknown --format %q (want text, json or markdown)", format)
}

// writeReport writes to path atomically (a 0600 temp file renamed into
// place, so a failed write never leaves a report that looks complete), or
// to def when path is empty.
func writeReport(path string, def io.Writer, write func(io.Writer) error) error {
	if beforeRender != nil {
		beforeRender()
	}
	if path == "" || path == "-" {
		return write(def)
	}
	// Only a regular file (or a new one) is replaced by rename: renaming
	// over /dev/null or a FIFO would replace the device node itself, and
	// over a symlink would leave a file where the link was.
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("write report: %s is a symlink; refusing to write through it", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		if err := write(f); err != nil {
			f.Close()
			return fmt.Errorf("write report %s: %w", path, err)
		}
		return f.Close()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write report: %w", err)
	}
	w := bufio.NewWriter(tmp)
	if err := write(w); err != nil {
		tmp.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// beforeRender, when set (by tests only), runs before a report or a watch
// table is rendered: a test makes it panic to check that every BPF object
// is released on that path too.
var beforeRender func()

// escapeComm and escapePath make traced-system strings safe for a terminal.
func escapeComm(s string) string { return report.Escape(s) }
func escapePath(s string) string { return report.Escape(s) }

// checkGlobs rejects a malformed --ignore pattern up front: path.Match
// would otherwise just never match it.
func checkGlobs(cmd string, globs []string) error {
	for _, g := range globs {
		if _, err := filepath.Match(g, ""); err != nil {
			return usagef("%s: bad --ignore pattern %q: %v", cmd, g, err)
		}
	}
	return nil
}

// parseWithCommand parses once's flags before the required "--" and
// returns the command after it; help is true after -h.
func parseWithCommand(name string, fs *flag.FlagSet, args []string) (command []string, help bool, err error) {
	flagArgs, command, err := splitDashDash(name, args)
	if err != nil {
		return nil, false, err
	}
	help, err = parseFlags(name, fs, flagArgs, " before --")
	return command, help, err
}

// parseFlags parses args that must all be flags; help reports -h. A
// stray argument is a usage error whose message ends with stray.
func parseFlags(name string, fs *flag.FlagSet, args []string, stray string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, usagef("%s: %v", name, err)
	}
	if fs.NArg() > 0 {
		return false, usagef("%s: unexpected argument %q%s", name, fs.Arg(0), stray)
	}
	return false, nil
}
