package collector_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestNamespaceOracle: programs whose credentials, root or mount
// namespace change under the trace (runuser, chroot, unshare -m with a
// bind mount, unshare -p --mount-proc, nsenter), under strace -f and once
// in one run. Every open and exec strace saw is once's, call for call,
// and every process's lookups too; a file is its device and inode, not
// its name: the same path naming two files (a bind mount over it) is two
// files, and one file reached by two paths is one, each named as the
// process that opened it sees it.
func TestNamespaceOracle(t *testing.T) {
	testprog.RequireRoot(t)
	stracePath := strace.Require(t)
	testprog.NeedTool(t, "runuser")
	testprog.NeedTool(t, "unshare")
	testprog.NeedTool(t, "nsenter")
	testprog.NeedTool(t, "chroot")
	testprog.NeedTool(t, "mount")
	testprog.NeedTool(t, "gcc")
	// The files: a/f and b/f, two files; a/f is later hidden by a bind
	// mount of b over a.
	setup := func(t *testing.T) string {
		d, err := os.MkdirTemp("", "once-ns-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		// Readable by nobody.
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(d, "a", "f"), "A")
		mustWrite(t, filepath.Join(d, "b", "f"), "B")
		return d
	}
	ident := func(t *testing.T, path string) fileID {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return fileID{st.Dev, st.Ino}
	}
	// opened: the files a process named comm opened (by device and
	// inode), with their opens and paths.
	type opened struct {
		count int
		paths []string
	}
	filesOf := func(r *trace.Result, comm string) []map[fileID]opened {
		var out []map[fileID]opened
		for _, p := range r.Processes {
			if p.Comm != comm {
				continue
			}
			m := map[fileID]opened{}
			for _, fo := range p.Opens {
				m[fileID{fo.Dev, fo.Ino}] = opened{fo.Count, fo.Paths}
			}
			out = append(out, m)
		}
		return out
	}
	dupsOf := func(r *trace.Result, comm string) []string {
		var out []string
		for i := range r.Findings {
			f := &r.Findings[i]
			if f.Comm == comm && f.Kind == trace.KindDuplicateOpen {
				out = append(out, f.Subject()+" x"+strconv.Itoa(f.Amount()))
			}
		}
		slices.Sort(out)
		return out
	}

	t.Run("runuser to nobody", func(t *testing.T) {
		d := setup(t)
		r := nsOracle(t, stracePath, d, "runuser", "-u", "nobody", "--", "sh", "-c",
			"cat a/f a/f >/dev/null; test -e b/f; test -e nosuch; cat nosuch 2>/dev/null; true")
		var uids []uint32
		for _, p := range r.Processes {
			if p.Comm == "cat" {
				uids = append(uids, p.UID)
			}
		}
		if want := []uint32{65534, 65534}; !slices.Equal(uids, want) {
			t.Errorf("cat ran as %v, want %v", uids, want)
		}
		if got, want := dupsOf(r, "cat"), []string{filepath.Join(d, "a/f") + " x2"}; !slices.Equal(got, want) {
			t.Errorf("cat's duplicates %q, want %q", got, want)
		}
	})

	// The second cat opens a/f twice and b/f once, one file: b/f, on
	// a/f's path too. The first cat's a/f is another file.
	t.Run("unshare -m and a bind mount", func(t *testing.T) {
		d := setup(t)
		a, b := ident(t, filepath.Join(d, "a/f")), ident(t, filepath.Join(d, "b/f"))
		r := nsOracle(t, stracePath, d, "unshare", "-m", "--propagation", "private", "sh", "-c",
			"cat a/f >/dev/null; mount --bind b a; cat a/f a/f b/f >/dev/null")
		cats := filesOf(r, "cat")
		if len(cats) != 2 {
			t.Fatalf("%d cat processes, want 2", len(cats))
		}
		if got := cats[0][a]; got.count != 1 || !slices.Equal(got.paths, []string{filepath.Join(d, "a/f")}) {
			t.Errorf("first cat: a/f %+v, want 1 open at %s", got, filepath.Join(d, "a/f"))
		}
		if got := cats[1][b]; got.count != 3 || !slices.Equal(got.paths, []string{filepath.Join(d, "a/f"), filepath.Join(d, "b/f")}) {
			t.Errorf("second cat: b/f %+v, want 3 opens at a/f, b/f", got)
		}
		if _, ok := cats[1][a]; ok {
			t.Errorf("second cat opened the hidden a/f: %+v", cats[1])
		}
		if got, want := dupsOf(r, "cat"), []string{filepath.Join(d, "a/f") + " x3"}; !slices.Equal(got, want) {
			t.Errorf("cat's duplicates %q, want %q", got, want)
		}
	})

	// One process, one path, two files: it opens a/f, enters a mount
	// namespace of its own, mounts b over a and opens a/f again.
	t.Run("one image, a/f before and after a bind mount over a", func(t *testing.T) {
		d := setup(t)
		bin := buildNSProg(t, d, `#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>
int main(void) {
	close(open("a/f", O_RDONLY));
	if (unshare(CLONE_NEWNS) || mount(0, "/", 0, MS_REC | MS_PRIVATE, 0) || mount("b", "a", 0, MS_BIND, 0))
		return 1;
	close(open("a/f", O_RDONLY));
	return 0;
}
`)
		a, b := ident(t, filepath.Join(d, "a/f")), ident(t, filepath.Join(d, "b/f"))
		r := nsOracle(t, stracePath, d, bin)
		ps := filesOf(r, "nsprog")
		if len(ps) != 1 {
			t.Fatalf("%d nsprog processes, want 1", len(ps))
		}
		if ps[0][a].count != 1 || ps[0][b].count != 1 {
			t.Errorf("nsprog opened a/f %+v and b/f %+v, want once each", ps[0][a], ps[0][b])
		}
		if got := dupsOf(r, "nsprog"); len(got) != 0 {
			t.Errorf("nsprog's duplicates %q, want none", got)
		}
	})

	t.Run("unshare -p -f --mount-proc", func(t *testing.T) {
		d := setup(t)
		r := nsOracle(t, stracePath, d, "unshare", "-p", "-f", "--mount-proc", "sh", "-c",
			"cat a/f a/f /proc/self/stat >/dev/null; cat /proc/1/cmdline >/dev/null")
		if got, want := dupsOf(r, "cat"), []string{filepath.Join(d, "a/f") + " x2"}; !slices.Equal(got, want) {
			t.Errorf("cat's duplicates %q, want %q", got, want)
		}
	})

	// A static binary in a root of its own: its paths are the root's.
	t.Run("chroot, a static binary", func(t *testing.T) {
		d := setup(t)
		bin := buildNSProg(t, d, `#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
	struct stat st;
	for (int i = 0; i < 3; i++) {
		close(open("/f", O_RDONLY));
		stat("/f", &st);
	}
	close(open("/nosuch", O_RDONLY));
	close(open("f", O_RDONLY));
	return 0;
}
`, "-static")
		root := filepath.Join(d, "root")
		mustWrite(t, filepath.Join(root, "f"), "R")
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "nsprog"), data, 0o755); err != nil {
			t.Fatal(err)
		}
		f := ident(t, filepath.Join(root, "f"))
		r := nsOracle(t, stracePath, d, "chroot", root, "/nsprog")
		ps := filesOf(r, "nsprog")
		if len(ps) != 1 {
			t.Fatalf("%d nsprog processes, want 1", len(ps))
		}
		if got := ps[0][f]; got.count != 4 || !slices.Equal(got.paths, []string{"/f"}) {
			t.Errorf("nsprog opened /f %+v, want 4 opens at /f", got)
		}
		if got, want := dupsOf(r, "nsprog"), []string{"/f x4"}; !slices.Equal(got, want) {
			t.Errorf("nsprog's duplicates %q, want %q", got, want)
		}
		for _, p := range r.Processes {
			if p.Comm == "nsprog" && p.Exe != "/nsprog" {
				t.Errorf("nsprog's executable %q, want /nsprog", p.Exe)
			}
		}
	})

	// nsenter into a mount namespace where b is mounted over a: cat's
	// a/f there is b/f.
	t.Run("nsenter -m", func(t *testing.T) {
		d := setup(t)
		ready := filepath.Join(d, "ready")
		holder := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
			"mount --bind b a && touch ready && exec sleep 600")
		holder.Dir = d
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
		testprog.Eventually(t, 10*time.Second, "the bind mount", func() bool {
			_, err := os.Stat(ready)
			return err == nil
		})
		a, b := ident(t, filepath.Join(d, "a/f")), ident(t, filepath.Join(d, "b/f"))
		r := nsOracle(t, stracePath, d, "nsenter", "-t", strconv.Itoa(holder.Process.Pid), "-m",
			"cat", filepath.Join(d, "a/f"), filepath.Join(d, "a/f"), filepath.Join(d, "b/f"))
		cats := filesOf(r, "cat")
		if len(cats) != 1 {
			t.Fatalf("%d cat processes, want 1", len(cats))
		}
		if got := cats[0][b]; got.count != 3 {
			t.Errorf("cat: b/f %+v, want 3 opens", got)
		}
		if _, ok := cats[0][a]; ok {
			t.Errorf("cat opened the host's a/f: %+v", cats[0])
		}
	})
}

// nsOracle is straceOracle of argv in dir, with one ring, and it holds each
// process's lookups (all and failed) to strace's counts too.
func nsOracle(t *testing.T, stracePath, dir string, argv ...string) *trace.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace.out")
	cmd := strace.Command(context.Background(), out, argv...)
	cmd.Path = stracePath
	cmd.Dir = dir
	r := traceCmd(t, cmd, collector.Options{Rings: 1})
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
	type counts struct{ lookups, failed int }
	straceN, onceN := map[uint32]counts{}, map[uint32]counts{}
	for _, c := range calls {
		if c.IsLookup() && !c.NoReturn {
			n := straceN[uint32(c.Tgid)]
			n.lookups++
			if c.Failed() {
				n.failed++
			}
			straceN[uint32(c.Tgid)] = n
		}
	}
	for _, p := range r.Processes {
		if pids[p.Pid] || straceN[p.Pid] != (counts{}) {
			n := onceN[p.Pid]
			n.lookups += p.Totals.Lookups
			n.failed += p.Totals.FailedLookups
			onceN[p.Pid] = n
		}
	}
	for pid, s := range straceN {
		if o := onceN[pid]; o != s {
			t.Errorf("pid %d: once counted %+v lookups, strace %+v", pid, o, s)
		}
	}
	for pid, o := range onceN {
		if _, ok := straceN[pid]; !ok && o != (counts{}) {
			t.Errorf("pid %d: once counted %+v lookups, strace none", pid, o)
		}
	}
	return r
}

// buildNSProg compiles src into dir/nsprog with gcc and flags.
func buildNSProg(t *testing.T, dir, src string, flags ...string) string {
	t.Helper()
	c := filepath.Join(t.TempDir(), "nsprog.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "nsprog")
	cmd := exec.CommandContext(context.Background(), "gcc", append(append([]string{"-O1", "-o", out}, flags...), c)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, strings.TrimSpace(string(b)))
	}
	return out
}
