package stack

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options tune a Cache. The zero value is fine.
type Options struct {
	// DebugRoots are where separate debug files are looked for, by
	// build-id (ROOT/.build-id/xx/yyyy.debug) and by .gnu_debuglink
	// (ROOT/DIR/NAME). Default: /usr/lib/debug.
	DebugRoots []string
	// MaxModules bounds the modules kept (open files and what was parsed
	// of them); the least recently used goes first. Default 64.
	MaxModules int
	// MaxFrames bounds one stack. Default 128.
	MaxFrames int
	// MaxSymbolCache bounds, per module, the addresses whose symbols and
	// CFI rows are remembered. Default 4096.
	MaxSymbolCache int
	// MaxBytes bounds what the modules' parsed parts (CFI, symbols,
	// DWARF, .gopclntab, remembered addresses) hold in all, estimated;
	// past it the least recently used modules' are forgotten, their
	// files kept open, and parsed again on need. One module alone is
	// bounded by the per-module caps (see the package documentation).
	// Default DefaultMaxBytes.
	MaxBytes int64
	// MaxDebugFileSize bounds a separate debug file: a larger one is
	// refused (Stats.DebugRefused), and a .gnu_debuglink CRC reads no
	// more. Default DefaultMaxDebugFileSize.
	MaxDebugFileSize int64
}

// DefaultMaxBytes is Options.MaxBytes's default.
const DefaultMaxBytes = 64 << 20

// Cache holds the modules (ELF files, their CFI, symbols and DWARF) that
// stacks pass through, keyed by build-id (or device and inode for a file
// without one), bounded by Options.MaxModules. It is safe for concurrent
// use; its methods serialize.
type Cache struct {
	mu    sync.Mutex
	opts  Options
	byID  map[string]*module
	byIno map[[2]uint64]*module
	clock int64
	loss  Losses
	// unloads counts modules whose parsed parts fit forgot.
	unloads int
	// total is the modules' costs as last charged (module.charged).
	total int64
	stats openStats
	// perf are the processes' perf maps (perfmap.go), by pid.
	perf map[int]*perfMapState
}

// Losses are what parsing the modules gave up, past the per-module caps
// (see the package documentation).
type Losses struct {
	// Capped: parts of modules (a CFI section, a symbol table, the
	// DWARF, .gopclntab, a DWARF unit's rows) not read, or read in part,
	// because they claimed more than their cap or than the file holds.
	// Their frames show module+offset, or names without lines.
	Capped uint64
	// NamesCut: frames whose function or file name was cut at
	// MaxNameBytes (a mangled name that long is not demangled).
	NamesCut uint64
}

// fit forgets the parsed parts of the least recently used modules, but
// keep's, while they hold more than Options.MaxBytes in all.
func (c *Cache) fit(keep *module) {
	mods := c.modules()
	var total int64
	for _, m := range mods {
		m.charged = m.held()
		total += m.charged
	}
	c.total = total
	if total <= c.opts.MaxBytes {
		return
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].lru < mods[j].lru })
	for _, m := range mods {
		if total <= c.opts.MaxBytes {
			break
		}
		if m == keep {
			continue
		}
		if m.cost() > 0 || m.ef != nil {
			m.unload()
			n := m.held() // a separate debug file's headers stay with its file
			total -= m.charged - n
			m.charged = n
			c.unloads++
		}
	}
	c.total = total
}

// Losses returns what the cache's parsing gave up so far.
func (c *Cache) Losses() Losses {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.modules() {
		c.collect(m)
	}
	return c.loss
}

// collect takes a module's new counts into the cache's, and keeps the
// modules' parsed parts within Options.MaxBytes, m's apart: m is in use.
func (c *Cache) collect(m *module) {
	if m == nil {
		return
	}
	// The total is kept as the modules' costs change, so that the
	// modules are summed only past it.
	if n := m.held(); n != m.charged {
		c.total += n - m.charged
		m.charged = n
		if c.total > c.opts.MaxBytes {
			c.fit(m)
		}
	}
	c.loss.Capped += m.newCapped
	c.loss.NamesCut += m.newNamesCut
	m.newCapped, m.newNamesCut = 0, 0
	if m.dw != nil {
		c.loss.Capped += m.dw.cut
		m.dw.cut = 0
	}
}

// NewCache returns an empty cache.
func NewCache(opts Options) *Cache {
	if opts.DebugRoots == nil {
		opts.DebugRoots = []string{"/usr/lib/debug"}
	}
	if opts.MaxModules <= 0 {
		opts.MaxModules = 64
	}
	if opts.MaxFrames <= 0 {
		opts.MaxFrames = 128
	}
	if opts.MaxSymbolCache <= 0 {
		opts.MaxSymbolCache = 4096
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxDebugFileSize <= 0 {
		opts.MaxDebugFileSize = DefaultMaxDebugFileSize
	}
	return &Cache{opts: opts, byID: map[string]*module{}, byIno: map[[2]uint64]*module{}}
}

// Close closes every file the cache holds.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.modules() {
		m.close()
	}
	c.byID, c.byIno = map[string]*module{}, map[[2]uint64]*module{}
	for _, s := range c.perf {
		if s.pm != nil {
			s.pm.close()
		}
	}
	c.perf = nil
}

func (c *Cache) modules() []*module {
	seen := map[*module]bool{}
	var out []*module
	for _, m := range c.byID {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, m := range c.byIno {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// Retain opens, while process pid lives, the file of each file-backed
// executable mapping not yet in the cache, as the process sees it (see
// open.go: /proc/PID/map_files, the very file mapped even if deleted or
// replaced since, else the path in the process's root), checks it
// against the mapping, and keeps it open, so that stacks of the process
// can be unwound and symbolized after it exits and its files change.
// Unwind and Symbolize open nothing: call Retain when the maps are read,
// before unwinding. Files are opened outside the cache's lock. The error
// lists the files that could not be kept; the others are kept all the
// same. A module that failed is tried again for another process.
func (c *Cache) Retain(pid int, maps []Mapping) error {
	c.mu.Lock()
	var todo []*Mapping
	for i := range maps {
		mp := &maps[i]
		if !mp.FileBacked() || !mp.Exec() {
			continue
		}
		if m := c.cached(mp); m != nil && (m.err == nil || m.triedPid == pid || errors.Is(m.err, errTimeout)) {
			c.touch(m)
			continue
		}
		if slices.ContainsFunc(todo, func(o *Mapping) bool { return sameKey(o, mp) }) {
			continue // another mapping of the same file
		}
		todo = append(todo, mp)
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	opened := make([]*module, len(todo))
	for i, mp := range todo {
		opened[i] = c.newModule(pid, mp)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i, m := range opened {
		mp := todo[i]
		if old := c.cached(mp); old != nil && (old.err == nil || m.err != nil) {
			// Opened meanwhile by another Retain, or failed before:
			// keep the one there, but remember this process tried.
			if old.err != nil {
				old.triedPid = pid
			}
			c.touch(old)
			m.close()
			if m.err != nil {
				errs = append(errs, m.err)
			}
			continue
		}
		c.count(m.err)
		if m.err != nil {
			errs = append(errs, m.err)
		}
		c.enter(mp, m)
	}
	return errors.Join(errs...)
}

// count adds a module that could not be opened to the stats.
func (c *Cache) count(err error) {
	switch {
	case err == nil:
	case errors.Is(err, errGone) || errors.Is(err, errNotRetained):
		c.stats.modulesGone.Add(1)
	default:
		c.stats.modulesRefused.Add(1)
	}
}

// sameKey says whether two mappings are of one file, as the cache keys
// them.
func sameKey(a, b *Mapping) bool {
	if a.BuildID != "" || b.BuildID != "" {
		return a.BuildID == b.BuildID
	}
	return a.Dev == b.Dev && a.Inode == b.Inode
}

func (c *Cache) cached(mp *Mapping) *module {
	if mp.BuildID != "" {
		return c.byID[mp.BuildID]
	}
	return c.byIno[[2]uint64{mp.Dev, mp.Inode}]
}

func (c *Cache) touch(m *module) {
	c.clock++
	m.lru = c.clock
}

// newModule opens a mapping's file, through process pid, into a module
// not yet in the cache; one that fails carries its error.
func (c *Cache) newModule(pid int, mp *Mapping) *module {
	m := &module{path: mp.Path, buildID: mp.BuildID, dev: mp.Dev, inode: mp.Inode, triedPid: pid,
		maxDebug: c.opts.MaxDebugFileSize, stats: &c.stats}
	f, err := openMapped(pid, mp)
	if err == nil {
		m.file = f
		if m.buildID == "" {
			m.buildID, _ = fileBuildID(f)
		}
	}
	m.err = err
	return m
}

// enter puts m in the cache as mapping mp's module, in place of any
// module there. A module that failed is entered all the same, with its
// error, so that it is not tried again for every frame.
func (c *Cache) enter(mp *Mapping, m *module) {
	if old := c.cached(mp); old != nil {
		c.drop(old)
	}
	if m.buildID != "" {
		c.byID[m.buildID] = m
	}
	if mp.BuildID != "" && mp.BuildID != m.buildID {
		c.byID[mp.BuildID] = m
	}
	if mp.Inode != 0 {
		c.byIno[[2]uint64{mp.Dev, mp.Inode}] = m
	}
	c.touch(m)
	c.evict()
}

func (c *Cache) drop(m *module) {
	c.collect(m)
	c.total -= m.charged
	m.charged = 0
	for k, v := range c.byID {
		if v == m {
			delete(c.byID, k)
		}
	}
	for k, v := range c.byIno {
		if v == m {
			delete(c.byIno, k)
		}
	}
	m.close()
}

func (c *Cache) evict() {
	for {
		mods := c.modules()
		if len(mods) <= c.opts.MaxModules {
			return
		}
		old := mods[0]
		for _, m := range mods[1:] {
			if m.lru < old.lru {
				old = m
			}
		}
		c.drop(old)
	}
}

// module gives the loaded module of a mapping, nil for one that maps no
// file or no code.
func (c *Cache) module(mp *Mapping) *module {
	if mp == nil || !mp.FileBacked() || !mp.Exec() {
		return nil
	}
	m := c.cached(mp)
	if m == nil {
		// Never opened: no Retain saw this process alive. Its path is
		// not opened on the host instead (see open.go).
		m = &module{path: mp.Path, buildID: mp.BuildID, dev: mp.Dev, inode: mp.Inode,
			err: fmt.Errorf("%s: %w", mp.Path, errNotRetained)}
		c.count(m.err)
		c.enter(mp, m)
	}
	c.touch(m)
	m.load(c.opts.DebugRoots)
	return m
}

// findMapping finds the mapping holding addr; maps sorted by address, as
// /proc/PID/maps lists them.
func findMapping(maps []Mapping, addr uint64) *Mapping {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > addr })
	if i < len(maps) && maps[i].Start <= addr {
		return &maps[i]
	}
	return nil
}

// Unwind walks a snapshot into return addresses. maps are the process's
// mappings at the call (sorted by address, as ReadMaps gives them).
//
// Each step uses the CFI of the module holding the address (.eh_frame,
// else .debug_frame); where there is none, the frame-pointer chain in the
// window; when both fail, the kernel's frame-pointer stack from the same
// address on (its frames say ViaKernelFP, and Stop says why the walk of
// the window stopped). Memory is read only from the window.
func (c *Cache) Unwind(s *Snapshot, maps []Mapping) Unwound {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unwind(s, maps, nil)
}

// UnwindIn is Unwind for a snapshot of the process whose JIT code pm
// names (nil: none): a frame in one of CPython's perf trampolines (a line
// of pm named "py::…") is stepped over by the trampoline's own layout
// (stepPyTrampoline), which neither CFI nor a frame pointer describes, so
// that the walk goes on to the Python functions that called it.
func (c *Cache) UnwindIn(s *Snapshot, maps []Mapping, pm *PerfMap) Unwound {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unwind(s, maps, pm)
}

func (c *Cache) unwind(s *Snapshot, maps []Mapping, pm *PerfMap) Unwound {
	cur := regsOf(s.Regs)
	w := window{base: s.Regs.SP, data: s.Stack}
	u := Unwound{PCs: []PC{{s.Regs.IP, ViaRegs}}}
	if s.Regs.IP == 0 {
		u.Stop, u.StopDetail = StopUnknownMapping, "IP is 0"
		return u
	}
	for {
		if len(u.PCs) >= c.opts.MaxFrames {
			u.Stop = StopMaxDepth
			break
		}
		pc := cur.v[regRA]
		lookup := pc
		if len(u.PCs) > 1 {
			lookup-- // a return address: the call is the byte before
		}
		mp := findMapping(maps, pc)
		mod := c.module(mp)
		c.collect(mod)
		var (
			next regSet
			serr *stepError
			via  = ViaCFI
			// noFP: why the walk stops if BP is no frame
			// pointer, where it falls back to BP's chain.
			noFP stepError
		)
		switch {
		case mod != nil && mod.err == nil:
			addr := mod.elfAddr(mp, lookup)
			if fde := mod.fde(addr); fde != nil {
				next, serr = stepCFI(mod, fde, addr, &cur, &w, c.opts.MaxSymbolCache)
				if serr != nil && serr.detail != "" {
					serr.detail = fmt.Sprintf("%s+%#x: %s", mod.path, addr, serr.detail)
				}
			} else {
				via = ViaFP
				what := "no CFI for this address"
				if !mod.hasCFI() {
					what = "no CFI (.eh_frame, .debug_frame)"
					if mod.cfiErr != nil {
						what += ": " + mod.cfiErr.Error()
					}
				}
				noFP = stepError{StopNoUnwindInfo, fmt.Sprintf("%s+%#x: %s, and BP is no frame pointer", mod.path, addr, what)}
				next, serr = stepFP(&cur, &w)
			}
		default:
			via = ViaFP
			noFP.stop = StopUnknownMapping
			switch {
			case mp == nil:
				noFP.detail = fmt.Sprintf("%#x in no mapping", pc)
			case mod != nil:
				noFP.detail = mod.err.Error()
			default:
				noFP.detail = fmt.Sprintf("%#x in %q, no file", pc, mp.Path)
			}
			if mp != nil && pm != nil && len(u.PCs) > 1 && pyTrampoline(pm, lookup) {
				via = ViaJIT
				next, serr = stepPyTrampoline(&cur, &w)
			} else {
				next, serr = stepFP(&cur, &w)
			}
		}
		if serr != nil && via == ViaFP && serr.stop == StopNoUnwindInfo {
			serr = &noFP
		}
		if serr != nil {
			u.Stop, u.StopDetail = serr.stop, serr.detail
			break
		}
		ra := next.v[regRA]
		if ra == 0 {
			u.Stop = StopEnd
			break
		}
		// A return address lies in executable memory. One read through
		// BP that lies in none was not read from a frame: BP held
		// something else (code built without frame pointers keeps
		// anything there), and the walk stops where it fell back to
		// BP's chain, for that reason, rather than one frame of noise
		// later.
		if via == ViaFP || via == ViaJIT {
			if m := findMapping(maps, ra-1); m == nil || !m.Exec() {
				u.Stop, u.StopDetail = noFP.stop, noFP.detail
				break
			}
		}
		if next.v[regRSP] <= cur.v[regRSP] {
			u.Stop, u.StopDetail = StopBadCFI, fmt.Sprintf("stack pointer did not grow at %#x", pc)
			break
		}
		u.PCs = append(u.PCs, PC{ra, via})
		cur = next
	}
	switch u.Stop {
	case StopNoUnwindInfo, StopUnknownMapping, StopBadCFI, StopTruncated:
		c.spliceKernelFP(&u, s, maps)
	}
	return u
}

// spliceKernelFP continues a stack from the kernel's frame-pointer walk,
// if that walk passed through the address the window's walk stopped at;
// it stops at the first entry outside executable mappings.
func (c *Cache) spliceKernelFP(u *Unwound, s *Snapshot, maps []Mapping) {
	fp := s.FP
	if len(fp) == 0 && !s.StackTruncated {
		fp = windowFP(s, c.opts.MaxFrames)
	}
	last := u.PCs[len(u.PCs)-1].Addr
	for k, a := range fp {
		if a != last {
			continue
		}
		for _, ra := range fp[k+1:] {
			if len(u.PCs) >= c.opts.MaxFrames {
				break
			}
			mp := findMapping(maps, ra)
			if ra == 0 || mp == nil || !mp.Exec() {
				break
			}
			u.PCs = append(u.PCs, PC{ra, ViaKernelFP})
		}
		return
	}
}

// windowFP is the kernel's frame-pointer walk (IP, then the return
// address of each frame on BP's chain) done over the window: the kernel
// leaves it out of a snapshot whose window holds the whole stack, where
// it would read nothing the window lacks.
func windowFP(s *Snapshot, max int) []uint64 {
	w := window{base: s.Regs.SP, data: s.Stack}
	fp := []uint64{s.Regs.IP}
	for bp := s.Regs.BP; len(fp) < max; {
		ra, err := w.read(bp + 8)
		if err != nil || bp < w.base {
			break
		}
		next, _ := w.read(bp)
		fp = append(fp, ra)
		if next <= bp {
			break
		}
		bp = next
	}
	return fp
}

// Symbolize names the addresses of an unwound stack. An address can give
// several frames (inlined functions, innermost first). A frame without
// symbols keeps its module, build-id and Offset. Notes say which modules
// lacked unwind information, symbols or lines.
func (c *Cache) Symbolize(u Unwound, maps []Mapping) Stack {
	return c.SymbolizeBy(u, maps, time.Time{})
}

// SymbolizeBy is Symbolize with a deadline (zero: none): the frames
// reached after it keep their module and offset only, and count in
// Stack.Cut and Stats.FramesCut. A module's parse under way is not
// interrupted; the deadline is looked at before each frame.
func (c *Cache) SymbolizeBy(u Unwound, maps []Mapping, deadline time.Time) Stack {
	return c.SymbolizeIn(u, maps, nil, deadline)
}

// SymbolizeIn is SymbolizeBy that names the frames in anonymous
// executable memory (JIT code) from pm, the process's perf map (nil:
// none; see Cache.PerfMap). Such a frame keeps Module "" and gets Func.
func (c *Cache) SymbolizeIn(u Unwound, maps []Mapping, pm *PerfMap, deadline time.Time) Stack {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.symbolize(u, maps, pm, deadline)
}

func (c *Cache) symbolize(u Unwound, maps []Mapping, pm *PerfMap, deadline time.Time) Stack {
	st := Stack{Stop: u.Stop, StopDetail: u.StopDetail, Frames: make([]Frame, 0, len(u.PCs)+4)}
	var noted map[*module]bool
	for _, pc := range u.PCs {
		mp := findMapping(maps, pc.Addr)
		if !deadline.IsZero() && mp != nil && time.Now().After(deadline) {
			st.Frames = append(st.Frames, Frame{Addr: pc.Addr, Via: pc.Via, Module: mp.Path, BuildID: mp.BuildID,
				Offset: pc.Addr - mp.Start + mp.FileOffset})
			st.Cut++
			c.stats.framesCut.Add(1)
			continue
		}
		mod := c.module(mp)
		c.collect(mod)
		if mod == nil {
			f := Frame{Addr: pc.Addr, Via: pc.Via}
			if mp != nil {
				f.Module, f.Offset = mp.Path, pc.Addr-mp.Start+mp.FileOffset
				lookup := pc.Addr
				if pc.Via != ViaRegs {
					lookup--
				}
				f.Func = c.perfName(pm, mp, lookup)
			}
			st.Frames = append(st.Frames, f)
			continue
		}
		if n := mod.note(); n != (ModuleNote{Path: n.Path, BuildID: n.BuildID}) && !noted[mod] {
			if noted == nil {
				noted = map[*module]bool{}
			}
			noted[mod] = true
			st.Notes = append(st.Notes, n)
		}
		base := Frame{Addr: pc.Addr, Via: pc.Via, Module: mp.Path, BuildID: mod.buildID}
		if mod.err != nil {
			base.Offset = pc.Addr - mp.Start + mp.FileOffset
			st.Frames = append(st.Frames, base)
			continue
		}
		base.Offset = mod.elfAddr(mp, pc.Addr)
		lookup := pc.Addr
		if pc.Via != ViaRegs {
			lookup--
		}
		syms := mod.symbolize(mod.elfAddr(mp, lookup), c.opts.MaxSymbolCache)
		c.collect(mod)
		if len(syms) == 0 {
			st.Frames = append(st.Frames, base)
			continue
		}
		for _, s := range syms {
			f := base
			f.Func, f.File, f.Line, f.Inlined = s.Func, s.File, s.Line, s.Inlined
			st.Frames = append(st.Frames, f)
		}
	}
	return st
}

// Stack unwinds and symbolizes a snapshot: Unwind, then Symbolize.
func (c *Cache) Stack(s *Snapshot, maps []Mapping) Stack {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.symbolize(c.unwind(s, maps, nil), maps, nil, time.Time{})
}

// symbolize gives the frames of one ELF address, from DWARF, then the
// symbol tables, then Go's pclntab; remembered per address.
func (m *module) symbolize(addr uint64, max int) []symFrame {
	if out, ok := m.symCache[addr]; ok {
		return out
	}
	m.loadSymbols()
	var out []symFrame
	if m.dw != nil {
		out = m.dw.lookup(addr)
	}
	if len(out) == 0 || out[len(out)-1].Func == "" {
		name := ""
		if s, ok := m.lookupSymbol(addr); ok {
			name = demangleName(s.name)
		}
		file, line := "", 0
		var inl []goInlined
		if m.gosym != nil {
			if f, l, fn := m.gosym.PCToLine(addr); fn != nil {
				file, line = f, l
				if name == "" {
					name = fn.Name
				}
				if len(out) == 0 {
					inl = m.goinl.frames(addr)
				}
			}
		}
		if len(inl) > 0 {
			// The line table's position at an address inlined is the
			// innermost call's: each frame gets the position of its
			// own address, the function itself that of its outermost
			// inlined call's site.
			for i, in := range inl {
				f, l, _ := m.gosym.PCToLine(in.PC)
				if i == len(inl)-1 {
					out = append(out, symFrame{Func: name, File: f, Line: l})
				} else {
					out = append(out, symFrame{Func: in.Func, File: f, Line: l, Inlined: true})
				}
			}
		} else if len(out) == 0 {
			if name != "" || file != "" {
				out = []symFrame{{Func: name, File: file, Line: line}}
			}
		} else {
			out[len(out)-1].Func = name
		}
	}
	for i := range out {
		f, fileOK := cutName(out[i].File, MaxNameBytes)
		fn, fnOK := cutName(out[i].Func, MaxNameBytes)
		out[i].File, out[i].Func = f, fn
		if !fileOK || !fnOK || strings.HasSuffix(fn, NameCut) {
			m.newNamesCut++
		}
	}
	if m.symCache == nil || len(m.symCache) >= max {
		m.symCache = make(map[uint64][]symFrame)
		m.symCacheBytes = 0
	}
	m.symCache[addr] = out
	for _, f := range out {
		// Demangled and cut names are the cache's own; the others
		// share the symbols' and DWARF's, counted there.
		m.symCacheBytes += int64(len(f.Func) + len(f.File))
	}
	return out
}

// Notes says, for the modules the cache holds for these mappings, which
// lack unwind information, symbols or lines: for a report's legend.
func (c *Cache) Notes(maps []Mapping) []ModuleNote {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ModuleNote
	seen := map[*module]bool{}
	for i := range maps {
		m := c.module(&maps[i])
		if m == nil || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, m.note())
	}
	return out
}
