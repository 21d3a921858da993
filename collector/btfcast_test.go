package collector

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
