package collector

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestNothingSentAfterDetach: once Detach returns, a traced process that
// goes on exec-ing makes the kernel send nothing more, although the
// syscall tracepoints' perf events are still being closed: the records in
// the ring are then all there is, and every one of them is read.
func TestNothingSentAfterDetach(t *testing.T) {
	testprog.RequireRoot(t)
	tr, err := Open(Options{Tracked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.FollowChildren(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "while :; do /bin/true; done")
	err = cmd.Start()
	tr.Unfollow(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var ev trace.Event
	var c trace.Counters
	execs := 0
	tr.SetDeadline(time.Now().Add(5 * time.Second))
	for execs < 20 && tr.Next(&ev, &c) == nil {
		if ev.Kind == trace.EventExec {
			execs++
		}
	}
	if execs < 20 {
		t.Fatalf("%d execs of the loop seen in 5 s", execs)
	}
	if err := tr.Detach(); err != nil {
		t.Fatal(err)
	}
	var at, later trace.Counters
	if err := tr.KernelCounters(&at); err != nil {
		t.Fatal(err)
	}
	// The loop runs on meanwhile: hundreds of execs.
	time.Sleep(300 * time.Millisecond)
	if err := tr.KernelCounters(&later); err != nil {
		t.Fatal(err)
	}
	if later.EventsSent != at.EventsSent {
		t.Errorf("the kernel sent %d records after Detach returned", later.EventsSent-at.EventsSent)
	}
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	tr.SetDeadline(time.Time{})
	for tr.Next(&ev, &c) == nil {
	}
	if c.EventsReceived != later.EventsSent {
		t.Errorf("read %d records of the %d sent", c.EventsReceived, later.EventsSent)
	}
	if err := tr.Released(); err != nil {
		t.Errorf("closing the perf events: %v", err)
	}
}
