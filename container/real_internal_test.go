package container

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// On this machine's cgroup2 mount (root only): a cgroup's id opens by
// file handle to its path, the walk finds the same id, and stat agrees.
func TestRealHandlesAndWalk(t *testing.T) {
	testprog.RequireRoot(t)
	r := New(Options{})
	if r.Cgroup2Mount() == "" {
		testprog.Skip(t, "no cgroup2 mount")
	}
	name := "once-test-container-" + strconv.Itoa(os.Getpid())
	dir := filepath.Join(r.Cgroup2Mount(), name, "child")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(filepath.Join(r.Cgroup2Mount(), name))
	id, ok := statID(r.Cgroup2Mount(), "/"+name+"/child")
	if !ok {
		t.Fatal("stat")
	}
	if !r.handles {
		t.Fatalf("file handles not tried on %s", r.Cgroup2Mount())
	}
	p, ok, err := byHandle(r.cg2, r.cg2pfx, id)
	handles := err == nil
	switch {
	case err == errHandlesUnavailable:
		// No CAP_DAC_READ_SEARCH (once's DaemonSet has none): EPERM.
		t.Logf("file handles unavailable here: the walk alone is tested")
	case err != nil || !ok || p != "/"+name+"/child":
		t.Errorf("byHandle(%d) = %q, %v, %v", id, p, ok, err)
	}
	if handles {
		if p, ok, err := byHandle(r.cg2, r.cg2pfx, 1); err != nil || !ok || p != "/" {
			t.Errorf("byHandle(1) = %q, %v, %v", p, ok, err)
		}
		if _, ok, err := byHandle(r.cg2, r.cg2pfx, 1<<40); err != nil || ok {
			t.Errorf("byHandle of no cgroup: %v, %v", ok, err)
		}
	}
	idx := walkIndex(r.cg2, r.cg2pfx)
	if idx[id] != "/"+name+"/child" || idx[1] != "/" {
		t.Errorf("walk: %q, root %q (%d cgroups)", idx[id], idx[1], len(idx))
	}
	if got := r.Lookup(id, 0); got.CgroupPath != "/"+name+"/child" {
		t.Errorf("Lookup: %+v", got)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if r.handles != handles {
		t.Errorf("handles still tried: %v, work: %v", r.handles, handles)
	}
	// Removed: gone, or (while the kernel still holds it) its old path.
	if p, ok, err := byHandle(r.cg2, r.cg2pfx, id); handles && (err != nil || ok && p != "/"+name+"/child") {
		t.Errorf("byHandle of a removed cgroup = %q, %v, %v", p, ok, err)
	}
}
