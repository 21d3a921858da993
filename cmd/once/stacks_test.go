package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack/stacktest"
)

// jsonStacks is what TestRunStacks reads of a JSON report.
type jsonStacks struct {
	Findings []struct {
		Kind      string `json:"kind"`
		Path      string `json:"path"`
		Target    string `json:"target"`
		Failed    int    `json:"failed"`
		CallSites []struct {
			StackID uint32 `json:"stack_id"`
			Count   int    `json:"count"`
		} `json:"call_sites"`
	} `json:"findings"`
	Stacks []struct {
		ID     uint32 `json:"id"`
		Frames []struct {
			Func   string `json:"func"`
			Module string `json:"module"`
		} `json:"frames"`
	} `json:"stacks"`
	StacksCaptured int    `json:"stacks_captured"`
	StacksMapsLost uint64 `json:"stacks_maps_lost"`
}

// stackCounters is what a report says of its stacks (its stacks_*
// fields but the stacks themselves), for a failure to say why some are
// missing: dropped in the kernel, their mappings lost or unknown, cut.
func stackCounters(t *testing.T, raw []byte) string {
	t.Helper()
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return err.Error()
	}
	var parts []string
	for k, v := range all {
		if strings.HasPrefix(k, "stacks_") {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// readStacksReport reads and decodes a once run --stacks JSON report,
// its raw bytes with it (stackCounters, fields jsonStacks leaves out).
func readStacksReport(t *testing.T, report string) (jsonStacks, []byte) {
	t.Helper()
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r jsonStacks
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r, raw
}

func (r *jsonStacks) funcs(id uint32) []string {
	for _, s := range r.Stacks {
		if s.ID == id {
			var out []string
			for _, f := range s.Frames {
				out = append(out, f.Func)
			}
			return out
		}
	}
	return nil
}

// TestRunStacks: once run --stacks on a C program without frame
// pointers that opens one file from three functions and then execvp's
// through a PATH of two directories without the target. The duplicate
// has 3 call sites of 1 open each, each through its own function down to
// main, as gdb shows them; the probe chain's 3 attempts come from
// exec_delta; the pprof profile names all four functions.
func TestRunStacks(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	prog := testprog.Build(t, testprog.Stackprog)
	dir := t.TempDir()
	file := filepath.Join(dir, "target")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "none1") + ":" + filepath.Join(dir, "none2") + ":/bin"
	report := filepath.Join(dir, "r.json")
	cmd := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", report, "--", prog, file, "true")
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.Stdin = strings.NewReader("go")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("once run --stacks: %v\n%s", err, out.String())
	}
	r, raw := readStacksReport(t, report)

	// What gdb sees at each openat of the file: the function under open.
	testprog.NeedTool(t, "gdb")
	stops, gdbOut, err := stacktest.GDB([]string{prog, file, "true"}, file, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, gdbOut)
	}
	var gdbCallers []string
	for _, s := range stops {
		for _, f := range s.Frames {
			if strings.HasPrefix(f.Func, "open_") {
				gdbCallers = append(gdbCallers, f.Func)
				break
			}
		}
	}
	if len(gdbCallers) != 3 {
		t.Fatalf("gdb saw %d openat of %s with an open_* caller (%v), want 3:\n%s", len(gdbCallers), file, gdbCallers, gdbOut)
	}

	var dupSites, execSites int
	var onceCallers []string
	for _, f := range r.Findings {
		switch {
		case f.Kind == "duplicate_open" && f.Path == file:
			for _, cs := range f.CallSites {
				dupSites++
				fs := r.funcs(cs.StackID)
				if cs.Count != 1 {
					t.Errorf("call site %v: %d opens, want 1", fs, cs.Count)
				}
				i := slices.IndexFunc(fs, func(s string) bool { return strings.HasPrefix(s, "open_") })
				if i < 0 || !slices.Contains(fs[i:], "main") {
					t.Errorf("call site %v: no open_* caller, or it does not reach main", fs)
					continue
				}
				onceCallers = append(onceCallers, fs[i])
			}
		case f.Kind == "failed_exec_probes" && f.Target == "true":
			if f.Failed != 2 {
				t.Errorf("exec probe chain of true: %d failed, want 2", f.Failed)
			}
			n := 0
			for _, cs := range f.CallSites {
				n += cs.Count
				if fs := r.funcs(cs.StackID); !slices.Contains(fs, "exec_delta") || !slices.Contains(fs, "main") {
					t.Errorf("exec call site %v: want exec_delta and main in it", fs)
				}
			}
			execSites = n
		}
	}
	slices.Sort(onceCallers)
	slices.Sort(gdbCallers)
	if dupSites != 3 || !slices.Equal(onceCallers, gdbCallers) {
		t.Errorf("duplicate of %s: %d call sites with callers %v; gdb: %v; the report's stack counters: %s", file, dupSites, onceCallers, gdbCallers, stackCounters(t, raw))
	}
	if execSites != 3 {
		t.Errorf("exec probe chain: %d attempts under call sites, want 3 (2 failed + the one found)", execSites)
	}
	if r.StacksCaptured < 6 {
		t.Errorf("stacks_captured %d, want at least the 6 calls of the findings", r.StacksCaptured)
	}

	// The profile: go tool pprof lists the four functions.
	prof := filepath.Join(dir, "r.pb.gz")
	cmd = exec.Command(bin, "run", "--format", "pprof", "-o", prof, "--", prog, file, "true")
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.Stdin = strings.NewReader("go")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("once run --format pprof: %v\n%s", err, b)
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=100", "-sample_index=calls", prof).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, top)
	}
	for _, fn := range []string{"open_alpha", "open_beta", "open_gamma", "exec_delta"} {
		if !strings.Contains(string(top), fn) {
			t.Errorf("pprof -top lacks %s:\n%s", fn, top)
		}
	}
}

// TestRunStacksUutilsCp: Debian's uutils cp is stripped, without frame
// pointers, with .eh_frame: every call site of its duplicates unwinds
// through libc's start-up to the end (no stop), its own frames as
// module+offset, and the report says the symbols are missing.
func TestRunStacksUutilsCp(t *testing.T) {
	testprog.RequireRoot(t)
	if _, err := os.Stat(uutilsCp); err != nil {
		testprog.Skipf(t, "%s is not installed (rust-coreutils): %v", uutilsCp, err)
	}
	bin := buildOnce(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "r.json")
	if out, err := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", report, "--", uutilsCp, src, filepath.Join(dir, "dst")).CombinedOutput(); err != nil {
		t.Fatalf("once run: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Findings []struct {
			Kind      string `json:"kind"`
			Path      string `json:"path"`
			CallSites []struct {
				StackID uint32 `json:"stack_id"`
				Count   int    `json:"count"`
			} `json:"call_sites"`
		} `json:"findings"`
		Stacks []stackEntry `json:"stacks"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	sites := 0
	for _, f := range r.Findings {
		if f.Kind != "duplicate_open" || f.Path != src {
			continue
		}
		for _, cs := range f.CallSites {
			sites++
			i := slices.IndexFunc(r.Stacks, func(s stackEntry) bool {
				return s.ID == cs.StackID
			})
			if i < 0 {
				t.Fatalf("call site stack %d not in the stacks table", cs.StackID)
			}
			st := r.Stacks[i]
			start, own, noted := false, 0, false
			for _, fr := range st.Frames {
				start = start || strings.HasPrefix(fr.Func, "__libc_start")
				if fr.Func == "" && strings.HasSuffix(fr.Module, "/coreutils") && fr.Offset != 0 {
					own++
				}
			}
			for _, n := range st.Notes {
				noted = noted || strings.HasSuffix(n.Module, "/coreutils") && strings.Contains(n.Note, "stripped")
			}
			if st.Stop != "" || !start || own < 3 || !noted {
				t.Errorf("stack %d: stop %q, reaches libc start-up %v, %d coreutils+offset frames, stripped noted %v; want no stop, true, 3+, true: %+v",
					st.ID, st.Stop, start, own, noted, st)
			}
		}
	}
	if sites != 2 {
		t.Errorf("uutils cp's duplicate of %s: %d call sites, want 2 (strace shows 2 opens, from 2 places)", src, sites)
	}
}

// stackEntry is one entry of a JSON report's stacks table.
type stackEntry struct {
	ID     uint32 `json:"id"`
	Stop   string `json:"stop"`
	Frames []struct {
		Func   string `json:"func"`
		Module string `json:"module"`
		Offset uint64 `json:"offset"`
	} `json:"frames"`
	Notes []struct {
		Module string `json:"module"`
		Note   string `json:"note"`
	} `json:"notes"`
}

// firstCallsReport is what TestRunStacksFirstCallsKept compares of two
// JSON reports.
type firstCallsReport struct {
	OpensUnsent     int `json:"opens_unsent"`
	StacksFirstLost int `json:"stacks_first_lost"`
	Findings        []struct {
		Kind  string `json:"kind"`
		Path  string `json:"path"`
		Count int    `json:"count"`
		Calls []struct {
			Syscall string `json:"syscall"`
			Fname   string `json:"fname"`
			Flags   uint64 `json:"flags"`
			Ret     int    `json:"ret"`
			Path    string `json:"path"`
			StackID uint32 `json:"stack_id"`
		} `json:"calls"`
		CallSites []struct {
			StackID uint32 `json:"stack_id"`
			Count   int    `json:"count"`
		} `json:"call_sites"`
	} `json:"findings"`
	Processes []struct {
		Totals map[string]int `json:"totals"`
	} `json:"processes"`
	jsonStacks
}

// TestRunStacksFirstCallsKept: once run --stacks keeps an image's first
// open of a file in the kernel, counted, with its stack and its call, and
// sends them only after a repeat; --files all, which lists every file,
// has every first open sent. On the bundled dupcopy, which opens each
// source three times, both give the same findings: the same calls in
// the same order (fname, flags, fd) from the same call sites, the first
// call without its path only where it was kept, and the same totals.
func TestRunStacksFirstCallsKept(t *testing.T) {
	testprog.RequireRoot(t)
	dir := buildRefs(t)
	work := t.TempDir()
	src := filepath.Join(work, "src")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "sub/c", "sub/d"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(files string) firstCallsReport {
		t.Helper()
		report := filepath.Join(work, "r-"+files+".json")
		os.RemoveAll(filepath.Join(work, "dst"))
		cmd := exec.Command(filepath.Join(dir, "once"), "run", "--stacks", "--files", files, "--format", "json", "-o", report,
			"--", filepath.Join(dir, "dupcopy"), "-r", "src", "dst")
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("once run --stacks --files %s: %v\n%s", files, err, out)
		}
		raw, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var r firstCallsReport
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r.jsonStacks); err != nil {
			t.Fatal(err)
		}
		return r
	}
	kept, all := run("duplicates"), run("all")
	if kept.OpensUnsent == 0 || all.OpensUnsent != 0 {
		t.Errorf("opens_unsent: %d kept in the kernel by default, %d with --files all; want some, and 0", kept.OpensUnsent, all.OpensUnsent)
	}
	if kept.StacksFirstLost != 0 || all.StacksFirstLost != 0 {
		t.Errorf("stacks_first_lost %d and %d, want 0", kept.StacksFirstLost, all.StacksFirstLost)
	}
	if len(kept.Processes) != 1 || len(all.Processes) != 1 || fmt.Sprint(kept.Processes[0].Totals) != fmt.Sprint(all.Processes[0].Totals) {
		t.Errorf("process totals %v, with every first open sent %v", kept.Processes, all.Processes)
	}
	type dup struct {
		path  string
		count int
		calls []string
		sites []string
	}
	dups := func(r firstCallsReport, firstPathKept bool) []dup {
		var out []dup
		for _, f := range r.Findings {
			if f.Kind != "duplicate_open" {
				continue
			}
			d := dup{path: f.Path, count: f.Count}
			for i, c := range f.Calls {
				// Where kept, the first call has no path; else each call's
				// is the file's.
				want := f.Path
				if i == 0 && !firstPathKept {
					want = ""
				}
				if c.Path != want {
					t.Errorf("%s: call %d's path %q, want %q", f.Path, i, c.Path, want)
				}
				d.calls = append(d.calls, fmt.Sprintf("%s %s %#x %d %s", c.Syscall, c.Fname, c.Flags, c.Ret, strings.Join(r.funcs(c.StackID), "<")))
			}
			for _, cs := range f.CallSites {
				d.sites = append(d.sites, fmt.Sprintf("%d×%s", cs.Count, strings.Join(r.funcs(cs.StackID), "<")))
			}
			slices.Sort(d.sites)
			out = append(out, d)
		}
		slices.SortFunc(out, func(a, b dup) int { return strings.Compare(a.path, b.path) })
		return out
	}
	k, a := dups(kept, false), dups(all, true)
	if len(a) != 4 {
		t.Fatalf("%d duplicates with every first open sent, want the 4 sources", len(a))
	}
	if len(k) != len(a) {
		t.Fatalf("%d duplicates with first calls kept, %d with every first open sent", len(k), len(a))
	}
	for i := range a {
		if k[i].path != a[i].path || k[i].count != a[i].count || !slices.Equal(k[i].calls, a[i].calls) || !slices.Equal(k[i].sites, a[i].sites) {
			t.Errorf("duplicate with first calls kept:\n%+v\nwith every first open sent:\n%+v", k[i], a[i])
		}
		if a[i].count != 3 || len(a[i].calls) != 3 || strings.HasSuffix(a[i].calls[0], " ") {
			t.Errorf("%s: %d opens, calls %q: want 3 with their stacks", a[i].path, a[i].count, a[i].calls)
		}
	}
}
