// Package strace runs strace(1) and parses its output, as an independent
// ground truth for what the once tracer should count: every open-family
// call and every execve attempt, per thread and per process.
//
// Parse understands the output of strace started with exactly Args:
//
//	strace -f -qq -s 65535 -xx -X raw \
//	    -e trace=open,openat,openat2,creat,execve,execveat,newfstatat,statx,stat,lstat,access,faccessat,faccessat2,clone,clone3,fork,vfork \
//	    -e signal=none -o FILE -- CMD [ARG...]
//
// Why these options:
//   - -f follows every child process and thread, and with -o makes strace
//     prefix each line with the tid.
//   - -qq drops attach/detach/exit chatter; Parse copes with it anyway.
//   - -s 65535 keeps execve argv strings from being truncated (file names
//     are never truncated).
//   - -xx prints every string as \xNN escapes, so decoding is unambiguous
//     for any byte, including quotes, newlines and non-ASCII. Parse also
//     accepts strace's default C-style escaping (\n, \", octal).
//   - -X raw prints flags and dirfds as numbers (0x80000, -100) that compare
//     directly with what the kernel and the BPF side see, independent of
//     how the installed strace names them. Errno names stay symbolic.
//   - The clone family is traced so that Parse can tell threads from
//     processes and fill in Call.Tgid.
//   - -e signal=none keeps "--- SIGCHLD ... ---" lines out.
//
// Use Command to get exactly this invocation, and Require in tests.
package strace

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// Args are the strace options that Parse expects, to be followed by
// "-o", FILE, "--" and the command. Command assembles that for you.
var Args = []string{
	"-f", "-qq", "-s", "65535", "-xx", "-X", "raw",
	"-e", "trace=open,openat,openat2,creat,execve,execveat,newfstatat,statx,stat,lstat,access,faccessat,faccessat2,clone,clone3,fork,vfork",
	"-e", "signal=none",
}

// Command returns a command that runs argv under strace with Args, writing
// the trace to the file out (which ParseFile then reads). The command's own
// stdin, stdout and stderr are those of the returned exec.Cmd; strace's
// diagnostics also go to its stderr. strace exits with the traced program's
// exit status.
func Command(ctx context.Context, out string, argv ...string) *exec.Cmd {
	args := make([]string, 0, len(Args)+3+len(argv))
	args = append(args, Args...)
	args = append(args, "-o", out, "--")
	args = append(args, argv...)
	return exec.CommandContext(ctx, "strace", args...)
}

// ParseFile parses a trace file written by a Command.
func ParseFile(name string) ([]Call, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Require returns the path of the strace binary for a test that needs it.
// Without strace the test is skipped on a developer machine, but fails when
// the environment variable CI is "true": CI must not pass by silently
// skipping the oracle.
func Require(t testing.TB) string {
	t.Helper()
	return testprog.NeedTool(t, "strace")
}
