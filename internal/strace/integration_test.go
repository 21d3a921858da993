package strace_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
)

// trace runs argv in dir under strace with strace.Args and parses the result.
// The traced command must succeed.
func trace(t *testing.T, dir string, argv ...string) []strace.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "trace")
	cmd := strace.Command(ctx, out, argv...)
	cmd.Dir = dir
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace %q: %v\n%s", argv, err, output)
	}
	calls, err := strace.ParseFile(out)
	if err != nil {
		raw, _ := os.ReadFile(out)
		t.Fatalf("parsing trace of %q: %v\n%s", argv, err, raw)
	}
	if len(calls) == 0 {
		t.Fatalf("trace of %q has no calls", argv)
	}
	return calls
}

func execCalls(calls []strace.Call) []strace.Call {
	var out []strace.Call
	for _, c := range calls {
		if c.IsExec() {
			out = append(out, c)
		}
	}
	return out
}

func TestTraceEnvPathProbes(t *testing.T) {
	strace.Require(t) // before any other setup, so CI fails rather than skips
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("no true(1): %v", err)
	}
	binDir := filepath.Dir(truePath)
	calls := trace(t, t.TempDir(), "env", "PATH=/x1:/x2:"+binDir, "true")

	var failed, succeeded []string
	for _, c := range execCalls(calls)[1:] { // [0] is strace's exec of env
		switch {
		case c.Errno == "ENOENT":
			failed = append(failed, c.Path)
		case c.Succeeded():
			succeeded = append(succeeded, c.Path)
		default:
			t.Errorf("unexpected exec %+v", c)
		}
	}
	if want := []string{"/x1/true", "/x2/true"}; !slices.Equal(failed, want) {
		t.Errorf("failed execve = %q, want %q", failed, want)
	}
	if want := []string{filepath.Join(binDir, "true")}; !slices.Equal(succeeded, want) {
		t.Errorf("successful execve = %q, want %q", succeeded, want)
	}
}

// TestTraceOpener checks the opener helper against strace: each action must
// produce exactly the expected system call on the target files, in the
// expected thread or process. This validates both the helper and Parse.
func TestTraceOpener(t *testing.T) {
	strace.Require(t) // before any other setup, so CI fails rather than skips
	if runtime.GOARCH != "amd64" {
		t.Skip("open(2) and creat(2) exist only on amd64")
	}
	opener := testprog.Build(t, testprog.Opener)
	exitonly := testprog.Build(t, testprog.Exitonly)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	odd := "o\", \")\n\x1b"
	if err := os.WriteFile(filepath.Join(dir, odd), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	calls := trace(t, dir, opener,
		"open:f", "openat:f", "openat2:f", "creat:new", "opath:f", "dirfd:.:f",
		"fail:missing", "repeat:3:openat:f", "threads:4:openat:f", "openat:"+odd,
		"child:openat:f", "execveat-empty:"+exitonly)
	root := calls[0].Pid

	type key struct {
		syscall, path string
		dirfdRelative bool
	}
	count := map[key]int{}
	threads := map[int]bool{}
	var child, execveat []strace.Call
	for _, c := range calls {
		switch c.Path {
		case "f", "new", "missing", ".", odd:
		case "/proc/self/exe":
			child = append(child, c)
			continue
		case "":
			if c.Syscall == "execveat" {
				execveat = append(execveat, c)
			}
			continue
		default:
			continue
		}
		count[key{c.Syscall, c.Path, c.Dirfd != strace.AtFDCWD}]++
		if c.Tgid != root && c.Path == "f" {
			// Only the child: action runs outside the main process.
			child = append(child, c)
		} else if c.Pid != root {
			threads[c.Pid] = true
		}
		if c.Path != "missing" && !c.Succeeded() {
			t.Errorf("%s %q failed: %+v", c.Syscall, c.Path, c)
		}
	}
	want := map[key]int{
		{"open", "f", false}:         1,
		{"openat", "f", false}:       1 + 1 + 3 + 4 + 1, // openat, opath, repeat, threads, child
		{"openat", "f", true}:        1,                 // dirfd:.:f
		{"openat", ".", false}:       1,
		{"openat2", "f", false}:      1,
		{"creat", "new", false}:      1,
		{"openat", "missing", false}: 1,
		{"openat", odd, false}:       1,
	}
	if len(count) != len(want) {
		t.Errorf("opens of target files = %v\nwant %v", count, want)
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%+v: %d calls, want %d", k, count[k], n)
		}
	}
	if len(threads) != 4 {
		t.Errorf("threads:4 used threads %v; want 4 distinct non-leader tids", threads)
	}
	if len(child) != 2 || child[0].Tgid == root || child[1].Tgid != child[0].Tgid {
		t.Errorf("child: calls %+v; want the exec and one open in one new process", child)
	}
	if len(execveat) != 1 || !execveat[0].Succeeded() || execveat[0].Pid != root {
		t.Errorf("execveat = %+v; want one successful call by the main thread", execveat)
	}
}

func TestTraceThreadExec(t *testing.T) {
	strace.Require(t) // before any other setup, so CI fails rather than skips
	opener := testprog.Build(t, testprog.Opener)
	exitonly := testprog.Build(t, testprog.Exitonly)
	calls := trace(t, t.TempDir(), opener, "threads:1:exec:"+exitonly)
	root := calls[0].Pid
	ex := execCalls(calls)
	if len(ex) != 2 {
		t.Fatalf("exec calls = %+v; want opener's and exitonly's", ex)
	}
	if c := ex[1]; c.Path != exitonly || !c.Succeeded() || c.Pid == root || c.Tgid != root {
		t.Errorf("exec from a thread = %+v; want success by a non-leader thread of %d", c, root)
	}
}

func TestTraceSpawnpFork(t *testing.T) {
	strace.Require(t) // before any other setup, so CI fails rather than skips
	spawnp := testprog.Build(t, testprog.Spawnp)
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("no true(1): %v", err)
	}
	calls := trace(t, t.TempDir(), "env", "PATH=/x1:/x2:"+filepath.Dir(truePath), spawnp, "-fork", "true")
	root := calls[0].Pid
	var probes []strace.Call
	for _, c := range execCalls(calls) {
		if filepath.Base(c.Path) == "true" {
			probes = append(probes, c)
		}
	}
	if len(probes) != 3 || probes[0].Errno != "ENOENT" || probes[1].Errno != "ENOENT" || !probes[2].Succeeded() {
		t.Fatalf("PATH probes = %+v; want 2 ENOENT then success", probes)
	}
	for _, c := range probes {
		// env execs spawnp in place (root), spawnp forks, the fork
		// spawns: the probes come from a grandchild process.
		if c.Tgid == root || c.Pid != probes[0].Pid || c.Tgid != c.Pid {
			t.Errorf("probe %q in pid %d tgid %d; want one process other than %d", c.Path, c.Pid, c.Tgid, root)
		}
	}
}
