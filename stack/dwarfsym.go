package stack

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// symFrame is what symbolizing one address gives, per (inlined) function.
type symFrame struct {
	Func    string
	File    string
	Line    int
	Inlined bool
}

// dwarfIndex answers address → functions and lines from debug/dwarf,
// built lazily: the units' ranges on first use, each unit's line table
// and function tree on the first address that falls in it.
type dwarfIndex struct {
	d      *dwarf.Data
	built  bool
	ranges []unitRange // sorted by lo
	// maxRows bounds the line rows and scopes kept of the units read;
	// rows counts them. Past it the units read so far are forgotten (read
	// again on need), and a unit bigger than it alone is cut, counted in
	// cut.
	maxRows, rows int
	cut           uint64
	loaded        []*unitInfo
	size          int64 // the sections' bytes
	// err is what stopped the walk of the units' headers (corrupt
	// DWARF): the units past it are not known.
	err error
}

type unitRange struct {
	lo, hi uint64
	u      *unitInfo
}

type unitInfo struct {
	entry *dwarf.Entry
	done  bool
	lines []lineRow
	files []*dwarf.LineFile
	funcs []scopeRange // the concrete subprograms' ranges, sorted by lo
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // DW_LNE_end_sequence: no code from here
}

// scope is a subprogram or an inlined subroutine.
type scope struct {
	ranges   [][2]uint64
	name     string
	origin   dwarf.Offset // DW_AT_abstract_origin or DW_AT_specification, to name it
	callFile string       // where it was inlined (inlined subroutines only)
	callLine int
	children []*scope
}

type scopeRange struct {
	lo, hi uint64
	s      *scope
}

// errNoDWARF: the file has no .debug_info (no -g, or stripped): no
// fault of the file's.
var errNoDWARF = errors.New("no DWARF")

func newDwarfIndex(d *dwarf.Data, size int64, maxRows int) *dwarfIndex {
	return &dwarfIndex{d: d, size: size, maxRows: maxRows}
}

// cost estimates the bytes the index holds: its sections, and the rows
// and scopes of the units read.
func (x *dwarfIndex) cost() int64 {
	return x.size + costRow*int64(x.rows+len(x.ranges))
}

// dwarfSections are the DWARF sections read, by name without .debug_:
// debug/elf's DWARF reads these, and .debug_types, which no lookup here
// needs.
var dwarfSections = []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists", "loclists"}

// readDWARF is debug/elf's File.DWARF within max bytes in all (the
// sections decompressed) and the file's size: a section past what is
// left of max fails it all, a *capError. Relocations are not applied:
// the files mapped for code are executables and shared objects, not
// relocatable objects.
func readDWARF(ef *elf.File, size, max int64) (*dwarf.Data, int64, error) {
	dat := map[string][]byte{}
	left := max
	for _, s := range ef.Sections {
		var suffix string
		switch {
		case strings.HasPrefix(s.Name, ".debug_"):
			suffix = s.Name[7:]
		case strings.HasPrefix(s.Name, ".zdebug_"):
			suffix = s.Name[8:]
		default:
			continue
		}
		found := false
		for _, n := range dwarfSections {
			found = found || n == suffix
		}
		if !found || dat[suffix] != nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		b, err := readSection(s, size, left)
		var ce *capError
		if errors.As(err, &ce) {
			ce.what = "DWARF (" + ce.what + ")"
			return nil, 0, ce
		}
		if err != nil {
			return nil, 0, err
		}
		left -= int64(len(b))
		dat[suffix] = b
	}
	if dat["info"] == nil {
		return nil, 0, errNoDWARF
	}
	d, err := dwarf.New(dat["abbrev"], nil, nil, dat["info"], dat["line"], nil, dat["ranges"], dat["str"])
	if err != nil {
		return nil, 0, fmt.Errorf("DWARF: %w", err)
	}
	for _, n := range dwarfSections[5:] {
		if b := dat[n]; b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return nil, 0, fmt.Errorf("DWARF: %w", err)
			}
		}
	}
	return d, max - left, nil
}

func (x *dwarfIndex) build() {
	if x.built {
		return
	}
	x.built = true
	r := x.d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			x.err = err
			break
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			rs, _ := x.d.Ranges(e)
			u := &unitInfo{entry: e}
			for _, rg := range rs {
				if rg[0] < rg[1] && rg[0] != 0 {
					x.ranges = append(x.ranges, unitRange{rg[0], rg[1], u})
				}
			}
		}
		r.SkipChildren()
	}
	sort.Slice(x.ranges, func(i, j int) bool { return x.ranges[i].lo < x.ranges[j].lo })
}

func (x *dwarfIndex) hasLines() bool { x.build(); return len(x.ranges) > 0 }
func (x *dwarfIndex) hasFuncs() bool { x.build(); return len(x.ranges) > 0 }

func (x *dwarfIndex) unitFor(pc uint64) *unitInfo {
	x.build()
	i := sort.Search(len(x.ranges), func(i int) bool { return x.ranges[i].lo > pc }) - 1
	// Ranges of different units may nest (a unit's range covering a
	// hole another fills): look back a little for one that holds pc.
	for j := i; j >= 0 && j > i-8; j-- {
		if pc < x.ranges[j].hi {
			return x.ranges[j].u
		}
	}
	return nil
}

// lookup gives the frames for one ELF address, innermost first; nil
// when DWARF does not cover it.
func (x *dwarfIndex) lookup(pc uint64) []symFrame {
	u := x.unitFor(pc)
	if u == nil {
		return nil
	}
	x.load(u)
	file, line := u.lineAt(pc)
	var chain []*scope // outermost first
	i := sort.Search(len(u.funcs), func(i int) bool { return u.funcs[i].lo > pc }) - 1
	for j := i; j >= 0 && j > i-8; j-- {
		if pc < u.funcs[j].hi {
			chain = append(chain, u.funcs[j].s)
			break
		}
	}
	for len(chain) > 0 {
		var next *scope
		for _, c := range chain[len(chain)-1].children {
			if c.holds(pc) {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		chain = append(chain, next)
	}
	if len(chain) == 0 {
		if file == "" {
			return nil
		}
		return []symFrame{{File: file, Line: line}}
	}
	out := make([]symFrame, 0, len(chain))
	for k := len(chain) - 1; k >= 0; k-- {
		s := chain[k]
		out = append(out, symFrame{Func: s.name, File: file, Line: line, Inlined: k > 0})
		file, line = s.callFile, s.callLine
	}
	return out
}

func (s *scope) holds(pc uint64) bool {
	for _, r := range s.ranges {
		if r[0] <= pc && pc < r[1] {
			return true
		}
	}
	return false
}

func (u *unitInfo) lineAt(pc uint64) (string, int) {
	i := sort.Search(len(u.lines), func(i int) bool { return u.lines[i].addr > pc }) - 1
	if i < 0 || u.lines[i].end {
		return "", 0
	}
	return u.lines[i].file, u.lines[i].line
}

// load reads a unit's line table and its function tree.
func (x *dwarfIndex) load(u *unitInfo) {
	if u.done {
		return
	}
	u.done = true
	if x.maxRows > 0 && x.rows >= x.maxRows/2 {
		// Forget the units read so far: read again when an address
		// needs one, so that what is kept stays under maxRows.
		for _, o := range x.loaded {
			o.done, o.lines, o.files, o.funcs = false, nil, nil, nil
		}
		x.loaded, x.rows = x.loaded[:0], 0
	}
	x.loaded = append(x.loaded, u)
	// A unit alone may hold up to what is left of maxRows.
	budget := x.maxRows - x.rows
	if x.maxRows <= 0 {
		budget = int(^uint(0) >> 1)
	}
	full := func() bool {
		if budget > 0 {
			budget--
			x.rows++
			return false
		}
		x.cut++
		return true
	}
	if lr, err := x.d.LineReader(u.entry); err == nil && lr != nil {
		var le dwarf.LineEntry
		n := 0
		for lr.Next(&le) == nil {
			if full() {
				// A cut table would give its last row's line to the
				// addresses after it: none is kept.
				x.rows -= n
				u.lines = nil
				break
			}
			n++
			name := ""
			if le.File != nil {
				name = le.File.Name
			}
			u.lines = append(u.lines, lineRow{le.Address, name, le.Line, le.EndSequence})
		}
		u.files = lr.Files()
		// Sequences may come in any order; at one address an end of
		// sequence goes before the start of the next.
		sort.SliceStable(u.lines, func(i, j int) bool {
			a, b := u.lines[i], u.lines[j]
			if a.addr != b.addr {
				return a.addr < b.addr
			}
			return a.end && !b.end
		})
	}

	// Rust functions are named as gdb names them: by their place in the
	// DWARF namespaces (std::sys::unix::fs::{impl#13}::open_c), which
	// their mangled names do not give.
	rust := false
	if l, ok := u.entry.Val(dwarf.AttrLanguage).(int64); ok && l == dwLangRust {
		rust = true
	}
	names := map[dwarf.Offset]*dwarf.Entry{}
	qual := map[dwarf.Offset]string{}
	var all []*scope
	r := x.d.Reader()
	r.Seek(u.entry.Offset)
	if _, err := r.Next(); err != nil { // the unit entry itself
		return
	}
	// stack holds, per open DIE with children, the scope it opened (or
	// the enclosing one) and the namespace path.
	type level struct {
		s      *scope
		prefix string
	}
	stack := []level{{nil, ""}}
loop:
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				break
			}
			continue
		}
		cur, prefix := stack[len(stack)-1].s, stack[len(stack)-1].prefix
		var s *scope
		childPrefix := prefix
		switch e.Tag {
		case dwarf.TagNamespace, dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagEnumerationType:
			if n, ok := e.Val(dwarf.AttrName).(string); ok && (rust || e.Tag == dwarf.TagNamespace) {
				childPrefix = prefix + n + "::"
			}
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			if full() {
				// Cut: a function missing its inlined frames, or
				// missing, would be named wrong; the symbol tables
				// name the unit's functions instead.
				u.funcs, all = nil, nil
				break loop
			}
			names[e.Offset] = e
			name := entryName(e)
			if rust && e.Tag == dwarf.TagSubprogram {
				if n, ok := e.Val(dwarf.AttrName).(string); ok {
					name = prefix + n
					qual[e.Offset] = name
				}
			}
			rs, _ := x.d.Ranges(e)
			if len(rs) == 0 {
				break
			}
			s = &scope{ranges: rs, name: name}
			if e.Tag == dwarf.TagInlinedSubroutine {
				s.name = ""
			}
			if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
				s.origin = o
				s.name = ""
			} else if o, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok && (s.name == "" || rust) {
				// A method: named after its declaration, in its type.
				s.origin = o
				if rust {
					s.name = ""
				}
			}
			all = append(all, s)
			if e.Tag == dwarf.TagInlinedSubroutine && cur != nil {
				if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && int(f) < len(u.files) && u.files[f] != nil {
					s.callFile = u.files[f].Name
				}
				if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
					s.callLine = int(l)
				}
				cur.children = append(cur.children, s)
			} else if e.Tag == dwarf.TagSubprogram {
				// Top level, or a function nested in another (a local
				// function): a top-level scope all the same.
				for _, rg := range rs {
					u.funcs = append(u.funcs, scopeRange{rg[0], rg[1], s})
				}
			}
		default:
			// Lexical blocks, types: no scope of their own.
		}
		if e.Children {
			if s == nil {
				s = cur
			}
			stack = append(stack, level{s, childPrefix})
		}
	}
	sort.Slice(u.funcs, func(i, j int) bool { return u.funcs[i].lo < u.funcs[j].lo })
	for _, s := range all {
		for hops := 0; s.name == "" && s.origin != 0 && hops < 4; hops++ {
			if q, ok := qual[s.origin]; ok {
				s.name = q
				break
			}
			e := names[s.origin]
			if e == nil {
				// An origin in another unit (LTO), or not seen yet.
				rr := x.d.Reader()
				rr.Seek(s.origin)
				e, _ = rr.Next()
				if e == nil {
					break
				}
			}
			s.name = entryName(e)
			s.origin = 0
			if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
				s.origin = o
			} else if o, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
				s.origin = o
			}
		}
	}
}

const attrMIPSLinkageName dwarf.Attr = 0x2007

const dwLangRust = 0x1c // DW_LANG_Rust

// entryName is a DIE's function name: its linkage name demangled (for
// C++ and Rust, which gives the qualified name), else DW_AT_name.
func entryName(e *dwarf.Entry) string {
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, attrMIPSLinkageName} {
		if ln, ok := e.Val(a).(string); ok && ln != "" {
			return demangleName(ln)
		}
	}
	n, _ := e.Val(dwarf.AttrName).(string)
	return n
}
