package container

import (
	"fmt"
	"sync"
	"testing"
)

// Lookup and Observe from many goroutines (run with -race).
func TestResolverConcurrent(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	path := cgroupfsPodPath(uid1, id1)
	f.procCgroup(700, hybridLines(path)...)
	f.ociConfig("run/containerd/io.containerd.runtime.v2.task/k8s.io/"+id1+"/config.json", criAnnotations("c", "p", "n", uid1), path)
	r := New(Options{ProcRoot: f.proc, ContainerdRoots: f.opt().ContainerdRoots})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				var got Info
				if i%2 == 0 {
					got = r.Lookup(rootID, 700)
				} else {
					got = r.Observe(700, rootID)
				}
				if got.PodName != "p" {
					t.Errorf("%+v", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// tree10k makes a node of 10,000 cgroups: 2,000 pods of 4 containers
// below the QoS classes, and returns one container's id.
func tree10k(tb testing.TB) (*fixture, uint64) {
	f := newFixture(tb, "unified")
	var last uint64
	for p := 0; p < 2000; p++ {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", p, p)
		for c := 0; c < 4; c++ {
			last = f.cgroup(cgroupfsPodPath(uid, fmt.Sprintf("%064x", p*4+c)))
		}
	}
	return f, last
}

func BenchmarkWalk10k(b *testing.B) {
	f, id := tree10k(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if idx := walkIndex(f.cg2, ""); idx[id] == "" {
			b.Fatal("not found")
		}
	}
}

func BenchmarkLookupKnown(b *testing.B) {
	f, id := tree10k(b)
	r := f.resolver()
	r.Lookup(id, 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Lookup(id, 0)
	}
}
