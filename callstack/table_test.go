package callstack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/stack/stacktest"
	"github.com/oncetool/once/trace"
)

// copyProgram builds stack/testdata/copy.c: one file opened from three
// call sites, no frame pointers.
func copyProgram(t *testing.T) (exe, src string) {
	t.Helper()
	testprog.RequireRoot(t)
	testprog.NeedTool(t, "gcc")
	dir := t.TempDir()
	exe = filepath.Join(dir, "copy")
	out, err := exec.Command("gcc", "-O2", "-fomit-frame-pointer", "-g", "-o", exe, "../stack/testdata/copy.c").CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	src = filepath.Join(dir, "source.txt")
	if err := os.WriteFile(src, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return exe, src
}

func snapshot(c *stacktest.Capture) *trace.StackSnapshot {
	r := c.Snapshot.Regs
	return &trace.StackSnapshot{IP: r.IP, SP: r.SP, BP: r.BP, BX: r.BX, R12: r.R12, R13: r.R13, R14: r.R14, R15: r.R15,
		Window: c.Snapshot.Stack, WindowCut: c.Snapshot.StackTruncated, FP: c.Snapshot.FP}
}

// TestInternAcrossProcesses: the same call site in two processes of one
// program (addresses randomized) is one stack; three call sites are
// three; each symbolizes to the function that made the call.
func TestInternAcrossProcesses(t *testing.T) {
	exe, src := copyProgram(t)
	cache := stack.NewCache(stack.Options{})
	tab := NewTable(cache, 0)
	defer tab.Close()
	var runs [2][]trace.StackID
	for i := range runs {
		res, err := stacktest.Run(stacktest.Config{Argv: []string{exe, src}, Path: src, ASLR: true, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Captures) != 3 {
			t.Fatalf("run %d: %d captures, want 3", i, len(res.Captures))
		}
		for j := range res.Captures {
			runs[i] = append(runs[i], tab.Intern(snapshot(&res.Captures[j]), res.Captures[j].Maps))
		}
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Errorf("the same call sites in two processes: %v and %v", runs[0], runs[1])
	}
	if ids := slices.Compact(slices.Sorted(slices.Values(runs[0]))); len(ids) != 3 || tab.Len() != 3 {
		t.Fatalf("stacks %v (table %d), want 3 distinct", runs[0], tab.Len())
	}
	want := []string{"check_for_data", "check_sparse", "do_copy"}
	for i, id := range runs[0] {
		st := tab.Stack(id)
		if st == nil || st.Stop != "" {
			t.Fatalf("stack %d: %+v", id, st)
		}
		found := false
		for _, f := range st.Frames {
			if f.Func == want[i] {
				found = true
			}
			if f.Func == "main" {
				break
			}
		}
		if !found {
			t.Errorf("call %d: stack %+v lacks %s", i, st.Frames, want[i])
		}
	}
	var c trace.Counters
	tab.Counters(&c)
	if c.StacksTruncated+c.StacksUnknownMapping+c.StacksStopped+c.StacksNotKept != 0 {
		t.Errorf("losses counted on whole stacks: %+v", c)
	}

	// Export names exactly the stacks a result refers to.
	r := &trace.Result{Findings: []trace.Finding{{Kind: trace.KindDuplicateOpen,
		CallSites: []trace.CallSite{{Stack: runs[0][2], Count: 1}, {Stack: 0, Count: 4}, {Stack: trace.StackNotKept, Count: 1}}}}}
	tab.Export(r)
	if len(r.Stacks) != 1 || r.Stacks[0].ID != runs[0][2] || r.Stack(runs[0][2]) == nil {
		t.Errorf("exported %+v", r.Stacks)
	}
}

// TestBudget: past its byte budget the table keeps no new stack, and
// counts every call it did not keep; stacks kept before stay.
func TestBudget(t *testing.T) {
	exe, src := copyProgram(t)
	res, err := stacktest.Run(stacktest.Config{Argv: []string{exe, src}, Path: src})
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(nil, 1) // room for none
	defer tab.Close()
	for i := range res.Captures {
		for range 2 {
			if id := tab.Intern(snapshot(&res.Captures[i]), res.Captures[i].Maps); id != trace.StackNotKept {
				t.Errorf("capture %d kept as %d past the budget", i, id)
			}
		}
	}
	var c trace.Counters
	tab.Counters(&c)
	if c.StacksNotKept != 6 || tab.Len() != 0 {
		t.Errorf("not kept %d, kept %d; want 6 and 0", c.StacksNotKept, tab.Len())
	}
}

// TestStopsCounted: a window too small for the stack is counted as
// truncated, per call.
func TestStopsCounted(t *testing.T) {
	exe, src := copyProgram(t)
	cache := stack.NewCache(stack.Options{})
	res, err := stacktest.Run(stacktest.Config{Argv: []string{exe, src}, Path: src, Window: 64, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(cache, 0)
	defer tab.Close()
	for i := range res.Captures {
		id := tab.Intern(snapshot(&res.Captures[i]), res.Captures[i].Maps)
		if st := tab.Stack(id); st == nil || st.Stop != "truncated" {
			t.Errorf("capture %d: %+v, want a truncated stack", i, st)
		}
	}
	var c trace.Counters
	tab.Counters(&c)
	if c.StacksTruncated != 3 {
		t.Errorf("truncated %d, want 3", c.StacksTruncated)
	}
}

// TestNamesInBudget: the names a symbolized stack keeps count in the
// table's bytes; a stack symbolized past the budget shows module and
// offset per address, its names counted as cut; names already kept are
// shared, not charged again.
func TestNamesInBudget(t *testing.T) {
	exe, src := copyProgram(t)
	// Each table's cache retains the program's files while it runs.
	run := func() (*stack.Cache, *stacktest.Result) {
		cache := stack.NewCache(stack.Options{})
		res, err := stacktest.Run(stacktest.Config{Argv: []string{exe, src}, Path: src, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return cache, res
	}
	// What the three stacks cost unsymbolized.
	cache, res := run()
	probe := NewTable(cache, 0)
	for i := range res.Captures {
		probe.Intern(snapshot(&res.Captures[i]), res.Captures[i].Maps)
	}
	entries := probe.bytes
	probe.Close()

	for _, tc := range []struct {
		name   string
		budget int64
		named  bool
	}{
		{"room for the names", 0, true},
		{"room for the stacks only", entries*nameShare/(nameShare-1) + 64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache, res := run()
			tab := NewTable(cache, tc.budget)
			defer tab.Close()
			var ids []trace.StackID
			for i := range res.Captures {
				id := tab.Intern(snapshot(&res.Captures[i]), res.Captures[i].Maps)
				if id == trace.StackNotKept {
					t.Fatalf("capture %d not kept", i)
				}
				ids = append(ids, id)
			}
			before := tab.bytes
			var frames, named int
			for _, id := range ids {
				for _, f := range tab.Stack(id).Frames {
					frames++
					if f.Func != "" || f.File != "" {
						named++
					} else if f.Module == "" && f.Addr == 0 {
						t.Errorf("frame %+v: neither name nor module", f)
					}
				}
			}
			var c trace.Counters
			tab.Counters(&c)
			if tc.named {
				// main and the libc frames are shared by the three stacks:
				// charged once.
				var perStack int64
				for _, f := range tab.Stack(ids[0]).Frames {
					perStack += frameBytes + nameBytes + int64(len(f.Func)+len(f.File))
				}
				if named == 0 || c.StacksNamesCut != 0 || tab.bytes-before >= 3*perStack || tab.bytes-before <= perStack {
					t.Errorf("%d of %d frames named, %d cut, %d bytes charged (a stack alone %d): want all named, shared names charged once",
						named, frames, c.StacksNamesCut, tab.bytes-before, perStack)
				}
				return
			}
			if named != 0 || c.StacksNamesCut == 0 {
				t.Errorf("%d of %d frames named, %d cut: want none named past the budget, counted", named, frames, c.StacksNamesCut)
			}
		})
	}
}

// TestModulesUnopenedCounted: a stack through a file no Retain opened
// (its process gone) keeps module and offset and counts the module as
// gone, once; the resolver retains before it unwinds.
func TestModulesUnopenedCounted(t *testing.T) {
	tab := NewTable(nil, 0)
	defer tab.Close()
	maps := []stack.Mapping{{Start: 0x1000, End: 0x2000, Perms: "r-xp", Path: "/gone/prog", Dev: 1, Inode: 2}}
	for range 2 {
		id := tab.Intern(&trace.StackSnapshot{IP: 0x1100, SP: 0x8000}, maps)
		if st := tab.Stack(id); st == nil || len(st.Frames) == 0 || st.Frames[0].Module != "/gone/prog" || st.Frames[0].Func != "" {
			t.Errorf("stack %+v, want /gone/prog+offset", st)
		}
	}
	var c trace.Counters
	tab.Counters(&c)
	if c.StacksModulesGone != 1 || c.StacksModulesRefused != 0 {
		t.Errorf("modules gone %d, refused %d; want 1, 0", c.StacksModulesGone, c.StacksModulesRefused)
	}
	// Retain through a process that does not exist: gone too, and not
	// counted again.
	if err := tab.Retain(1<<22+12345, maps); err == nil {
		t.Errorf("Retain through no process: no error")
	}
	tab.Counters(&c)
	if c.StacksModulesGone != 1 {
		t.Errorf("modules gone %d after a second try, want 1", c.StacksModulesGone)
	}
}

// TestJITFramesCounted: a stack unwound through code in anonymous memory
// (a JIT compiler's) on to its callers ends well, but its frame there
// has no name: it counts as reaching an unknown mapping. The direct call
// of the same program does not.
func TestJITFramesCounted(t *testing.T) {
	testprog.RequireRoot(t)
	testprog.NeedTool(t, "gcc")
	exe := filepath.Join(t.TempDir(), "jit")
	out, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-g", "-o", exe, "../stack/testdata/jit.c").CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	const path = "/etc/hostname"
	cache := stack.NewCache(stack.Options{})
	res, err := stacktest.Run(stacktest.Config{Argv: []string{exe, path}, Path: path, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Captures) != 2 {
		t.Fatalf("%d captures, want 2", len(res.Captures))
	}
	tab := NewTable(cache, 0)
	defer tab.Close()
	var unnamed []bool
	for i := range res.Captures {
		st := tab.Stack(tab.Intern(snapshot(&res.Captures[i]), res.Captures[i].Maps))
		if st == nil {
			t.Fatalf("capture %d: no stack", i)
		}
		anon, main := false, false
		for _, f := range st.Frames {
			anon = anon || f.Module == ""
			main = main || f.Func == "main"
		}
		if !main {
			t.Errorf("capture %d: main not reached: %+v", i, st)
		}
		unnamed = append(unnamed, anon)
	}
	if !slices.Equal(unnamed, []bool{true, false}) {
		t.Fatalf("frames in no file: %v, want the first stack's only", unnamed)
	}
	var c trace.Counters
	tab.Counters(&c)
	if c.StacksUnknownMapping != 1 {
		t.Errorf("unknown mapping %d, want 1 (the stack through the JIT stub)", c.StacksUnknownMapping)
	}
}

// TestJITFramesPerfMap: a stack in a process's JIT code (anonymous
// executable memory) is named from that process's perf map, and is that
// process's own: the same addresses in a process without a map are
// another stack, unnamed.
func TestJITFramesPerfMap(t *testing.T) {
	pid := os.Getpid()
	file := fmt.Sprintf("/tmp/perf-%d.map", pid)
	if _, err := os.Lstat(file); err == nil {
		t.Skipf("%s exists", file)
	}
	t.Cleanup(func() { os.Remove(file) })
	if err := os.WriteFile(file, []byte("7f0000001000 100 JS:~hot /app.js:3:9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := NewTable(nil, 0)
	defer tab.Close()
	maps := []stack.Mapping{{Start: 0x7f0000000000, End: 0x7f0000010000, Perms: "rwxp"}}
	snap := &trace.StackSnapshot{IP: 0x7f0000001010, SP: 0x8000}
	named := tab.InternIn(stack.Proc{Pid: pid}, snap, maps)
	other := tab.InternIn(stack.Proc{Pid: 1<<22 + 12345}, snap, maps)
	if named == other {
		t.Errorf("one stack for the JIT code of two processes")
	}
	if st := tab.Stack(named); st == nil || st.Frames[0].Func != "JS:~hot /app.js:3:9" || st.Frames[0].Module != "" {
		t.Errorf("stack %+v, want its frame named from the perf map", st)
	}
	if st := tab.Stack(other); st == nil || st.Frames[0].Func != "" {
		t.Errorf("stack %+v of a process without a map, want it unnamed", st)
	}
}
