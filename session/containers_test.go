package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/container"
	"github.com/oncetool/once/trace"
)

// fakeCgroupFilter is the kernel's filter by cgroup id: every cgroup
// pending until accept decides it.
type fakeCgroupFilter struct{ selected, dropped map[uint64]bool }

func (f *fakeCgroupFilter) CgroupPending(id uint64) bool { return !f.selected[id] && !f.dropped[id] }
func (f *fakeCgroupFilter) SelectCgroup(id uint64) error { f.selected[id] = true; return nil }
func (f *fakeCgroupFilter) DropCgroup(id uint64) error   { f.dropped[id] = true; return nil }

// TestAcceptPlainRunc: runc run by hand puts its container in the cgroup
// /ID, which only runc's state.json tells from any other cgroup, and
// gives it no name. Selected by that id, it is selected as soon as its
// state names it, not after nameWait with its first events dropped; a
// first event before the state is written is held, not taken for a
// cgroup of no container and dropped for good, and its state is looked
// for again within milliseconds, not StateRetryInterval. A cgroup that never
// becomes a selected container's is dropped after nameWait, its events
// not counted as a container's.
func TestAcceptPlainRunc(t *testing.T) {
	root := t.TempDir()
	cg2 := filepath.Join(root, "sys/fs/cgroup")
	write := func(rel, s string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cgroup := func(name string) uint64 {
		t.Helper()
		p := filepath.Join(cg2, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	state := func(id string, pid int) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"id": id, "init_process_pid": pid,
			"config": map[string]any{"cgroups": map[string]any{"name": id, "path": "", "scope_prefix": ""}}})
		write(filepath.Join("run/runc", id, "state.json"), string(b))
	}
	write("proc/self/mountinfo", fmt.Sprintf("22 1 8:1 / / rw,relatime - ext4 /dev/root rw\n"+
		"30 22 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", cg2))
	clock := time.Unix(1_000_000, 0)
	none := []string{}
	r := container.New(container.Options{ProcRoot: filepath.Join(root, "proc"), RuncRoots: []string{filepath.Join(root, "run/runc")},
		ContainerdRoots: none, CrunRoots: none, StorageRoots: none, DockerRoots: none,
		NoFileHandles: true, Now: func() time.Time { return clock }})

	ready, late, other := cgroup("ready"), cgroup("late"), cgroup("user.slice")
	write("proc/201/cgroup", "0::/ready\n")
	write("proc/202/cgroup", "0::/late\n")
	write("proc/203/cgroup", "0::/user.slice\n")
	state("ready", 201)

	f := &fakeCgroupFilter{selected: map[uint64]bool{}, dropped: map[uint64]bool{}}
	sel := &Selection{Containers: []string{"ready", "late"}, r: r, filter: f,
		decided: map[uint64]bool{}, waiting: map[uint64]*waitingCgroup{}}
	ev := func(pid uint32, id uint64) *trace.Event {
		return &trace.Event{Task: trace.Task{Pid: pid, Tid: pid, CgroupID: id}}
	}
	now := clock

	// Its state already written: selected at its first event.
	if !sel.accept(ev(201, ready), now) || !f.selected[ready] {
		t.Errorf("runc container %q, its state written: its first event dropped (selected %v)", "ready", f.selected[ready])
	}

	// Its state not yet written: held, then selected once it is.
	for range 3 {
		if sel.accept(ev(202, late), now) {
			t.Errorf("runc container %q before its state: accepted", "late")
		}
		if sel.accept(ev(203, other), now) {
			t.Errorf("cgroup /user.slice: accepted")
		}
	}
	if f.dropped[late] {
		t.Fatalf("runc container %q dropped before its state was written", "late")
	}
	state("late", 202)
	// runc starts the container's program a few milliseconds after it
	// wrote the state: the state is looked for again by then.
	clock = clock.Add(10 * time.Millisecond)
	now = now.Add(10 * time.Millisecond)
	if !sel.accept(ev(202, late), now) || !f.selected[late] {
		t.Errorf("runc container %q, its state written since: not selected", "late")
	}
	if sel.undecided != 3 {
		t.Errorf("undecided = %d, want the 3 events of %q held before its state", sel.undecided, "late")
	}

	// No container: dropped nameWait after its first event, uncounted.
	now = now.Add(nameWait)
	if sel.accept(ev(203, other), now) || !f.dropped[other] {
		t.Errorf("cgroup /user.slice after nameWait: accepted, or not dropped (%v)", f.dropped[other])
	}
	if sel.undecided != 3 || len(sel.waiting) != 0 {
		t.Errorf("undecided = %d (want 3), %d cgroups still waiting", sel.undecided, len(sel.waiting))
	}
}
