package detect

import (
	"fmt"
	"slices"
	"testing"

	"github.com/oncetool/once/trace"
)

func stack(id trace.StackID) func(*trace.Event) {
	return func(ev *trace.Event) { ev.Stack = id }
}

// TestCallSites: with stacks on, each file, failed spelling and chain
// counts its calls per stack, exactly, under both policies; without
// stacks nothing is counted.
func TestCallSites(t *testing.T) {
	sh := task(50, 50, 950, 1, "sh")
	s := (&seq{}).
		open(cp, "src", "/tmp/src", 8, 42, 3).with(stack(1)).
		open(cp, "src", "/tmp/src", 8, 42, 4).with(stack(2)).
		open(cp, "src", "/tmp/src", 8, 42, 5).with(stack(3)).
		open(cp, "src", "/tmp/src", 8, 42, 6).with(stack(2)).
		tally(cp, trace.SysOpenat, 0, 8, 42, 5, 500).
		exec(env, "/a/true", -2).with(stack(7)).
		exec(env, "/b/true", -2).with(stack(7)).
		exec(task(20, 20, 600, 2, "true"), "/usr/bin/true", 0).with(stack(8)).
		failRel(cp, "lib.so", "/x", -2).with(stack(4)).
		failRel(cp, "lib.so", "/y", -2).with(stack(4)).
		open(cp, "lib.so", "/z/lib.so", 8, 43, 7).with(stack(5)).
		// A file stat-ed three times, the first counted in the kernel
		// (no stack); a path missed twice; a stat search.
		lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 8, 44, 0, true).with(stack(9)).
		lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 8, 44, 0, false).with(stack(9)).
		lookup(sh, trace.SysAccess, "/etc/x.conf", 0, 0, -2, false).with(stack(10)).
		lookup(sh, trace.SysAccess, "/etc/x.conf", 0, 0, -2, false).with(stack(11)).
		lookup(sh, trace.SysNewfstatat, "/a/tool", 0, 0, -2, false).with(stack(12)).
		lookup(sh, trace.SysNewfstatat, "/b/tool", 8, 45, 0, false).with(stack(12))
	wantStat := []trace.CallSite{{Stack: 0, Count: 1}, {Stack: 9, Count: 2}}
	wantMiss := []trace.CallSite{{Stack: 10, Count: 1}, {Stack: 11, Count: 1}}
	wantStatProbe := []trace.CallSite{{Stack: 12, Count: 2}}
	wantDup := []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 2}, {Stack: 3, Count: 1}, {Stack: 0, Count: 5}}
	wantExec := []trace.CallSite{{Stack: 7, Count: 2}, {Stack: 8, Count: 1}}
	wantOpen := []trace.CallSite{{Stack: 4, Count: 2}, {Stack: 5, Count: 1}}
	for _, tc := range []struct {
		name string
		pol  Policy
	}{{"exact", KeepAll(trace.FilesAll)}, {"bounded", Bounded(0, 0)}} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Policy: tc.pol, Stacks: true})
			feed(e, s, t0)
			e.Finish(t0)
			fs := e.Drain()
			for _, f := range fs {
				var want []trace.CallSite
				switch f.Kind {
				case trace.KindDuplicateOpen:
					want = wantDup
				case trace.KindFailedExecProbes:
					want = wantExec
				case trace.KindFailedOpenProbes:
					want = wantOpen
				case trace.KindDuplicateStat:
					want = wantStat
				case trace.KindRepeatedMiss:
					want = wantMiss
				case trace.KindFailedStatProbes:
					want = wantStatProbe
				}
				if !slices.Equal(f.CallSites, want) {
					t.Errorf("%s: call sites %+v, want %+v", f.Kind, f.CallSites, want)
				}
				n := 0
				for _, c := range f.CallSites {
					n += c.Count
				}
				if calls := f.Count + len(f.Attempts); n != calls {
					t.Errorf("%s: call sites sum to %d, want %d", f.Kind, n, calls)
				}
			}
			if len(fs) != 6 {
				t.Errorf("%d findings, want 6", len(fs))
			}
		})
	}
	r := s.run(1)
	for _, f := range r.Findings {
		if f.CallSites != nil {
			t.Errorf("stacks off: %s has call sites %+v", f.Kind, f.CallSites)
		}
	}
	for _, fo := range r.Processes[0].Opens {
		for _, c := range fo.Calls {
			if c.Stack != 0 && fo.CallSites != nil {
				t.Errorf("stacks off: call sites kept")
			}
		}
	}
}

// TestCallSitesCapped: calls from more distinct stacks than a list keeps
// are counted under StackNotKept.
func TestCallSitesCapped(t *testing.T) {
	s := &seq{}
	for i := range maxSites + 6 {
		s.open(cp, "src", "/tmp/src", 8, 42, 3).with(stack(trace.StackID(i + 1)))
	}
	e := New(Options{Policy: KeepAll(trace.FilesAll), Stacks: true})
	feed(e, s, t0)
	r := e.Result()
	f := r.Findings[0]
	if len(f.CallSites) != maxSites+1 {
		t.Fatalf("%d call sites, want %d", len(f.CallSites), maxSites+1)
	}
	last := f.CallSites[maxSites]
	if last.Stack != trace.StackNotKept || last.Count != 6 {
		t.Errorf("overflow site %+v, want 6 under StackNotKept", last)
	}
	if f.Calls[0].Stack != 1 || f.Calls[maxSites+5].Stack != trace.StackID(maxSites+6) {
		t.Errorf("calls keep their own stacks: %d, %d", f.Calls[0].Stack, f.Calls[maxSites+5].Stack)
	}
}

// keptStack is the kernel's EventKeptStack for t's file dev:ino, bringing
// stack id (0: lost).
func (s *seq) keptStack(t trace.Task, dev, ino uint64, id trace.StackID) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventKeptStack, Task: t, Stack: id,
		Open: trace.OpenRecord{Dev: dev, Ino: ino, EnterNs: 1100, ExitNs: 1100}})
	return s
}

func kept(ev *trace.Event) { ev.Open.Status |= trace.StStackKept }

// TestKeptStacks: a first open whose snapshot the kernel kept gets its
// stack when the EventKeptStack after its repeat comes, as its call and
// in the call sites, first, as the first call is; one lost, or that never comes, is counted, and its
// call stays under call site 0. The counts stay exact either way.
func TestKeptStacks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         *seq
		sites     []trace.CallSite
		firstCall trace.StackID
		lost      uint64
	}{
		{"kept, then brought",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 3).with(kept).
				open(cp, "src", "/tmp/src", 8, 42, 4).with(stack(2)).
				keptStack(cp, 8, 42, 1).
				open(cp, "src", "/tmp/src", 8, 42, 5).with(stack(3)),
			[]trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}}, 1, 0},
		{"its slot reused",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 3).with(kept).
				open(cp, "src", "/tmp/src", 8, 42, 4).with(stack(2)).
				keptStack(cp, 8, 42, 0),
			[]trace.CallSite{{Stack: 0, Count: 1}, {Stack: 2, Count: 1}}, 0, 1},
		{"never brought",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 3).with(kept).
				open(cp, "src", "/tmp/src", 8, 42, 4).with(stack(2)),
			[]trace.CallSite{{Stack: 0, Count: 1}, {Stack: 2, Count: 1}}, 0, 1},
		{"another file's, ignored",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 3).with(kept).
				open(cp, "src", "/tmp/src", 8, 42, 4).with(stack(2)).
				keptStack(cp, 8, 99, 1).keptStack(cp, 8, 42, 4),
			[]trace.CallSite{{Stack: 4, Count: 1}, {Stack: 2, Count: 1}}, 4, 0},
		{"a file opened once: nothing lost",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 3).with(kept),
			nil, 0, 0},
	} {
		for _, pol := range []struct {
			name string
			p    Policy
		}{{"exact", KeepAll(trace.FilesAll)}, {"bounded", Bounded(0, 0)}} {
			t.Run(tc.name+"/"+pol.name, func(t *testing.T) {
				e := New(Options{Policy: pol.p, Stacks: true})
				feed(e, tc.s, t0)
				e.Finish(t0)
				fs := e.Drain()
				if got := e.Totals().StacksFirstLost; got != tc.lost {
					t.Errorf("first calls' stacks lost: %d, want %d", got, tc.lost)
				}
				if tc.sites == nil {
					if len(fs) != 0 {
						t.Errorf("%d findings, want none", len(fs))
					}
					return
				}
				if len(fs) != 1 {
					t.Fatalf("%d findings, want 1", len(fs))
				}
				f := fs[0]
				if !slices.Equal(f.CallSites, tc.sites) {
					t.Errorf("call sites %+v, want %+v", f.CallSites, tc.sites)
				}
				if f.Calls[0].Stack != tc.firstCall {
					t.Errorf("first call's stack %d, want %d", f.Calls[0].Stack, tc.firstCall)
				}
			})
		}
	}
}

func seenBefore(ev *trace.Event) { ev.Open.Status |= trace.StSeenBefore }

// unsentOpens is a thread's count of first opens the kernel counted
// without sending, as it comes with the thread's next event.
func unsentOpens(n uint32) func(*trace.Event) {
	return func(ev *trace.Event) { ev.Open.Unsent = n }
}

// firstCall is the EventKeptStack that brings an image's first open of a
// file, kept in the kernel with its stack instead of sent.
func (s *seq) firstCall(t trace.Task, fname string, dev, ino uint64, ret int32, id trace.StackID) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventKeptStack, Task: t, Stack: id,
		Open: trace.OpenRecord{Syscall: trace.SysOpenat, Fname: fname, Dev: dev, Ino: ino, Ret: ret, Dirfd: -100,
			Flags: 0o400000, EnterNs: 10, ExitNs: 510, FirstCall: true}})
	return s
}

// TestKeptFirstCalls: where the kernel keeps a first open with its stack
// instead of sending it, the repeat comes marked StSeenBefore and the
// first call after it: listed first, with its own fields and stack, and
// counted under its call site. A call lost (its slot reused, or never
// brought) is counted in CallsOmitted, under its stack's call site if
// the stack came, else under call site 0; a stack lost, with or without
// its call, in StacksFirstLost. The counts stay exact, and the file is counted once among the
// image's files, under both policies.
func TestKeptFirstCalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       *seq
		sites   []trace.CallSite
		calls   []string // fname/stack of each call listed
		omitted int
		lost    uint64
	}{
		{"brought",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				firstCall(cp, "./src", 8, 42, 3, 1).
				open(cp, "src", "/tmp/src", 8, 42, 5).with(stack(3)),
			[]trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}},
			[]string{"./src@1", "src@2", "src@3"}, 0, 0},
		{"brought without a stack",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				firstCall(cp, "./src", 8, 42, 3, 0),
			[]trace.CallSite{{Stack: 0, Count: 1}, {Stack: 2, Count: 1}},
			[]string{"./src@0", "src@2"}, 0, 1},
		{"its call lost, its stack brought",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				keptStack(cp, 8, 42, 5),
			[]trace.CallSite{{Stack: 2, Count: 1}, {Stack: 5, Count: 1}},
			[]string{"src@2"}, 1, 0},
		{"its slot reused",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				keptStack(cp, 8, 42, 0),
			[]trace.CallSite{{Stack: 2, Count: 1}, {Stack: 0, Count: 1}},
			[]string{"src@2"}, 1, 1},
		{"never brought",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				open(cp, "src", "/tmp/src", 8, 42, 5).with(stack(3)),
			[]trace.CallSite{{Stack: 2, Count: 1}, {Stack: 3, Count: 1}, {Stack: 0, Count: 1}},
			[]string{"src@2", "src@3"}, 1, 1},
		{"another file's, ignored",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				firstCall(cp, "other", 8, 99, 3, 7).firstCall(cp, "./src", 8, 42, 3, 1),
			[]trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}},
			[]string{"./src@1", "src@2"}, 0, 0},
	} {
		for _, pol := range []struct {
			name string
			p    Policy
		}{{"exact", KeepAll(trace.FilesAll)}, {"bounded", Bounded(0, 0)}} {
			t.Run(tc.name+"/"+pol.name, func(t *testing.T) {
				e := New(Options{Policy: pol.p, Stacks: true})
				feed(e, tc.s, t0)
				e.Finish(t0)
				fs := e.Drain()
				if got := e.Totals().StacksFirstLost; got != tc.lost {
					t.Errorf("first calls lost: %d, want %d", got, tc.lost)
				}
				if len(fs) != 1 {
					t.Fatalf("%d findings, want 1", len(fs))
				}
				f := fs[0]
				if want := len(tc.calls) + tc.omitted; f.Count != want {
					t.Errorf("count %d, want %d", f.Count, want)
				}
				if !slices.Equal(f.CallSites, tc.sites) {
					t.Errorf("call sites %+v, want %+v", f.CallSites, tc.sites)
				}
				var calls []string
				for _, c := range f.Calls {
					calls = append(calls, fmt.Sprintf("%s@%d", c.Fname, c.Stack))
				}
				if !slices.Equal(calls, tc.calls) || f.CallsOmitted != tc.omitted {
					t.Errorf("calls %v (%d omitted), want %v (%d omitted)", calls, f.CallsOmitted, tc.calls, tc.omitted)
				}
				if pol.name == "exact" {
					procs := e.Result().Processes
					if len(procs) != 1 || procs[0].Totals.Files != 1 || procs[0].Totals.Opens != f.Count {
						t.Errorf("processes %+v, want 1 with 1 file, %d opens", procs, f.Count)
					}
				}
			})
		}
	}
}

// TestKeptFirstCallKinds: a first open the kernel kept with its stack and
// brought after its repeat is counted under its own syscall and flags,
// first (it came first), as when every open is sent: the text's CALLS
// column ("open O_RDONLY x1, openat O_RDONLY|O_CLOEXEC x2") and JSON's
// syscalls are the same with --stacks as without. A first call lost
// stays out of the kinds: its syscall and flags are not known.
func TestKeptFirstCallKinds(t *testing.T) {
	openSys := func(ev *trace.Event) { ev.Open.Syscall = trace.SysOpen }
	for _, tc := range []struct {
		name  string
		s     *seq
		kinds []trace.CallKind
	}{
		{"brought, another syscall",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				firstCall(cp, "./src", 8, 42, 3, 1).with(openSys).
				open(cp, "src", "/tmp/src", 8, 42, 5).with(stack(3)),
			[]trace.CallKind{{Syscall: trace.SysOpen, Flags: 0o400000, Count: 1}, {Syscall: trace.SysOpenat, Count: 2}}},
		{"brought, the repeats' own kind",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				firstCall(cp, "./src", 8, 42, 3, 1).with(func(ev *trace.Event) { ev.Open.Flags = 0 }),
			[]trace.CallKind{{Syscall: trace.SysOpenat, Count: 2}}},
		{"its call lost",
			(&seq{}).open(cp, "src", "/tmp/src", 8, 42, 4).with(seenBefore).with(stack(2)).with(unsentOpens(1)).
				keptStack(cp, 8, 42, 5),
			[]trace.CallKind{{Syscall: trace.SysOpenat, Count: 1}}},
	} {
		for _, pol := range []struct {
			name string
			p    Policy
		}{{"exact", KeepAll(trace.FilesAll)}, {"bounded", Bounded(0, 0)}} {
			t.Run(tc.name+"/"+pol.name, func(t *testing.T) {
				e := New(Options{Policy: pol.p, Stacks: true})
				feed(e, tc.s, t0)
				e.Finish(t0)
				fs := e.Drain()
				if len(fs) != 1 {
					t.Fatalf("%d findings, want 1", len(fs))
				}
				if got := fs[0].Kinds; !slices.Equal(got, tc.kinds) {
					t.Errorf("kinds %+v, want %+v", got, tc.kinds)
				}
			})
		}
	}
}
