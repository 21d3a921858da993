package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/oncetool/once/internal/strace"
)

// TestStraceExecCounts checks, with strace as an independent witness and no
// BPF, that each strategy makes exactly the execve calls it claims: the
// PATH-searching ones fail once with ENOENT in every directory before the
// last, per iteration; the others never fail.
func TestStraceExecCounts(t *testing.T) {
	strace.Require(t)
	bin := filepath.Join(t.TempDir(), "reflaunch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	const n, k = 5, 7
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "tree")
			calls := traceExecs(t, bin, "-n", strconv.Itoa(n), "-k", strconv.Itoa(k), "-strategy", s.name, "-keep", root)
			for _, p := range checkExecs(calls, bin, root, n, k, s.failedExecs(k)) {
				t.Error(p)
			}
			if t.Failed() {
				for _, c := range calls {
					t.Logf("line %d: pid %d execve(%q) = %d %s", c.Line, c.Pid, c.Path, c.Ret, c.Errno)
				}
			}
		})
	}
}

// traceExecs runs argv under strace and returns its execve and execveat
// calls in order.
func traceExecs(t *testing.T, argv ...string) []strace.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "trace")
	if output, err := strace.Command(ctx, out, argv...).CombinedOutput(); err != nil {
		t.Fatalf("strace %q: %v\n%s", argv, err, output)
	}
	calls, err := strace.ParseFile(out)
	if err != nil {
		t.Fatalf("parsing the trace: %v", err)
	}
	var execs []strace.Call
	for _, c := range calls {
		if c.IsExec() {
			execs = append(execs, c)
		}
	}
	return execs
}

// checkExecs returns what is wrong with the execve calls of a run of
// reflaunch (bin) with n iterations over PATH root/d1..root/dk, where each
// iteration should fail `failed` times before it succeeds: the first call
// must be reflaunch's own exec; then every iteration must try
// d1..d(failed), in PATH order, each failing with ENOENT, and then exec
// dk/oncetarget successfully. Nothing else may be executed.
func checkExecs(calls []strace.Call, bin, root string, n, k, failed int) []string {
	var problems []string
	if len(calls) == 0 || calls[0].Path != bin || !calls[0].Succeeded() {
		return []string{fmt.Sprintf("the trace does not start with a successful execve of %s", bin)}
	}
	target := func(d int) string { return filepath.Join(root, "d"+strconv.Itoa(d), targetName) }

	var nFailed, nOK int
	rest := calls[1:]
	for i := range n {
		for d := 1; d <= failed; d++ {
			if len(rest) == 0 {
				return append(problems, fmt.Sprintf("iteration %d: trace ends before execve of %s", i+1, target(d)))
			}
			c := rest[0]
			rest = rest[1:]
			if c.Path != target(d) || c.Errno != "ENOENT" {
				problems = append(problems, fmt.Sprintf("iteration %d: execve(%q) = %s, want %s failing with ENOENT", i+1, c.Path, result(c), target(d)))
				continue
			}
			nFailed++
		}
		if len(rest) == 0 {
			return append(problems, fmt.Sprintf("iteration %d: trace ends before execve of %s", i+1, target(k)))
		}
		c := rest[0]
		rest = rest[1:]
		if c.Path != target(k) || !c.Succeeded() {
			problems = append(problems, fmt.Sprintf("iteration %d: execve(%q) = %s, want %s succeeding", i+1, c.Path, result(c), target(k)))
			continue
		}
		nOK++
	}
	for _, c := range rest {
		problems = append(problems, fmt.Sprintf("unexpected execve(%q) = %s after the last iteration", c.Path, result(c)))
	}
	if nFailed != n*failed || nOK != n {
		problems = append(problems, fmt.Sprintf("%d failed and %d successful target execve, want %d and %d", nFailed, nOK, n*failed, n))
	}
	return problems
}

func result(c strace.Call) string {
	switch {
	case c.NoReturn:
		return "?"
	case c.Failed():
		return "-1 " + c.Errno
	}
	return strconv.FormatInt(c.Ret, 10)
}
