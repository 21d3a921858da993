package stack_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/stack"
)

// A .gnu_debuglink naming a FIFO or a huge sparse ELF file (no build-id, so
// the link's CRC is all there is to check it by), beside the binary or
// under a debug root: symbolizing neither hangs nor reads the file, the
// refusals under the root are counted, and the binary's frames keep their
// module and offset.
func TestDebugLinkHostile(t *testing.T) {
	need(t, "truncate")
	row := reltest.Record(t, "debuglink naming a FIFO or a sparse 4 TiB file")
	tests := []struct {
		name   string
		fifo   bool
		inRoot bool // under the debug root (ROOT/DIR/NAME), not beside
	}{
		{"fifo beside the binary", true, false},
		{"sparse beside the binary", false, false},
		{"fifo under the debug root", true, true},
		{"sparse under the debug root", false, true},
	}
	var tried, refused int
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := buildC(t, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g", "-Wl,--build-id=none")
			dbg := stripDebug(t, exe, true)
			root := t.TempDir()
			if tc.inRoot {
				moved := filepath.Join(root, dir, filepath.Base(dbg))
				if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(dbg, moved); err != nil {
					t.Fatal(err)
				}
				dbg = moved
			}
			if tc.fifo {
				if err := os.Remove(dbg); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(dbg, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				// The real debug file, its CRC no longer right, grown
				// sparse to 4 TiB: an ELF file all the same.
				run(t, dir, "truncate", "-s", "4T", dbg)
			}
			src := srcFile(t, dir)
			// Not closed on a hang: Close would wait for the cache's lock.
			c := stack.NewCache(stack.Options{DebugRoots: []string{root}})
			caps := capture(t, c, src, 3, exe, src)
			done := make(chan stack.Stack, 1)
			start := time.Now()
			go func() { done <- c.Stack(&caps[0].Snapshot, caps[0].Maps) }()
			var st stack.Stack
			select {
			case st = <-done:
			case <-time.After(10 * time.Second):
				// Open a FIFO's writer end to free the reader, if that
				// is where it hangs.
				if tc.fifo {
					if f, err := os.OpenFile(dbg, os.O_WRONLY, 0); err == nil {
						f.Close()
					}
				}
				t.Fatalf("symbolizing did not end within 10s (debuglink to %s)", dbg)
			}
			defer c.Close()
			tried++
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("symbolizing took %v", d)
			}
			for _, f := range st.Frames {
				if f.Module == exe && (f.Func != "" || f.File != "") {
					t.Errorf("frame %v symbolized from %s", f, dbg)
				}
			}
			// Beside the binary, nothing is looked at.
			want := uint64(0)
			if tc.inRoot {
				want = 1
			}
			n := c.Stats().DebugRefused
			if n != want {
				t.Errorf("debug files refused: %d, want %d", n, want)
			}
			refused += int(n)
		})
	}
	row.Inputs, row.Seen, row.Lost = len(tests), tried, refused
}
