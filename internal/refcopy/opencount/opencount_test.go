package opencount

import (
	"testing"

	"github.com/oncetool/once/internal/strace"
)

// TestResolve checks the attribution of opens to paths: absolute and
// cwd-relative names, names relative to a descriptor from an earlier open
// (per process, and after the number is reused), and descriptors the trace
// does not explain.
func TestResolve(t *testing.T) {
	open := func(tgid, dirfd int, path string, ret int64, errno string) strace.Call {
		return strace.Call{Syscall: "openat", Pid: tgid, Tgid: tgid, Dirfd: dirfd, Path: path, HasPath: true, Ret: ret, Errno: errno}
	}
	const cwd = strace.AtFDCWD
	calls := []strace.Call{
		open(1, cwd, "/src/dir", 3, ""),
		open(1, 3, "f", 4, ""),
		open(1, 3, "missing", -1, "ENOENT"),
		open(1, cwd, "rel/x", 5, ""),
		open(2, 3, "f", 6, ""), // another process: its fd 3 is unknown
		open(1, cwd, "/other", 3, ""),
		open(1, 3, "f", 7, ""), // fd 3 now names /other
		{Syscall: "execve", Pid: 1, Tgid: 1, Path: "/bin/x", HasPath: true},
	}
	tr := resolve(calls, "/work")
	want := []string{"/src/dir", "/src/dir/f", "/src/dir/missing", "/work/rel/x", "?fd3/f", "/other", "/other/f"}
	if len(tr.Opens) != len(want) {
		t.Fatalf("%d opens, want %d:\n%s", len(tr.Opens), len(want), tr)
	}
	for i, w := range want {
		if tr.Opens[i].Path != w {
			t.Errorf("open %d: path %q, want %q", i, tr.Opens[i].Path, w)
		}
	}
	if p := tr.Expect("/src/dir/f", 1); p != "" {
		t.Error(p)
	}
	if p := tr.Expect("/src/dir/missing", 1); p == "" {
		t.Error("Expect accepted a failed open as an open")
	}
	if n := len(tr.Under("/src/dir")); n != 3 {
		t.Errorf("Under(/src/dir) = %d opens, want 3", n)
	}
}
