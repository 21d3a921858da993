package callstack

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/oncetool/once/stack"
)

// mp is an executable mapping of path over [start, end).
func mp(start, end uint64, path string) stack.Mapping {
	return stack.Mapping{Start: start, End: end, Perms: "r-xp", Path: path, Inode: 1}
}

// show names a mapping set compactly: "a:1000-2000+0 b:3000-4000+0".
func show(ms []stack.Mapping) string {
	var b []string
	for _, m := range ms {
		b = append(b, fmt.Sprintf("%s:%x-%x+%x", m.Path, m.Start, m.End, m.FileOffset))
	}
	return strings.Join(b, " ")
}

// noProc is a /proc fallback that knows no process.
func noProc(int) ([]stack.Mapping, error) { return nil, errors.New("no such process") }

type op func(s *Maps)

func mmap(pid int, t uint64, m stack.Mapping) op { return func(s *Maps) { s.Mmap(pid, t, m) } }
func execAt(pid int, t uint64) op                { return func(s *Maps) { s.Exec(pid, t) } }
func fork(parent, child int, t uint64) op        { return func(s *Maps) { s.Fork(parent, child, t) } }
func exit(pid int, t uint64) op                  { return func(s *Maps) { s.Exit(pid, t) } }

type query struct {
	pid  int
	t    uint64
	want string
}

func TestMapsTimeline(t *testing.T) {
	a, b, c := mp(0x1000, 0x2000, "/a"), mp(0x3000, 0x4000, "/b"), mp(0x5000, 0x6000, "/c")
	tests := []struct {
		name string
		ops  []op
		qs   []query
	}{
		{"mmap covers from its time", []op{mmap(1, 10, a), mmap(1, 20, b)}, []query{
			{1, 9, ""}, {1, 10, "/a:1000-2000+0"}, {1, 19, "/a:1000-2000+0"},
			{1, 20, "/a:1000-2000+0 /b:3000-4000+0"}, {1, 1 << 40, "/a:1000-2000+0 /b:3000-4000+0"},
		}},
		{"sorted by address", []op{mmap(1, 10, c), mmap(1, 11, a), mmap(1, 12, b)}, []query{
			{1, 12, "/a:1000-2000+0 /b:3000-4000+0 /c:5000-6000+0"},
		}},
		{"data mappings ignored", []op{mmap(1, 10, stack.Mapping{Start: 0x1000, End: 0x2000, Perms: "rw-p", Path: "/d"})}, []query{
			{1, 10, ""},
		}},
		{"exec ends the old image", []op{mmap(1, 10, a), execAt(1, 30), mmap(1, 31, b)}, []query{
			{1, 29, "/a:1000-2000+0"}, {1, 30, ""}, {1, 31, "/b:3000-4000+0"},
		}},
		{"an mmap applied after a later exec ends at the exec", []op{execAt(1, 30), mmap(1, 10, a), mmap(1, 31, b)}, []query{
			{1, 10, "/a:1000-2000+0"}, {1, 30, ""}, {1, 40, "/b:3000-4000+0"},
		}},
		{"fork inherits, then each goes its way", []op{mmap(1, 10, a), fork(1, 2, 20), mmap(1, 25, b), execAt(2, 30), mmap(2, 31, c)}, []query{
			{2, 19, ""}, {2, 20, "/a:1000-2000+0"}, {2, 29, "/a:1000-2000+0"}, {2, 30, ""}, {2, 31, "/c:5000-6000+0"},
			{1, 40, "/a:1000-2000+0 /b:3000-4000+0"},
		}},
		{"a thread is no new process", []op{mmap(1, 10, a), fork(1, 1, 20), mmap(1, 25, b)}, []query{
			{1, 30, "/a:1000-2000+0 /b:3000-4000+0"},
		}},
		{"exit keeps the maps queryable", []op{mmap(1, 10, a), exit(1, 20)}, []query{
			{1, 15, "/a:1000-2000+0"}, {1, 20, "/a:1000-2000+0"},
		}},
		{"pid reuse: a new fork ends the old process", []op{mmap(5, 10, a), exit(5, 20), mmap(1, 5, b), fork(1, 5, 30)}, []query{
			{5, 15, "/a:1000-2000+0"}, {5, 30, "/b:3000-4000+0"},
		}},
		{"overlap: the newer mapping replaces the older over its range", []op{
			mmap(1, 10, mp(0x1000, 0x5000, "/big")), mmap(1, 20, mp(0x2000, 0x3000, "/mid")),
		}, []query{
			{1, 15, "/big:1000-5000+0"},
			{1, 20, "/big:1000-2000+0 /mid:2000-3000+0 /big:3000-5000+2000"},
		}},
		{"overlap at the same time: the one applied last wins", []op{
			mmap(1, 10, mp(0x1000, 0x3000, "/x")), mmap(1, 10, mp(0x1000, 0x2000, "/y")),
		}, []query{
			{1, 10, "/y:1000-2000+0 /x:2000-3000+1000"},
		}},
		{"overlap applied late: the older ends where the newer began", []op{
			mmap(1, 20, mp(0x1000, 0x2000, "/new")), mmap(1, 10, mp(0x1000, 0x2000, "/old")),
		}, []query{
			{1, 15, "/old:1000-2000+0"}, {1, 20, "/new:1000-2000+0"},
		}},
		{"exec after exit revives the pid", []op{mmap(1, 10, a), exit(1, 20), execAt(1, 21), mmap(1, 22, b)}, []query{
			{1, 15, "/a:1000-2000+0"}, {1, 22, "/b:3000-4000+0"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMaps(0)
			s.read = noProc
			for _, o := range tc.ops {
				o(s)
			}
			for _, q := range tc.qs {
				if got := show(s.At(q.pid, q.t)); got != q.want {
					t.Errorf("At(%d, %d) = %q, want %q", q.pid, q.t, got, q.want)
				}
			}
		})
	}
}

// TestMapsProcFallback: a process never seen is read from /proc once, and
// only its executable mappings are kept; a failed read is not retried.
func TestMapsProcFallback(t *testing.T) {
	s := NewMaps(0)
	reads := map[int]int{}
	s.read = func(pid int) ([]stack.Mapping, error) {
		reads[pid]++
		if pid == 7 {
			return []stack.Mapping{mp(0x1000, 0x2000, "/bin/sh"), {Start: 0x3000, End: 0x4000, Perms: "rw-p"}}, nil
		}
		return nil, errors.New("gone")
	}
	for range 3 {
		if got := show(s.At(7, 5)); got != "/bin/sh:1000-2000+0" {
			t.Fatalf("At(7) = %q", got)
		}
		if got := s.At(8, 5); got != nil {
			t.Fatalf("At(8) = %v", got)
		}
	}
	// A fork from a process running before tracing inherits what /proc said.
	s.Fork(7, 9, 10)
	if got := show(s.At(9, 10)); got != "/bin/sh:1000-2000+0" {
		t.Errorf("At(9) = %q", got)
	}
	// An exec of such a process does not read /proc (its old image is gone).
	s.Exec(10, 10)
	if reads[7] != 1 || reads[8] != 1 || reads[9] != 0 || reads[10] != 0 {
		t.Errorf("reads %v, want 7 and 8 once each", reads)
	}
	if st := s.Stats(); st.ProcReads != 2 || st.ProcErrors != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestMapsSeed: a process seeded while it runs keeps what /proc said
// after it exits (its /proc gone), where one first asked about then has
// nothing; a known process is not read again.
func TestMapsSeed(t *testing.T) {
	s := NewMaps(0)
	alive := map[int]bool{7: true, 8: true}
	reads := map[int]int{}
	s.read = func(pid int) ([]stack.Mapping, error) {
		reads[pid]++
		if alive[pid] {
			return []stack.Mapping{mp(0x1000, 0x2000, "/bin/sh")}, nil
		}
		return nil, errors.New("gone")
	}
	s.Seed(7)
	s.Seed(7)
	s.Mmap(8, 3, mp(0x5000, 0x6000, "/bin/ls"))
	s.Seed(8) // known from its records: not read
	alive[7], alive[8] = false, false
	s.Exit(7, 4)
	if got := show(s.At(7, 5)); got != "/bin/sh:1000-2000+0" {
		t.Errorf("At(7) after its exit = %q, want what /proc said while it ran", got)
	}
	// Its first record read /proc too.
	if got := show(s.At(8, 5)); got != "/bin/sh:1000-2000+0 /bin/ls:5000-6000+0" {
		t.Errorf("At(8) = %q", got)
	}
	if got := s.At(9, 5); got != nil {
		t.Errorf("At(9), never seeded and gone = %v", got)
	}
	if reads[7] != 1 || reads[8] != 1 || reads[9] != 1 {
		t.Errorf("reads %v, want 7, 8 (its Mmap record, the first seen) and 9 once each", reads)
	}
}

// TestMapsProcSelf: the real fallback on this very process gives its
// executable mappings, the test binary's among them, with its build-id.
func TestMapsProcSelf(t *testing.T) {
	s := NewMaps(0)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := stack.ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(m stack.Mapping) bool { return !m.Exec() })
	got := s.At(os.Getpid(), 1)
	if show(got) != show(want) {
		t.Fatalf("At(self) = %s\nwant %s", show(got), show(want))
	}
	found := false
	for _, m := range got {
		if m.Path == exe {
			found = true
			if m.BuildID == "" || m.Inode == 0 {
				t.Errorf("the test binary's mapping lacks its identity: %+v", m)
			}
		}
	}
	if !found {
		t.Errorf("no mapping of %s in %s", exe, show(got))
	}
}

// TestMapsBudget: past the budget the exited processes go first, oldest
// exit first, then the least recently used; each counts as an eviction,
// and an exited process evicted is not read again from /proc.
func TestMapsBudget(t *testing.T) {
	one := mappingBytes(&stack.Mapping{Perms: "r-xp", Path: "/p"}) + procBytes
	s := NewMaps(4 * one)
	reads := 0
	s.read = func(int) ([]stack.Mapping, error) { reads++; return nil, errors.New("gone") }
	for pid := 1; pid <= 4; pid++ {
		s.Mmap(pid, uint64(pid), mp(0x1000, 0x2000, "/p"))
	}
	reads = 0
	s.Exit(3, 10)
	s.Exit(2, 11)
	s.At(1, 12) // 1 is now more recently used than 4
	if st := s.Stats(); st.Evicted != 0 || st.Procs != 4 || st.Bytes != 4*one {
		t.Fatalf("before: %+v", st)
	}
	s.Mmap(5, 13, mp(0x1000, 0x2000, "/p")) // evicts 3 (oldest exit)
	s.Mmap(6, 14, mp(0x1000, 0x2000, "/p")) // evicts 2
	s.Mmap(7, 15, mp(0x1000, 0x2000, "/p")) // no exited left: evicts 4 (LRU)
	st := s.Stats()
	if st.Evicted != 3 || st.Procs != 4 || st.Bytes > 4*one {
		t.Fatalf("after: %+v", st)
	}
	for _, pid := range []int{1, 5, 6, 7} {
		if got := show(s.At(pid, 20)); got != "/p:1000-2000+0" {
			t.Errorf("At(%d) = %q", pid, got)
		}
	}
	reads = 0
	if s.At(3, 9) != nil || s.At(2, 9) != nil || reads != 0 {
		t.Errorf("an evicted exited process was read again (%d reads)", reads)
	}
	// 4 was live when evicted: it is read again from /proc.
	s.At(4, 20)
	if reads != 1 {
		t.Errorf("an evicted live process: %d reads, want 1", reads)
	}
}

// TestMapsPrune: mappings replaced long ago do not pile up.
func TestMapsPrune(t *testing.T) {
	s := NewMaps(0)
	s.read = noProc
	for i := range uint64(10000) {
		s.Mmap(1, i*100e6, mp(0x1000, 0x2000, fmt.Sprint("/lib", i)))
	}
	// 100 replaced within the grace, and the amortized pruning's slack.
	p := s.procs[1]
	if len(p.spans) < 100 || len(p.spans) > 2*101+32 {
		t.Errorf("%d spans kept", len(p.spans))
	}
	var n int64 = procBytes
	for i := range p.spans {
		n += mappingBytes(&p.spans[i].m)
	}
	if st := s.Stats(); st.Bytes != n {
		t.Errorf("bytes %d, spans count %d", st.Bytes, n)
	}
	if got := show(s.At(1, 9999*100e6)); got != "/lib9999:1000-2000+0" {
		t.Errorf("At = %q", got)
	}
	if got := show(s.At(1, 9900*100e6+5)); got != "/lib9900:1000-2000+0" {
		t.Errorf("within the grace: At = %q", got)
	}
}

// TestMapsFollowFrom: following one tree (once run's), the records of
// processes outside it are ignored: their /proc/PID/maps is never read
// and their mappings take none of the budget; root's and its
// descendants' are kept, a reused pid is no descendant, and a process a
// snapshot asks about is read and followed from then on.
func TestMapsFollowFrom(t *testing.T) {
	const root, child, grandchild, stranger, strangersChild, lost = 100, 101, 102, 200, 201, 300
	s := NewMaps(0)
	reads := map[int]int{}
	s.read = func(pid int) ([]stack.Mapping, error) {
		reads[pid]++
		return []stack.Mapping{mp(0x1000, 0x2000, fmt.Sprintf("/proc%d", pid))}, nil
	}
	s.FollowFrom(root)
	a, b, c := mp(0x3000, 0x4000, "/a"), mp(0x5000, 0x6000, "/b"), mp(0x7000, 0x8000, "/c")
	s.Fork(root, child, 10)
	s.Exec(child, 11)
	s.Mmap(child, 12, a)
	s.Fork(child, grandchild, 13)
	s.Mmap(grandchild, 14, b)
	// Another user's processes, running before the trace began.
	s.Fork(stranger, strangersChild, 15)
	s.Mmap(stranger, 16, c)
	s.Exec(strangersChild, 17)
	s.Mmap(strangersChild, 18, c)
	if reads[stranger] != 0 || reads[strangersChild] != 0 {
		t.Errorf("a process outside the tree was read from /proc: %v", reads)
	}
	if st := s.Stats(); st.Procs != 3 {
		t.Errorf("%d processes held, want root, child and grandchild", st.Procs)
	}
	for _, q := range []query{
		{child, 10, "/proc100:1000-2000+0"},
		{child, 12, "/a:3000-4000+0"},
		{grandchild, 14, "/a:3000-4000+0 /b:5000-6000+0"},
	} {
		if got := show(s.At(q.pid, q.t)); got != q.want {
			t.Errorf("At(%d, %d) = %q, want %q", q.pid, q.t, got, q.want)
		}
	}
	// The grandchild exits; its pid, reused outside the tree, is not
	// followed.
	s.Exit(grandchild, 20)
	s.Fork(stranger, grandchild, 21)
	s.Mmap(grandchild, 22, c)
	if got := show(s.At(grandchild, 22)); got != "/a:3000-4000+0 /b:5000-6000+0" {
		t.Errorf("a reused pid's mapping was taken: At = %q", got)
	}
	// A traced process whose fork record was lost: asked about, it is
	// read, and followed from then on.
	if got := show(s.At(lost, 30)); got != "/proc300:1000-2000+0" {
		t.Errorf("At(lost) = %q", got)
	}
	s.Mmap(lost, 31, a)
	if got := show(s.At(lost, 31)); got != "/proc300:1000-2000+0 /a:3000-4000+0" {
		t.Errorf("At(lost) after its mmap = %q", got)
	}
}
