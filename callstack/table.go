package callstack

import (
	"encoding/binary"
	"hash/maphash"
	"sort"
	"sync"
	"time"

	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/trace"
)

// Table turns the kernel's snapshots into interned stacks: each snapshot
// is unwound as it arrives (its process's mappings may be gone a moment
// later), the stack is named by its frames' modules and offsets, so the
// same call site in a thousand processes of one program is one stack,
// and symbolized only when a report asks for it. Bounded in bytes, the
// names its symbolized frames keep included; its methods are safe for
// concurrent use.
type Table struct {
	mu     sync.Mutex
	cache  *stack.Cache
	seed   maphash.Seed
	byKey  map[uint64][]trace.StackID // hash of a stack's frames → candidates
	stacks []entry                    // by StackID-1
	names  map[string]string          // the function and file names kept, each once
	bytes  int64
	budget int64
	// Counters, by call.
	captured, truncated, unknown, stopped, notKept uint64
	// namesDropped: frames symbolized past the budget, whose names
	// were not kept.
	namesDropped uint64
}

// nameShare is the part of a table's budget that only names may use:
// stacks stop being kept at the rest, so that a report can still name
// the frames of those kept.
const nameShare = 4

// nameBytes is what keeping one distinct name costs besides its bytes:
// its string header and its map entry.
const nameBytes = 64

// frameBytes is one symbolized frame's cost, its names apart.
const frameBytes = 96

type entry struct {
	key  []byte          // the frames' identities, for hash collisions
	u    stack.Unwound   // as unwound, in the first process seen
	maps []stack.Mapping // the mappings its frames are in, in that process
	sym  *trace.Stack    // symbolized on first use
	hits int             // calls made from it
	// perf is the perf map of the process whose frames in JIT code it
	// has (nil: none, or no such frame).
	perf *stack.PerfMap
}

// DefaultBudget is the bytes a Table keeps when given 0: some 40,000
// distinct stacks of 20 frames.
const DefaultBudget = 32 << 20

// entryBytes is an entry's fixed cost: its slot, its map entry, its
// unwound and symbolized headers.
const entryBytes = 256

// NewTable returns an empty table over cache (nil: one of its own).
// budget bounds what it keeps, in bytes (0: DefaultBudget): the stacks,
// up to three quarters of it (past that, new stacks are not kept and
// their calls count as trace.StackNotKept), and the symbolized frames
// with their names, each distinct name kept once; a stack symbolized
// past the budget shows its frames' modules and offsets only, counted
// in trace.Counters.StacksNamesCut.
func NewTable(cache *stack.Cache, budget int64) *Table {
	if cache == nil {
		cache = stack.NewCache(stack.Options{})
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &Table{cache: cache, seed: maphash.MakeSeed(), byKey: map[uint64][]trace.StackID{},
		names: map[string]string{}, budget: budget}
}

// Retain opens the files of process pid's mappings into the table's
// cache while the process lives (stack.Cache.Retain): Intern opens
// nothing. The error lists the files that could not be opened; they are
// counted.
func (t *Table) Retain(pid int, maps []stack.Mapping) error { return t.cache.Retain(pid, maps) }

// Symbolizing deadlines: a watch line's stack, and a report's every stack
// together. Past them the remaining frames keep module and offset, and
// count as StacksSymbolizeCut.
const (
	stackSymbolizeTimeout  = 5 * time.Second
	exportSymbolizeTimeout = 60 * time.Second
)

// Close releases the files the table's cache holds open.
func (t *Table) Close() { t.cache.Close() }

// Intern unwinds snap with maps (the process's mappings at the call,
// sorted) and returns its stack's ID.
func (t *Table) Intern(snap *trace.StackSnapshot, maps []stack.Mapping) trace.StackID {
	return t.InternIn(stack.Proc{}, snap, maps)
}

// InternIn is Intern for a snapshot of process p (Pid 0: unknown): a stack
// with frames in anonymous executable memory (JIT code) is kept with the
// process's perf map, opened now while the process lives
// (stack.Cache.PerfMap), whose lines name those frames when it is
// symbolized; such a stack is the process's own: the same addresses in
// another process's JIT code are other code.
func (t *Table) InternIn(p stack.Proc, snap *trace.StackSnapshot, maps []stack.Mapping) trace.StackID {
	s := stack.Snapshot{
		Regs: stack.Regs{IP: snap.IP, SP: snap.SP, BP: snap.BP, BX: snap.BX,
			R12: snap.R12, R13: snap.R13, R14: snap.R14, R15: snap.R15},
		Stack: snap.Window, StackTruncated: snap.WindowCut, FP: snap.FP,
	}
	u := t.cache.Unwind(&s, maps)
	var pm *stack.PerfMap
	if p.Pid > 0 && throughJIT(u, maps) {
		pm = t.cache.PerfMap(p)
		// A walk that stopped in JIT code may go on through it where
		// the perf map says what the code is (CPython's trampolines).
		if pm != nil && u.Stop == stack.StopUnknownMapping {
			u = t.cache.UnwindIn(&s, maps, pm)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.captured++
	switch u.Stop {
	case stack.StopEnd:
	case stack.StopTruncated:
		t.truncated++
	case stack.StopUnknownMapping:
		t.unknown++
	default:
		t.stopped++
	}
	if u.Stop != stack.StopUnknownMapping && throughUnknown(u, maps) {
		// The frame pointers led through code in no file (JIT code,
		// anonymous memory) and on: its frames have no name.
		t.unknown++
	}
	key, used := frameKey(u, maps)
	if pm != nil {
		key = binary.LittleEndian.AppendUint64(key, uint64(pm.Pid()))
	}
	h := maphash.Bytes(t.seed, key)
	for _, id := range t.byKey[h] {
		if e := &t.stacks[id-1]; string(e.key) == string(key) {
			e.hits++
			return id
		}
	}
	n := int64(entryBytes + len(key) + 16*len(u.PCs) + len(u.StopDetail))
	for _, m := range used {
		n += 96 + int64(len(m.Path)+len(m.BuildID))
	}
	if t.bytes+n > t.budget-t.budget/nameShare || len(t.stacks) >= int(trace.StackNotKept-1) {
		t.notKept++
		return trace.StackNotKept
	}
	t.bytes += n
	t.stacks = append(t.stacks, entry{key: key, u: u, maps: used, hits: 1, perf: pm})
	id := trace.StackID(len(t.stacks))
	t.byKey[h] = append(t.byKey[h], id)
	return id
}

// frameKey names an unwound stack by what its frames are, whatever the
// process: per frame the file (device, inode) and the offset in it, or
// the bare address outside any file; then why it stopped. used are the
// mappings its frames are in.
func frameKey(u stack.Unwound, maps []stack.Mapping) (key []byte, used []stack.Mapping) {
	key = make([]byte, 0, 1+len(u.PCs)*24)
	key = append(key, byte(u.Stop))
	for _, pc := range u.PCs {
		m := find(maps, pc.Addr)
		if m == nil {
			key = binary.LittleEndian.AppendUint64(key, 0)
			key = binary.LittleEndian.AppendUint64(key, 0)
			key = binary.LittleEndian.AppendUint64(key, pc.Addr)
			continue
		}
		dev := m.Dev
		if m.Inode == 0 && m.BuildID != "" {
			// Known by its build-id alone: that names the file.
			dev = maphash.String(buildIDSeed, m.BuildID)
		}
		key = binary.LittleEndian.AppendUint64(key, dev)
		key = binary.LittleEndian.AppendUint64(key, m.Inode)
		key = binary.LittleEndian.AppendUint64(key, pc.Addr-m.Start+m.FileOffset)
		if !containsMapping(used, m) {
			used = append(used, *m)
		}
	}
	sort.Slice(used, func(i, j int) bool { return used[i].Start < used[j].Start })
	return key, used
}

// buildIDSeed hashes the build-ids of frameKey.
var buildIDSeed = maphash.MakeSeed()

// throughUnknown says whether a frame of u lies in no file-backed
// mapping: JIT code or other anonymous memory, which names nothing.
func throughUnknown(u stack.Unwound, maps []stack.Mapping) bool {
	for i, pc := range u.PCs {
		a := pc.Addr
		if i > 0 && a > 0 {
			a-- // a return address: the call is the byte before
		}
		if m := find(maps, a); m == nil || !m.FileBacked() {
			return true
		}
	}
	return false
}

// throughJIT says whether a frame of u lies in anonymous executable
// memory: JIT code, which a perf map may name.
func throughJIT(u stack.Unwound, maps []stack.Mapping) bool {
	for i, pc := range u.PCs {
		a := pc.Addr
		if i > 0 && a > 0 {
			a--
		}
		if m := find(maps, a); m != nil && m.Path == "" && m.Exec() {
			return true
		}
	}
	return false
}

func find(maps []stack.Mapping, addr uint64) *stack.Mapping {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > addr })
	if i < len(maps) && maps[i].Start <= addr {
		return &maps[i]
	}
	return nil
}

func containsMapping(ms []stack.Mapping, m *stack.Mapping) bool {
	for i := range ms {
		if ms[i].Start == m.Start {
			return true
		}
	}
	return false
}

// Stack returns the symbolized stack of id, nil for 0, StackNotKept or
// an unknown id.
func (t *Table) Stack(id trace.StackID) *trace.Stack {
	return t.stack(id, time.Now().Add(stackSymbolizeTimeout))
}

// stack is Stack, symbolizing until deadline.
func (t *Table) stack(id trace.StackID, deadline time.Time) *trace.Stack {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == 0 || int(id) > len(t.stacks) {
		return nil
	}
	e := &t.stacks[id-1]
	if e.sym == nil {
		st := t.cache.SymbolizeIn(e.u, e.maps, e.perf, deadline)
		e.sym = convert(id, &st)
		t.keepNames(e.sym)
	}
	return e.sym
}

// keepNames charges a symbolized stack's frames and its names not yet
// kept, and shares those already kept. The frames are charged whatever
// the budget (a report needs the stacks its call sites name; their
// modules' paths and build-ids are the mappings', already charged);
// names past it are not kept: those frames show their module and
// offset, and are counted.
func (t *Table) keepNames(st *trace.Stack) {
	var newNames int64
	for _, f := range st.Frames {
		for _, n := range [...]string{f.Func, f.File} {
			if _, ok := t.names[n]; !ok && n != "" {
				newNames += nameBytes + int64(len(n))
			}
		}
	}
	t.bytes += frameBytes * int64(len(st.Frames))
	if newNames > 0 && t.bytes+newNames > t.budget {
		// One frame per address: the inlined ones, unnamed, would
		// repeat their address.
		kept := st.Frames[:0]
		for _, f := range st.Frames {
			if f.Func != "" || f.File != "" {
				t.namesDropped++
			}
			if !f.Inlined {
				f.Func, f.File, f.Line = "", "", 0
				kept = append(kept, f)
			}
		}
		st.Frames = kept
		return
	}
	t.bytes += newNames
	for i := range st.Frames {
		f := &st.Frames[i]
		f.Func, f.File = t.intern(f.Func), t.intern(f.File)
	}
}

func (t *Table) intern(s string) string {
	if s == "" {
		return ""
	}
	if k, ok := t.names[s]; ok {
		return k
	}
	t.names[s] = s
	return s
}

// convert makes a stack.Stack a trace.Stack.
func convert(id trace.StackID, st *stack.Stack) *trace.Stack {
	out := &trace.Stack{ID: id, Frames: make([]trace.Frame, len(st.Frames))}
	for i, f := range st.Frames {
		out.Frames[i] = trace.Frame{Addr: f.Addr, Module: f.Module, BuildID: f.BuildID, Offset: f.Offset,
			Func: f.Func, File: f.File, Line: f.Line, Inlined: f.Inlined}
	}
	if st.Stop != stack.StopEnd {
		out.Stop = st.Stop.Key()
	}
	for _, n := range st.Notes {
		if s := n.String(); s != "" {
			out.Notes = append(out.Notes, trace.ModuleNote{Module: n.Path, BuildID: n.BuildID, Note: s, Unread: n.Err != ""})
		}
	}
	return out
}

// Counters adds the table's counts, by call, to c.
func (t *Table) Counters(c *trace.Counters) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.Stacks = true
	c.StacksTruncated = t.truncated
	c.StacksUnknownMapping = t.unknown
	c.StacksStopped = t.stopped
	c.StacksNotKept = t.notKept
	loss := t.cache.Losses()
	c.StacksCapped = loss.Capped
	c.StacksNamesCut = loss.NamesCut + t.namesDropped
	cs := t.cache.Stats()
	c.StacksModulesGone = cs.ModulesGone
	c.StacksModulesRefused = cs.ModulesRefused
	c.StacksDebugRefused = cs.DebugRefused
	c.StacksSymbolizeCut = cs.FramesCut
	c.StacksPerfMapsRefused = cs.PerfMapsRefused
	c.StacksPerfMapsCut = cs.PerfMapsCut
}

// Len is the number of distinct stacks kept.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.stacks)
}

// Export fills r.Stacks with every stack r's calls, attempts and call
// sites name, by ascending ID, symbolized.
func (t *Table) Export(r *trace.Result) {
	ids := map[trace.StackID]bool{}
	add := func(id trace.StackID) {
		if id != 0 && id != trace.StackNotKept {
			ids[id] = true
		}
	}
	sites := func(cs []trace.CallSite) {
		for _, c := range cs {
			add(c.Stack)
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		sites(f.CallSites)
		for _, c := range f.Calls {
			add(c.Stack)
		}
		for _, a := range f.Attempts {
			add(a.Stack)
		}
	}
	for _, p := range r.Processes {
		if p == nil {
			continue
		}
		for _, group := range [][]*trace.FileOpens{p.Opens, p.PathOpens, p.SpecialOpens} {
			for _, fo := range group {
				sites(fo.CallSites)
				for _, c := range fo.Calls {
					add(c.Stack)
				}
			}
		}
		for _, fo := range p.FailedOpens {
			sites(fo.CallSites)
			for _, c := range fo.Calls {
				add(c.Stack)
			}
		}
		for _, e := range p.Execs {
			add(e.Stack)
		}
	}
	list := make([]trace.StackID, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	r.Stacks = make([]trace.Stack, 0, len(list))
	deadline := time.Now().Add(exportSymbolizeTimeout)
	for _, id := range list {
		if st := t.stack(id, deadline); st != nil {
			r.Stacks = append(r.Stacks, *st)
		}
	}
}
