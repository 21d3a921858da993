package detect

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// TestHostileFloodIsBounded: what any local user can make once keep (here
// 64 directories x 1,024 basenames of ~3.9 KB paths, all failing, then as
// many exec probes) stays within the byte budgets, under both policies,
// while every count stays exact and the capped detail is counted.
func TestHostileFloodIsBounded(t *testing.T) {
	for _, pol := range []struct {
		name string
		p    Policy
	}{{"watch", Bounded(0, 0)}, {"run", KeepAll("")}} {
		t.Run(pol.name, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			e := New(Options{Policy: pol.p})
			pt := task(77, 77, 1, 1, "hostile")
			long := strings.Repeat("d", 3800)
			ev := trace.Event{Kind: trace.EventOpen, Task: pt}
			for d := 0; d < 64; d++ {
				for b := 0; b < 1024; b++ {
					ev.Open = trace.OpenRecord{Syscall: trace.SysOpenat, Ret: enoent, EnterNs: 0, ExitNs: 100,
						Fname: fmt.Sprintf("/tmp/%s/%02d/name%04d", long, d, b)}
					e.Handle(&ev, t0)
				}
			}
			for i := 0; i < 1000; i++ {
				ev := trace.Event{Kind: trace.EventExec, Task: pt, Exec: trace.ExecRecord{Syscall: trace.SysExecve,
					Filename: fmt.Sprintf("/tmp/%s/%04d/x", long, i), Ret: enoent, ExitNs: 1000}}
				e.Handle(&ev, t0)
			}
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapInuse) - int64(before.HeapInuse)
			// The budgets (detection's, and half as much for the
			// listing's detail), and the few small entries charged
			// whatever they say: the basenames pending.
			if e.bytes > imageBudget(pol.p)+128<<10 {
				t.Errorf("%d bytes charged, budget %d per image", e.bytes, imageBudget(pol.p))
			}
			if slack := int64(8 << 20); grew > pol.p.MaxImageBytes*2+slack {
				t.Errorf("the heap grew %d MiB for a %d MiB budget", grew>>20, pol.p.MaxImageBytes>>20)
			}
			tt := e.Totals()
			if tt.FailedOpens != 64*1024 || tt.FailedExecs != 1000 || tt.DetailDropped == 0 {
				t.Errorf("totals %+v: want every failure counted and the dropped detail too", tt)
			}
			e.Finish(t0)
			var execFailed, openFailed int
			for _, f := range e.Drain() {
				switch f.Kind {
				case trace.KindFailedExecProbes:
					execFailed += f.Failed
					if len(f.Attempts)+f.AttemptsOmitted != f.Failed {
						t.Errorf("exec chain: %d kept + %d omitted != %d failed", len(f.Attempts), f.AttemptsOmitted, f.Failed)
					}
				case trace.KindFailedOpenProbes:
					openFailed += f.Failed
				}
			}
			if execFailed != 1000 {
				t.Errorf("exec probe findings count %d failures, want 1000 (exact past the cap)", execFailed)
			}
			t.Logf("%s: heap +%d KiB, %d bytes charged, %d details dropped, open probe failures in findings %d",
				pol.name, grew>>10, e.bytes, tt.DetailDropped, openFailed)
		})
	}
}

// TestChurnHeapWithinBudget: the unprivileged churn of once watch's
// hostile soak (processes with names no one had before, each with a
// duplicate open, a failed open of a new path and a failed PATH search)
// costs the heap no more than the bytes the watch budget charges for it:
// the budget is what bounds once watch's memory, so it must count what
// each image really holds, its Process, maps and lists included.
func TestChurnHeapWithinBudget(t *testing.T) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	pol := Bounded(0, 0)
	e := New(Options{Policy: pol})
	const n = 150000
	for i := 0; i < n; i++ {
		comm := fmt.Sprintf("c%x", i)
		pt := task(uint32(1000+i%4000000), uint32(1000+i%4000000), uint64(1e9+i), 1, comm)
		f := fmt.Sprintf("/tmp/load/f%d", i%256)
		s := (&seq{}).fork(pt, 999, 1).
			open(pt, f, f, 1, uint64(i%256), 3).open(pt, f, f, 1, uint64(i%256), 3).
			open(pt, fmt.Sprintf("/tmp/load/missing/%d/%s", i, comm), "", 0, 0, enoent)
		for a := 0; a < 3; a++ {
			s.exec(pt, fmt.Sprintf("/nonexistent%d/%s", a, comm), enoent, "x")
		}
		// Every process exits within the grace: ended images are what
		// the churn leaves behind.
		feed(e, s.exit(pt, 0), t0.Add(time.Duration(i)*time.Microsecond))
		e.Drain()
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d images held, %d evicted: heap +%d MiB, %d MiB charged (budget %d MiB), %d bytes an image",
		e.Images(), e.Totals().Evicted, grew>>20, e.bytes>>20, pol.MaxBytes>>20, grew/int64(max(e.Images(), 1)))
	if e.bytes > pol.MaxBytes {
		t.Errorf("%d bytes charged, budget %d", e.bytes, pol.MaxBytes)
	}
	// The estimates may be off by a little, not by a factor.
	if grew > e.bytes*5/4+4<<20 {
		t.Errorf("the heap grew %d MiB for %d MiB charged: the budget does not count what an image holds", grew>>20, e.bytes>>20)
	}
	runtime.KeepAlive(e)
}

// TestRowsOfManyImages: the table of a watch holding 65,536 images (its
// cap, reached in seconds under churn) costs a few rows' worth at each
// tick, not a row for every image: that garbage was a 60 MiB step in
// once watch's RSS at every summary.
func TestRowsOfManyImages(t *testing.T) {
	e := New(Options{Policy: Bounded(0, 0)})
	for i := 0; i < 65536; i++ {
		pt := task(uint32(1000+i), uint32(1000+i), uint64(i+1), 1, fmt.Sprintf("c%x", i))
		feed(e, (&seq{}).open(pt, "/f", "/f", 1, 1, 3).open(pt, "/f", "/f", 1, 1, 3).exit(pt, 0), t0)
		e.Drain()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rows := e.Rows(SortTime, 20, GroupPid)
	runtime.ReadMemStats(&after)
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("20 rows of %d images allocated %d KiB", e.Images(), got>>10)
	}
}

// TestLongBasenamesAreBounded: the basenames of failed opens and lookups
// pending as probe chains are the traced program's to choose, up to 4 KB
// each (a component past NAME_MAX fails with ENAMETOOLONG, a miss): a
// program that fails 70,000 such names by open and by stat must not make
// once hold them past its image's budget (it held 524 MiB against once
// run's 16 MiB), while the failures stay counted, the refused detail
// too, and a search begun within the budget stays exact.
func TestLongBasenamesAreBounded(t *testing.T) {
	for _, pol := range []struct {
		name string
		p    Policy
	}{{"watch", Bounded(0, 0)}, {"run", KeepAll("")}} {
		t.Run(pol.name, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			e := New(Options{Policy: pol.p})
			pt := task(77, 77, 1, 1, "hostile")
			// A search within the budget: its first miss before the
			// flood, its second after, then found.
			(func() {
				ev := trace.Event{Kind: trace.EventOpen, Task: pt}
				ev.Open = trace.OpenRecord{Syscall: trace.SysOpenat, Ret: enoent, ExitNs: 100, Fname: "/a/lib.so"}
				e.Handle(&ev, t0)
			})()
			long := strings.Repeat("q", 4000)
			ev := trace.Event{Kind: trace.EventOpen, Task: pt}
			const n = 70000
			for b := 0; b < n; b++ {
				ev.Open = trace.OpenRecord{Syscall: trace.SysOpenat, Ret: -36, ExitNs: 100,
					Fname: fmt.Sprintf("/tmp/nx/%d%s", b, long)}
				e.Handle(&ev, t0)
				ev.Open.Syscall = trace.SysNewfstatat
				e.Handle(&ev, t0)
			}
			feed(e, (&seq{}).open(pt, "/b/lib.so", "", 0, 0, enoent).open(pt, "/c/lib.so", "/c/lib.so", 1, 9, 3), t0)
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapInuse) - int64(before.HeapInuse)
			if e.bytes > imageBudget(pol.p)+128<<10 {
				t.Errorf("%d MiB charged, budget %d MiB per image", e.bytes>>20, imageBudget(pol.p)>>20)
			}
			if slack := int64(8 << 20); grew > pol.p.MaxImageBytes*2+slack {
				t.Errorf("the heap grew %d MiB for a %d MiB budget", grew>>20, pol.p.MaxImageBytes>>20)
			}
			tt := e.Totals()
			if tt.FailedOpens != n+2 || tt.FailedLookups != n || tt.DetailDropped == 0 {
				t.Errorf("totals %+v: want every failure counted and the dropped detail too", tt)
			}
			failed := 0
			for _, f := range e.Drain() {
				if f.Kind == trace.KindFailedOpenProbes && f.Target == "lib.so" {
					failed = f.Failed
				}
			}
			if failed != 2 {
				t.Errorf("the search for lib.so: %d misses, want 2", failed)
			}
			runtime.KeepAlive(e)
		})
	}
}

// imageBudget is what one image may be charged in all: detection's
// MaxImageBytes, and half as much for its listing's detail (keepDetail).
func imageBudget(p Policy) int64 { return p.MaxImageBytes + p.MaxImageBytes/2 }

// TestDetailLeavesDetectionRoom: an image that opens many files once each
// keeps a call of each (its listing's detail) only within the detail's
// own budget, so that the files opened after, past what the calls would
// have left, are still told apart and their repeats found.
func TestDetailLeavesDetectionRoom(t *testing.T) {
	p := KeepAll(trace.FilesDuplicates)
	p.MaxImageBytes = 1 << 20
	e := New(Options{Policy: p})
	pt := task(9, 9, 1, 1, "build")
	s := &seq{}
	name := func(i int) string { return fmt.Sprintf("/tmp/cache/%0180d", i) }
	const n = 2500 // each file about 400 bytes to tell apart, its call about 330 more
	for i := 0; i < n; i++ {
		s.open(pt, name(i), name(i), 1, uint64(100+i), 3)
	}
	s.open(pt, name(n-1), name(n-1), 1, uint64(100+n-1), 3)
	feed(e, s.exit(pt, 0), t0)
	capped := e.Totals().FilesCapped
	r := e.Result()
	if got := capped; got != 0 {
		t.Errorf("%d opens past the cap, want none: the calls took detection's room", got)
	}
	found := false
	for _, f := range r.Findings {
		if f.Kind == trace.KindDuplicateOpen && f.Path == name(n-1) && f.Count == 2 {
			found = true
		}
	}
	if !found {
		for _, f := range r.Findings {
			t.Logf("%s %q %d", f.Kind, f.Path, f.Count)
		}
		t.Errorf("the last file's second open was not found: findings %d", len(r.Findings))
	}
}
