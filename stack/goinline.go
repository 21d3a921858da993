package stack

import (
	"debug/elf"
	"encoding/binary"
)

// goInline reads the inline tree Go keeps in its binaries for
// runtime.CallersFrames (Go 1.20 on: pcHeader magic 0xfffffff1): the
// calls inlined at an address, which .gopclntab's line table folds into
// the function they were inlined into. Without it a stripped binary's
// frame named the outer function with the file and line of the
// innermost inlined call (main.readConfig at os/file.go:390, os.Open's
// line, for an os.Open in readConfig). As the runtime does
// (runtime/symtabinl.go): PCDATA_InlTreeIndex at the address gives an
// index in the function's FUNCDATA_InlTree, whose entry names the
// inlined function and the offset of an instruction whose position is
// its call site, whose index gives the next, to -1, the function
// itself. The tree is in go:func.* (.rodata), at moduledata.gofunc plus
// the funcdata offset.
//
// What a traced file says is hostile: every offset is checked against
// its table, an entry is read only within its section, and a chain is
// followed at most maxGoInline steps.
type goInline struct {
	order     binary.ByteOrder
	ptr       int
	textStart uint64
	nfunc     int
	funcnames []byte // funcnametab
	pctab     []byte
	pclntable []byte // ftab, then the _func records
	gofunc    uint64
	ef        *elf.File
}

const (
	goPCDataInlTreeIndex = 2
	goFuncDataInlTree    = 3
	goFuncHeader         = 44 // _func's size to nfuncdata, Go 1.20 on
	goInlinedCallSize    = 16 // funcID, pad, nameOff, parentPc, startLine
	maxGoInline          = 64 // inlined calls followed at one address
)

// newGoInline reads pcln's header; nil when the table is not Go 1.20's
// or later, or gofunc is unknown (0).
func newGoInline(ef *elf.File, pcln []byte, textStart, gofunc uint64) *goInline {
	if gofunc == 0 || len(pcln) < 8 || ef.ByteOrder.Uint32(pcln) != 0xfffffff1 {
		return nil
	}
	ptr := int(pcln[7])
	if ptr != 4 && ptr != 8 || len(pcln) < 8+8*ptr {
		return nil
	}
	word := func(i int) uint64 {
		if ptr == 8 {
			return ef.ByteOrder.Uint64(pcln[8+i*ptr:])
		}
		return uint64(ef.ByteOrder.Uint32(pcln[8+i*ptr:]))
	}
	// nfunc, nfiles, (textStart), funcnameOffset, cuOffset,
	// filetabOffset, pctabOffset, pclnOffset.
	nfunc := word(0)
	funcname, pctab, pclnOff := word(3), word(6), word(7)
	n := uint64(len(pcln))
	if funcname > n || pctab > n || pclnOff > n || nfunc > n/8 {
		return nil
	}
	g := &goInline{
		order: ef.ByteOrder, ptr: ptr, textStart: textStart, nfunc: int(nfunc),
		funcnames: pcln[funcname:], pctab: pcln[pctab:], pclntable: pcln[pclnOff:],
		gofunc: gofunc, ef: ef,
	}
	if uint64(len(g.pclntable)) < (nfunc+1)*8 {
		return nil
	}
	return g
}

// frames gives the calls inlined at pc, innermost first, each with the
// address whose file and line are its call's position (the first pc's
// own; the others their call sites'), and, last, the function's own
// entry with the address of its position: nil when nothing is inlined
// at pc or the tables say nothing readable.
func (g *goInline) frames(pc uint64) []goInlined {
	if g == nil || pc < g.textStart {
		return nil
	}
	fn, entry, ok := g.funcFor(pc - g.textStart)
	if !ok {
		return nil
	}
	npcdata := g.order.Uint32(fn[28:])
	nfuncdata := uint32(fn[43])
	if npcdata <= goPCDataInlTreeIndex || nfuncdata <= goFuncDataInlTree ||
		uint64(len(fn)) < goFuncHeader+4*uint64(npcdata)+4*uint64(nfuncdata) {
		return nil
	}
	pcdata := g.order.Uint32(fn[goFuncHeader+4*goPCDataInlTreeIndex:])
	treeOff := g.order.Uint32(fn[goFuncHeader+4*npcdata+4*goFuncDataInlTree:])
	if pcdata == 0 || treeOff == ^uint32(0) {
		return nil
	}
	tree := g.gofunc + uint64(treeOff)
	var out []goInlined
	at := pc
	for range maxGoInline {
		idx, ok := g.pcvalue(pcdata, entry, at-g.textStart)
		if !ok || idx < 0 {
			break
		}
		var e [goInlinedCallSize]byte
		if !g.read(tree+uint64(idx)*goInlinedCallSize, e[:]) {
			return nil
		}
		name, ok := g.name(int32(g.order.Uint32(e[4:])))
		if !ok {
			return nil
		}
		out = append(out, goInlined{Func: name, PC: at})
		parent := int32(g.order.Uint32(e[8:]))
		if parent < 0 {
			return nil
		}
		at = g.textStart + entry + uint64(parent)
	}
	if len(out) == 0 {
		return nil
	}
	// The function itself, at the position of its outermost inlined call.
	return append(out, goInlined{PC: at})
}

// goInlined is one frame of frames: an inlined function's name (the
// function itself's: "") and the address whose position it is at.
type goInlined struct {
	Func string
	PC   uint64
}

// funcFor finds the _func record of the function holding off (from
// textStart), with its entry's offset.
func (g *goInline) funcFor(off uint64) ([]byte, uint64, bool) {
	ftab := g.pclntable
	entry := func(i int) uint64 { return uint64(g.order.Uint32(ftab[8*i:])) }
	// The last function whose entry is at most off; the table's
	// nfunc+1'th entry is the end of the text.
	lo, hi := 0, g.nfunc
	if g.nfunc == 0 || off < entry(0) || off >= entry(g.nfunc) {
		return nil, 0, false
	}
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if entry(mid) <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	funcOff := uint64(g.order.Uint32(ftab[8*lo+4:]))
	if funcOff+goFuncHeader > uint64(len(ftab)) {
		return nil, 0, false
	}
	fn := ftab[funcOff:]
	if uint64(g.order.Uint32(fn)) != entry(lo) {
		return nil, 0, false
	}
	return fn, entry(lo), true
}

// pcvalue decodes the pc-value table at off in pctab for the function
// at entry (offsets from textStart) at target, as the runtime's pcvalue:
// -1 before the first change.
func (g *goInline) pcvalue(off uint32, entry, target uint64) (int32, bool) {
	if uint64(off) >= uint64(len(g.pctab)) {
		return 0, false
	}
	p := g.pctab[off:]
	pc, val := entry, int32(-1)
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv > 1<<32-1 || uv == 0 && !first {
			return 0, false // the table's end, before target: not in it
		}
		p = p[n:]
		d := uint32(uv)
		val += int32(-(d & 1) ^ (d >> 1))
		pd, n := binary.Uvarint(p)
		if n <= 0 || pd > 1<<32-1 {
			return 0, false
		}
		p = p[n:]
		pc += pd // PCQuantum is 1 on amd64
		if target < pc {
			return val, true
		}
	}
}

// name is the function name at off in funcnametab, to its NUL.
func (g *goInline) name(off int32) (string, bool) {
	if off < 0 || int(off) >= len(g.funcnames) {
		return "", false
	}
	b := g.funcnames[off:]
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), i > 0
		}
	}
	return "", false
}

// read reads len(b) bytes at ELF address addr, within one section that
// holds file bytes.
func (g *goInline) read(addr uint64, b []byte) bool {
	for _, s := range g.ef.Sections {
		if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_COMPRESSED != 0 {
			continue
		}
		if addr >= s.Addr && addr-s.Addr < s.Size && uint64(len(b)) <= s.Size-(addr-s.Addr) {
			n, err := s.ReadAt(b, int64(addr-s.Addr))
			return err == nil && n == len(b)
		}
	}
	return false
}
