package session

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
)

// TestWatchEndsImagesWhoseExitWasLost: after events were lost, a live
// image whose process is gone (its exit among the lost) is ended, its
// files let go, instead of held until evicted; one whose process lives,
// or any image while nothing was lost, is left alone.
func TestWatchEndsImagesWhoseExitWasLost(t *testing.T) {
	defer func(q, e time.Duration) { goneQuiet, goneEvery = q, e }(goneQuiet, goneEvery)
	goneQuiet, goneEvery = 20*time.Millisecond, 10*time.Millisecond
	for _, tc := range []struct {
		name        string
		dropped     uint64
		gone        bool
		always      bool // GoneAlways: a filter may have dropped the exit
		wantRunning int
	}{
		{"exit lost, process gone", 3, true, false, 0},
		{"exit lost, process alive", 3, false, false, 1},
		{"nothing lost", 0, true, false, 1},
		{"nothing lost, exit filtered out, process gone", 0, true, true, 0},
		{"nothing lost, filtered, process alive", 0, false, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake(&callLog{})
			src.dropped = tc.dropped
			evs := proc(20, "/a", 2)
			src.push(false, evs[:len(evs)-1]...) // its exit lost
			eng := detect.New(detect.Options{Policy: detect.Bounded(0, 0)})
			s := New(src, eng, &recSink{log: &callLog{}, name: "a"})
			asked := 0
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			opts := WatchOptions{Interval: 20 * time.Millisecond, Top: 5, GoneAlways: tc.always, Gone: func(pid uint32, _ uint64) bool {
				if pid != 20 {
					t.Errorf("asked about pid %d", pid)
				}
				asked++
				return tc.gone
			}}
			if err := Watch(ctx, s, opts); err != nil {
				t.Fatal(err)
			}
			if got := eng.Running(); got != tc.wantRunning {
				t.Errorf("%d processes running after the watch (Gone asked %d times), want %d", got, asked, tc.wantRunning)
			}
			if (tc.dropped > 0 || tc.always) && !tc.gone && asked > 1 {
				t.Errorf("a live process's image asked about %d times within the recheck period", asked)
			}
		})
	}
}

// TestProcessGone: /proc says this process lives and a pid past pid_max
// is gone, when /proc is the kernel's pids'; and that the process holding
// a pid is not one that started earlier with it (a pid reused after its
// exit was lost or filtered out: that one is gone).
func TestProcessGone(t *testing.T) {
	gone := ProcessGone()
	if gone == nil {
		t.Skip("once's /proc is not the initial pid namespace's")
	}
	if !initialTimeNs("/proc/self/ns/time") {
		t.Skip("once is in a time namespace of its own")
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	ticks, ok := statStartTicks(b)
	if !ok {
		t.Fatalf("no start time in %q", b)
	}
	// This process's start, CLOCK_MONOTONIC ns, within its tick.
	self := ticks*uint64(time.Second/userHz) - bootOffset() + uint64(time.Second/userHz)/2
	pid := uint32(os.Getpid())
	if gone(pid, self) {
		t.Error("this process is gone")
	}
	if gone(pid, 0) {
		t.Error("this process, its start unknown, is gone")
	}
	if !gone(pid, self-uint64(time.Second)) {
		t.Error("a process that started a second before this one, with its pid, lives: the pid was reused")
	}
	if !gone(1<<30, self) {
		t.Error("pid 2^30 lives")
	}
	if hostPids("/nonexistent/status", "/proc/self/ns/pid") {
		t.Error("hostPids without a status file")
	}
}

// TestStartedAfter: a start time from /proc (clock ticks, CLOCK_BOOTTIME,
// rounded down) is after a process's (CLOCK_MONOTONIC ns) only when it is
// past the tick that process started in.
func TestStartedAfter(t *testing.T) {
	const tick = uint64(time.Second / userHz)
	for _, tc := range []struct {
		name              string
		ticks, start, off uint64
		want              bool
	}{
		{"the same process, mid-tick", 500, 500*tick + tick/2, 0, false},
		{"the same process, at its tick", 500, 500 * tick, 0, false},
		{"the same process, suspended since", 500 + 3000, 500*tick + 1, 3000 * tick, false},
		{"another, a tick later", 501, 500*tick + 1, 0, true},
		{"another, a second later", 600, 500 * tick, 0, true},
		{"another, after a suspend", 3600, 500 * tick, 3000 * tick, true},
		{"an older process: not after", 400, 500 * tick, 0, false},
	} {
		if got := startedAfter(tc.ticks, tc.start, tc.off); got != tc.want {
			t.Errorf("%s: startedAfter(%d, %d, %d) = %v, want %v", tc.name, tc.ticks, tc.start, tc.off, got, tc.want)
		}
	}
}

// TestStatStartTicks: field 22 of /proc/PID/stat, after a comm with
// spaces and parentheses.
func TestStatStartTicks(t *testing.T) {
	line := "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10 18446744073709551615\n"
	if v, ok := statStartTicks([]byte(line)); !ok || v != 123456 {
		t.Errorf("statStartTicks = %d, %v; want 123456, true", v, ok)
	}
	for _, bad := range []string{"", "42 (a", "42 (a) S 1 2", "42 (a) S 1 42 42 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0 x 1"} {
		if _, ok := statStartTicks([]byte(bad)); ok {
			t.Errorf("statStartTicks(%q) ok", bad)
		}
	}
}

// TestHostPids: a /proc mounted in a pid namespace of its own (unshare -p
// --mount-proc) lists one pid in NSpid, as the initial namespace's does:
// only the namespace's inode tells them apart.
func TestHostPids(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "status")
	if err := os.WriteFile(one, []byte("Name:\tsh\nNSpid:\t3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "status2")
	if err := os.WriteFile(two, []byte("Name:\tsh\nNSpid:\t27924\t3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if hostPids(one, one) {
		t.Error("one pid in NSpid, another namespace (its ns file's inode not the initial one's): taken for the initial namespace's")
	}
	if hostPids(two, "/proc/self/ns/pid") {
		t.Error("two pids in NSpid: taken for the initial namespace's")
	}
	var st syscall.Stat_t
	if syscall.Stat("/proc/self/ns/pid", &st) == nil && st.Ino == procPidInitIno && !hostPids(one, "/proc/self/ns/pid") {
		t.Error("one pid in NSpid, the initial namespace: not taken for it")
	}
}
