package collector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// ringModes are the ring counts the strace-oracle tests run with: one
// ring, and one per CPU of a 2-CPU machine. Both must see exactly the
// calls strace sees, so the same counts.
var ringModes = []int{1, 2}

func ringsName(n int) string { return fmt.Sprintf("/rings=%d", n) }

// envRings is the ring count traceCmd uses when its options give none:
// $ONCE_TEST_RINGS, to run every collector test with several rings, or
// 0 (the default for the CPUs).
func envRings(t *testing.T) int {
	v := os.Getenv("ONCE_TEST_RINGS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("ONCE_TEST_RINGS=%q: want a count of rings", v)
	}
	return n
}

func TestDefaultRings(t *testing.T) {
	for _, tc := range []struct{ ncpu, want int }{
		{1, 1}, {2, 1}, {4, 1}, {5, 2}, {8, 2}, {32, 8}, {64, 16}, {128, 32}, {192, 32}, {1024, 32},
	} {
		if got := collector.DefaultRings(tc.ncpu); got != tc.want {
			t.Errorf("DefaultRings(%d) = %d, want %d", tc.ncpu, got, tc.want)
		}
	}
}

func TestRingSizeFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ single, n, want int }{
		{8 * mib, 1, 8 * mib},
		{8 * mib, 4, 8 * mib},
		{8 * mib, 5, 4 * mib}, // 6.4 MiB, rounded down
		{8 * mib, 8, 4 * mib},
		{8 * mib, 16, 2 * mib},
		{8 * mib, 32, 1 * mib},
		{8 * mib, 64, 1 * mib}, // the floor: 64 MiB in all
		{64 * mib, 32, 8 * mib},
		// A ring asked smaller than the floor is not made larger.
		{64 << 10, 32, 64 << 10},
	} {
		got := collector.RingSizeFor(tc.single, tc.n)
		if got != tc.want {
			t.Errorf("RingSizeFor(%d, %d) = %d, want %d", tc.single, tc.n, got, tc.want)
		}
		if got&(got-1) != 0 {
			t.Errorf("RingSizeFor(%d, %d) = %d: not a power of two", tc.single, tc.n, got)
		}
	}
}

// TestRingsMigration moves a process from CPU to CPU between its calls,
// so that with a ring per CPU each call is written to the other ring than
// the one before: a search (three failed opens, then the one that finds
// the file) and a repeat, per name, then the same in a forked child. The
// engine must see each task's calls in order, the child's after its fork:
// every chain whole, in its order, every duplicate counted.
func TestRingsMigration(t *testing.T) {
	testprog.RequireRoot(t)
	if runtime.NumCPU() < 2 {
		testprog.Skipf(t, "one CPU: no migration to make")
	}
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	dirs := make([]string, 4)
	for i := range dirs {
		dirs[i] = filepath.Join(dir, fmt.Sprintf("d%d", i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const names = 40
	var parent, child []string
	for j := range names {
		name := fmt.Sprintf("n%02d", j)
		if err := os.WriteFile(filepath.Join(dirs[3], name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		acts := []string{
			"cpu:0", "fail:" + filepath.Join(dirs[0], name),
			"cpu:1", "fail:" + filepath.Join(dirs[1], name),
			"cpu:0", "fail:" + filepath.Join(dirs[2], name),
			"cpu:1", "openat:" + filepath.Join(dirs[3], name),
			"cpu:0", "openat:" + filepath.Join(dirs[3], name),
		}
		if j < names/2 {
			parent = append(parent, acts...)
		} else {
			child = append(child, acts...)
		}
	}
	// The child inherits the parent's CPU; its calls move it on.
	args := append(parent, "cpu:1")
	for _, rings := range ringModes {
		t.Run(ringsName(rings)[1:], func(t *testing.T) {
			tr, err := collector.Open(collector.Options{Tracked: true, Rings: rings, BatchWakeups: true})
			if err != nil {
				t.Fatalf("open tracer: %v", err)
			}
			defer tr.Close()
			if tr.Rings() != rings {
				t.Fatalf("%d rings, want %d", tr.Rings(), rings)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// The child runs its own list: child: takes one action,
			// so it is handed the rest through a script.
			script := filepath.Join(t.TempDir(), "child.sh")
			body := "#!/bin/sh\nexec " + opener
			for _, a := range child {
				body += " '" + a + "'"
			}
			if err := os.WriteFile(script, []byte(body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(opener, append(args[:len(args):len(args)], "child:exec:"+script)...)
			res, err := runCommand(ctx, tr, cmd, runOpts{linger: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("opener exited %d", res.ExitCode)
			}
			if res.Counters.Lost() != 0 {
				t.Fatalf("events lost: %+v", res.Counters)
			}
			if rings > 1 && len(res.Counters.DroppedByRing) != rings {
				t.Errorf("DroppedByRing %v: want one count per ring", res.Counters.DroppedByRing)
			}
			chains := map[string]trace.Finding{}
			dups := map[string]int{}
			for _, f := range res.Findings {
				switch f.Kind {
				case trace.KindFailedOpenProbes:
					chains[f.Target] = f
				case trace.KindDuplicateOpen:
					dups[filepath.Base(f.Path)] = f.Count
				}
			}
			for j := range names {
				name := fmt.Sprintf("n%02d", j)
				f, ok := chains[name]
				if !ok {
					t.Errorf("%s: no failed_open_probes finding", name)
					continue
				}
				found := "none"
				if f.Found != nil {
					found = *f.Found
				}
				if f.Failed != 3 || found != filepath.Join(dirs[3], name) || len(f.Attempts) != 4 {
					t.Errorf("%s: chain of %d failed, found %s, %d attempts; want 3, %s, 4", name, f.Failed, found, len(f.Attempts), filepath.Join(dirs[3], name))
					continue
				}
				for i, a := range f.Attempts {
					if a.Path != filepath.Join(dirs[i], name) {
						t.Errorf("%s: attempt %d is %s, want %s", name, i, a.Path, filepath.Join(dirs[i], name))
					}
				}
				if dups[name] != 2 {
					t.Errorf("%s: opened %d times as a duplicate, want 2", name, dups[name])
				}
			}
		})
	}
}
