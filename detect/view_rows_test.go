package detect

import (
	"testing"

	"github.com/oncetool/once/trace"
)

// TestRowOrderCountsLookups: sorted by wasted time, a row ranks by the
// time its WASTED column shows, avoidable lookups included: a python3
// that lost 1.4 ms to lookups ranked below one that lost 0.7 ms to exec
// probes.
func TestRowOrderCountsLookups(t *testing.T) {
	lookups := Waste{OpenNs: 100, LookupNs: 1300}
	execs := Waste{ExecNs: 700}
	if c := rowOrder(SortTime, &lookups, &execs, trace.ImageKey{Pid: 2}, trace.ImageKey{Pid: 1}); c >= 0 {
		t.Errorf("rowOrder(1.4ms with lookups, 0.7ms) = %d, want the first first", c)
	}
}

// TestLookupsCountedLive: a live row counts a file looked up again and a
// path missed again as they happen, as it counts a file opened again,
// not only when the image ends and their findings are made: a loop's
// LOOKWASTE read 0 for as long as it ran, then jumped at its exit (and
// WASTED/S with it). A search chain reported later takes back the
// misses it claims, and a name --ignore matches what its file counted;
// at the end the row counts what the findings do, exactly.
func TestLookupsCountedLive(t *testing.T) {
	sh := task(30, 30, 700, 1, "sh")
	stat := func(s *seq, name string, ino uint64) *seq {
		return s.lookup(sh, trace.SysNewfstatat, name, 8, ino, 0, false)
	}
	miss := func(s *seq, name string) *seq { return s.lookup(sh, trace.SysAccess, name, 0, 0, enoent, false) }
	search := func(s *seq) *seq { return stat(miss(miss(s, "/a/ls"), "/b/ls"), "/usr/bin/ls", 44) }
	type count struct {
		n     int
		ns    uint64
		worst string
	}
	for _, tc := range []struct {
		name string
		s    *seq
		// mid: while the image runs; held: once its held chains are
		// released (HeldFor later); end: after its exit.
		mid, held, end count
	}{
		{"a file stat-ed again", stat(stat(stat(&seq{}, "/etc", 2), "/etc", 2), "/etc", 2),
			count{2, 2000, "stat /etc x3"}, count{2, 2000, "stat /etc x3"}, count{2, 2000, "stat /etc x3"}},
		{"a path missed again", miss(miss(miss(&seq{}, "/etc/app.conf"), "/etc/app.conf"), "/etc/app.conf"),
			count{2, 2000, "miss /etc/app.conf x3 (ENOENT)"}, count{2, 2000, "miss /etc/app.conf x3 (ENOENT)"},
			count{2, 2000, "miss /etc/app.conf x3 (ENOENT)"}},
		{"repeats counted in the kernel", func() *seq {
			s := miss(stat(stat(&seq{}, "/etc", 2), "/etc", 2).tally(sh, trace.SysNewfstatat, 0, 8, 2, 5, 5000), "/etc/app.conf")
			s.evs = append(s.evs, trace.Event{Kind: trace.EventUnsent, Task: sh, Proc: trace.ProcRecord{
				LookupMissRepeats: trace.Repeats{N: 4, Syscall: trace.SysAccess}}})
			return s
		}(), count{10, 10000, "stat /etc x7"}, count{10, 10000, "stat /etc x7"}, count{10, 10000, "stat /etc x7"}},
		{"a file stat-ed again, then under a name --ignore matches", stat(stat(stat(&seq{}, "/etc/x", 3), "/etc/x", 3), "/ign/x", 3),
			count{}, count{}, count{}},
		{"a PATH search by stat, twice", search(search(&seq{})),
			// Held: each miss and the find counted once again;
			// released: the chains' four failures, the misses
			// theirs, the find once again.
			count{3, 3000, "stat /usr/bin/ls x2"}, count{5, 5000, "look up ls (2 failed)"}, count{5, 5000, "look up ls (2 failed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ig, err := NewIgnore([]string{"/ign/**"})
			if err != nil {
				t.Fatal(err)
			}
			e := New(Options{Policy: Bounded(0, 0), Ignore: ig})
			check := func(when string, want count) {
				t.Helper()
				var got count
				for _, r := range e.Rows(SortTime, 0, GroupPid) {
					got = count{r.Lookups, r.LookupNs, r.Worst}
				}
				if got != want {
					t.Errorf("%s: row's lookups %d (%d ns), worst %q; want %d (%d ns), %q", when, got.n, got.ns, got.worst, want.n, want.ns, want.worst)
				}
				if tot := e.Totals().LookupWaste; tot != uint64(want.n) {
					t.Errorf("%s: totals' lookups wasted %d, want %d", when, tot, want.n)
				}
			}
			feed(e, tc.s, t0)
			check("running", tc.mid)
			e.Expire(t0.Add(2 * HeldFor))
			check("chains released", tc.held)
			feed(e, (&seq{}).exit(sh, 0), t0.Add(2*HeldFor))
			check("exited", tc.end)
			n, ns := 0, uint64(0)
			for _, f := range e.Drain() {
				if f.Kind == trace.KindDuplicateStat || f.Kind == trace.KindRepeatedMiss || f.Kind == trace.KindFailedStatProbes {
					n += f.Avoidable()
					ns += f.WastedNs
				}
			}
			if n != tc.end.n || ns != tc.end.ns {
				t.Errorf("findings' lookups %d (%d ns), want what the row counts: %d (%d ns)", n, ns, tc.end.n, tc.end.ns)
			}
		})
	}
}
