package stack_test

import (
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/stack/stacktest"
)

// need skips the test when a tool is missing, and fails it under CI
// (CI=true), where every tool must be there.
func need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		testprog.NeedTool(t, tool)
	}
}

// needPtrace skips (fails under CI) when this process may not trace: the
// ptrace tests read /proc/PID/mem and map_files.
func needPtrace(t testing.TB) {
	t.Helper()
	testprog.RequireRoot(t)
}

func run(t testing.TB, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func testdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// buildC compiles a testdata C program into dir.
func buildC(t testing.TB, dir, src, out string, flags ...string) string {
	t.Helper()
	need(t, "gcc")
	exe := filepath.Join(dir, out)
	args := append([]string{"-o", exe}, flags...)
	args = append(args, testdata(t, src))
	run(t, dir, "gcc", args...)
	return exe
}

// srcFile makes a file for the programs to open.
func srcFile(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "source.txt")
	if err := os.WriteFile(p, []byte("some data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// capture runs argv under ptrace, expecting want snapshots at the
// openat of path.
func capture(t testing.TB, c *stack.Cache, path string, want int, argv ...string) []stacktest.Capture {
	t.Helper()
	needPtrace(t)
	res, err := stacktest.Run(stacktest.Config{Argv: argv, Path: path, Cache: c})
	if err != nil {
		t.Fatalf("ptrace %v: %v", argv, err)
	}
	if len(res.Captures) != want {
		t.Fatalf("ptrace %v: %d openat of %s, want %d\nstdout: %s\nstderr: %s", argv, len(res.Captures), path, want, res.Stdout, res.Stderr)
	}
	return res.Captures
}

func gdbStops(t testing.TB, path string, want int, extra []string, argv ...string) []stacktest.GDBStop {
	t.Helper()
	need(t, "gdb")
	stops, out, err := stacktest.GDB(argv, path, "", extra...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(stops) != want {
		t.Fatalf("gdb: %d stops at openat of %s, want %d\n%s", len(stops), path, want, out)
	}
	return stops
}

var genericRe = regexp.MustCompile(`<[^<>]*>`)

// normName makes gdb's and the symbolizer's spellings of one function
// comparable: no generic arguments (Rust's ::<T> and gdb's <T>), no
// clone suffixes (.constprop.0, .isra.0, .cold).
func normName(s string) string {
	for {
		n := genericRe.ReplaceAllString(s, "")
		if n == s {
			break
		}
		s = n
	}
	s = strings.ReplaceAll(s, "::::", "::")
	s = strings.TrimSuffix(s, "::")
	if i := strings.IndexByte(s, '.'); i > 0 && !strings.Contains(s[:i], "/") && !isGoName(s) {
		s = s[:i]
	}
	return s
}

// isGoName: Go's names hold dots of their own (main.openA, os.(*File).Read).
func isGoName(s string) bool {
	return strings.HasPrefix(s, "main.") || strings.Contains(s, "/") || strings.HasPrefix(s, "runtime.") ||
		strings.HasPrefix(s, "os.") || strings.HasPrefix(s, "syscall.") || strings.HasPrefix(s, "internal") || strings.HasPrefix(s, "os/")
}

// aliases lists the names of the function symbols of an ELF file at the
// address of the symbol holding addr (open64, __open64 and __libc_open64
// are one function).
func aliases(path string, addr uint64) map[string]bool {
	out := map[string]bool{}
	f, err := elf.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	var all []elf.Symbol
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		s, _ := get()
		all = append(all, s...)
	}
	if id := buildID(f); len(id) > 2 {
		if d, err := elf.Open("/usr/lib/debug/.build-id/" + id[:2] + "/" + id[2:] + ".debug"); err == nil {
			s, _ := d.Symbols()
			all = append(all, s...)
			d.Close()
		}
	}
	var start uint64
	for _, s := range all {
		t := elf.ST_TYPE(s.Info)
		if (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && s.Value <= addr && addr < s.Value+s.Size && s.Value > start {
			start = s.Value
		}
	}
	if start == 0 {
		return out
	}
	for _, s := range all {
		if s.Value == start {
			out[s.Name] = true
		}
	}
	return out
}

// agree checks a stack against gdb's backtrace of the same call: frame by
// frame the same address (where gdb shows one), the same function (or an
// alias of it), the same file:line where both have one, inlined frames
// where gdb shows them. gdb may go on with frames named "??" (it unwinds
// past _start into garbage), and past a truncated stack; nothing else.
func agree(t testing.TB, label string, got stack.Stack, want stacktest.GDBStop) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format+"\nours:\n%s\ngdb:\n%s", append(append([]any{label}, args...), dump(got), dumpGDB(want))...)
	}
	n := min(len(got.Frames), len(want.Frames))
	for i := 0; i < n; i++ {
		o, g := got.Frames[i], want.Frames[i]
		if g.Addr != 0 && g.Addr != o.Addr {
			fail("frame %d: address %#x, gdb %#x", i, o.Addr, g.Addr)
			return
		}
		// gdb shows no address on the frame that an inlined call went
		// into: the frame before it is inlined.
		if i > 0 && g.Addr == 0 && !got.Frames[i-1].Inlined {
			fail("frame %d: gdb shows frame %d inlined into it, ours does not", i, i-1)
			return
		}
		if g.Func != "??" {
			if o.Func == "" {
				fail("frame %d: no name, gdb says %s", i, g.Func)
				return
			}
			if normName(o.Func) != normName(g.Func) && !aliases(o.Module, o.Offset-boolU(i > 0))[g.Func] {
				fail("frame %d: function %q, gdb %q", i, o.Func, g.Func)
				return
			}
		}
		if g.File != "" && o.File != "" {
			if stacktest.Base(g.File) != stacktest.Base(o.File) || g.Line != o.Line {
				fail("frame %d: %s:%d, gdb %s:%d", i, o.File, o.Line, g.File, g.Line)
				return
			}
		}
	}
	for _, g := range want.Frames[n:] {
		if g.Func != "??" && got.Stop != stack.StopTruncated {
			fail("gdb goes on to %s, ours stopped (%v: %s)", g.Func, got.Stop, got.StopDetail)
			return
		}
	}
	if len(got.Frames) > len(want.Frames) {
		t.Logf("%s: %d frames past gdb's last", label, len(got.Frames)-len(want.Frames))
	}
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func dump(s stack.Stack) string {
	var b strings.Builder
	for i, f := range s.Frames {
		b.WriteString("  #")
		b.WriteString(itoa(i))
		b.WriteString(" ")
		b.WriteString(f.String())
		b.WriteString(" via " + f.Via.String() + "\n")
	}
	b.WriteString("  stop: " + s.Stop.String())
	if s.StopDetail != "" {
		b.WriteString(" (" + s.StopDetail + ")")
	}
	b.WriteString("\n")
	for _, n := range s.Notes {
		b.WriteString("  note: " + n.Path + ": " + n.String() + "\n")
	}
	return b.String()
}

func dumpGDB(s stacktest.GDBStop) string {
	var b strings.Builder
	for _, f := range s.Frames {
		b.WriteString("  " + f.Text + "\n")
	}
	return b.String()
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

func buildID(f *elf.File) string {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		return ""
	}
	return hex.EncodeToString(d[16:])
}

func stackRun(exe, src string, window int, c *stack.Cache) (*stacktest.Result, error) {
	return stacktest.Run(stacktest.Config{Argv: []string{exe, src}, Path: src, Window: window, Cache: c})
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
