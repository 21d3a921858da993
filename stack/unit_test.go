package stack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/stack"
	"golang.org/x/sys/unix"
)

func TestParseMaps(t *testing.T) {
	text := `55d1c0a00000-55d1c0a04000 r--p 00000000 fe:01 1234                       /usr/bin/cp
55d1c0a04000-55d1c0a19000 r-xp 00004000 fe:01 1234                       /usr/bin/cp
7f0000000000-7f0000001000 rw-p 00000000 00:00 0 
7f0000001000-7f0000002000 r-xp 00001000 08:02 99                         /tmp/a dir/lib x.so (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
`
	maps, err := stack.ParseMaps(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 5 {
		t.Fatalf("%d mappings, want 5", len(maps))
	}
	m := maps[1]
	if m.Start != 0x55d1c0a04000 || m.End != 0x55d1c0a19000 || m.FileOffset != 0x4000 || m.Path != "/usr/bin/cp" ||
		m.Inode != 1234 || m.Dev != unix.Mkdev(0xfe, 1) || !m.Exec() || !m.FileBacked() {
		t.Errorf("cp text: %+v", m)
	}
	if maps[2].FileBacked() || maps[2].Path != "" {
		t.Errorf("anonymous: %+v", maps[2])
	}
	if d := maps[3]; d.Path != "/tmp/a dir/lib x.so" || !d.Deleted || d.Dev != unix.Mkdev(8, 2) {
		t.Errorf("deleted, with spaces: %+v", d)
	}
	if s := maps[4]; s.Path != "[stack]" || s.FileBacked() {
		t.Errorf("stack: %+v", s)
	}
	if _, err := stack.ParseMaps(strings.NewReader("garbage\n")); err == nil {
		t.Error("garbage parsed")
	}
}

// ReadMaps on this very process: its executable's mapping has the
// build-id the file has.
func TestReadMapsSelf(t *testing.T) {
	maps, err := stack.ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	for _, m := range maps {
		if m.Path == exe && m.Exec() {
			if m.BuildID == "" {
				t.Errorf("%s: no build-id read", exe)
			}
			return
		}
	}
	t.Errorf("no executable mapping of %s", exe)
}

// Frame pointers, no CFI: the C program built -fno-omit-frame-pointer
// without unwind tables, .debug_frame removed. The walk falls back to
// the frame-pointer chain and still agrees with gdb.
func TestCFramePointerNoCFI(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy-fp", "-O2", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g")
	// With -g and no unwind tables GCC writes .debug_frame: the CFI comes
	// from there.
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{})
	defer c.Close()
	stacks := checkAgainstGDB(t, c, nil, src, 3, exe, src)
	wantChains(t, stacks, copyChains...)

	// Without .debug_frame, gdb's prologue analysis loses its way in
	// -O2 code (it shows ?? past the first caller), while the frame
	// pointers hold: the stacks must be those found with the CFI, the
	// code being the same.
	need(t, "objcopy")
	nocfi := filepath.Join(dir, "copy-nocfi")
	run(t, dir, "objcopy", "--remove-section=.debug_frame", exe, nocfi)
	c2 := stack.NewCache(stack.Options{})
	defer c2.Close()
	for i, cp := range capture(t, c2, src, 3, nocfi, src) {
		st := c2.Stack(&cp.Snapshot, cp.Maps)
		if len(st.Frames) != len(stacks[i].Frames) || st.Stop != stack.StopEnd {
			t.Errorf("open %d: frame pointers give\n%s\nCFI gave\n%s", i+1, dump(st), dump(stacks[i]))
			continue
		}
		for k, f := range st.Frames {
			if w := stacks[i].Frames[k]; f.Addr != w.Addr || f.Func != w.Func || f.Line != w.Line {
				t.Errorf("open %d frame %d: %v, with CFI %v", i+1, k, f, w)
			}
		}
		fp := false
		for _, f := range st.Frames {
			fp = fp || (f.Module == nocfi && f.Via == stack.ViaFP)
		}
		if !fp {
			t.Errorf("open %d: no frame unwound by frame pointer:\n%s", i+1, dump(st))
		}
	}
}

// A window too small for even the first frame: the kernel's
// frame-pointer stack carries the walk on from the IP. (The kernel's walk
// of a real stack at open64 is useless here, glibc's open64 reuses RBP:
// the stack is made from the full walk less its first caller, as a
// frameless leaf makes the kernel's walk skip it.)
func TestKernelFPLastResort(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy-fp", "-O2", "-g")
	src := srcFile(t, dir)
	c := stack.NewCache(stack.Options{})
	defer c.Close()
	caps := capture(t, c, src, 3, exe, src)
	s := caps[0].Snapshot
	full := c.Unwind(&s, caps[0].Maps)
	s.FP = []uint64{s.Regs.IP}
	for _, pc := range full.PCs[2:] {
		s.FP = append(s.FP, pc.Addr)
	}
	s.Stack = s.Stack[:8]
	st := c.Stack(&s, caps[0].Maps)
	if st.Stop != stack.StopTruncated {
		t.Errorf("stop %v (%s), want truncated", st.Stop, st.StopDetail)
	}
	if !hasFuncs(st, "copy_file", "main") || len(st.Frames) != len(full.PCs)-1 {
		t.Errorf("want copy_file → main … from the kernel's stack:\n%s", dump(st))
	}
	for _, f := range st.Frames[1:] {
		if f.Via != stack.ViaKernelFP {
			t.Errorf("frame %v via %v, want kernel-fp", f, f.Via)
		}
	}
	// A kernel stack that does not pass through the IP is not taken.
	s.FP = s.FP[1:]
	if st := c.Stack(&s, caps[0].Maps); len(st.Frames) != 1 {
		t.Errorf("frames from a kernel stack that does not start at the IP:\n%s", dump(st))
	}
}

// Files kept by Retain still serve after the process exits and its
// binary is replaced. A cache that did not retain them takes, after the
// exit, only files of the build-id mapped: libc, still there, is taken;
// the binary, replaced by another build, is not: Retain says the
// process is gone, counts it, and its frames keep module and offset.
func TestRetainReplacedBinary(t *testing.T) {
	dir := t.TempDir()
	exe := buildC(t, dir, "copy.c", "copy", "-O2", "-g")
	src := srcFile(t, dir)
	kept := stack.NewCache(stack.Options{})
	defer kept.Close()
	caps := capture(t, kept, src, 3, exe, src)
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	buildC(t, dir, "deep.c", "copy", "-O2", "-g") // a new file at the same path
	st := kept.Stack(&caps[0].Snapshot, caps[0].Maps)
	if !hasFuncs(st, copyChains[0]...) || st.Stop != stack.StopEnd {
		t.Errorf("retained: want %v:\n%s", copyChains[0], dump(st))
	}

	fresh := stack.NewCache(stack.Options{})
	defer fresh.Close()
	err := fresh.Retain(caps[0].Pid, caps[0].Maps)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Retain of an exited process: %v, want it said so", err)
	}
	if s := fresh.Stats(); s.ModulesGone != 1 || s.ModulesRefused != 0 {
		t.Errorf("stats %+v, want 1 module gone (the binary), none refused", s)
	}
	st = fresh.Stack(&caps[0].Snapshot, caps[0].Maps)
	var noted bool
	for _, n := range st.Notes {
		noted = noted || strings.Contains(n.Err, "exited")
	}
	if !noted || !strings.Contains(st.StopDetail, "exited") {
		t.Errorf("no note nor stop detail that the process exited:\n%s", dump(st))
	}
	libc := false
	for _, f := range st.Frames {
		if f.Module == exe && f.Func != "" {
			t.Errorf("frame %v symbolized from the replacing file", f)
		}
		libc = libc || (strings.Contains(f.Module, "libc") && f.Func != "")
	}
	if !libc {
		t.Errorf("libc, the same build at its path, not symbolized:\n%s", dump(st))
	}
}

// Benchmark: one stack (unwind + symbolize) once its modules are cached.
func BenchmarkStack(b *testing.B) {
	dir := b.TempDir()
	exe := buildC(b, dir, "copy.c", "copy", "-O2", "-fomit-frame-pointer", "-g")
	src := srcFile(b, dir)
	c := stack.NewCache(stack.Options{})
	defer c.Close()
	caps := capture(b, c, src, 3, exe, src)
	cp := caps[2]
	c.Stack(&cp.Snapshot, cp.Maps)
	b.Run("unwind", func(b *testing.B) {
		for b.Loop() {
			c.Unwind(&cp.Snapshot, cp.Maps)
		}
	})
	b.Run("unwind+symbolize", func(b *testing.B) {
		for b.Loop() {
			c.Stack(&cp.Snapshot, cp.Maps)
		}
	})
	cold := func(b *testing.B, opts stack.Options) {
		for b.Loop() {
			c := stack.NewCache(opts)
			c.Stack(&cp.Snapshot, cp.Maps)
			c.Close()
		}
	}
	b.Run("cold", func(b *testing.B) { cold(b, stack.Options{}) })
}
