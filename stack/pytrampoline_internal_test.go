package stack

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// A walk that returns into one of CPython's perf trampolines (-X perf:
// a line "py::…" of the process's perf map, in anonymous executable
// memory) steps over it by its layout, "sub $8,%rsp; call *%rcx": the
// caller's return address at SP+8, its SP at SP+16. Without the perf
// map the walk stops there, where BP holds no frame pointer.
func TestUnwindPyTrampoline(t *testing.T) {
	const (
		sp    = 0x7ffd0000
		jit   = 0x7f0000000000
		tramp = jit + 0xb // the second trampoline of the map
	)
	maps := []Mapping{
		{Start: 0x400000, End: 0x401000, Perms: "r-xp", Path: "/gone/prog", Dev: 1, Inode: 1},
		{Start: jit, End: jit + 0x1000, Perms: "r-xp"},
		{Start: sp - 0x10000, End: sp + 0x10000, Perms: "rw-p", Path: "[stack]"},
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "perf-1.map")
	text := "7f0000000000 b py::outer:/app/x.py\n7f000000000b b py::read_config:/app/x.py\n"
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The window: BP = SP+16 holds a saved BP that is no frame pointer
	// (what code built without them leaves) and, at BP+8, the return
	// into the trampoline, after its call (offset 6); the trampoline's
	// frame above: 8 bytes of padding, then its caller's return address.
	window := make([]byte, 64)
	binary.LittleEndian.PutUint64(window[16:], 0x1234)   // [BP]: not a frame pointer
	binary.LittleEndian.PutUint64(window[24:], tramp+6)  // [BP+8]: into the trampoline
	binary.LittleEndian.PutUint64(window[40:], 0x400200) // [SP'+8]: the trampoline's caller
	for _, tc := range []struct {
		name    string
		perfMap bool
		want    []uint64
		via     Via
	}{
		{"with the perf map", true, []uint64{0x400010, tramp + 6, 0x400200}, ViaJIT},
		{"without", false, []uint64{0x400010, tramp + 6}, ViaFP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pm *PerfMap
			if tc.perfMap {
				f, err := os.Open(name)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				pm = &PerfMap{file: f}
			}
			s := Snapshot{Regs: Regs{IP: 0x400010, SP: sp, BP: sp + 16}, Stack: window}
			c := NewCache(Options{})
			defer c.Close()
			u := c.UnwindIn(&s, maps, pm)
			var got []uint64
			for _, pc := range u.PCs {
				got = append(got, pc.Addr)
			}
			if len(got) < len(tc.want) {
				t.Fatalf("PCs %#x, want %#x first (stop %v: %s)", got, tc.want, u.Stop, u.StopDetail)
			}
			for i, w := range tc.want {
				if got[i] != w {
					t.Fatalf("PCs %#x, want %#x first", got, tc.want)
				}
			}
			if len(got) > len(tc.want) && tc.perfMap == false {
				t.Fatalf("PCs %#x: the walk went on through the trampoline without the perf map", got)
			}
			if v := u.PCs[len(tc.want)-1].Via; v != tc.via {
				t.Errorf("last frame found via %v, want %v", v, tc.via)
			}
		})
	}
}
