// Command once finds duplicate opens and failed exec probes: it traces
// every open and exec of a command tree (once run) with eBPF and reports,
// per process, the files opened more than once and the execs that failed
// on the way through $PATH.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/container"
	"github.com/oncetool/once/internal/memlimit"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/report"
)

// Exit codes once itself uses; `once run` otherwise exits with the
// command's own status.
const (
	exitUsage    = 2   // bad flags or arguments
	exitEnv      = 3   // missing privilege, BTF or tracefs: see the message
	exitTrace    = 4   // tracing failed or traced nothing
	exitTimeout  = 124 // once run --timeout: the command was stopped, like timeout(1)
	exitNoExec   = 126 // the command was found but is not executable, like a shell
	exitNotFound = 127 // the command could not be found, like a shell
	// compare and demo stopped by SIGINT or SIGTERM: 128 + SIGINT, as a
	// shell reports a command Ctrl-C stopped.
	exitInterrupted = 130
)

// usageError is a mistake in the command line: one line, exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitError carries an exit status and an optional message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

const mainUsage = `usage: once <command> [flags] [-- CMD [ARGS...]]

Commands:
  run       trace CMD and its descendants; report the opens, lookups and execs they waste
  check     trace CMD and exit 1 when an assertion about its findings fails (for CI)
  watch     live, system-wide: which processes waste opens, lookups and execs right now (table, events, JSON, metrics)
  compare   measure two commands side by side: exact counts and timing, before/after evidence
  demo      the guided tour: a cp that opens its sources more than once against the reference copy, a PATH search
  version   print the version

Run 'once <command> -h' for the flags of a command.

Environment:
  ONCE_CACHE_DIR   where once keeps what it resolved from the kernel's BTF, per
                   kernel build (default ` + defaultCacheDir + `; empty: no cache)
  ONCE_CPUPROFILE  write a Go CPU profile of the command to this file
  GOMEMLIMIT       the Go runtime's soft memory limit (default: the memory
                   cgroup's limit less 64 MiB, at least half of it; once watch
                   --memory-limit wins over both)
`

var version = "dev"

func main() {
	if len(os.Args) > 1 && tracesFirst(os.Args[1]) {
		collector.PrefetchSpec()
	}
	os.Exit(profiled(func() int { return run(os.Args[1:], os.Stdout, os.Stderr) }))
}

// profiled runs f with a CPU profile written to $ONCE_CPUPROFILE, when
// set: how the collector's cost per event is looked into (go tool pprof).
// The file is written like -o (output.Create): never through a symlink,
// into a FIFO or device, or over another user's file, and renamed into
// place whole when f is done.
func profiled(f func() int) int {
	path := os.Getenv("ONCE_CPUPROFILE")
	if path == "" {
		return f()
	}
	out, err := output.Create(path, output.Std{Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "once: ONCE_CPUPROFILE: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Abort()
		fmt.Fprintf(os.Stderr, "once: ONCE_CPUPROFILE: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	code := f()
	pprof.StopCPUProfile()
	if err := out.Commit(); err != nil {
		fmt.Fprintf(os.Stderr, "once: ONCE_CPUPROFILE: %s\n", oneLine(err.Error()))
		if code == 0 {
			code = exitTrace
		}
	}
	return code
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A bug must not print a Go stack trace at the user: one line,
		// and a distinct code.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "once: internal error: %v\n", r)
			code = exitTrace
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	// The collector runs before the kernel kills: a memory cgroup's
	// limit, less what is not Go's heap, is the runtime's soft limit.
	// An unreadable cgroup leaves the runtime's default. watch sets it
	// itself (--memory-limit, its ring's size): the cgroup read once.
	if args[0] != "watch" {
		_, _, _ = memlimit.SetupMounts("", false, "/", selfMountinfo(), 0)
	}
	var err error
	switch args[0] {
	case "run":
		code, err = cmdRun(args[1:], stdout, stderr)
	case "check":
		code, err = cmdCheck(args[1:], stdout, stderr) // a usage error: 2, checkError too
	case "watch":
		code, err = cmdWatch(args[1:], stdout, stderr)
	case "compare":
		code, err = cmdCompare(args[1:], stdout, stderr)
	case "demo":
		code, err = cmdDemo(args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 {
			err = usagef("%s takes no arguments (got %q)", args[0], args[1])
			break
		}
		fmt.Fprintln(stdout, "once", version)
		return 0
	case "help", "-h", "--help":
		if args[0] == "help" && len(args) > 1 {
			// once help run: what once run -h says, as git help and
			// go help do.
			switch args[1] {
			case "run", "check", "watch", "compare", "demo":
				return run([]string{args[1], "-h"}, stdout, stderr)
			}
			err = usagef("help: unknown command %q (try: once help)", args[1])
			break
		}
		fmt.Fprint(stdout, mainUsage)
		return 0
	default:
		err = usagef("unknown command %q (try: once help)", args[0])
	}
	if err == nil {
		return code
	}
	var ue usageError
	var ee exitError
	var pe *collector.PreflightError
	switch {
	case errors.As(err, &pe):
		// Missing privilege, BTF, tracefs: one line saying what to do.
		fmt.Fprintf(stderr, "once: %s\n", oneLine(pe.Error()))
		return exitEnv
	case errors.As(err, &ue):
		// One line: a newline in it is one in a value it quotes,
		// escaped as the rest (oneLine would cut the reason off there).
		fmt.Fprintf(stderr, "once: %s\n", report.Inert(ue.msg))
		return exitUsage
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "once: %s\n", oneLine(ee.msg))
		}
		return ee.code
	default:
		fmt.Fprintf(stderr, "once: %s\n", oneLine(err.Error()))
		return exitTrace
	}
}

// interrupted is what a command that stopped on SIGINT or SIGTERM
// (ctx done) returns instead of the error its work stopped with
// ("context canceled", a child's "signal: killed"): that it was
// interrupted, exiting as a shell's command killed by SIGINT does.
func interrupted(ctx context.Context, cmd string, code int, err error) (int, error) {
	if err == nil || ctx.Err() == nil {
		return code, err
	}
	var ue usageError
	if errors.As(err, &ue) {
		return code, err
	}
	return 0, exitError{exitInterrupted, cmd + ": interrupted"}
}

// oneLine keeps an error to one line; the verifier log is the exception
// that is worth its length, and is only ever shown whole with -v. Every
// line is made inert: messages quote once's own arguments and
// environment, which can hold any byte.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 && !verbose {
		return report.Inert(s[:i]) + " (run with -v for the full message)"
	}
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = report.Inert(lines[i])
	}
	return strings.Join(lines, "\n")
}

var verbose bool

// defaultCacheDir keeps once's link cache (see collector.Options.LinkCacheDir).
const defaultCacheDir = "/var/cache/once"

// cacheDir is $ONCE_CACHE_DIR when set (empty: no cache), else
// defaultCacheDir.
func cacheDir() string {
	if dir, ok := os.LookupEnv("ONCE_CACHE_DIR"); ok {
		return dir
	}
	return defaultCacheDir
}

// selfMountinfo is /proc/self/mountinfo, read once: the memory limit and
// container naming both start from it (nil if unreadable: each then reads
// it and fails its own way).
var selfMountinfo = sync.OnceValue(func() []byte {
	b, _ := container.ReadMountinfo("/proc")
	return b
})
