package collector

import (
	"os"
	"os/exec"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"

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

// TestDetachHandsPerfEventsOver: once Detach returns, the process holds
// none of the syscall tracepoints' perf events, without waiting for
// Released: they went to the kernel to close (releasePerfEvents), which
// takes a grace period per tracepoint, so that neither the report nor
// once's exit waits for them. Closed by once itself, most of them would
// still be open here. The array that took them is gone too.
func TestDetachHandsPerfEventsOver(t *testing.T) {
	testprog.RequireRoot(t)
	AllReleased()
	before := testprog.KernelFDs(t)
	tr, err := Open(Options{Tracked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	attached := testprog.KernelFDs(t)["anon_inode:[perf_event]"] - before["anon_inode:[perf_event]"]
	if attached < 20 {
		t.Fatalf("%d perf events held while attached, want one per syscall tracepoint", attached)
	}
	if err := tr.Detach(); err != nil {
		t.Fatal(err)
	}
	if held := testprog.KernelFDs(t)["anon_inode:[perf_event]"] - before["anon_inode:[perf_event]"]; held != 0 {
		t.Errorf("%d of the %d perf events still held by once after Detach", held, attached)
	}
	for id := ebpf.MapID(0); ; {
		next, err := ebpf.MapGetNextID(id)
		if err != nil {
			break
		}
		id = next
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue
		}
		info, err := m.Info()
		m.Close()
		if err == nil && info.Name == perfArrayName {
			t.Errorf("map %d (%s) still in the kernel after Detach", id, info.Name)
		}
	}
	if err := tr.Released(); err != nil {
		t.Error(err)
	}
}

// TestPerfArrayUpdateLayout: the update's fields where union bpf_attr has
// them (map_fd, key, value, flags at 0, 8, 16, 24).
func TestPerfArrayUpdateLayout(t *testing.T) {
	var a perfArrayUpdate
	if unsafe.Sizeof(a) != 32 || unsafe.Offsetof(a.key) != 8 || unsafe.Offsetof(a.value) != 16 || unsafe.Offsetof(a.flags) != 24 {
		t.Errorf("size %d, key at %d, value at %d, flags at %d", unsafe.Sizeof(a), unsafe.Offsetof(a.key), unsafe.Offsetof(a.value), unsafe.Offsetof(a.flags))
	}
}
