package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
	"golang.org/x/sys/unix"
)

// restBusySyscalls are syscall tracepoints neither once nor these tests
// use: closing the last perf event of each makes the kernel wait for its
// grace periods under the lock a release holds.
var restBusySyscalls = []string{"getppid", "getpgrp", "sched_yield", "umask", "sync", "getuid", "getgid", "geteuid"}

// TestRestProbe: with nothing let go of, the probe settles after its
// quiet stretch; while the kernel lets go of tracepoints one after
// another (here closed by a goroutine, as the kernel's worker does after
// a once exits), it waits until the last is done.
func TestRestProbe(t *testing.T) {
	testprog.RequireRoot(t)
	p, err := newRestProbe(tracefsDir())
	if err != nil {
		testprog.Skip(t, "no tracefs to probe with: "+err.Error())
	}
	defer p.close()

	waited, settled := p.wait()
	if !settled || waited < restQuiet || waited > restQuiet+time.Second {
		t.Fatalf("at rest: waited %v, settled %v; want a little over %v", waited, settled, restQuiet)
	}

	var fds []int
	for _, name := range restBusySyscalls {
		b, err := os.ReadFile(filepath.Join(tracefsDir(), "events/syscalls/sys_enter_"+name+"/id"))
		if err != nil {
			t.Fatal(err)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := openTracepointEvent(id)
		if err != nil {
			t.Fatalf("sys_enter_%s: %v", name, err)
		}
		fds = append(fds, fd)
	}
	released := make(chan time.Time, 1)
	go func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
		released <- time.Now()
	}()
	// The first close has begun its wait (a grace period is far longer).
	time.Sleep(5 * time.Millisecond)
	start := time.Now()
	waited, settled = p.wait()
	done := <-released
	if !settled {
		t.Fatalf("during the release: not settled after %v", waited)
	}
	if end := start.Add(waited); end.Before(done.Add(restQuiet)) {
		t.Errorf("settled %v after the probe began, %v before the release ended and its quiet stretch", waited, done.Add(restQuiet).Sub(end))
	}
	t.Logf("release of %d tracepoints took %v; the probe waited %v", len(fds), done.Sub(start), waited)
}

// TestWarmUntraced: an untraced run gets one untimed run of its workload
// before it where the machine is cold for it (after a rest, or after a
// run of another workload), and a traced run never does.
func TestWarmUntraced(t *testing.T) {
	wrap := &tracer{Key: "once-run", mode: modeWrap}
	system := &tracer{Key: "once-watch", mode: modeSystem}
	b := &bench{res: &results{}}
	for i, step := range []struct {
		t      *tracer
		wl     string
		rested bool
		warm   bool
	}{
		{none, w2, false, true},    // the first run of all
		{none, w2, false, false},   // right after one of its own
		{wrap, w2, false, false},   // traced: never
		{none, w2, true, true},     // after the rest its tracer's exit took
		{wrap, w2, false, false},   //
		{none, w1, false, true},    // after another workload
		{system, w1, false, false}, // traced: never
		{system, w2, false, false}, // traced, after another workload: never
		{none, w2, false, false},   // after a traced run of its own
	} {
		warmed := false
		b.warmUntraced(step.t, step.wl, step.rested, func() { warmed = true })
		if warmed != step.warm {
			t.Errorf("step %d (%s %s, rested %v): warmed %v, want %v", i, step.t.Key, step.wl, step.rested, warmed, step.warm)
		}
	}
	if b.res.WarmUps != 3 {
		t.Errorf("%d warm-ups counted, want 3", b.res.WarmUps)
	}
}
