package stack_test

import (
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/stack/stacktest"
)

// checkAgainstGDB captures the program's stacks at each openat of path
// under ptrace, unwinds and symbolizes them, and checks each against
// gdb's backtrace at the same call (gdbExtra: commands for gdb first).
func checkAgainstGDB(t *testing.T, c *stack.Cache, gdbExtra []string, path string, want int, argv ...string) []stack.Stack {
	t.Helper()
	st, _ := checkAgainstGDB2(t, c, gdbExtra, path, want, argv...)
	return st
}

// checkAgainstGDB2 is checkAgainstGDB, gdb's stops returned too.
func checkAgainstGDB2(t *testing.T, c *stack.Cache, gdbExtra []string, path string, want int, argv ...string) ([]stack.Stack, []stacktest.GDBStop) {
	t.Helper()
	caps := capture(t, c, path, want, argv...)
	stops := gdbStops(t, path, want, gdbExtra, argv...)
	var out []stack.Stack
	for i, cp := range caps {
		got := c.Stack(&cp.Snapshot, cp.Maps)
		agree(t, filepath.Base(argv[0])+" open "+itoa(i+1), got, stops[i])
		if testing.Verbose() {
			t.Logf("open %d:\n%s", i+1, dump(got))
		}
		out = append(out, got)
	}
	return out, stops
}

// wantChains checks that open i goes through chains[i], consecutively,
// and that each stack reached its end.
func wantChains(t *testing.T, stacks []stack.Stack, chains ...[]string) {
	t.Helper()
	for i, st := range stacks {
		if !hasFuncs(st, chains[i]...) {
			t.Errorf("open %d: want %s:\n%s", i+1, strings.Join(chains[i], " → "), dump(st))
		}
		if st.Stop != stack.StopEnd {
			t.Errorf("open %d: stopped: %v (%s)", i+1, st.Stop, st.StopDetail)
		}
	}
}

var copyChains = [][]string{
	{"check_for_data", "copy_file", "main"},
	{"check_sparse", "copy_file", "main"},
	{"do_copy", "copy_file", "main"},
}

func TestCOmitFramePointer(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g")
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, nil, src, 3, exe, src)
	wantChains(t, stacks, copyChains...)
	for _, st := range stacks {
		for _, f := range st.Frames {
			if f.Module == exe && f.Via == stack.ViaFP {
				t.Errorf("frame %v unwound by frame pointer in a -fomit-frame-pointer binary", f)
			}
		}
	}
}

// One level inlined: check_sparse is always_inline in copy_file, so the
// return address into copy_file gives two frames.
func TestCInlined(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy-inline", "-O2", "-fomit-frame-pointer", "-g", "-DINLINE_SPARSE")
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, nil, src, 3, exe, src)
	wantChains(t, stacks, copyChains...)
	st := stacks[1]
	for i, f := range st.Frames {
		if f.Func == "check_sparse" {
			next := st.Frames[i+1]
			if !f.Inlined || next.Func != "copy_file" || next.Addr != f.Addr || next.Inlined {
				t.Errorf("check_sparse should be inlined into copy_file at one address:\n%s", dump(st))
			}
		}
	}
}

// stripDebug strips exe of its debug information and symbols into
// exe.debug (objcopy --only-keep-debug), and links it back to it with
// .gnu_debuglink when link is set.
func stripDebug(t *testing.T, exe string, link bool) string {
	t.Helper()
	need(t, "objcopy", "strip")
	dbg := exe + ".debug"
	run(t, filepath.Dir(exe), "objcopy", "--only-keep-debug", exe, dbg)
	run(t, filepath.Dir(exe), "strip", "--strip-all", exe)
	if link {
		run(t, filepath.Dir(exe), "objcopy", "--add-gnu-debuglink="+dbg, exe)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Section(".debug_info") != nil || f.Section(".symtab") != nil {
		t.Fatalf("%s still has .debug_info or .symtab", exe)
	}
	return dbg
}

// A stripped binary whose debug file is found through .gnu_debuglink
// under a debug root, as ROOT/DIR/NAME (its CRC checked); not beside the
// binary, in a directory its user may control.
func TestCDebugLink(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g", "-Wl,--build-id=none")
	dbg := stripDebug(t, exe, true)
	root := t.TempDir()
	moved := filepath.Join(root, dir, filepath.Base(dbg))
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dbg, moved); err != nil {
		t.Fatal(err)
	}
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{DebugRoots: []string{root, "/usr/lib/debug"}})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, []string{"set debug-file-directory " + root + ":/usr/lib/debug"}, src, 3, exe, src)
	wantChains(t, stacks, copyChains...)
	for _, n := range stacks[0].Notes {
		if n.Path == exe {
			t.Errorf("note on %s: %s", exe, n)
		}
	}
}

// A stripped binary whose debug file is found by build-id under a debug
// root: ROOT/.build-id/xx/yyyy.debug.
func TestCBuildIDDebugFile(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g", "-Wl,--build-id")
	dbg := stripDebug(t, exe, false)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	note, _ := f.Section(".note.gnu.build-id").Data()
	f.Close()
	id := hex.EncodeToString(note[16:])
	root := t.TempDir()
	p := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dbg, p); err != nil {
		t.Fatal(err)
	}
	src := srcFile(t, dir)
	// The system's root too, for libc's debug file when it is installed.
	c := stack.NewCache(stack.Options{DebugRoots: []string{root, "/usr/lib/debug"}})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, []string{"set debug-file-directory " + root + ":/usr/lib/debug"}, src, 3, exe, src)
	wantChains(t, stacks, copyChains...)
	for _, fr := range stacks[0].Frames {
		if fr.Module == exe && fr.BuildID != id {
			t.Errorf("frame %v: build-id %q, want %s", fr, fr.BuildID, id)
		}
	}
}

// A debuglink whose file does not match (its CRC differs) is not used:
// the binary's frames keep their module and offset, and no lines.
func TestDebugLinkCRCMismatch(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g")
	dbg := stripDebug(t, exe, true)
	other := buildC(t, t.TempDir(), "deep.c", "deep", "-O2", "-g")
	run(t, dir, "objcopy", "--only-keep-debug", other, dbg) // same name, other contents
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{DebugRoots: []string{t.TempDir()}})
	defer c.Close()
	caps := capture(t, c, src, 3, exe, src)
	st := c.Stack(&caps[0].Snapshot, caps[0].Maps)
	noted := false
	for _, n := range st.Notes {
		if n.Path == exe {
			noted = n.NoLines && n.NoSymbols
			// It names the link it did not find, where gdb would
			// have found it (beside the binary).
			if want := "its debug file copy.debug (.gnu_debuglink) is in no debug directory"; !strings.Contains(n.String(), want) {
				t.Errorf("note %q, want %q in it", n, want)
			}
		}
	}
	if !noted {
		t.Errorf("want a note that %s has no symbols nor lines:\n%s", exe, dump(st))
	}
	for _, f := range st.Frames {
		if f.Module == exe && (f.File != "" || f.Func != "") {
			t.Errorf("frame %v symbolized from a debug file whose CRC differs", f)
		}
		if f.Module == exe && f.Offset == 0 {
			t.Errorf("frame %v: no offset", f)
		}
	}
	if st.Stop != stack.StopEnd {
		t.Errorf("stop: %v (%s): .eh_frame is still there", st.Stop, st.StopDetail)
	}
}

// 200 levels of recursion: the 8 KiB window ends first. What was
// unwound agrees with gdb, and the stop says the window was too small;
// with a window big enough, the walk reaches _start.
func TestDeepStackTruncated(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "deep.c", "deep", "-O2", "-fomit-frame-pointer", "-g")
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{MaxFrames: 512})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, nil, src, 1, exe, src)
	st := stacks[0]
	if st.Stop != stack.StopTruncated {
		t.Fatalf("stop: %v (%s), want %v\n%s", st.Stop, st.StopDetail, stack.StopTruncated, dump(st))
	}
	n := 0
	for _, f := range st.Frames {
		if f.Func == "recurse" {
			n++
		}
	}
	if n < 20 || n >= 200 {
		t.Errorf("%d recurse frames in an 8 KiB window, want some, not all 201", n)
	}
	t.Logf("8 KiB window: %d frames, %d of recurse, then %v", len(st.Frames), n, st.Stop)

	needPtrace(t)
	res, err := stackRun(exe, src, 256<<10, c)
	if err != nil {
		t.Fatal(err)
	}
	full := c.Stack(&res.Captures[0].Snapshot, res.Captures[0].Maps)
	if full.Stop != stack.StopEnd || !hasFuncs(full, "recurse", "main") {
		t.Errorf("256 KiB window: stop %v (%s)\n%s", full.Stop, full.StopDetail, dump(full))
	}
}
