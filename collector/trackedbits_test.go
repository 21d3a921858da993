package collector

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// The kernel side asks a bitmap whether a process is followed: the
// command's tree has its bits while it lives, and none is left once it
// has exited (a bit left behind would follow whatever process reuses the
// pid), nor is any entry of the tracked map.
func TestTrackedBitsFollowTheTree(t *testing.T) {
	testprog.RequireRoot(t)
	tr, err := Open(Options{Tracked: true})
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	bit := func(pid int) bool {
		var v uint64
		if err := tr.objs.TrackedBits.Lookup(uint32(pid/64), &v); err != nil {
			t.Fatalf("bitmap word of %d: %v", pid, err)
		}
		return v>>(pid%64)&1 == 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var root int
	var rootBit bool
	// A child and a grandchild; the command lives 200 ms at least.
	cmd := exec.Command("/bin/sh", "-c", "/bin/sh -c 'sleep 0.2'; true")
	res, err := RunForTest(ctx, tr, cmd, time.Second, func(pid int) {
		root, rootBit = pid, bit(pid)
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v (exit %d)", err, res.ExitCode)
	}
	if !rootBit {
		t.Errorf("command %d running without its bit", root)
	}
	var procs int
	for _, p := range res.Processes {
		procs++
		if bit(int(p.Pid)) {
			t.Errorf("pid %d (%s) exited and kept its bit", p.Pid, p.Comm)
		}
	}
	if procs < 2 {
		t.Fatalf("%d processes traced, want the shell and its child", procs)
	}
	var words []uint64
	it := tr.objs.TrackedBits.Iterate()
	var k uint32
	var v uint64
	for it.Next(&k, &v) {
		if v != 0 {
			words = append(words, uint64(k))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(words) != 0 {
		t.Errorf("bitmap words %v still set after the tree exited", words)
	}
	var tk, kind uint32
	for it := tr.objs.Tracked.Iterate(); it.Next(&tk, &kind); {
		t.Errorf("tracked map still has pid %d (kind %d)", tk, kind)
	}
}
