package stack

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// JIT compilers name their code, by the perf convention, in a text file
// /tmp/perf-PID.map that the process writes itself (node
// --perf-basic-prof, python -X perf, a JVM's perf-map agent): a line per
// piece of code, "START SIZE NAME", START and SIZE in hex, NAME to the
// end of the line. A frame in anonymous executable memory (no file) of a
// process that has such a file is named from it.
//
// The file is in a directory every user can write, and what it holds is
// the process's (or, before the process made it, anyone's) choice. So:
//   - It is opened as the process sees it, /proc/PID/root/tmp/perf-N.map
//     (N the pid in the process's own pid namespace, NSpid), resolved in
//     that root following no symlink (a symlink there, even at the last
//     name, is refused), O_PATH first and fstat: only a regular file is
//     opened for reading, O_NONBLOCK (openRegular), never a FIFO or a
//     device; and bounded in time (timed), never on FUSE (notServed).
//   - Its owner must be the process's effective or filesystem uid, or
//     root: another user's file at that name (made before the process
//     made its own, for a pid guessed) names nothing.
//   - It is read at most MaxPerfMapBytes, MaxPerfMapEntries lines kept;
//     names cut at MaxNameBytes. Past a cap the map is read in part and
//     counted (Stats.PerfMapsCut). Malformed lines are skipped. The maps'
//     parsed lines hold maxPerfMapsHeld in all: past it the least
//     recently used are forgotten and read again on need.
//   - It is kept open once found, so that it can be read after the
//     process exits; while the process runs the file grows: an address
//     it does not name is looked for again in what was appended since,
//     at most every perfMapRereadEvery.
//   - Where two lines cover one address (JIT code freed and its memory
//     reused), the later line names it.

// MaxPerfMapBytes is the most of one perf map read.
const MaxPerfMapBytes = 8 << 20

// MaxPerfMapEntries is the most lines of one perf map kept.
const MaxPerfMapEntries = 1 << 17

// perfMapRereadEvery is how often, at most, a perf map is read again for
// an address it did not name.
var perfMapRereadEvery = 100 * time.Millisecond

// perfMapTryEvery is how often, at most, a process without a perf map is
// looked at again for one, at first: the wait doubles at each try, up to
// 64 times it (a runtime may start writing one late: Python's
// sys.activate_stack_trampoline).
const perfMapTryEvery = time.Second

// maxPerfMaps bounds the perf maps kept open; past it the least recently
// used is closed.
const maxPerfMaps = 64

// perfEntry is one line of a perf map.
type perfEntry struct {
	start, end uint64
	name       string
}

// perfSeg is one range of addresses and the line that names it.
type perfSeg struct {
	start, end uint64
	name       string
}

// perfMapStats say what parsing a perf map left out.
type perfMapStats struct {
	Bad  int  // malformed lines skipped
	Cut  bool // a cap was reached: the bytes or the lines past it not read
	Read int64
}

// parsePerfMap parses the text of a perf map, at most maxBytes of it and
// maxEntries lines, into its entries in file order. A line with no newline
// at the end of what was read is left for a later read: consumed says how
// many bytes the complete lines took. A line longer than MaxNameBytes
// past its fields has its name cut (NameCut).
func parsePerfMap(r io.Reader, maxBytes int64, maxEntries int) (entries []perfEntry, consumed int64, st perfMapStats) {
	lr := &io.LimitedReader{R: r, N: maxBytes}
	br := bufio.NewReaderSize(lr, 64<<10)
	const lineCap = MaxNameBytes + 64 // START and SIZE (16 hex digits each) and spaces
	var line []byte
	var pending int64 // bytes of the line being read
	for {
		chunk, err := br.ReadSlice('\n')
		if n := lineCap + 1 - len(line); n > 0 {
			line = append(line, chunk[:min(len(chunk), n)]...)
		}
		pending += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			// No newline: a line being written (read again later,
			// whole), or the cap.
			if lr.N <= 0 {
				st.Cut = true
			}
			break
		}
		if len(entries) >= maxEntries {
			st.Cut = true
			break
		}
		consumed += pending
		if e, ok := parsePerfLine(bytes.TrimSuffix(line, []byte("\n")), pending > int64(len(line))); ok {
			entries = append(entries, e)
		} else {
			st.Bad++
		}
		line, pending = line[:0], 0
	}
	st.Read = consumed
	return entries, consumed, st
}

// parsePerfLine parses "START SIZE NAME" (START and SIZE hex, with or
// without 0x); the name is cut at MaxNameBytes, or where the line was
// (cut: the line was longer than what was kept of it).
func parsePerfLine(line []byte, cut bool) (perfEntry, bool) {
	s := strings.TrimSuffix(string(line), "\r")
	a, rest, ok := strings.Cut(s, " ")
	if !ok {
		return perfEntry{}, false
	}
	b, name, ok := strings.Cut(rest, " ")
	if !ok || name == "" {
		return perfEntry{}, false
	}
	start, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	size, err2 := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
	if err1 != nil || err2 != nil || size == 0 || start+size < start {
		return perfEntry{}, false
	}
	if cut {
		name, _ = cutName(name, min(len(name)-1, MaxNameBytes))
	} else {
		name, _ = cutName(name, MaxNameBytes)
	}
	return perfEntry{start: start, end: start + size, name: name}, true
}

// paint turns entries (in file order) into disjoint ranges sorted by
// address, each named by the last entry covering it: a sweep over the
// entries' ends with a heap of those open, latest on top.
func paint(entries []perfEntry) []perfSeg {
	type edge struct {
		at   uint64
		idx  int
		open bool
	}
	edges := make([]edge, 0, 2*len(entries))
	for i, e := range entries {
		edges = append(edges, edge{e.start, i, true}, edge{e.end, i, false})
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].at < edges[j].at })
	h := &intHeap{}
	closed := make([]bool, len(entries))
	var out []perfSeg
	for k := 0; k < len(edges); {
		at := edges[k].at
		for ; k < len(edges) && edges[k].at == at; k++ {
			if edges[k].open {
				heap.Push(h, edges[k].idx)
			} else {
				closed[edges[k].idx] = true
			}
		}
		for h.Len() > 0 && closed[(*h)[0]] {
			heap.Pop(h)
		}
		if h.Len() == 0 || k == len(edges) {
			continue
		}
		top := (*h)[0]
		next := edges[k].at
		if n := len(out); n > 0 && out[n-1].end == at && out[n-1].name == entries[top].name {
			out[n-1].end = next
			continue
		}
		out = append(out, perfSeg{start: at, end: next, name: entries[top].name})
	}
	return out
}

// intHeap is a max-heap of entry indexes: the latest line on top.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// PerfMap is one process's perf map, kept open.
type PerfMap struct {
	mu      sync.Mutex
	pid     int
	file    *os.File
	entries []perfEntry
	segs    []perfSeg
	read    int64 // bytes of complete lines parsed
	bytes   int64 // what entries hold, estimated
	cut     bool
	counted bool // cut, and counted in the cache's stats
	last    time.Time
	lru     int64
}

// Pid is the process whose map it is.
func (p *PerfMap) Pid() int { return p.pid }

// Lookup names addr from the map, reading (again) what the file holds
// past what was read when addr is not found and the file grew. ok is
// false when no line covers addr.
func (p *PerfMap) Lookup(addr uint64) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil {
		return "", false
	}
	if p.segs == nil && p.read == 0 {
		p.more()
	}
	if name, ok := p.find(addr); ok {
		return name, true
	}
	if p.cut || time.Since(p.last) < perfMapRereadEvery {
		return "", false
	}
	if fi, err := p.file.Stat(); err != nil || fi.Size() <= p.read {
		return "", false
	}
	if p.more() {
		return p.find(addr)
	}
	return "", false
}

func (p *PerfMap) find(addr uint64) (string, bool) {
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].end > addr })
	if i < len(p.segs) && p.segs[i].start <= addr {
		return p.segs[i].name, true
	}
	return "", false
}

// more parses the lines appended since the last read, within the caps;
// it says whether any was.
func (p *PerfMap) more() bool {
	p.last = time.Now()
	left := MaxPerfMapBytes - p.read
	if left <= 0 || len(p.entries) >= MaxPerfMapEntries {
		p.cut = true
		return false
	}
	es, n, st := parsePerfMap(io.NewSectionReader(p.file, p.read, left), left, MaxPerfMapEntries-len(p.entries))
	p.read += n
	p.cut = p.cut || st.Cut
	if len(es) == 0 {
		return false
	}
	p.entries = append(p.entries, es...)
	for _, e := range es {
		p.bytes += 40 + int64(len(e.name))
	}
	p.segs = paint(p.entries)
	return true
}

// held is what the map's parsed parts hold, estimated: a line's entry
// and its segment cost some 40 bytes each besides its name's.
func (p *PerfMap) held() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes + int64(len(p.segs))*40
}

// unload forgets the parsed lines, read again on need.
func (p *PerfMap) unload() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries, p.segs, p.read, p.bytes, p.cut = nil, nil, 0, 0, false
}

func (p *PerfMap) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file != nil {
		p.file.Close()
		p.file = nil
	}
	p.entries, p.segs = nil, nil
}

// errPerfMapOwner: a perf map that is not the process's (nor root's).
var errPerfMapOwner = errors.New("not owned by the process's user nor root")

// procIDs reads, from /proc/PID/status, the process's effective and
// filesystem uids and its pid in its own namespace (NSpid's last).
func procIDs(pid int) (euid, fsuid uint32, nspid int, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	nspid = pid
	found := false
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		switch k {
		case "Uid":
			if len(fs) != 4 {
				return 0, 0, 0, fmt.Errorf("/proc/%d/status: bad Uid line", pid)
			}
			e, err1 := strconv.ParseUint(fs[1], 10, 32)
			s, err2 := strconv.ParseUint(fs[3], 10, 32)
			if err1 != nil || err2 != nil {
				return 0, 0, 0, fmt.Errorf("/proc/%d/status: bad Uid line", pid)
			}
			euid, fsuid, found = uint32(e), uint32(s), true
		case "NSpid":
			if len(fs) > 0 {
				if n, err := strconv.Atoi(fs[len(fs)-1]); err == nil && n > 0 {
					nspid = n
				}
			}
		}
	}
	if !found {
		return 0, 0, 0, fmt.Errorf("/proc/%d/status: no Uid line", pid)
	}
	return euid, fsuid, nspid, nil
}

// Proc is a process as the tracer saw it, for its perf map: its pid, its
// real uid, and when it started (zero: unknown).
type Proc struct {
	Pid   int
	UID   uint32
	Start time.Time
}

// perfMapSlack is how much older than its process's start a perf map
// found after the process exited may be: the clocks differ by a little.
const perfMapSlack = 2 * time.Second

// openPerfMap opens process p's perf map as the process sees it (see the
// rules above). Its error wraps unix.ENOENT when there is none (not yet,
// or never), errGone when the process is gone and no file of its could
// be taken on the host (openPerfMapExited).
func openPerfMap(p Proc) (*os.File, error) {
	pid := p.Pid
	euid, fsuid, nspid, err := procIDs(pid)
	if err != nil {
		if exited(pid) {
			return openPerfMapExited(p)
		}
		return nil, err
	}
	name := fmt.Sprintf("/tmp/perf-%d.map", nspid)
	if err := notServed(fmt.Sprintf("/proc/%d/mountinfo", pid), 0, "", name); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := timed(func() (*os.File, error) { return openInRoot(pid, name) })
	if err != nil {
		if (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH)) && exited(pid) {
			return openPerfMapExited(p)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	st, err := regular(f, 0)
	if err == nil && st.Uid != 0 && st.Uid != euid && st.Uid != fsuid {
		err = fmt.Errorf("%w (owner uid %d, process uid %d)", errPerfMapOwner, st.Uid, euid)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// openPerfMapExited opens the perf map of a process that has exited:
// its root, its pid namespace and its credentials are gone with it, and
// the drain often comes after a short-lived command has exited. What is
// left is the host's /tmp/perf-PID.map, the process's own only if the
// process lived in the host's mount and pid namespaces. It is taken
// only if, besides the rules of a live process's (no symlink, a regular
// file): its owner is the uid the tracer saw the process run as, or
// root, and it was last written after the process started (a map left
// by an earlier process of that pid is older). A process in a container
// wrote its map in its own /tmp, under its own pid: the host's file of
// that number, if any, is another process's, written (by that uid) since
// the process started, which these checks can't tell apart; such a file
// would name only frames in this process's JIT code. Without its start
// time (p.Start zero) nothing is opened.
func openPerfMapExited(p Proc) (*os.File, error) {
	name := fmt.Sprintf("/tmp/perf-%d.map", p.Pid)
	gone := fmt.Errorf("%s: %w", name, errGone)
	if p.Start.IsZero() {
		return nil, gone
	}
	if err := notServed("/proc/self/mountinfo", 0, "", name); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := timed(func() (*os.File, error) {
		return openRegular(unix.AT_FDCWD, name, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS, name)
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, gone
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	st, err := regular(f, 0)
	switch {
	case err != nil:
	case st.Uid != 0 && st.Uid != p.UID:
		err = fmt.Errorf("%w (owner uid %d, process uid %d)", errPerfMapOwner, st.Uid, p.UID)
	case time.Unix(st.Mtim.Unix()).Before(p.Start.Add(-perfMapSlack)):
		f.Close()
		return nil, fmt.Errorf("%w, and the host's file is older than the process", gone)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// perfMapState is what the cache knows of one process's perf map.
type perfMapState struct {
	pm    *PerfMap // nil while none was found
	tried time.Time
	tries int
	done  bool // refused or timed out: not tried again
}

// PerfMap gives process p's perf map, opening it while the process
// lives, or after (openPerfMapExited); nil when it has none, or it was
// refused. It is for stacks through anonymous executable memory, which
// SymbolizeIn names from it. A process without one is looked at again
// after perfMapTryEvery, then twice as long each time; one refused (not
// a regular file, another user's, a symlink) or timed out, never again,
// and counted (Stats.PerfMapsRefused). Call it from the drain path: the
// open is bounded by openTimeout.
func (c *Cache) PerfMap(p Proc) *PerfMap {
	pid := p.Pid
	if pid <= 0 {
		return nil
	}
	c.mu.Lock()
	s := c.perf[pid]
	if s != nil && (s.pm != nil || s.done || time.Since(s.tried) < perfMapTryEvery<<min(s.tries-1, 6)) {
		if s.pm != nil {
			c.clock++
			s.pm.lru = c.clock
		}
		c.mu.Unlock()
		return s.pm
	}
	c.mu.Unlock()
	f, err := openPerfMap(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perf == nil {
		c.perf = map[int]*perfMapState{}
	}
	if s = c.perf[pid]; s == nil {
		s = &perfMapState{}
		c.perf[pid] = s
		c.trimPerf()
	}
	s.tried = time.Now()
	s.tries++
	switch {
	case err == nil:
		if s.pm != nil {
			f.Close()
			break
		}
		c.clock++
		s.pm = &PerfMap{pid: pid, file: f, lru: c.clock}
		c.closePerf()
	case errors.Is(err, unix.ENOENT):
	case errors.Is(err, errGone):
		s.done = true
	default:
		s.done = true
		c.stats.perfMapsRefused.Add(1)
	}
	return s.pm
}

// closePerf closes the least recently used perf maps past maxPerfMaps.
func (c *Cache) closePerf() {
	for {
		var open []*perfMapState
		for _, s := range c.perf {
			if s.pm != nil && s.pm.file != nil {
				open = append(open, s)
			}
		}
		if len(open) <= maxPerfMaps {
			return
		}
		old := open[0]
		for _, s := range open[1:] {
			if s.pm.lru < old.pm.lru {
				old = s
			}
		}
		old.pm.close()
	}
}

// maxPerfStates bounds the processes whose perf map state is kept.
const maxPerfStates = 4096

// trimPerf forgets the processes with no perf map past maxPerfStates.
func (c *Cache) trimPerf() {
	if len(c.perf) <= maxPerfStates {
		return
	}
	for pid, s := range c.perf {
		if s.pm == nil {
			delete(c.perf, pid)
		}
		if len(c.perf) <= maxPerfStates/2 {
			return
		}
	}
}

// perfName names addr, in the anonymous executable mapping mp, from pm;
// a map read in part is counted once.
func (c *Cache) perfName(pm *PerfMap, mp *Mapping, addr uint64) string {
	if pm == nil || mp == nil || mp.Path != "" || !mp.Exec() {
		return ""
	}
	name, ok := pm.Lookup(addr)
	c.clock++
	pm.mu.Lock()
	pm.lru = c.clock
	if pm.cut && !pm.counted {
		pm.counted = true
		c.stats.perfMapsCut.Add(1)
	}
	pm.mu.Unlock()
	c.fitPerf(pm)
	if !ok {
		return ""
	}
	return name
}

// maxPerfMapsHeld bounds what the perf maps' parsed lines hold in all,
// estimated: past it the least recently used maps' are forgotten (their
// files kept open) and read again on need.
var maxPerfMapsHeld int64 = 32 << 20

// fitPerf keeps the perf maps' parsed lines within maxPerfMapsHeld, but
// keep's.
func (c *Cache) fitPerf(keep *PerfMap) {
	var maps []*PerfMap
	var total int64
	for _, s := range c.perf {
		if s.pm != nil {
			maps = append(maps, s.pm)
			total += s.pm.held()
		}
	}
	if total <= maxPerfMapsHeld {
		return
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].lru < maps[j].lru })
	for _, pm := range maps {
		if total <= maxPerfMapsHeld {
			return
		}
		if pm == keep {
			continue
		}
		total -= pm.held()
		pm.unload()
	}
}
