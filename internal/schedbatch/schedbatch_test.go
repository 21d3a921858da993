package schedbatch

import (
	"os/exec"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProcess: every thread is batch afterwards, threads made later too,
// and a child forked later inherits it (why once sets it only after
// starting the command it traces).
func TestProcess(t *testing.T) {
	t.Cleanup(func() {
		if err := setAll(unix.SCHED_NORMAL); err != nil {
			t.Errorf("back to normal: %v", err)
		}
	})
	if err := Process(); err != nil {
		t.Fatal(err)
	}
	// New threads: goroutines locked to threads of their own.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			runtime.LockOSThread()
			<-release
		})
	}
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		p, err := policy(tid)
		if err != nil {
			continue // exited since
		}
		if p != unix.SCHED_BATCH {
			t.Errorf("thread %d: policy %d, want SCHED_BATCH (%d)", tid, p, unix.SCHED_BATCH)
		}
	}
	close(release)
	wg.Wait()
	child := exec.Command("sleep", "10")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	if p, err := policy(child.Process.Pid); err != nil || p != unix.SCHED_BATCH {
		t.Errorf("a child forked afterwards: policy %d (%v), want SCHED_BATCH, inherited", p, err)
	}
}
