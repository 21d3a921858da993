package stack

import (
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"fmt"
	"os"
	"sort"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// module is one ELF file, parsed part by part on first use (see load):
// its CFI, its symbols, its DWARF (its own or a separate debug file's)
// and Go's pclntab.
type module struct {
	path    string // the path it was mapped from
	buildID string
	dev     uint64
	inode   uint64
	file    *os.File // held open from Retain or first use: the very file that ran
	err     error    // why the file could not be read; the module is then empty

	loaded        bool // load ran: the headers and .eh_frame
	dbgLoaded     bool // loadDebugFrame ran
	symsLoaded    bool // loadSymbols ran
	debugSearched bool // debugFile ran
	roots         []string
	ef            *elf.File
	loads         []elf.ProgHeader // PT_LOAD, to turn file offsets into ELF addresses

	eh      frame.FrameDescriptionEntries // from .eh_frame
	dbg     frame.FrameDescriptionEntries // from .debug_frame (here or in the debug file)
	cfiErr  error                         // a CFI section that could not be parsed
	syms    []symbol                      // sorted by addr
	dw      *dwarfIndex
	gosym   *gosym.Table
	debug   string // the separate debug file used, if any
	debugEF *elf.File
	dfile   *os.File

	maxDebug int64      // Options.MaxDebugFileSize
	stats    *openStats // the cache's, for the debug files refused
	triedPid int        // the process it was last opened through (or tried)

	symCache map[uint64][]symFrame
	rows     map[uint64]*frame.FrameContext // CFI rows by address
	lru      int64                          // the cache's clock at last use
}

type symbol struct {
	addr, size uint64
	name       string
}

// load parses what unwinding needs, once: the ELF headers and
// .eh_frame. The rest is parsed on first need: .debug_frame (here or in
// the debug file) when .eh_frame has no entry for an address
// (loadDebugFrame), the symbols and DWARF when a stack is symbolized
// (loadSymbols). A live session unwinds each snapshot as it arrives,
// while the traced programs run; a debug file's compressed DWARF (libc's
// from libc6-dbg) takes longer to read than the whole of a short run's
// unwinding, and only the calls a report shows need it, at the report.
// Errors are kept in m.err (the file) or m.cfiErr (its CFI): the rest of
// what could be read is used.
func (m *module) load(roots []string) {
	if m.loaded {
		return
	}
	m.loaded = true
	m.roots = roots
	if m.err != nil {
		return
	}
	ef, err := elf.NewFile(m.file)
	if err != nil {
		m.err = fmt.Errorf("%s: %v", m.path, err)
		return
	}
	if ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		m.err = fmt.Errorf("%s: not an x86-64 ELF file", m.path)
		return
	}
	m.ef = ef
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			m.loads = append(m.loads, p.ProgHeader)
		}
	}
	if m.buildID == "" {
		m.buildID = elfBuildID(ef)
	}
	if s := ef.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		if data, err := s.Data(); err == nil {
			m.eh, m.cfiErr = parseCFI(data, s.Addr)
		}
	}
}

// debugFile finds the separate debug file, once, if the module lacks
// DWARF or a symbol table of its own.
func (m *module) debugFile() {
	if m.debugSearched || m.ef == nil {
		return
	}
	m.debugSearched = true
	if m.ef.Section(".debug_info") == nil || m.ef.Section(".symtab") == nil {
		m.findDebugFile(m.roots)
	}
}

// loadDebugFrame parses .debug_frame, the module's or else its debug
// file's, once.
func (m *module) loadDebugFrame() {
	if m.dbgLoaded || m.ef == nil {
		return
	}
	m.dbgLoaded = true
	m.debugFile()
	for _, f := range []*elf.File{m.ef, m.debugEF} {
		if f == nil || m.dbg != nil {
			continue
		}
		if s := f.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
			if data, err := s.Data(); err == nil {
				var err error
				m.dbg, err = parseCFI(data, 0)
				if m.cfiErr == nil {
					m.cfiErr = err
				}
			}
		}
	}
}

// loadSymbols reads the symbol tables, DWARF (the debug file's if it
// has any) and Go's pclntab, once.
func (m *module) loadSymbols() {
	if m.symsLoaded || m.ef == nil {
		return
	}
	m.symsLoaded = true
	m.debugFile()
	ef := m.ef
	dwf := ef
	if m.debugEF != nil && m.debugEF.Section(".debug_info") != nil {
		dwf = m.debugEF
	}
	if d, err := dwf.DWARF(); err == nil {
		m.dw = newDwarfIndex(d)
	}
	m.syms = readSymbols(ef, m.debugEF)
	if s := ef.Section(".gopclntab"); s != nil && s.Type != elf.SHT_NOBITS {
		if data, err := s.Data(); err == nil {
			text := uint64(0)
			if t := ef.Section(".text"); t != nil {
				text = t.Addr
			}
			if tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text)); err == nil {
				m.gosym = tab
			}
		}
	}
}

// parseCFI parses .eh_frame (at ehAddr) or .debug_frame (ehAddr 0) with
// delve's frame package, sorted by address for FDEForPC. The package
// panics on some malformed input: that is an error here.
func parseCFI(data []byte, ehAddr uint64) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if r := recover(); r != nil {
			fdes, err = nil, fmt.Errorf("malformed CFI: %v", r)
		}
	}()
	parsed, err := frame.Parse(data, binary.LittleEndian, 0, 8, ehAddr)
	if err != nil {
		return nil, err
	}
	// Parse returns the entries in section order; FDEForPC searches
	// them by address. Append sorts (and drops exact duplicates).
	return frame.FrameDescriptionEntries(nil).Append(parsed), nil
}

// elfAddr turns an address in the process into the module's ELF virtual
// address, given the mapping it lies in.
func (m *module) elfAddr(mp *Mapping, addr uint64) uint64 {
	off := addr - mp.Start + mp.FileOffset
	for _, p := range m.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr
		}
	}
	// No segment holds it (a mapping past the file's data): assume the
	// first segment's bias.
	if len(m.loads) > 0 {
		return off - m.loads[0].Off + m.loads[0].Vaddr
	}
	return off
}

// hasCFI says whether the module has any unwind information.
func (m *module) hasCFI() bool {
	if len(m.eh) > 0 {
		return true
	}
	m.loadDebugFrame()
	return len(m.dbg) > 0
}

// fde finds the CFI for an ELF address: .eh_frame first, then
// .debug_frame.
func (m *module) fde(addr uint64) *frame.FrameDescriptionEntry {
	if f, err := m.eh.FDEForPC(addr); err == nil {
		return f
	}
	m.loadDebugFrame()
	if f, err := m.dbg.FDEForPC(addr); err == nil {
		return f
	}
	return nil
}

func (m *module) note() ModuleNote {
	n := ModuleNote{Path: m.path, BuildID: m.buildID}
	if m.err != nil {
		n.Err = m.err.Error()
		return n
	}
	m.loadSymbols()
	n.NoUnwindInfo = !m.hasCFI()
	n.NoSymbols = len(m.syms) == 0 && m.gosym == nil && (m.dw == nil || !m.dw.hasFuncs())
	n.NoLines = (m.dw == nil || !m.dw.hasLines()) && m.gosym == nil
	return n
}

func (m *module) close() {
	if m.file != nil {
		m.file.Close()
		m.file = nil
	}
	if m.dfile != nil {
		m.dfile.Close()
		m.dfile = nil
	}
	m.ef, m.debugEF, m.dw, m.gosym, m.syms, m.eh, m.dbg, m.symCache, m.rows = nil, nil, nil, nil, nil, nil, nil, nil, nil
}

// readSymbols gathers the function symbols of .symtab and .dynsym (the
// file's and its debug file's), sorted by address, one name per address.
func readSymbols(files ...*elf.File) []symbol {
	type cand struct {
		symbol
		rank int
	}
	var all []cand
	for _, f := range files {
		if f == nil {
			continue
		}
		for i, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
			syms, err := get()
			if err != nil {
				continue
			}
			for _, s := range syms {
				t := elf.ST_TYPE(s.Info)
				if (t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) || s.Value == 0 || s.Section == elf.SHN_UNDEF {
					continue
				}
				// Among aliases prefer a global name, then .symtab's.
				rank := 2 * i
				if elf.ST_BIND(s.Info) != elf.STB_GLOBAL {
					rank++
				}
				all = append(all, cand{symbol{s.Value, s.Size, s.Name}, rank})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].addr != all[j].addr {
			return all[i].addr < all[j].addr
		}
		if all[i].rank != all[j].rank {
			return all[i].rank < all[j].rank
		}
		return all[i].name < all[j].name
	})
	out := make([]symbol, 0, len(all))
	for _, c := range all {
		if n := len(out); n > 0 && out[n-1].addr == c.addr {
			if out[n-1].size == 0 {
				out[n-1].size = c.size
			}
			continue
		}
		out = append(out, c.symbol)
	}
	return out
}

// lookupSymbol finds the function symbol holding addr.
func (m *module) lookupSymbol(addr uint64) (symbol, bool) {
	i := sort.Search(len(m.syms), func(i int) bool { return m.syms[i].addr > addr }) - 1
	if i < 0 {
		return symbol{}, false
	}
	s := m.syms[i]
	if s.size != 0 && addr >= s.addr+s.size {
		return symbol{}, false
	}
	if s.size == 0 && i+1 < len(m.syms) && addr >= m.syms[i+1].addr {
		return symbol{}, false
	}
	return s, true
}
