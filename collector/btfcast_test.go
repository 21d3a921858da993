package collector

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"

	"github.com/oncetool/once/trace"

	"github.com/oncetool/once/detect"
)

// TestReadsWithoutBTFCasts runs the kernel side the way kernels before 6.2
// do (no bpf_rdonly_cast: every kernel field read with BPF_CORE_READ) and
// the way this one does, on the same opens: a file on the root
// filesystem, one across a mount (tmpfs), a relative failure, and a
// repeated open past the tally threshold. Both must report the same
// identities, paths and counts.
func TestReadsWithoutBTFCasts(t *testing.T) {
	testprog.RequireRoot(t)
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	onRoot := filepath.Join(dir, "f")
	shm, err := os.MkdirTemp("/dev/shm", "oncecast-")
	if err != nil {
		testprog.Skipf(t, "no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	onShm := filepath.Join(shm, "g")
	for _, p := range []string{onRoot, onShm} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	argv := []string{opener, "openat:" + onRoot, "repeat:300:openat:" + onShm, "chdir:" + dir, "fail:missing"}

	type seen struct {
		count int
		path  string
		gen   uint32
	}
	trace := func(noCasts bool) (map[[2]uint64]seen, string, trace.Counters) {
		noBTFCasts = noCasts
		defer func() { noBTFCasts = false }()
		tr, err := Open(Options{Tracked: true, SendOpensPerKind: detect.DefaultMaxCalls})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := RunForTest(ctx, tr, exec.Command(argv[0], argv[1:]...), time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		files := map[[2]uint64]seen{}
		base := ""
		for _, p := range r.Processes {
			for _, fo := range p.Opens {
				files[[2]uint64{fo.Dev, fo.Ino}] = seen{fo.Count, fo.Path, fo.Gen}
			}
			for _, fo := range p.FailedOpens {
				if fo.Fname == "missing" {
					base = fo.Base
				}
			}
		}
		return files, base, r.Counters
	}
	id := func(p string) [2]uint64 {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return [2]uint64{st.Dev, st.Ino}
	}
	// The generations: the same both ways, and set (ext4 and tmpfs draw
	// one for every file the kernel makes).
	gens := map[string]uint32{}
	for _, noCasts := range []bool{false, true} {
		files, base, c := trace(noCasts)
		for p, n := range map[string]int{onRoot: 1, onShm: 300} {
			got := files[id(p)]
			if got.count != n || got.path != p || got.gen == 0 {
				t.Errorf("noBTFCasts=%v: %s seen as %+v, want %d opens and a generation", noCasts, p, got, n)
			}
			if g, ok := gens[p]; ok && g != got.gen {
				t.Errorf("%s: generation %d with BTF casts, %d without", p, g, got.gen)
			}
			gens[p] = got.gen
		}
		if base != dir {
			t.Errorf("noBTFCasts=%v: relative failure tried in %q, want %q", noCasts, base, dir)
		}
		if c.OpensTallied == 0 || c.Lost() != 0 {
			t.Errorf("noBTFCasts=%v: tallied %d, lost %d", noCasts, c.OpensTallied, c.Lost())
		}
	}
}

// TestTaskFieldsWithoutBTFCasts: an event's uid, cgroup id and comm, read
// with loads where the kernel has BTF casts and with helpers where it has
// not, are the same: those of a process run as another user in a cgroup
// of its own.
func TestTaskFieldsWithoutBTFCasts(t *testing.T) {
	testprog.RequireRoot(t)
	var cg2 string
	for _, d := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			cg2 = d
			break
		}
	}
	if cg2 == "" {
		testprog.Skip(t, "no cgroup v2 hierarchy")
	}
	cg, err := os.MkdirTemp(cg2, "oncecast-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(cg) })
	var cgst unix.Stat_t
	if err := unix.Stat(cg, &cgst); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "oncecast-")
	if err != nil {
		testprog.Skipf(t, "no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(testprog.Build(t, testprog.Opener))
	if err != nil {
		t.Fatal(err)
	}
	const comm = "oncecastfields"
	prog := filepath.Join(dir, comm)
	if err := os.WriteFile(prog, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, noCasts := range []bool{false, true} {
		opens := 0
		for _, ev := range castRun(t, noCasts, cg, comm, prog, "repeat:3:openat:"+prog) {
			if ev.Kind != trace.EventOpen || ev.Task.Comm != comm {
				continue
			}
			opens++
			if ev.Task.UID != 65534 || ev.Task.CgroupID != cgst.Ino {
				t.Errorf("noBTFCasts=%v: uid %d cgroup %d, want 65534 and %d", noCasts, ev.Task.UID, ev.Task.CgroupID, cgst.Ino)
			}
		}
		if opens < 3 {
			t.Errorf("noBTFCasts=%v: %d opens of %s", noCasts, opens, comm)
		}
	}
}

// castRun runs argv as uid 65534 in the cgroup cg, traced with every open
// sent (the comm filter on), and returns every event read.
func castRun(t *testing.T, noCasts bool, cg, comm string, argv ...string) []trace.Event {
	t.Helper()
	noBTFCasts = noCasts
	tr, err := Open(Options{Filter: Filter{Comms: []string{comm}}})
	noBTFCasts = false
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fd, err := unix.Open(cg, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534},
		UseCgroupFD: true, CgroupFD: fd}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v: %s", argv, err, out)
	}
	// It has exited: its records are all in the ring.
	return flushAll(t, tr)
}

// flushAll flushes tr and returns every event it then reads.
func flushAll(t *testing.T, tr *Tracer) []trace.Event {
	t.Helper()
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	var ev trace.Event
	var c trace.Counters
	for {
		err := tr.Next(&ev, &c)
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}
