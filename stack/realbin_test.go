package stack_test

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack"
)

// Real stripped binaries, .eh_frame only: GNU cp and uutils' cp. The
// stack at the source's openat must agree with gdb (its ?? frames by
// address), unwind through main to _start, keep module and offset in
// every frame, and say the binary has no symbols.
func TestRealCp(t *testing.T) {
	for _, tc := range []struct {
		name, cp string
		opens    int
	}{
		{"gnu", "/usr/bin/cp", 1},
		{"uutils", "/usr/lib/cargo/bin/coreutils/cp", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.cp); err != nil {
				testprog.Skipf(t, "%s is not installed (.ci/run installs coreutils and rust-coreutils): %v", tc.cp, err)
			}
			real, err := filepath.EvalSymlinks(tc.cp)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(real)
			if err != nil {
				t.Fatal(err)
			}
			entry := f.Entry
			f.Close()
			dir := t.TempDir()
			src := srcFile(t, dir)
			dst := filepath.Join(dir, "dst")
			c := stack.NewCache(stack.Options{})
			defer c.Close()
			stacks, stops := checkAgainstGDB2(t, c, nil, src, tc.opens, tc.cp, src, dst)
			for i, st := range stacks {
				// gdb unwinds these with the same .eh_frame: frame for
				// frame, to _start and no further.
				if len(st.Frames) != len(stops[i].Frames) {
					t.Errorf("open %d: %d frames, gdb %d", i+1, len(st.Frames), len(stops[i].Frames))
				}
				if st.Stop != stack.StopEnd {
					t.Errorf("open %d: stop %v (%s)", i+1, st.Stop, st.StopDetail)
				}
				last := st.Frames[len(st.Frames)-1]
				if last.Module != real || last.Offset < entry || last.Offset >= entry+0x40 {
					t.Errorf("open %d: last frame %v, want in _start (%s+%#x)", i+1, last, real, entry)
				}
				inMain := 0
				for _, fr := range st.Frames {
					if fr.Module == "" || fr.Offset == 0 {
						t.Errorf("open %d: frame %v without module and offset", i+1, fr)
					}
					if fr.Module == real {
						inMain++
					}
				}
				if inMain < 3 {
					t.Errorf("open %d: %d frames in %s, want its call chain", i+1, inMain, real)
				}
				noted := false
				for _, n := range st.Notes {
					if n.Path == real && n.NoLines {
						noted = true
						t.Logf("note: %s: %s", n.Path, n)
					}
				}
				if !noted {
					t.Errorf("open %d: no note that %s is stripped:\n%s", i+1, real, dump(st))
				}
			}
		})
	}
}
