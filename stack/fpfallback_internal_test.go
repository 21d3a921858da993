package stack

import (
	"encoding/binary"
	"strings"
	"testing"
)

// Where a module cannot be read (here: never retained), the walk falls
// back to BP's chain. Code built without frame pointers leaves anything
// in BP, so a return address read through it is taken only if it lies in
// executable memory; else the walk stops there, for the reason it fell
// back, not one frame of noise later. (TestRetainReplacedBinary met such
// a BP now and then: 0x526e696174655274 is "tRetainR", read from the
// test's own name on the stack.)
func TestFPFallbackTakesOnlyExecutableReturns(t *testing.T) {
	const sp = 0x7ffd0000
	maps := []Mapping{
		{Start: 0x400000, End: 0x401000, Perms: "r-xp", Path: "/gone/prog", Dev: 1, Inode: 1},
		{Start: 0x500000, End: 0x501000, Perms: "r-xp", Path: "/gone/lib", Dev: 1, Inode: 2},
		{Start: sp - 0x10000, End: sp + 0x10000, Perms: "rw-p", Path: "[stack]"},
	}
	tests := []struct {
		name   string
		ra     uint64 // at [BP+8]
		want   []uint64
		stop   StopReason
		detail string // in StopDetail
	}{
		{"a return into a mapping is a frame", 0x500010, []uint64{0x400010, 0x500010}, StopEnd, ""},
		{"a return into no mapping is none", 0x526e696174655274, []uint64{0x400010}, StopUnknownMapping, "/gone/prog"},
		{"a return into a mapping not executable is none", 0x7ffd0010, []uint64{0x400010}, StopUnknownMapping, "/gone/prog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// BP = SP+16: the saved BP (0, the chain's end) at [BP],
			// the return address at [BP+8].
			window := make([]byte, 64)
			binary.LittleEndian.PutUint64(window[24:], tc.ra)
			s := Snapshot{Regs: Regs{IP: 0x400010, SP: sp, BP: sp + 16}, Stack: window}
			c := NewCache(Options{})
			defer c.Close()
			u := c.Unwind(&s, maps)
			var got []uint64
			for _, pc := range u.PCs {
				got = append(got, pc.Addr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("PCs %#x, want %#x (stop %v: %s)", got, tc.want, u.Stop, u.StopDetail)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("PCs %#x, want %#x", got, tc.want)
				}
			}
			if u.Stop != tc.stop || !strings.Contains(u.StopDetail, tc.detail) {
				t.Errorf("stop %v (%s), want %v (%q in it)", u.Stop, u.StopDetail, tc.stop, tc.detail)
			}
		})
	}
}
