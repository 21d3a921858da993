package container

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Every cache of a Resolver filled to its cap with the longest entries
// it keeps (paths at MaxCachedPathLen, names at MaxFieldLen), and a
// full index: the heap it holds stays within the stated bound.
func TestResolverMemoryBound(t *testing.T) {
	const bound = 36 << 20 // as the caps' doc comment says
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	r := New(Options{ProcRoot: t.TempDir()})
	// Segments of 16 bytes, so that a cut path keeps nearly all of
	// MaxCachedPathLen.
	long := func(i int, n int) string {
		s := fmt.Sprintf("/%015d", i)
		return strings.Repeat(s, n/len(s)+1)[:n]
	}
	path := func(i int) string {
		p := capPath(long(i, MaxPathLen))
		if len(p) < MaxCachedPathLen-32 {
			t.Fatalf("cut to %d bytes", len(p))
		}
		return p
	}
	name := func(i int) string { return long(i, MaxFieldLen)[1:] }
	for i := 0; i < MaxCgroups; i++ {
		r.ids.put(uint64(i), path(i))
	}
	for i := 0; i < MaxMissed; i++ {
		r.missed.put(uint64(i), time.Now())
	}
	for i := 0; i < MaxPids; i++ {
		r.pids.put(uint32(i), pidEntry{path: path(i), id: fmt.Sprintf("%064x", i), podUID: fmt.Sprintf("%036x", i), runtime: RuntimeCRIO})
	}
	for i := 0; i < MaxContainers; i++ {
		r.containers.put(fmt.Sprintf("%064x", i), stateEntry{containerState: containerState{found: true, runtime: RuntimeContainerd,
			name: name(i), podName: name(i + 1), podNamespace: name(i + 2), podUID: fmt.Sprintf("%036x", i), cgroup: path(i)}})
	}
	for i := 0; i < MaxPods; i++ {
		r.pods.put(fmt.Sprintf("%036x", i), podNames{name(i), name(i + 1)})
	}
	w := walker{idx: map[uint64]string{}}
	for i := 0; !w.full(); i++ {
		w.add(uint64(i), long(i, MaxPathLen))
	}
	r.index = w.idx
	used := heap() - before
	t.Logf("full caches: %.1f MiB (%d indexed cgroups)", float64(used)/(1<<20), len(r.index))
	if used > bound {
		t.Errorf("full caches hold %.1f MiB, over %d MiB", float64(used)/(1<<20), bound>>20)
	}
	runtime.KeepAlive(r)
}
