package stack

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// budgetProg is a tiny C program with one function, two units and
// whatever a test adds.
const budgetProg = `
#include <fcntl.h>
__attribute__((noinline)) int opener(const char *p) { return open(p, O_RDONLY); }
int main(int argc, char **argv) { return opener(argv[0]) < 0; }
`

// compileC builds src (and extra, another unit) with gcc and flags.
func compileC(t *testing.T, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("gcc is missing (CI=true: it must be installed)")
		}
		t.Skip("gcc is missing")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "p.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "p")
	args := append([]string{"-O1", "-o", exe, c}, flags...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	return exe
}

// sectionHeader is where section name's header lies in the file at p.
func sectionHeader(t *testing.T, p, name string) (hdr int64, s *elf.Section) {
	t.Helper()
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	shoff := int64(binary.LittleEndian.Uint64(raw[0x28:]))
	for i, s := range ef.Sections {
		if s.Name == name {
			return shoff + int64(i)*64, s
		}
	}
	t.Fatalf("%s has no %s", p, name)
	return 0, nil
}

func putAt(t *testing.T, p string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// claimSize makes section name claim size bytes; sparse: the file is
// extended (without writing) to hold them, so only the cap refuses it.
func claimSize(t *testing.T, p, name string, size uint64, sparse bool) {
	t.Helper()
	hdr, s := sectionHeader(t, p, name)
	putAt(t, p, hdr+0x20, u64(size))
	if sparse {
		if err := os.Truncate(p, int64(s.Offset+size)); err != nil {
			t.Fatal(err)
		}
	}
}

// claimHeaders makes the ELF header of the file at p claim n section
// headers ("sections") or program headers ("programs") of entsize bytes
// each: n in the header, or, with entsize 0, 64-byte section headers
// counted by the first one's size (extended numbering); the file is
// extended (without writing) to hold the table, so only the cap refuses
// it. The new table is zeros past what the file held: debug/elf reads
// it whole all the same.
func claimHeaders(t *testing.T, p, table string, entsize uint16, n uint64) {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	hdr := func(off int, v uint16) { putAt(t, p, int64(off), le.AppendUint16(nil, v)) }
	var end uint64
	switch {
	case table == "programs":
		phoff := (uint64(len(raw)) + 4095) &^ 4095
		putAt(t, p, 0x20, u64(phoff))
		hdr(0x36, entsize)
		hdr(0x38, uint16(n))
		end = phoff + uint64(entsize)*n
	case entsize == 0:
		shoff := le.Uint64(raw[0x28:])
		hdr(0x3c, 0)
		putAt(t, p, int64(shoff)+0x20, u64(n))
		end = shoff + 64*n
	default:
		shoff := (uint64(len(raw)) + 4095) &^ 4095
		putAt(t, p, 0x28, u64(shoff))
		hdr(0x3a, entsize)
		hdr(0x3c, uint16(n))
		hdr(0x3e, 0)
		end = shoff + uint64(entsize)*n
	}
	if err := os.Truncate(p, int64(end)); err != nil {
		t.Fatal(err)
	}
}

// zlibBomb points section name (of a -gz=zlib build) at a new
// SHF_COMPRESSED stream, appended to the file, inflating to n bytes of
// zeros, its header claiming claim bytes.
func zlibBomb(t *testing.T, p, name string, n int, claim uint64) {
	t.Helper()
	hdr, s := sectionHeader(t, p, name)
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		t.Fatalf("%s is not compressed", name)
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zero := make([]byte, 1<<20)
	for i := 0; i < n>>20; i++ {
		zw.Write(zero)
	}
	zw.Close()
	// Elf64_Chdr: type, reserved, size, addralign.
	chdr := binary.LittleEndian.AppendUint32(nil, uint32(elf.COMPRESS_ZLIB))
	chdr = binary.LittleEndian.AppendUint32(chdr, 0)
	chdr = binary.LittleEndian.AppendUint64(chdr, claim)
	chdr = binary.LittleEndian.AppendUint64(chdr, 1)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	end := fi.Size()
	putAt(t, p, end, append(chdr, z.Bytes()...))
	putAt(t, p, hdr+0x18, u64(uint64(end)))
	putAt(t, p, hdr+0x20, u64(uint64(len(chdr)+z.Len())))
}

func openModule(t *testing.T, p string, lim *limits) *module {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &module{path: p, file: f, lim: lim}
	t.Cleanup(m.close)
	return m
}

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestModuleCaps: a module whose sections claim more than their caps
// (sparse files: the claims fit the file's size) or than the file holds
// is parsed within its caps: what is past one is not read, the loss is
// counted and noted, and the rest of the module is used.
func TestModuleCaps(t *testing.T) {
	small := &limits{cfi: 64, syms: 64, dwarf: 64, pclntab: 64, dwarfRows: 1 << 17, cfiEntries: 1 << 17, module: 48 << 20}
	for _, tc := range []struct {
		name   string
		self   bool   // this test's own binary: Go's
		src    string // the program, if not budgetProg
		flags  []string
		craft  func(t *testing.T, p string)
		lim    *limits
		parse  func(m *module)
		capped string // in the module's note
		check  func(t *testing.T, m *module)
	}{
		{
			name:  ".eh_frame claims 256 MB, sparse",
			craft: func(t *testing.T, p string) { claimSize(t, p, ".eh_frame", 256<<20, true) },
			parse: func(m *module) { m.load(nil) }, capped: ".eh_frame: 268435456 bytes",
			check: func(t *testing.T, m *module) {
				if len(m.eh) != 0 || m.err != nil {
					t.Errorf("%d FDEs, error %v: want none, and the module read", len(m.eh), m.err)
				}
			},
		},
		{
			name:  "4,000,000 section headers (extended numbering), sparse",
			craft: func(t *testing.T, p string) { claimHeaders(t, p, "sections", 0, 4_000_000) },
			parse: func(m *module) { m.load(nil) }, capped: "section header table: 256000000 bytes",
			check: func(t *testing.T, m *module) {
				if m.err == nil {
					t.Error("the module read")
				}
			},
		},
		{
			name:  "section headers of 4 KiB each, sparse",
			craft: func(t *testing.T, p string) { claimHeaders(t, p, "sections", 4096, 65535) },
			parse: func(m *module) { m.load(nil) }, capped: "section header table: 268431360 bytes",
		},
		{
			name:  "program headers of 4 KiB each, sparse",
			craft: func(t *testing.T, p string) { claimHeaders(t, p, "programs", 4096, 65535) },
			parse: func(m *module) { m.load(nil) }, capped: "program header table: 268431360 bytes",
		},
		{
			name:  ".eh_frame past the file's end",
			craft: func(t *testing.T, p string) { claimSize(t, p, ".eh_frame", 1<<30, false) },
			parse: func(m *module) { m.load(nil) }, capped: "past the end of the file",
		},
		{
			name:  ".eh_frame past a small cap",
			lim:   small,
			parse: func(m *module) { m.load(nil) }, capped: ".eh_frame",
		},
		{
			name:  ".eh_frame entries past their cap",
			lim:   &limits{cfi: 8 << 20, syms: 16 << 20, dwarf: 32 << 20, pclntab: 32 << 20, dwarfRows: 1 << 17, cfiEntries: 2, module: 48 << 20},
			parse: func(m *module) { m.load(nil) }, capped: ", past its 2-entry cap",
		},
		{
			name: ".gopclntab past a small cap", self: true,
			lim:   &limits{cfi: 8 << 20, syms: 16 << 20, dwarf: 64, pclntab: 64, dwarfRows: 1 << 17, cfiEntries: 1 << 17, module: 48 << 20},
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: ".gopclntab",
			check: func(t *testing.T, m *module) {
				if m.gosym != nil {
					t.Error(".gopclntab read")
				}
			},
		},
		{
			name: "symbols all naming one long string",
			src:  budgetProg + `int longname(void) __asm__("` + strings.Repeat("n", 8000) + `"); int longname(void) { return 1; }`,
			lim:  &limits{cfi: 8 << 20, syms: 64 << 10, dwarf: 32 << 20, pclntab: 32 << 20, dwarfRows: 1 << 17, cfiEntries: 1 << 17, module: 48 << 20},
			craft: func(t *testing.T, p string) {
				// Every entry a function named by the long string.
				_, s := sectionHeader(t, p, ".symtab")
				_, strs := sectionHeader(t, p, ".strtab")
				raw, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				at := bytes.Index(raw[strs.Offset:strs.Offset+strs.Size], []byte(strings.Repeat("n", 8000)))
				for off := s.Offset + 24; off+24 <= s.Offset+s.Size; off += 24 {
					binary.LittleEndian.PutUint32(raw[off:], uint32(at))
					raw[off+4] = byte(elf.STT_FUNC)
					binary.LittleEndian.PutUint16(raw[off+6:], 1)
					binary.LittleEndian.PutUint64(raw[off+8:], off)
				}
				if err := os.WriteFile(p, raw, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: "symbols",
			check: func(t *testing.T, m *module) {
				if m.symCost > 64<<10 {
					t.Errorf("symbols cost %d bytes, cap 64 KiB", m.symCost)
				}
			},
		},
		{
			name:  "parts past the module's cap",
			lim:   &limits{cfi: 8 << 20, syms: 16 << 20, dwarf: 32 << 20, pclntab: 32 << 20, dwarfRows: 1 << 17, cfiEntries: 1 << 17, module: 256},
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: "(with the module's other parts)",
			check: func(t *testing.T, m *module) {
				if m.cost() > 256 {
					t.Errorf("the module costs %d bytes, its cap 256", m.cost())
				}
			},
		},
		{
			name:  ".symtab claims 96 MB, sparse",
			craft: func(t *testing.T, p string) { claimSize(t, p, ".symtab", 96<<20, true) },
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: ".symtab and .strtab",
			check: func(t *testing.T, m *module) {
				if _, ok := m.lookupSymbol(0); ok {
					t.Error("a symbol at 0")
				}
				if len(m.eh) == 0 {
					t.Error("no .eh_frame: the rest of the module should be read")
				}
			},
		},
		{
			name:  ".strtab claims 96 MB, sparse",
			craft: func(t *testing.T, p string) { claimSize(t, p, ".strtab", 96<<20, true) },
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: ".symtab and .strtab",
		},
		{
			name:  ".debug_info claims 256 MB, sparse",
			flags: []string{"-g"},
			craft: func(t *testing.T, p string) { claimSize(t, p, ".debug_info", 256<<20, true) },
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: "DWARF (.debug_info)",
			check: func(t *testing.T, m *module) {
				if m.dw != nil {
					t.Error("DWARF read")
				}
				if len(m.syms) == 0 {
					t.Error("no symbols: .symtab should be read")
				}
			},
		},
		{
			name:  "compressed .debug_str inflating to 256 MB, said",
			flags: []string{"-g", "-gz=zlib"},
			craft: func(t *testing.T, p string) { zlibBomb(t, p, ".debug_str", 256<<20, 256<<20) },
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: "(decompressed)",
		},
		{
			name:  "compressed .debug_str inflating to 256 MB, 4 KB said",
			flags: []string{"-g", "-gz=zlib"},
			craft: func(t *testing.T, p string) { zlibBomb(t, p, ".debug_str", 256<<20, 4096) },
			parse: func(m *module) { m.load(nil); m.loadSymbols() }, capped: "past its stated size",
		},
		{
			name:  "DWARF rows past their cap",
			flags: []string{"-g"},
			lim:   &limits{cfi: 8 << 20, syms: 16 << 20, dwarf: 32 << 20, pclntab: 32 << 20, dwarfRows: 2, cfiEntries: 1 << 17, module: 48 << 20},
			parse: func(m *module) {
				m.load(nil)
				m.loadSymbols()
				for _, s := range m.syms {
					if s.name == "opener" {
						m.symCache = map[uint64][]symFrame{}
						m.symbolize(s.addr, 16)
					}
				}
			},
			check: func(t *testing.T, m *module) {
				if m.dw == nil || m.dw.cut == 0 {
					t.Fatal("no DWARF rows cut")
				}
				m.newCapped += m.dw.cut
				for _, s := range m.syms {
					if s.name == "opener" {
						fr := m.symCache[s.addr]
						if len(fr) != 1 || fr[0].Func != "opener" || fr[0].Line != 0 {
							t.Errorf("opener: %+v, want it named by .symtab, without a line", fr)
						}
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p string
			if tc.self {
				exe, err := os.Executable()
				if err != nil {
					t.Fatal(err)
				}
				p = exe
			} else {
				src := budgetProg
				if tc.src != "" {
					src = tc.src
				}
				p = compileC(t, src, tc.flags...)
			}
			if tc.craft != nil {
				tc.craft(t, p)
			}
			m := openModule(t, p, tc.lim)
			before := allocated()
			start := time.Now()
			tc.parse(m)
			alloc, took := allocated()-before, time.Since(start)
			if alloc > 16<<20 || took > 2*time.Second {
				t.Errorf("parsing took %v and allocated %d MiB: want within the caps", took, alloc>>20)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
			if m.newCapped == 0 {
				t.Error("nothing counted as past a cap")
			}
			if note := strings.Join(m.capped, "; "); tc.capped != "" && !strings.Contains(note, tc.capped) {
				t.Errorf("note %q, want %q in it", note, tc.capped)
			}
		})
	}
}

// TestNameCaps: a long name is cut at MaxNameBytes before it is
// demangled, in bounded time, and marked; a long symbol's name is cut
// when the table is read.
func TestNameCaps(t *testing.T) {
	long := "_ZN" + strings.Repeat("1a", 150_000) + "Ev"
	for _, tc := range []struct {
		name, in string
		cut      bool
	}{
		{"300 KB C++ name", long, true},
		{"300 KB plain name", strings.Repeat("x", 300_000), true},
		{"name at the cap", strings.Repeat("y", MaxNameBytes), false},
		{"short C++ name", "_ZN3foo3barEv", false},
		{"cut inside a rune", strings.Repeat("a", MaxNameBytes-1) + "ééé", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got := demangleName(tc.in)
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %v", took)
			}
			if len(got) > MaxNameBytes+len(NameCut) {
				t.Errorf("%d bytes, want at most %d", len(got), MaxNameBytes+len(NameCut))
			}
			if cut := strings.HasSuffix(got, NameCut); cut != tc.cut {
				t.Errorf("cut %v, want %v (%.40q…)", cut, tc.cut, got)
			}
			if tc.cut && !strings.HasPrefix(tc.in, strings.TrimSuffix(got, NameCut)) {
				t.Errorf("%.40q… is not the name's prefix", got)
			}
		})
	}

	t.Run("symbol of 300 KB", func(t *testing.T) {
		src := budgetProg + `__attribute__((noinline,used)) int longname(void) __asm__("` + long + `");
int longname(void) { return 1; }
`
		m := openModule(t, compileC(t, src), nil)
		m.load(nil)
		m.loadSymbols()
		found := false
		for _, s := range m.syms {
			if strings.HasPrefix(s.name, "_ZN1a1a") {
				found = true
				start := time.Now()
				fr := m.symbolize(s.addr, 16)
				if len(fr) != 1 || !strings.HasSuffix(fr[0].Func, NameCut) || len(fr[0].Func) > MaxNameBytes+len(NameCut) || time.Since(start) > time.Second {
					t.Errorf("frame %.60q… (%d bytes) in %v: want the name cut", fr[0].Func, len(fr[0].Func), time.Since(start))
				}
			}
		}
		if !found {
			t.Fatal("no long symbol read")
		}
		if m.newNamesCut != 1 {
			t.Errorf("%d names cut counted, want 1", m.newNamesCut)
		}
	})
}

// TestCacheTotal: past Options.MaxBytes the least recently used
// modules' parsed parts are forgotten, the one in use kept, and parsed
// again on need.
func TestCacheTotal(t *testing.T) {
	p := compileC(t, budgetProg)
	for _, tc := range []struct {
		name     string
		max      int64
		unloaded bool
	}{
		{"room for both", 64 << 20, false},
		{"room for one", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache(Options{MaxBytes: tc.max})
			defer c.Close()
			a, b := openModule(t, p, nil), openModule(t, p, nil)
			c.byIno[[2]uint64{1, 1}], c.byIno[[2]uint64{1, 2}] = a, b
			for _, m := range []*module{a, b} {
				c.touch(m)
				m.load(nil)
				m.loadSymbols()
				if m.cost() == 0 {
					t.Fatal("a parsed module costs nothing")
				}
				c.collect(m)
			}
			if b.cost() == 0 || len(b.eh) == 0 {
				t.Error("the module in use was unloaded")
			}
			if unloaded := a.cost() == 0 && a.eh == nil && a.syms == nil; unloaded != tc.unloaded {
				t.Errorf("the older module unloaded: %v, want %v", unloaded, tc.unloaded)
			}
			a.load(nil)
			a.loadSymbols()
			if len(a.eh) == 0 || len(a.syms) == 0 {
				t.Error("the unloaded module not parsed again")
			}
		})
	}
}

// TestCacheTotalCountsHeaders: the ELF headers debug/elf keeps of each
// module (a struct per section and program header) are in the cache's
// total: parsed parts that fit with room to spare do not leave the
// headers of 64 modules uncounted.
func TestCacheTotalCountsHeaders(t *testing.T) {
	p := compileC(t, budgetProg)
	c := NewCache(Options{MaxBytes: 64 << 20})
	defer c.Close()
	a, b := openModule(t, p, nil), openModule(t, p, nil)
	c.byIno[[2]uint64{1, 1}], c.byIno[[2]uint64{1, 2}] = a, b
	for _, m := range []*module{a, b} {
		c.touch(m)
		m.load(nil)
		c.collect(m)
	}
	headers := a.held() - a.cost()
	if want := costELFSection * int64(len(a.ef.Sections)); headers < want {
		t.Fatalf("a module's headers held %d bytes, want at least %d (%d sections)", headers, want, len(a.ef.Sections))
	}
	// Room for both modules' parsed parts, not for their headers too.
	c.opts.MaxBytes = a.cost() + b.cost() + headers/2
	c.fit(b)
	if a.ef != nil || a.cost() != 0 {
		t.Errorf("the older module kept (%d bytes parsed, headers %v), past a total its headers exceed", a.cost(), a.ef != nil)
	}
	if b.ef == nil {
		t.Error("the module in use unloaded")
	}
	if c.total != b.held() {
		t.Errorf("total %d, want the module in use's %d", c.total, b.held())
	}
}

// TestBuildIDNotesBounded: a module without a build-id whose section
// headers name the same megabyte as a note thousands of times is not
// read thousands of times over looking for one (9 s of once's CPU for
// 16,000).
func TestBuildIDNotesBounded(t *testing.T) {
	p := compileC(t, budgetProg, "-Wl,--build-id=none")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	shoff, shnum := le.Uint64(raw[0x28:]), le.Uint16(raw[0x3c:])
	table := slices.Clone(raw[shoff : shoff+64*uint64(shnum)])
	if len(raw) < 1<<20 {
		raw = append(raw, make([]byte, 1<<20-len(raw))...)
	}
	// 4,000 more sections: notes of 1 MiB at offset 0.
	const n = 4000
	note := make([]byte, 64)
	le.PutUint32(note[4:], uint32(elf.SHT_NOTE))
	le.PutUint64(note[0x20:], 1<<20)
	le.PutUint64(note[0x30:], 4)
	newoff := uint64(len(raw))
	raw = append(raw, table...)
	for range n {
		raw = append(raw, note...)
	}
	le.PutUint64(raw[0x28:], newoff)
	le.PutUint16(raw[0x3c:], shnum+n)
	if err := os.WriteFile(p, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	before := allocated()
	start := time.Now()
	id := elfBuildID(ef)
	alloc, took := allocated()-before, time.Since(start)
	if id != "" {
		t.Errorf("build-id %q, want none", id)
	}
	if alloc > 16<<20 || took > 2*time.Second {
		t.Errorf("looking for the build-id took %v and allocated %d MiB: want a bounded read of notes", took, alloc>>20)
	}
}
