package collector

import (
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// TestRepeatsBounded: the threads whose last open repeats keep are
// bounded whatever exits are never seen, strings the kernel never repeats
// are not kept, and what is kept still expands its repeats.
func TestRepeatsBounded(t *testing.T) {
	open := func(pid, tid uint32, ns uint64, fname, path string) *trace.Event {
		return &trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: pid, Tid: tid},
			Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3, ExitNs: ns, Fname: fname, Path: path}}
	}
	tests := []struct {
		name    string
		procs   int // processes of threads threads each, never exiting
		threads int
	}{
		{"many processes", 3 * maxRepeatThreads, 1},
		{"one process of many threads", 1, 3 * maxRepeatThreads},
		{"a few big processes", 5, maxRepeatThreads / 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r repeats
			ns := uint64(1)
			for p := range tc.procs {
				for th := range tc.threads {
					ns++
					r.keep(open(uint32(p+1), uint32(p*tc.threads+th+1), ns, "f", "/f"))
					if r.threads > maxRepeatThreads {
						t.Fatalf("%d threads kept, bound %d", r.threads, maxRepeatThreads)
					}
				}
			}
			n := 0
			for _, th := range r.procs {
				n += len(th)
			}
			if n != r.threads {
				t.Fatalf("counted %d threads, hold %d", r.threads, n)
			}
			// The last thread's open is kept and expands its repeat.
			pid, tid := uint32(tc.procs), uint32(tc.procs*tc.threads)
			rep := &trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: pid, Tid: tid}}
			r.last = nil
			if !r.expand(rep, ns) || rep.Open.Fname != "f" || rep.Open.Path != "/f" {
				t.Fatalf("last open not expanded: %+v", rep.Open)
			}
		})
	}
	var r repeats
	r.keep(open(1, 1, 10, "f", "/f"))
	r.keep(open(1, 1, 11, strings.Repeat("n", maxRepeatName+1), "/g"))
	if rep := (&trace.Event{Task: trace.Task{Pid: 1, Tid: 1}}); r.expand(rep, 10) || r.expand(rep, 11) {
		t.Fatalf("a repeat of an open the kernel never repeats, or of one before it, expanded: %+v", rep.Open)
	}
}
