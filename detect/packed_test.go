package detect

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/oncetool/once/trace"
)

// TestPackedListingIsTheSame: --files all lists the same files, in the
// same order and with the same detail, whether endFiles packs the ones
// opened once or keeps them as they are: files of every list (a file's,
// O_PATH, a device), relative spellings, cut and unreadable names, opens
// untimed, with a call site and without, duplicates and files opened once in
// between, failed opens (absolute, relative, repeated), in two images of
// which one ends by exec.
func TestPackedListingIsTheSame(t *testing.T) {
	s := &seq{}
	for pid := uint32(100); pid < 102; pid++ {
		pt := task(pid, pid, uint64(pid)*1e9, 1, "cc")
		s.fork(pt, 99, 1)
		for i := range 40 {
			f := fmt.Sprintf("/src/h%02d.h", i)
			vary := func(ev *trace.Event) {
				o := &ev.Open
				o.EnterNs, o.ExitNs = uint64(100+i), uint64(1000+7*i)
				ev.Task.Tid = pid
				switch i % 8 {
				case 1:
					o.Fname, o.Dirfd = fmt.Sprintf("h%02d.h", i), 5
				case 2:
					o.Flags = trace.OPath
				case 3:
					o.FileType = trace.FileChr
				case 4:
					o.Status |= trace.StFnameTruncated | trace.StPathTruncated
				case 5:
					o.Status |= trace.StUntimed
				case 6:
					o.Flags, o.Mode = 0o1101, 0o644
				case 7:
					o.Status |= trace.StFnameUnreadable
					o.Fname = ""
				}
				if i%3 == 0 {
					ev.Stack = trace.StackID(1 + i%5)
				}
			}
			s.open(pt, f, f, 1, uint64(10+i), 3).with(vary)
			if i%10 == 0 || i%10 == 3 {
				s.open(pt, f, f, 1, uint64(10+i), 4).with(vary)
			}
			// Failed opens: absolute, relative (the directory tried in
			// as its path), some repeated.
			if i%4 == 0 {
				miss := fmt.Sprintf("/src/missing%02d.h", i)
				s.open(pt, miss, "", 0, 0, -2).with(vary)
				if i%12 == 0 {
					s.open(pt, miss, "", 0, 0, -2)
				}
			}
			if i%4 == 1 {
				s.open(pt, fmt.Sprintf("rel%02d.h", i), "/src", 0, 0, -13).with(vary)
			}
		}
		if pid == 100 {
			next := pt
			next.ExecID = 2
			s.exec(next, "/bin/cc", 0).image(next, "/bin/cc")
			s.open(next, "/src/x.c", "/src/x.c", 1, 99, 3)
			pt = next
		}
		s.exit(pt, 0)
	}
	var packed [2]int // files and failed opens packed
	lists := func(pack bool) []*trace.Process {
		packListing = pack
		defer func() { packListing = true }()
		e := New(Options{Policy: KeepAll(trace.FilesAll), Stacks: true})
		feed(e, s, t0)
		ps := e.Result().Processes
		for i := range e.packed.n {
			if pf := e.packed.at(i); !pf.full && pf.failed {
				packed[1]++
			} else if !pf.full {
				packed[0]++
			}
		}
		return ps
	}
	want, got := lists(false), lists(true)
	if packed[0] < 40 || packed[1] < 20 {
		t.Errorf("%d files and %d failed opens packed, want at least 40 and 20", packed[0], packed[1])
	}
	if len(got) != len(want) {
		t.Fatalf("%d processes packed, %d not", len(got), len(want))
	}
	n, nf := 0, 0
	for i := range want {
		w, g := want[i], got[i]
		nf += len(w.FailedOpens)
		if !reflect.DeepEqual(w.FailedOpens, g.FailedOpens) {
			t.Errorf("pid %d: failed opens packed %+v, not %+v", w.Pid, g.FailedOpens, w.FailedOpens)
		}
		for _, l := range [][2][]*trace.FileOpens{{w.Opens, g.Opens}, {w.PathOpens, g.PathOpens}, {w.SpecialOpens, g.SpecialOpens}} {
			n += len(l[0])
			if !reflect.DeepEqual(l[0], l[1]) {
				for j := range min(len(l[0]), len(l[1])) {
					if !reflect.DeepEqual(l[0][j], l[1][j]) {
						t.Errorf("pid %d file %d: packed %+v, not %+v", w.Pid, j, *l[1][j], *l[0][j])
						break
					}
				}
				t.Errorf("pid %d: %d files listed packed, %d not", w.Pid, len(l[1]), len(l[0]))
			}
		}
	}
	if n < 80 || nf < 30 {
		t.Errorf("%d files and %d failed opens listed in all, want at least 80 and 30", n, nf)
	}
}
