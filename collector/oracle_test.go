package collector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// TestStraceOracle runs real programs under strace -f, and runs that
// strace under once: one run, two tracers. Every open and exec strace saw
// must be exactly what once saw, call for call (process, syscall, path as
// passed, result), and nothing more. strace is the ground truth.
func TestStraceOracle(t *testing.T) {
	testprog.RequireRoot(t)
	stracePath := strace.Require(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		src := filepath.Join(dir, "src")
		if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"a", "b", "sub/c"} {
			if err := os.WriteFile(filepath.Join(src, name), []byte(strings.Repeat("x", 4096*(i+1))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	shm := func(t *testing.T) string {
		d, err := os.MkdirTemp("/dev/shm", "once-oracle-")
		if err != nil {
			testprog.Skipf(t, "no /dev/shm: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	dirs := pathDirs(t, 7, map[string]string{"oncetarget": ""})
	tests := []struct {
		name string
		argv func(t *testing.T, dir string) []string
	}{
		{"cp file", func(t *testing.T, d string) []string { return []string{"cp", d + "/src/a", d + "/dst"} }},
		{"cp -r", func(t *testing.T, d string) []string { return []string{"cp", "-r", d + "/src", d + "/dst"} }},
		{"mv same filesystem", func(t *testing.T, d string) []string { return []string{"mv", d + "/src", d + "/moved"} }},
		{"mv file across devices", func(t *testing.T, d string) []string {
			return []string{"mv", d + "/src/a", shm(t) + "/a"}
		}},
		{"mv dir across devices", func(t *testing.T, d string) []string {
			return []string{"mv", d + "/src", shm(t) + "/src"}
		}},
		{"env with a 7-entry PATH", func(t *testing.T, d string) []string {
			return []string{"env", "PATH=" + strings.Join(dirs, ":"), "oncetarget"}
		}},
		{"python3 subprocess", func(t *testing.T, d string) []string {
			return []string{python, "-c", `import subprocess; subprocess.run(["true"], check=True)`}
		}},
		// A thread that is not the leader execs: the kernel gives it
		// the leader's pid, and its calls are the process's.
		{"python3 exec from a thread", func(t *testing.T, d string) []string {
			return []string{python, "-c", "import os, threading\n" +
				"t = threading.Thread(target=lambda: os.execv('/bin/true', ['true']))\nt.start(); t.join()"}
		}},
		// Opens from several threads of one process at once.
		{"node worker threads", func(t *testing.T, d string) []string {
			node := testprog.NeedTool(t, "node")
			js := filepath.Join(d, "w.js")
			mustWrite(t, js, `const {Worker, isMainThread} = require('worker_threads'); const fs = require('fs');
if (isMainThread) { for (let i = 0; i < 2; i++) new Worker(__filename) }
else { for (let i = 0; i < 5; i++) { fs.readFileSync('src/a'); fs.existsSync('nope') } }`)
			return []string{node, js}
		}},
		// The same file through /proc/self/fd and /dev/fd, magic links.
		{"sh reopening a descriptor", func(t *testing.T, d string) []string {
			return []string{"sh", "-c", "exec 3<src/a; cat /proc/self/fd/3 /dev/fd/3 src/a >/dev/null"}
		}},
		// Paths as a chrooted process names them.
		{"busybox in a chroot", func(t *testing.T, d string) []string {
			bb := testprog.NeedTool(t, "busybox")
			data, err := os.ReadFile(bb)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(d, "root", "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(d, "root", "f"), "x")
			if err := os.WriteFile(filepath.Join(d, "root", "bin", "busybox"), data, 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"chroot", filepath.Join(d, "root"), "/bin/busybox", "cat", "/f", "/f"}
		}},
	}
	for _, tc := range tests {
		for _, rings := range ringModes {
			t.Run(tc.name+ringsName(rings), func(t *testing.T) {
				dir := setup(t)
				straceOracle(t, stracePath, dir, tc.argv(t, dir), rings)
			})
		}
	}
}

// straceOracle runs argv in dir under strace -f (at stracePath), traced by
// once with the given rings, and fails t unless once saw exactly the opens
// and execs strace did, with nothing lost. It returns once's result and
// the pids strace saw.
func straceOracle(t *testing.T, stracePath, dir string, argv []string, rings int) (*trace.Result, map[uint32]bool) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace.out")
	cmd := strace.Command(context.Background(), out, argv...)
	cmd.Path = stracePath
	cmd.Dir = dir
	r := traceCmd(t, cmd, collector.Options{Rings: rings})
	if r.ExitCode != 0 {
		t.Fatalf("%q exited %d", argv, r.ExitCode)
	}
	calls, err := strace.ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, pids := straceCalls(calls)
	if len(want) == 0 {
		t.Fatal("strace saw no open or exec: the oracle matched nothing")
	}
	if diff := multisetDiff(want, onceCalls(r, pids)); diff != "" {
		t.Errorf("once and strace -f disagree on %q (- strace only, + once only):\n%s", argv, diff)
	}
	if r.Counters.Lost() != 0 {
		t.Errorf("events lost: %+v", r.Counters)
	}
	return r, pids
}

func callKey(pid uint32, syscall, path, result string) string {
	return fmt.Sprintf("%d %s %s = %s", pid, syscall, report.Escape(path), result)
}

func straceCalls(calls []strace.Call) ([]string, map[uint32]bool) {
	var out []string
	pids := map[uint32]bool{}
	for _, c := range calls {
		if !c.IsOpen() && !c.IsExec() {
			continue
		}
		if c.NoReturn {
			continue
		}
		pids[uint32(c.Tgid)] = true
		res := "ok"
		if c.Failed() {
			res = c.Errno
		}
		path := c.Path
		if c.IsExec() {
			// argv too, for every attempt: the entry's read of it and
			// the exit's, joined in user space, must give strace's.
			path += fmt.Sprintf(" argv=%q", c.Argv)
		}
		out = append(out, callKey(uint32(c.Tgid), c.Syscall, path, res))
	}
	return out, pids
}

func onceCalls(r *trace.Result, pids map[uint32]bool) []string {
	var out []string
	for _, p := range r.Processes {
		if !pids[p.Pid] {
			continue
		}
		for _, group := range [][]*trace.FileOpens{p.Opens, p.PathOpens, p.SpecialOpens} {
			for _, fo := range group {
				for _, c := range fo.Calls {
					out = append(out, callKey(p.Pid, c.Syscall.String(), c.Fname, "ok"))
				}
			}
		}
		for _, fo := range p.FailedOpens {
			for _, c := range fo.Calls {
				out = append(out, callKey(p.Pid, c.Syscall.String(), c.Fname, report.ErrnoName(-c.Ret)))
			}
		}
		for _, e := range p.Execs {
			res := "ok"
			if e.Errno != 0 {
				res = report.ErrnoName(e.Errno)
			}
			out = append(out, callKey(p.Pid, e.Syscall.String(), e.Filename+fmt.Sprintf(" argv=%q", e.Argv), res))
		}
	}
	return out
}

// multisetDiff lists the entries whose counts differ.
func multisetDiff(want, got []string) string {
	n := map[string]int{}
	for _, w := range want {
		n[w]++
	}
	for _, g := range got {
		n[g]--
	}
	var lines []string
	for k, v := range n {
		switch {
		case v > 0:
			lines = append(lines, fmt.Sprintf("- %s (x%d)", k, v))
		case v < 0:
			lines = append(lines, fmt.Sprintf("+ %s (x%d)", k, -v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

var _ = exec.Command
