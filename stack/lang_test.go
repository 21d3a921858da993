package stack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack"
)

// rustc finds a Rust compiler: Debian's (apt-get install rustc), else
// rustup's. Without one the Rust tests skip, and say so (under CI=true
// they fail: CI installs Debian's rustc).
func rustc(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/rustc", filepath.Join(os.Getenv("HOME"), ".cargo/bin/rustc")} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return testprog.NeedTool(t, "rustc")
}

// Rust, release build with debug information, both manglings: names
// demangled (legacy _ZN...E without its hash, v0 _R), std's inlined
// frames as gdb shows them.
func TestRust(t *testing.T) {
	rc := rustc(t)
	for _, mangling := range []string{"legacy", "v0"} {
		t.Run(mangling, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "copy-rs")
			args := []string{"-C", "opt-level=3", "-g", "-o", exe, testdata(t, "copy.rs")}
			if mangling == "v0" { // legacy is the default (and naming it needs -Z before Rust 1.64)
				args = append(args, "-C", "symbol-mangling-version=v0")
			}
			run(t, dir, rc, args...)
			src := srcFile(t, dir)
			c := stack.NewCache(stack.Options{})
			defer c.Close()
			stacks := checkAgainstGDB(t, c, nil, src, 3, exe, src)
			for i, fn := range []string{"copy::check_for_data", "copy::check_sparse", "copy::do_copy"} {
				if !hasFuncs(stacks[i], fn, "copy::copy_file", "copy::main") {
					t.Errorf("open %d: want %s → copy::copy_file → copy::main:\n%s", i+1, fn, dump(stacks[i]))
				}
				if stacks[i].Stop != stack.StopEnd {
					t.Errorf("open %d: stop %v (%s)", i+1, stacks[i].Stop, stacks[i].StopDetail)
				}
			}
		})
	}
}

// Go: frame pointers and .debug_frame for Go code; names and lines from
// DWARF, and from .gopclntab once stripped (-s -w), where the unwinding
// falls back to frame pointers. Stripped, the frames are DWARF's (gdb's)
// but for the frameless syscall stub's caller: the functions inlined too,
// from Go's inline tree, each with its own line (os.Open at file.go,
// inlined in main.checkForData at main.go), not the innermost call's line
// under the outer function's name.
func TestGo(t *testing.T) {
	goBin := testprog.NeedTool(t, "go")
	var dwarfStacks []stack.Stack // the "dwarf" case's, checked against gdb
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"dwarf", nil},
		{"stripped", []string{"-ldflags=-s -w"}},
		// Linked by the system's linker, as cgo programs are (runc,
		// containerd): .text starts with C start-up code, and the
		// table's addresses count from runtime.text, later.
		{"stripped, external linker", []string{"-ldflags=-s -w -linkmode=external"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "goprog")
			args := append([]string{"build", "-o", exe}, tc.flags...)
			args = append(args, "./testdata/goprog")
			cmd := exec.Command(goBin, args...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if strings.Contains(tc.name, "external") {
				testprog.NeedTool(t, "gcc")
				cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			src := srcFile(t, dir)
			c := stack.NewCache(stack.Options{})
			defer c.Close()
			var stacks []stack.Stack
			if tc.name == "dwarf" {
				stacks = checkAgainstGDB(t, c, nil, src, 3, exe, src)
			} else {
				// gdb has no names without DWARF; the chain is checked below.
				for _, cp := range capture(t, c, src, 3, exe, src) {
					stacks = append(stacks, c.Stack(&cp.Snapshot, cp.Maps))
				}
			}
			for i, fn := range []string{"main.checkForData", "main.checkSparse", "main.doCopy"} {
				st := stacks[i]
				if !hasFuncs(st, fn, "main.copyFile", "main.main", "runtime.main") {
					t.Errorf("open %d: want %s → main.copyFile → main.main → runtime.main:\n%s", i+1, fn, dump(st))
				}
				if testing.Verbose() {
					t.Logf("open %d:\n%s", i+1, dump(st))
				}
				for _, f := range st.Frames {
					if f.Func == "" || f.File == "" || f.Line == 0 {
						t.Errorf("open %d: frame %v without a name or a line", i+1, f)
						break
					}
					if strings.HasPrefix(f.Func, "main.") && !strings.HasSuffix(f.File, "goprog/main.go") {
						t.Errorf("open %d: %s at %s:%d, not in main.go", i+1, f.Func, f.File, f.Line)
					}
				}
				if i < 2 && !hasFuncs(st, "os.Open", fn) {
					t.Errorf("open %d: want os.Open inlined in %s:\n%s", i+1, fn, dump(st))
				}
			}
			if tc.name == "dwarf" {
				dwarfStacks = stacks
				return
			}
			if strings.Contains(tc.name, "external") || len(dwarfStacks) != len(stacks) {
				return // another link: other addresses, and gdb's stacks are the dwarf case's
			}
			for i := range stacks {
				if got, want := frameLines(stacks[i]), frameLines(dwarfStacks[i]); got != want {
					t.Errorf("open %d: stripped frames differ from DWARF's:\n got:\n%s want:\n%s", i+1, got, want)
				}
			}
		})
	}
}

// frameLines is a stack's frames as function, file, line and inlined,
// one a line, less syscall.RawSyscall6: frameless Syscall6 hides it
// without .debug_frame (see the package's Limits).
func frameLines(st stack.Stack) string {
	var b strings.Builder
	for _, f := range st.Frames {
		if f.Func == "syscall.RawSyscall6" {
			continue
		}
		inl := ""
		if f.Inlined {
			inl = " (inlined)"
		}
		b.WriteString("  " + f.Func + " " + f.File + ":" + itoa(f.Line) + inl + "\n")
	}
	return b.String()
}
