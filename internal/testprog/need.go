package testprog

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// CI reports whether the tests run under CI (CI=true), where every tool and
// kernel feature a test needs is expected to be there: .ci/run installs the
// tools, and a skip would hide a part of the suite that did not run.
func CI() bool { return os.Getenv("CI") == "true" }

// NeedTool returns the path of the program name, looked up in PATH. When
// it is missing the test skips, or fails under CI=true.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, fmt.Sprintf("needs %s, which is not installed (.ci/run installs it)", name))
	}
	return p
}

// Skip skips the test for a missing requirement of the environment (io_uring,
// /dev/shm, a cgroup2 mount, loop devices); under CI=true it fails instead.
// Skips that are no matter of the environment (an amd64-only system call)
// call t.Skip directly.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if CI() {
		t.Fatalf("%s; CI=true forbids skipping it", reason)
	}
	t.Skip(reason)
}

// Skipf is Skip with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	Skip(t, fmt.Sprintf(format, args...))
}

// pollEvery is how often Eventually and WaitFor look again.
const pollEvery = 5 * time.Millisecond

// WaitFor calls cond until it returns true or timeout passes, and reports
// whether it did. It is safe outside the test's goroutine.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// Eventually waits, up to timeout, for cond to hold, and fails the test
// saying what it waited for when it does not: a condition in place of a
// sleep that guesses how long something takes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !WaitFor(timeout, cond) {
		t.Fatalf("waited %v for %s", timeout, what)
	}
}
