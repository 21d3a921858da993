package stack

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// limits are what parsing one module may read and keep. A traced file's
// headers say how big its sections are; a hostile or broken file says
// anything (a 16 KB sparse file whose .eh_frame claims 256 MB), so each
// part is checked against the file's real size and against its cap
// before a byte is read, and a compressed section is decompressed no
// further than its cap, whatever it claims.
type limits struct {
	cfi     int64 // each of .eh_frame and .debug_frame, as stored
	syms    int64 // each symbol table (.symtab, .dynsym) with its string table
	dwarf   int64 // all the DWARF sections a module reads, decompressed
	pclntab int64 // Go's .gopclntab
	// dwarfRows bounds the line rows and function scopes kept of the
	// units read.
	dwarfRows int
	// cfiEntries bounds the entries (CIEs, FDEs) of each CFI section:
	// parsed, each costs some 100 bytes besides its bytes.
	cfiEntries int
	// module bounds what the module's parts cost parsed, in all,
	// estimated (cost): a part that would take it past is not parsed.
	module int64
}

// defaultLimits are the per-module caps (stated in doc.go and the README).
var defaultLimits = limits{
	cfi:        8 << 20,
	syms:       16 << 20,
	dwarf:      32 << 20,
	pclntab:    32 << 20,
	dwarfRows:  1 << 17,
	cfiEntries: 1 << 17,
	module:     48 << 20,
}

// Parsed, what parts of a module cost besides the bytes they keep (a
// parsed FDE, a symbol, a DWARF row, a remembered address), and what
// .gopclntab's table costs per 4 bytes: estimates, for the caps on a
// module and the cache's total.
const (
	costFDE       = 96
	costSymbol    = 48
	costRow       = 64
	costAddr      = 256
	costPcln4Byte = 9
	// debug/elf's Section and Prog, with their readers and a name.
	costELFSection = 280
	costELFProg    = 160
)

// countCFI counts the entries of a CFI section by their length fields,
// without parsing them: an .eh_frame ends at a zero length.
func countCFI(data []byte) int {
	n := 0
	for off := 0; off+4 <= len(data); n++ {
		l := uint64(binary.LittleEndian.Uint32(data[off:]))
		off += 4
		if l == 0 {
			break
		}
		if l == 0xffffffff {
			if off+8 > len(data) {
				break
			}
			l = binary.LittleEndian.Uint64(data[off:])
			off += 8
		}
		if l > uint64(len(data)-off) {
			break
		}
		off += int(l)
	}
	return n
}

// MaxNameBytes is the longest function or file name a frame keeps; a
// longer one is cut to this and ends in NameCut.
const MaxNameBytes = 4 << 10

// NameCut ends a name cut at MaxNameBytes.
const NameCut = "…"

// capError is a section refused or cut at its cap: counted, and said in
// the module's note.
type capError struct {
	what       string
	claim, cap int64
	unit       string // what claim and cap count: "" for bytes, else "entry"
}

func (e *capError) Error() string {
	if e.unit != "" {
		return fmt.Sprintf("%s: %d, past its %d-%s cap", e.what, e.claim, e.cap, e.unit)
	}
	if e.cap < 1<<20 {
		return fmt.Sprintf("%s: %d bytes, past its %d-byte cap", e.what, e.claim, e.cap)
	}
	return fmt.Sprintf("%s: %d bytes, past its %d MiB cap", e.what, e.claim, e.cap>>20)
}

// errPastEOF is a section that claims bytes past the end of its file.
var errPastEOF = errors.New("past the end of the file")

// readSection reads a section's contents, decompressed, if they fit in
// max bytes and in the file (of size bytes): a section claiming more is
// refused before anything is read (a *capError, or errPastEOF), and a
// compressed stream is read no further than max whatever its header
// says.
func readSection(s *elf.Section, size, max int64) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("%s: no bits", s.Name)
	}
	end := s.Offset + s.FileSize
	if end < s.Offset || end > uint64(size) {
		return nil, fmt.Errorf("%s: %d bytes at %d: %w", s.Name, s.FileSize, s.Offset, errPastEOF)
	}
	compressed := s.Flags&elf.SHF_COMPRESSED != 0 || strings.HasPrefix(s.Name, ".zdebug")
	if !compressed {
		if s.FileSize > uint64(max) {
			return nil, &capError{s.Name, int64(min(s.FileSize, 1<<62)), max, ""}
		}
		data := make([]byte, s.FileSize)
		if _, err := s.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		return data, nil
	}
	// The stored bytes are bounded too: a stream never inflates to less
	// than its input, nearly.
	if s.FileSize > uint64(max) {
		return nil, &capError{s.Name, int64(min(s.FileSize, 1<<62)), max, ""}
	}
	claim := s.Size // SHF_COMPRESSED: the header's ch_size
	var r io.Reader
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		// .zdebug_*: "ZLIB", the size big-endian, a zlib stream.
		var hdr [12]byte
		if _, err := s.ReadAt(hdr[:], 0); err != nil || string(hdr[:4]) != "ZLIB" {
			return nil, fmt.Errorf("%s: no ZLIB header", s.Name)
		}
		claim = binary.BigEndian.Uint64(hdr[4:])
		z, err := zlib.NewReader(io.NewSectionReader(s, 12, int64(s.FileSize)-12))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		defer z.Close()
		r = z
	} else {
		// debug/elf decompresses SHF_COMPRESSED (zlib, zstd) as it is
		// read; Open does not read it all.
		r = s.Open()
	}
	if claim > uint64(max) {
		return nil, &capError{s.Name + " (decompressed)", int64(min(claim, 1<<62)), max, ""}
	}
	var buf bytes.Buffer
	buf.Grow(int(claim))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(claim)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if n > int64(claim) {
		// A stream longer than its header says: not read further.
		return nil, &capError{s.Name + " (decompressed, past its stated size)", n, int64(claim), ""}
	}
	if n < int64(claim) {
		return nil, fmt.Errorf("%s: decompressed to %d bytes, its header says %d", s.Name, n, claim)
	}
	return buf.Bytes(), nil
}

// cutName cuts a name longer than max bytes (at a rune boundary) and
// marks it; ok is false when it was cut.
func cutName(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, true
	}
	i := max
	for i > 0 && i > max-4 && s[i]&0xc0 == 0x80 {
		i--
	}
	return strings.Clone(s[:i]) + NameCut, false
}

// maxHeaderTable caps each of the section header table and the program
// header table, in bytes as the ELF header claims them (entries times
// entry size): debug/elf reads each whole and makes a struct of each
// entry (some 280 bytes a section), whatever their number. A sparse file
// of 24 KB on disk whose header says 4,000,000 sections (extended
// numbering: the count in the first section's size) took 1.1 GB. A
// program or library has some 10 program headers and 30 to 80 sections:
// the cap is 4,096 sections (some 1.1 MB parsed). The cache counts what
// they hold in Options.MaxBytes (module.held).
const maxHeaderTable = 256 << 10

// checkHeaders reads the ELF header, and the headers of the first
// section and of the section-name table, and refuses a file whose
// section header table, program header table or section-name table
// claims more than its cap (debug/elf reads each whole as it opens the
// file) or whose section-name table lies past the file's end.
func checkHeaders(r io.ReaderAt, size int64) error {
	var h [64]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return fmt.Errorf("ELF header: %w", err)
	}
	if string(h[:4]) != elf.ELFMAG || elf.Class(h[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(h[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return errors.New("not a 64-bit little-endian ELF file")
	}
	le := binary.LittleEndian
	phentsize, phnum := le.Uint16(h[0x36:]), le.Uint16(h[0x38:])
	if n := int64(phnum) * int64(phentsize); n > maxHeaderTable {
		return &capError{"program header table", n, maxHeaderTable, ""}
	}
	shoff, shentsize, shnum, shstrndx := le.Uint64(h[0x28:]), le.Uint16(h[0x3a:]), le.Uint16(h[0x3c:]), le.Uint16(h[0x3e:])
	if shoff == 0 || shentsize < 64 {
		return nil // debug/elf copes, or refuses: nothing big is read
	}
	var sh [64]byte
	count := uint64(shnum)
	if shnum == 0 {
		// Extended numbering: the count is the first section's size.
		if _, err := r.ReadAt(sh[:], int64(shoff)); err != nil {
			return fmt.Errorf("section header table: %w", err)
		}
		count = le.Uint64(sh[0x20:])
	}
	if count > maxHeaderTable || count*uint64(shentsize) > maxHeaderTable {
		return &capError{"section header table", int64(min(count, 1<<46) * uint64(shentsize)), maxHeaderTable, ""}
	}
	if shnum == 0 || shstrndx == uint16(elf.SHN_UNDEF) || shstrndx >= shnum {
		return nil // debug/elf copes, or refuses: nothing big is read
	}
	if _, err := r.ReadAt(sh[:], int64(shoff)+int64(shstrndx)*int64(shentsize)); err != nil {
		return fmt.Errorf("section-name table header: %w", err)
	}
	off, n := le.Uint64(sh[0x18:]), le.Uint64(sh[0x20:])
	const maxNames = 1 << 20
	if n > maxNames {
		return &capError{"section-name table", int64(min(n, 1<<62)), maxNames, ""}
	}
	if off+n < off || off+n > uint64(size) {
		return fmt.Errorf("section-name table: %w", errPastEOF)
	}
	return nil
}
