package stack

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

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

	eh     frame.FrameDescriptionEntries // from .eh_frame
	dbg    frame.FrameDescriptionEntries // from .debug_frame (here or in the debug file)
	cfiErr error                         // a CFI section that could not be parsed
	syms   []symbol                      // sorted by addr
	dw     *dwarfIndex
	dwErr  error // why the DWARF there is could not be read (corrupt), if so
	gosym  *gosym.Table
	goinl  *goInline // Go's inline tree, with gosym (Go 1.20 on)
	debug  string    // the separate debug file used, if any
	// link is the .gnu_debuglink name no debug root held (its CRC
	// checked), when no debug file was found: "" otherwise.
	link string
	// linkStale: a debug root held a file of link's name, but not this
	// module's (its CRC or build-id differs): an old build's.
	linkStale bool
	debugEF   *elf.File
	dfile     *os.File

	maxDebug int64      // Options.MaxDebugFileSize
	stats    *openStats // the cache's, for the debug files refused
	triedPid int        // the process it was last opened through (or tried)

	symCache map[uint64][]symFrame
	rows     map[uint64]*frame.FrameContext // CFI rows by address
	lru      int64                          // the cache's clock at last use

	lim    *limits  // nil: defaultLimits
	capped []string // the parts refused or cut at their caps, for the note
	// What the parsed parts cost, estimated: CFI, symbols, .gopclntab
	// (DWARF's is its index's).
	cfiCost, symCost, pclnCost int64
	charged                    int64 // the cost last counted in the cache's total
	symCacheBytes              int64 // the names symCache holds of its own
	// Counted and not yet taken by the cache (Cache.collect): parts
	// past their caps, names cut.
	newCapped, newNamesCut uint64
}

func (m *module) limits() limits {
	if m.lim != nil {
		return *m.lim
	}
	return defaultLimits
}

// fileSize is f's size now, from fstat: what a section may claim.
func fileSize(f *os.File) int64 {
	if f == nil {
		return 0
	}
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// section reads a section of f (the module's file or its debug file),
// within max bytes and the file's size; a section past its cap is noted
// and counted, and nil is returned.
func (m *module) section(f *os.File, s *elf.Section, max int64) []byte {
	data, err := readSection(s, fileSize(f), max)
	if err != nil {
		m.noteCap(err)
		return nil
	}
	return data
}

// noteCap counts and notes a part refused at its cap or for claiming
// bytes past the file's end; other errors are the file's own.
func (m *module) noteCap(err error) {
	var ce *capError
	if !errors.As(err, &ce) && !errors.Is(err, errPastEOF) {
		return
	}
	// A part read again (after unload) is counted once.
	msg := err.Error()
	for _, c := range m.capped {
		if c == msg {
			return
		}
	}
	m.newCapped++
	if len(m.capped) < 8 {
		m.capped = append(m.capped, msg)
	}
}

// cfi parses a CFI section read within its cap, if its entries are
// within theirs.
func (m *module) cfi(name string, data []byte, ehAddr uint64) (frame.FrameDescriptionEntries, error) {
	n, max := countCFI(data), m.limits().cfiEntries
	if n > max {
		m.noteCap(&capError{name + " entries", int64(n), int64(max), "entry"})
		return nil, nil
	}
	if !m.afford(name, int64(len(data))+costFDE*int64(n)) {
		return nil, nil
	}
	fdes, err := parseCFI(data, ehAddr)
	m.cfiCost += int64(len(data)) + costFDE*int64(len(fdes))
	return fdes, err
}

// afford says whether a part costing est bytes parsed fits within the
// module's cap, and counts and notes it when it does not.
func (m *module) afford(what string, est int64) bool {
	lim := m.limits().module
	if m.cost()+est <= lim {
		return true
	}
	m.noteCap(&capError{what + " (with the module's other parts)", m.cost() + est, lim, ""})
	return false
}

// cost estimates the bytes the module's parsed parts hold.
func (m *module) cost() int64 {
	n := m.cfiCost + m.symCost + m.pclnCost + costAddr*int64(len(m.rows)+len(m.symCache)) + m.symCacheBytes
	if m.dw != nil {
		n += m.dw.cost()
	}
	return n
}

// held is what the cache charges the module: its parsed parts (cost),
// and the ELF headers debug/elf keeps of it and of its debug file, a
// struct each section and program header, up to maxHeaderTable's worth
// a table: a module's parts are capped apart from them, but the cache's
// total would not be bounded without them (64 modules of 4,096 sections
// each hold some 150 MB of them).
func (m *module) held() int64 {
	return m.cost() + elfHeaderCost(m.ef) + elfHeaderCost(m.debugEF)
}

func elfHeaderCost(ef *elf.File) int64 {
	if ef == nil {
		return 0
	}
	return costELFSection*int64(len(ef.Sections)) + costELFProg*int64(len(ef.Progs))
}

// unload forgets what was parsed of the module, its files kept open:
// read again on next use.
func (m *module) unload() {
	m.loaded, m.dbgLoaded, m.symsLoaded = false, false, false
	m.ef, m.loads, m.eh, m.dbg, m.cfiErr, m.syms, m.dw, m.dwErr, m.gosym, m.goinl = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
	m.symCache, m.rows = nil, nil
	m.cfiCost, m.symCost, m.pclnCost, m.symCacheBytes = 0, 0, 0, 0
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
	size := fileSize(m.file)
	if err := checkHeaders(m.file, size); err != nil {
		m.noteCap(err)
		m.err = fmt.Errorf("%s: %w", m.path, err)
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
	m.loads = nil
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			m.loads = append(m.loads, p.ProgHeader)
		}
	}
	if m.buildID == "" {
		m.buildID = elfBuildID(ef)
	}
	if s := ef.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		if data := m.section(m.file, s, m.limits().cfi); data != nil {
			m.eh, m.cfiErr = m.cfi(s.Name, data, s.Addr)
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
	for _, f := range []struct {
		ef   *elf.File
		file *os.File
	}{{m.ef, m.file}, {m.debugEF, m.dfile}} {
		if f.ef == nil || m.dbg != nil {
			continue
		}
		if s := f.ef.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
			if data := m.section(f.file, s, m.limits().cfi); data != nil {
				var err error
				m.dbg, err = m.cfi(s.Name, data, 0)
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
	lim := m.limits()
	dwf, dfile := ef, m.file
	if m.debugEF != nil && m.debugEF.Section(".debug_info") != nil {
		dwf, dfile = m.debugEF, m.dfile
	}
	// The DWARF gets what the module's cap leaves, its rows' share kept.
	maxDW := min(lim.dwarf, lim.module-m.cost()-costRow*int64(lim.dwarfRows))
	if d, size, err := readDWARF(dwf, fileSize(dfile), max(maxDW, 0)); err == nil {
		m.dw = newDwarfIndex(d, size, lim.dwarfRows)
	} else {
		m.noteCap(err)
		var ce *capError
		if !errors.Is(err, errNoDWARF) && !errors.As(err, &ce) && !errors.Is(err, errPastEOF) {
			// Corrupt: said in the module's note, not taken for
			// a file built without -g.
			m.dwErr = err
		}
	}
	syms, errs := readSymbols(lim.syms, symFile{ef, fileSize(m.file)}, symFile{m.debugEF, fileSize(m.dfile)})
	for _, err := range errs {
		m.noteCap(err)
	}
	cost := costSymbol * int64(len(syms))
	for _, s := range syms {
		cost += int64(len(s.name))
	}
	if m.afford("symbols", cost) {
		m.syms, m.symCost = syms, cost
	}
	if s := ef.Section(".gopclntab"); s != nil && s.Type != elf.SHT_NOBITS {
		if data := m.section(m.file, s, lim.pclntab); data != nil && m.afford(s.Name, costPcln4Byte*int64(len(data))/4) {
			text := goTextStart(ef, data, s.Addr, m.syms)
			if tab, err := goTable(data, text); err == nil {
				m.gosym = tab
				m.goinl = newGoInline(ef, data, text, goFuncStart(ef, data, s.Addr))
				m.pclnCost = costPcln4Byte * int64(len(data)) / 4
			}
		}
	}
}

// goTextStart is the address .gopclntab's function entries count from
// (Go 1.18 on): runtime.text, which is the start of .text only when Go
// linked the binary itself. Linked by the system's linker (cgo: runc,
// containerd, dockerd) .text starts with the C start-up code, and
// runtime.text is later: counted from .text, every Go frame of such a
// binary was named after a function before it (runtime/internal/
// syscall.Syscall6 as runtime.memhash16). debug/gosym takes the address
// it is given (golang/go#65232). Stripped, the binary has no
// runtime.text symbol; the table's header holds the address
// (pcHeader.textStart) as Go 1.18 and 1.19 link it, later ones leave it
// 0 there and the runtime reads it from its moduledata
// (runtime.firstmoduledata: a pointer to the header, then the text
// address 22 words on), found in .go.module (Go 1.26) or .noptrdata.
// An address is taken only
// when it lies in .text; else .text's start, as before.
func goTextStart(ef *elf.File, pcln []byte, pclnAddr uint64, syms []symbol) uint64 {
	t := ef.Section(".text")
	if t == nil {
		return 0
	}
	in := func(a uint64) bool { return a >= t.Addr && a < t.Addr+t.Size }
	for _, s := range syms {
		if s.name == "runtime.text" && in(s.addr) {
			return s.addr
		}
	}
	// magic (4 bytes: 0xfffffff0 Go 1.18, 0xfffffff1 Go 1.20 on), two
	// pad bytes, minLC, ptrSize, nfunc, nfiles, textStart.
	if len(pcln) < 8 {
		return t.Addr
	}
	magic, ptr := ef.ByteOrder.Uint32(pcln), int(pcln[7])
	if magic != 0xfffffff0 && magic != 0xfffffff1 || ptr != 4 && ptr != 8 || len(pcln) < 8+3*ptr {
		return t.Addr
	}
	word := func(b []byte) uint64 {
		if ptr == 8 {
			return ef.ByteOrder.Uint64(b)
		}
		return uint64(ef.ByteOrder.Uint32(b))
	}
	if a := word(pcln[8+2*ptr:]); in(a) {
		return a
	}
	if a, ok := moduledataText(ef, pclnAddr, ptr, word, in); ok {
		return a
	}
	return t.Addr
}

// maxModuledataScan bounds the bytes of a section looked through for
// the moduledata: Go's own .noptrdata is a few hundred KiB at most.
const maxModuledataScan = 16 << 20

// moduledataText finds the moduledata, the words in .go.module (Go
// 1.26) or .noptrdata (before) whose first is the address of
// .gopclntab (its pcHeader), and returns its text: the word 22 on
// (pcHeader, six slices of three words, findfunctab, minpc, maxpc,
// text, etext), checked: in .text, at most minpc, with maxpc at most
// etext. Read in 64 KiB pieces, at most maxModuledataScan bytes a
// section.
func moduledataText(ef *elf.File, pclnAddr uint64, ptr int, word func([]byte) uint64, in func(uint64) bool) (uint64, bool) {
	text, _, ok := moduledata(ef, pclnAddr, ptr, word, in)
	return text, ok
}

// goFuncStart is moduledata.gofunc, the address of go:func.* (where the
// funcdata offsets count from: Go's inline trees), for a Go 1.20 or
// later .gopclntab at pclnAddr; 0 when not found or in no section that
// holds file bytes.
func goFuncStart(ef *elf.File, pcln []byte, pclnAddr uint64) uint64 {
	t := ef.Section(".text")
	if t == nil || len(pcln) < 8 || ef.ByteOrder.Uint32(pcln) != 0xfffffff1 {
		return 0
	}
	ptr := int(pcln[7])
	if ptr != 4 && ptr != 8 {
		return 0
	}
	word := func(b []byte) uint64 {
		if ptr == 8 {
			return ef.ByteOrder.Uint64(b)
		}
		return uint64(ef.ByteOrder.Uint32(b))
	}
	in := func(a uint64) bool { return a >= t.Addr && a < t.Addr+t.Size }
	_, gofunc, ok := moduledata(ef, pclnAddr, ptr, word, in)
	if !ok {
		return 0
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 && gofunc >= s.Addr && gofunc-s.Addr < s.Size {
			return gofunc
		}
	}
	return 0
}

// moduledata finds the moduledata (see moduledataText) and returns its
// text and, Go 1.20 on, its gofunc: the word 40 on (etext, then
// noptrdata, data, bss, noptrbss, covctrs and their ends, end, gcdata,
// gcbss, types, etypes, rodata), 0 when the section ends before it.
func moduledata(ef *elf.File, pclnAddr uint64, ptr int, word func([]byte) uint64, in func(uint64) bool) (text, gofunc uint64, ok bool) {
	if pclnAddr == 0 {
		return 0, 0, false
	}
	const chunk = 64 << 10
	need := 24 * ptr // through etext
	full := 41 * ptr // through gofunc
	buf := make([]byte, chunk+full)
	for _, name := range [...]string{".go.module", ".noptrdata"} {
		s := ef.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		size := min(s.Size, maxModuledataScan)
		for off := uint64(0); off < size; off += chunk {
			n, _ := s.ReadAt(buf[:min(uint64(len(buf)), size-off)], int64(off))
			b := buf[:n]
			for i := 0; i+need <= len(b) && i < chunk; i += ptr {
				if word(b[i:]) != pclnAddr {
					continue
				}
				w := func(k int) uint64 { return word(b[i+k*ptr:]) }
				text, etext, minpc, maxpc := w(22), w(23), w(20), w(21)
				if in(text) && text <= minpc && minpc <= maxpc && maxpc <= etext {
					if i+full <= len(b) {
						gofunc = w(40)
					}
					return text, gofunc, true
				}
			}
		}
	}
	return 0, 0, false
}

// goTable parses .gopclntab; debug/gosym may panic on a malformed one:
// that is an error here.
func goTable(data []byte, text uint64) (tab *gosym.Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			tab, err = nil, fmt.Errorf("malformed .gopclntab: %v", r)
		}
	}()
	return gosym.NewTable(nil, gosym.NewLineTable(data, text))
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
	n.Capped = strings.Join(m.capped, "; ")
	n.NoSymbols = len(m.syms) == 0 && m.gosym == nil && (m.dw == nil || !m.dw.hasFuncs())
	n.NoLines = (m.dw == nil || !m.dw.hasLines()) && m.gosym == nil
	if m.dwErr != nil {
		n.DWARFErr = m.dwErr.Error()
	} else if m.dw != nil && m.dw.err != nil {
		n.DWARFErr = m.dw.err.Error()
	}
	if n.NoSymbols || n.NoLines {
		n.DebugLink, n.DebugLinkStale = m.link, m.linkStale
	}
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
	m.ef, m.debugEF, m.dw, m.gosym, m.goinl, m.syms, m.eh, m.dbg, m.symCache, m.rows = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
}

// symFile is an ELF file and its real size.
type symFile struct {
	ef   *elf.File
	size int64
}

// readSymbols gathers the function symbols of .symtab and .dynsym (the
// file's and its debug file's), sorted by address, one name per address.
// Each table is read within max bytes (its entries and its string table)
// and the file's size, else skipped, its error returned; names are cut
// at MaxNameBytes. The symbols kept cost max bytes at most in all (many
// entries may name one long string): the rest are left out, counted as
// one more error.
func readSymbols(max int64, files ...symFile) ([]symbol, []error) {
	type cand struct {
		symbol
		rank int
	}
	var all []cand
	var errs []error
	left, full := max, false
	for _, f := range files {
		if f.ef == nil {
			continue
		}
		for i, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
			err := symbolTable(f, typ, max, func(s elf.Sym64, name []byte) {
				t := elf.ST_TYPE(s.Info)
				if (t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) || s.Value == 0 || elf.SectionIndex(s.Shndx) == elf.SHN_UNDEF {
					return
				}
				// Among aliases prefer a global name, then .symtab's.
				rank := 2 * i
				if elf.ST_BIND(s.Info) != elf.STB_GLOBAL {
					rank++
				}
				n := name
				if len(n) > MaxNameBytes {
					// Cut here so that the table's names are bounded
					// too; the cut mark comes with demangleName.
					n = n[:MaxNameBytes+1]
				}
				if left -= costSymbol + int64(len(n)); left < 0 {
					full = true
					return
				}
				all = append(all, cand{symbol{s.Value, s.Size, string(n)}, rank})
			})
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if full {
		errs = append(errs, &capError{"symbols", max - left, max, ""})
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
	return out, errs
}

// symbolTable reads the symbol table of type typ, if the file has one,
// and calls fn for each symbol (the null symbol left out) with its name,
// which fn must copy to keep. The table and its string table are read
// within max bytes together.
func symbolTable(f symFile, typ elf.SectionType, max int64, fn func(s elf.Sym64, name []byte)) error {
	s := f.ef.SectionByType(typ)
	if s == nil {
		return nil
	}
	if int(s.Link) <= 0 || int(s.Link) >= len(f.ef.Sections) {
		return fmt.Errorf("%s: no string table", s.Name)
	}
	strs := f.ef.Sections[s.Link]
	if claim := s.Size + strs.Size; claim > uint64(max) || claim < s.Size {
		return &capError{s.Name + " and " + strs.Name, int64(min(claim, 1<<62)), max, ""}
	}
	tab, err := readSection(s, f.size, max)
	if err != nil {
		return err
	}
	str, err := readSection(strs, f.size, max-int64(len(tab)))
	if err != nil {
		return err
	}
	const entry = 24 // Elf64_Sym
	le := binary.LittleEndian
	for off := entry; off+entry <= len(tab); off += entry {
		e := tab[off : off+entry]
		sym := elf.Sym64{Name: le.Uint32(e), Info: e[4], Other: e[5], Shndx: le.Uint16(e[6:]),
			Value: le.Uint64(e[8:]), Size: le.Uint64(e[16:])}
		var name []byte
		if int(sym.Name) < len(str) {
			name = str[sym.Name:]
			if k := bytes.IndexByte(name, 0); k >= 0 {
				name = name[:k]
			}
		}
		fn(sym, name)
	}
	return nil
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
