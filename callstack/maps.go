package callstack

import (
	"container/list"
	"math"
	"sort"
	"sync"

	"github.com/oncetool/once/stack"
)

// Maps is the executable mappings of every process over time, fed by
// the kernel's perf records (collector.MapsReader drains them into it:
// *Maps is a collector.MapsSink) and asked, for a snapshot taken at time
// t (CLOCK_MONOTONIC nanoseconds, bpf_ktime_get_ns's clock), which
// mappings its process had then.
//
// Why perf MMAP2 records and not /proc/PID/maps: the kernel emits a
// record at each executable mmap, as it happens, with the file's path,
// device, inode and (kernel 5.12 and later) build-id, so the mappings of
// a process that lived a millisecond are exact, and so is the moment
// each appeared. /proc/PID/maps is a moment's picture: read it at exec
// and it misses what the process maps later (dlopen); read it at each
// call and it is racy and, for a process that has already exited, gone.
// /proc/PID/maps remains the fallback for a process that was running
// before tracing began, read once when it is first asked about.
//
// The kernel reports no munmap: a newer mapping over an older one's
// range replaces it there, and an exec ends every earlier mapping. An
// exited process stays queryable (snapshots of its last calls are still
// in flight) until the byte budget needs the room: exited processes go
// first, oldest exit first, then the least recently used live ones.
// Its methods are safe for concurrent use.
type Maps struct {
	mu     sync.Mutex
	procs  map[int]*proc
	live   *list.List // of *proc, least recently used at the back
	exited *list.List // of *proc, oldest exit at the front
	gone   map[int]bool
	bytes  int64
	budget int64
	now    uint64 // the newest event time seen
	// read is the /proc/PID/maps fallback (stack.ReadMaps; tests swap it).
	read                        func(pid int) ([]stack.Mapping, error)
	evicted, procReads, procErr uint64
	// root and members: with root set (FollowFrom), the records of
	// root and its descendants only (members, by the fork records);
	// root 0: every process's.
	root    int
	members map[int]struct{}
}

// maxMembers bounds the processes a Maps following one tree remembers as
// in it (an exit record lost leaves its pid there): past it, it follows
// every process, as without FollowFrom.
const maxMembers = 1 << 18

// FollowFrom keeps the records of process root and of the processes it
// and they fork from now on, and ignores every other's: once run's
// command tree, where the records come from every process on the machine
// (collector.MapsReader is system-wide). Without it, any user's process,
// traced or not, that forks or maps code during the run has its
// /proc/PID/maps read and each of its mapped files opened, as root, on
// the drain's path, and its mappings take the budget from the traced
// processes': one with 60,000 mappings of a file with a long path,
// forking every 20ms, stalled a 2.5s run for 20s, grew once by 500 MB
// and left most of the command's stacks at an unknown mapping. At asks
// of any process all the same (a snapshot is of a traced one).
func (s *Maps) FollowFrom(root int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.root = root
	s.members = map[int]struct{}{root: {}}
}

// follows says whether the records of pid are kept.
func (s *Maps) follows(pid int) bool {
	if s.root == 0 {
		return true
	}
	_, ok := s.members[pid]
	return ok
}

// join makes pid one of the followed tree's.
func (s *Maps) join(pid int) {
	if s.root == 0 {
		return
	}
	if len(s.members) >= maxMembers {
		s.root, s.members = 0, nil
		return
	}
	s.members[pid] = struct{}{}
}

// proc is one process's mappings: spans, each live for queries in
// [from, until).
type proc struct {
	pid       int
	spans     []span
	execs     []uint64 // the last exec times, for mmaps applied late
	exited    bool
	elem      *list.Element
	bytes     int64
	nextPrune int
}

type span struct {
	m           stack.Mapping
	from, until uint64
}

const forever = math.MaxUint64

// DefaultMapsBudget is what a Maps keeps when given 0: some 100,000
// mappings.
const DefaultMapsBudget = 16 << 20

// mappingBytes is what one span counts against the budget.
func mappingBytes(m *stack.Mapping) int64 {
	return 96 + int64(len(m.Path)+len(m.BuildID)+len(m.Perms))
}

// procBytes is a process's fixed cost.
const procBytes = 128

// spanGrace is how long (event time, ns) a mapping that was replaced
// stays queryable: the snapshots taken before it was replaced may still
// be in flight.
const spanGrace = 10e9

// maxGone bounds the pids remembered as evicted after their exit (so
// that a late query gets nothing rather than another process's maps).
const maxGone = 4096

// NewMaps returns an empty store bounded to budget bytes (0:
// DefaultMapsBudget).
func NewMaps(budget int64) *Maps {
	if budget <= 0 {
		budget = DefaultMapsBudget
	}
	return &Maps{
		procs: map[int]*proc{}, live: list.New(), exited: list.New(), gone: map[int]bool{},
		budget: budget, read: stack.ReadMaps,
	}
}

// MapsStats are a Maps' counts.
type MapsStats struct {
	Procs int   // processes held
	Bytes int64 // what they count against the budget
	// Evicted counts processes dropped to stay within the budget.
	Evicted uint64
	// ProcReads counts processes first seen through /proc/PID/maps (they
	// were running before tracing began); ProcErrors those of them whose
	// maps could not be read (they had exited).
	ProcReads, ProcErrors uint64
}

// Stats returns the store's counts.
func (s *Maps) Stats() MapsStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return MapsStats{Procs: len(s.procs), Bytes: s.bytes, Evicted: s.evicted, ProcReads: s.procReads, ProcErrors: s.procErr}
}

// Mmap records that process pid mapped m at time t. A mapping that is not
// executable is ignored.
func (s *Maps) Mmap(pid int, t uint64, m stack.Mapping) {
	if !m.Exec() || m.End <= m.Start {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(t)
	if !s.follows(pid) {
		return
	}
	p := s.proc(pid, true)
	until := uint64(forever)
	for _, e := range p.execs {
		if e > t && e < until {
			until = e
		}
	}
	var add []span
	for i := 0; i < len(p.spans); i++ {
		o := &p.spans[i]
		if o.m.End <= m.Start || m.End <= o.m.Start || o.until <= t {
			continue
		}
		if o.from > t {
			// Applied late: the newer mapping o replaced m there.
			until = min(until, o.from)
			continue
		}
		// m replaces o over the overlap from t on; o's other parts live on.
		if o.m.Start < m.Start {
			left := o.m
			left.End = m.Start
			add = append(add, span{left, t, o.until})
		}
		if o.m.End > m.End {
			right := o.m
			right.Start = m.End
			right.FileOffset += m.End - o.m.Start
			add = append(add, span{right, t, o.until})
		}
		if o.from == t {
			s.dropSpan(p, i)
			i--
			continue
		}
		o.until = t
	}
	for _, sp := range add {
		s.addSpan(p, sp)
	}
	s.addSpan(p, span{m, t, until})
	if len(p.spans) >= p.nextPrune {
		s.prune(p)
	}
	s.fit()
}

// Exec records that process pid executed a new program at time t: every
// mapping it had before ends there.
func (s *Maps) Exec(pid int, t uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(t)
	if !s.follows(pid) {
		return
	}
	p := s.proc(pid, false)
	for i := range p.spans {
		if o := &p.spans[i]; o.from < t && o.until > t {
			o.until = t
		}
	}
	p.execs = append(p.execs, t)
	if len(p.execs) > 8 {
		p.execs = append(p.execs[:0], p.execs[len(p.execs)-8:]...)
	}
	s.revive(p)
	s.prune(p)
	s.fit()
}

// Fork records that process parent made process child at time t: the
// child has the parent's mappings. A thread (child == parent) is no new
// process.
func (s *Maps) Fork(parent, child int, t uint64) {
	if parent == child {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(t)
	if !s.follows(parent) {
		return
	}
	s.join(child)
	pp := s.proc(parent, true)
	var inherit []span
	for _, o := range pp.spans {
		if o.from <= t && t < o.until {
			inherit = append(inherit, span{o.m, t, forever})
		}
	}
	c := s.procs[child]
	if c == nil {
		c = s.newProc(child)
	} else {
		// The pid was used before: that process's mappings end here.
		for i := range c.spans {
			c.spans[i].until = min(c.spans[i].until, t)
		}
		c.execs = c.execs[:0]
		s.revive(c)
		s.prune(c)
	}
	for _, sp := range inherit {
		s.addSpan(c, sp)
	}
	s.fit()
}

// Exit records that process pid exited at time t. Its mappings stay
// queryable until the budget needs the room.
func (s *Maps) Exit(pid int, t uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(t)
	if s.root != 0 && pid != s.root {
		delete(s.members, pid) // its pid may be reused by any process
	}
	p := s.procs[pid]
	if p == nil || p.exited {
		return
	}
	s.live.Remove(p.elem)
	p.exited = true
	p.elem = s.exited.PushBack(p)
}

// At returns the executable mappings process pid had at time t, sorted by
// address; nil if none is known. A process never seen is read from
// /proc/PID/maps, once.
func (s *Maps) At(pid int, t uint64) []stack.Mapping {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.follows(pid) {
		// A traced process whose fork record was lost (a ring that
		// overflowed): its records are kept from now on.
		s.join(pid)
	}
	p := s.procs[pid]
	if p == nil {
		if s.gone[pid] {
			return nil
		}
		p = s.proc(pid, true)
		s.fit()
		if s.procs[pid] != p {
			return nil
		}
	}
	if !p.exited {
		s.live.MoveToFront(p.elem)
	}
	var out []stack.Mapping
	for i := range p.spans {
		if o := &p.spans[i]; o.from <= t && t < o.until {
			out = append(out, o.m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Seed reads now, from /proc/PID/maps, the mappings of pid, a process
// running before tracing began, unless it is known already. At reads
// them when the process's first snapshot is resolved, which is too late
// for one that exits right after its calls (most of them: its snapshots
// are drained after its exit, and /proc has nothing then): its frames
// were all at an unknown mapping. once watch seeds the processes its
// filters name when it starts.
func (s *Maps) Seed(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.follows(pid) || s.procs[pid] != nil || s.gone[pid] {
		return
	}
	s.proc(pid, true)
	s.fit()
}

func (s *Maps) saw(t uint64) { s.now = max(s.now, t) }

// proc returns pid's process, made if new: from /proc/PID/maps if seed
// (a process running before tracing began), else empty.
func (s *Maps) proc(pid int, seed bool) *proc {
	if p := s.procs[pid]; p != nil {
		return p
	}
	p := s.newProc(pid)
	if !seed {
		return p
	}
	s.procReads++
	maps, err := s.read(pid)
	if err != nil {
		s.procErr++
		return p
	}
	for _, m := range maps {
		if m.Exec() {
			s.addSpan(p, span{m, 0, forever})
		}
	}
	return p
}

func (s *Maps) newProc(pid int) *proc {
	delete(s.gone, pid)
	p := &proc{pid: pid, bytes: procBytes, nextPrune: 32}
	p.elem = s.live.PushFront(p)
	s.procs[pid] = p
	s.bytes += procBytes
	return p
}

func (s *Maps) revive(p *proc) {
	if p.exited {
		s.exited.Remove(p.elem)
		p.exited = false
		p.elem = s.live.PushFront(p)
	}
}

func (s *Maps) addSpan(p *proc, sp span) {
	n := mappingBytes(&sp.m)
	p.spans = append(p.spans, sp)
	p.bytes += n
	s.bytes += n
}

func (s *Maps) dropSpan(p *proc, i int) {
	n := mappingBytes(&p.spans[i].m)
	p.spans = append(p.spans[:i], p.spans[i+1:]...)
	p.bytes -= n
	s.bytes -= n
}

// prune drops p's mappings that ended more than spanGrace ago.
func (s *Maps) prune(p *proc) {
	keep := p.spans[:0]
	for _, o := range p.spans {
		if o.until != forever && o.until+spanGrace < s.now {
			n := mappingBytes(&o.m)
			p.bytes -= n
			s.bytes -= n
			continue
		}
		keep = append(keep, o)
	}
	clear(p.spans[len(keep):])
	p.spans = keep
	p.nextPrune = 2*len(keep) + 32
}

// fit evicts processes until the store is within its budget: exited
// ones first, oldest exit first, then the least recently used.
func (s *Maps) fit() {
	for s.bytes > s.budget {
		var p *proc
		if e := s.exited.Front(); e != nil {
			p = e.Value.(*proc)
			s.exited.Remove(e)
			if len(s.gone) >= maxGone {
				clear(s.gone)
			}
			s.gone[p.pid] = true
		} else if e := s.live.Back(); e != nil {
			p = e.Value.(*proc)
			s.live.Remove(e)
		} else {
			return
		}
		delete(s.procs, p.pid)
		s.bytes -= p.bytes
		s.evicted++
	}
}
