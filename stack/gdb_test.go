package stack_test

import (
	"testing"

	"github.com/oncetool/once/stack"
)

// checkAgainstGDB captures the program's stacks at each openat of path
// under ptrace, unwinds and symbolizes them, and checks each against
// gdb's backtrace at the same call. It returns our stacks.
func checkAgainstGDB(t *testing.T, c *stack.Cache, path string, want int, argv ...string) []stack.Stack {
	t.Helper()
	caps := capture(t, c, path, want, argv...)
	stops := gdbStops(t, path, want, argv...)
	var out []stack.Stack
	for i, cp := range caps {
		got := c.Stack(&cp.Snapshot, cp.Maps)
		agree(t, argv[0]+" open "+itoa(i+1), got, stops[i])
		if testing.Verbose() {
			t.Logf("open %d:\n%s", i+1, dump(got))
		}
		out = append(out, got)
	}
	return out
}

func TestCOmitFramePointer(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g")
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, src, 3, exe, src)
	for i, fn := range []string{"check_for_data", "check_sparse", "do_copy"} {
		st := stacks[i]
		if !hasFuncs(st, fn, "copy_file", "main") {
			t.Errorf("open %d: want %s → copy_file → main:\n%s", i+1, fn, dump(st))
		}
		if st.Stop != stack.StopEnd {
			t.Errorf("open %d: stopped: %v (%s)", i+1, st.Stop, st.StopDetail)
		}
	}
}

// hasFuncs says whether the stack holds these functions in this order,
// consecutively.
func hasFuncs(st stack.Stack, fns ...string) bool {
	for i := range st.Frames {
		ok := true
		for j, fn := range fns {
			if i+j >= len(st.Frames) || st.Frames[i+j].Func != fn {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
