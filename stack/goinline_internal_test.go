package stack

import (
	"debug/elf"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// Go's inline tree, read from a stripped binary's .gopclntab and the
// symbols of go:func.*, is what the traced file says: a table cut short or with
// bytes changed anywhere gives fewer frames or none, never a panic or a
// walk without end.
func TestGoInlineHostile(t *testing.T) {
	goBin := testprog.NeedTool(t, "go")
	dir := t.TempDir()
	exe := filepath.Join(dir, "goprog")
	cmd := exec.Command(goBin, "build", "-ldflags=-s -w", "-o", exe, "./testdata/goprog")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(".gopclntab")
	pcln, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	text := goTextStart(ef, pcln, s.Addr, nil)
	gofunc := goFuncStart(ef, pcln, s.Addr)
	g := newGoInline(ef, pcln, text, gofunc)
	if g == nil {
		t.Fatalf("no inline tree read (text %#x, gofunc %#x)", text, gofunc)
	}
	// Every address of the text, some inlined: a frame for each.
	tx := ef.Section(".text")
	inlined := 0
	for pc := tx.Addr; pc < tx.Addr+tx.Size; pc += 7 {
		fr := g.frames(pc)
		if len(fr) > 0 {
			inlined++
			if fr[len(fr)-1].Func != "" {
				t.Fatalf("%#x: last frame %q, want the function itself", pc, fr[len(fr)-1].Func)
			}
		}
	}
	if inlined == 0 {
		t.Fatal("no address with inlined calls")
	}
	rnd := rand.New(rand.NewSource(1))
	for _, tc := range []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:rnd.Intn(len(b))] }},
		{"bytes changed", func(b []byte) []byte {
			b = append([]byte(nil), b...)
			for range 64 {
				b[rnd.Intn(len(b))] = byte(rnd.Intn(256))
			}
			return b
		}},
		{"header changed", func(b []byte) []byte {
			b = append([]byte(nil), b...)
			for i := 8; i < 72; i++ {
				b[i] = byte(rnd.Intn(256))
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 {
				g := newGoInline(ef, tc.mangle(pcln), text, gofunc^uint64(rnd.Intn(2)*rnd.Intn(1<<20)))
				for range 2000 {
					if fr := g.frames(tx.Addr + uint64(rnd.Int63n(int64(tx.Size)))); len(fr) > maxGoInline+1 {
						t.Fatalf("%d frames", len(fr))
					}
				}
			}
		})
	}
}
