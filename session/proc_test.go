package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProcComm(t *testing.T) {
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		pid  uint32
		want string
	}{
		{"self", uint32(os.Getpid()), strings.TrimSuffix(string(self), "\n")},
		{"gone", 1<<22 + 1, ""}, // above pid_max's limit: never a process
	} {
		if got := ProcComm(tc.pid); got != tc.want {
			t.Errorf("%s: ProcComm(%d) = %q, want %q", tc.name, tc.pid, got, tc.want)
		}
	}
}

// TestParentComms: a parent's comm is read once per window, again after
// it; the memory stays within its bound.
func TestParentComms(t *testing.T) {
	reads := map[uint32]int{}
	now := time.Unix(1000, 0)
	p := &ParentComms{read: func(pid uint32) string { reads[pid]++; return "sh" }, clock: func() time.Time { return now },
		m: map[uint32]knownComm{}}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		pid     uint32
		reads   int // of pid, so far
	}{
		{"first child", 0, 100, 1},
		{"its sibling, at once", 10 * time.Millisecond, 100, 1},
		{"another parent", 0, 200, 1},
		{"a sibling after the window", commWindow, 100, 2},
	} {
		now = now.Add(tc.advance)
		if got := p.Comm(tc.pid); got != "sh" || reads[tc.pid] != tc.reads {
			t.Errorf("%s: Comm(%d) = %q after %d reads, want sh after %d", tc.name, tc.pid, got, reads[tc.pid], tc.reads)
		}
	}
	for pid := range uint32(3 * maxComms) {
		p.Comm(1000 + pid)
	}
	if len(p.m) > maxComms {
		t.Errorf("%d parents remembered, want at most %d", len(p.m), maxComms)
	}
}

// TestProcHostPids: a procfs gives the kernel's pids where once's own
// entry (self) is the pid the kernel knows it by; one mounted in a pid
// namespace (unshare -p --mount-proc) names it by its pid there. Without
// the kernel's pid, only hostPids can say.
func TestProcHostPids(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("4321", filepath.Join(dir, "self")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		proc string
		self uint32
		want bool
	}{
		{dir, 4321, true},
		{dir, 1, false},
		{filepath.Join(dir, "none"), 4321, false},
		{dir, 0, false}, // no status file: not the initial namespace's
	} {
		if got := procHostPids(tc.proc, tc.self); got != tc.want {
			t.Errorf("procHostPids(%s, %d) = %v, want %v", tc.proc, tc.self, got, tc.want)
		}
	}
	if got := procHostPids("/proc", uint32(os.Getpid())); hostPids("/proc/self/status", "/proc/self/ns/pid") && !got {
		t.Error("this process's /proc, the initial namespace's: not taken for it")
	}
}
