package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/oncetool/once/trace"
)

// stackResult is a --stacks run of a uutils-style cp: one source opened
// from three call sites (the data probe, the sparse probe, the copy),
// stripped libc frames under them, a hostile function name, and a PATH
// search whose attempts all come from one site.
func stackResult() *trace.Result {
	const cpBin, libc = "/usr/bin/cp", "/usr/lib/x86_64-linux-gnu/libc.so.6"
	open64 := trace.Frame{Addr: 0x7f0000011111, Module: libc, BuildID: "ab12", Offset: 0x11111, Func: "__libc_open64"}
	main := []trace.Frame{
		{Addr: 0x555555556100, Module: cpBin, BuildID: "cd34", Offset: 0x2100, Func: "copy_file", File: "/src/copy.rs", Line: 40},
		{Addr: 0x555555556200, Module: cpBin, BuildID: "cd34", Offset: 0x2200, Func: "copy", File: "/src/copy.rs", Line: 12},
		{Addr: 0x555555556300, Module: cpBin, BuildID: "cd34", Offset: 0x2300, Func: "main", File: "/src/main.rs", Line: 3},
		{Addr: 0x7f0000022222, Module: libc, BuildID: "ab12", Offset: 0x22222},
	}
	site := func(id trace.StackID, fn string, off uint64, line int, inlined ...trace.Frame) trace.Stack {
		fs := []trace.Frame{open64}
		fs = append(fs, inlined...)
		fs = append(fs, trace.Frame{Addr: 0x555555550000 + off, Module: cpBin, BuildID: "cd34", Offset: off, Func: fn, File: "/src/copy.rs", Line: line})
		return trace.Stack{ID: id, Frames: append(fs, main...),
			Notes: []trace.ModuleNote{{Module: libc, BuildID: "ab12", Note: "no line information (no -dbgsym)"}}}
	}
	std := trace.Frame{Addr: 0x555555551500, Module: cpBin, BuildID: "cd34", Offset: 0x1500, Func: "std::fs::File::open", File: "/rustc/x/library/std/src/fs.rs", Line: 353, Inlined: true}
	stacks := []trace.Stack{
		site(1, "check_for_data", 0x1500, 88, std),
		site(2, "check_sparse_detection", 0x1600, 120),
		site(3, "copy_data\x1b[31m;evil", 0x1700, 150),
		{ID: 4, Frames: []trace.Frame{
			{Addr: 0x7f0000033333, Module: libc, BuildID: "ab12", Offset: 0x33333, Func: "execvpe"},
			{Addr: 0x555555557000, Module: "/usr/bin/make", Offset: 0x3000},
			{Addr: 0x555555557100, Module: "/usr/bin/make", Offset: 0x3100},
		}, Stop: "truncated", Notes: []trace.ModuleNote{{Module: "/usr/bin/make", Note: "stripped, no symbols and no debug file (no -dbgsym)"}}},
	}
	cp := &trace.Process{Key: trace.ImageKey{Pid: 100, Start: 5, ExecID: 1}, Pid: 100, PPid: 1, Comm: "cp", Exe: cpBin,
		Argv: []string{"cp", "src", "dst"}}
	mk := &trace.Process{Key: trace.ImageKey{Pid: 101, Start: 6, ExecID: 1}, Pid: 101, PPid: 1, Comm: "make", Exe: "/usr/bin/make",
		Argv: []string{"make"}}
	call := func(fd int32, ns uint64, id trace.StackID) trace.OpenCall {
		return trace.OpenCall{Syscall: trace.SysOpenat, Tid: 100, Fname: "src", Dirfd: -100, Flags: 0x80000, Ret: fd, Ns: ns, Path: "/tmp/src", Stack: id}
	}
	fo := &trace.FileOpens{Dev: 2049, Ino: 7, Path: "/tmp/src", Paths: []string{"/tmp/src"}, Count: 3,
		Calls:     []trace.OpenCall{call(3, 2000, 1), call(3, 1500, 2), call(3, 1800, 3)},
		Kinds:     []trace.CallKind{{Syscall: trace.SysOpenat, Flags: 0x80000, Count: 3}},
		CallSites: []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}}, ExtraNs: 3300}
	cp.Opens = []*trace.FileOpens{fo}
	cp.Totals = trace.ProcessTotals{Opens: 3, Files: 1, DupFiles: 1}
	found := "/usr/bin/cc"
	r := &trace.Result{
		Command: []string{"make"}, Duration: 40 * time.Millisecond, Files: trace.FilesDuplicates,
		Counters:  trace.Counters{Stacks: true, StacksCaptured: 6, StacksTruncated: 1},
		Processes: []*trace.Process{cp, mk},
		Findings: []trace.Finding{
			{Kind: trace.KindFailedExecProbes, Key: mk.Key, Pid: 101, PPid: 1, Comm: "make", Proc: mk,

				WastedNs: 9000, CallSites: []trace.CallSite{{Stack: 4, Count: 3}}, ChainDetail: trace.ChainDetail{Target: "cc", Attempts: []trace.Attempt{{Path: "/a/cc", Errno: 2, Ns: 4000, Stack: 4}, {Path: "/b/cc", Errno: 2, Ns: 5000, Stack: 4},
					{Path: "/usr/bin/cc", Ns: 90000, Stack: 4}}, Failed: 2, Found: &found}},
			{Kind: trace.KindDuplicateOpen, Key: cp.Key, Pid: 100, PPid: 1, Comm: "cp", Proc: cp,
				WastedNs: 3300, CallSites: fo.CallSites, FileDetail: trace.FileDetail{Path: "/tmp/src", Paths: fo.Paths, Dev: 2049, Ino: 7, Count: 3, Calls: fo.Calls, Kinds: fo.Kinds}},
		},
		Stacks: stacks, Opens: 3, Execs: 3, FailedExecs: 2,
	}
	return r
}

func TestStackGoldens(t *testing.T) {
	for _, tc := range []struct {
		file   string
		render func(io.Writer, *trace.Result) error
	}{
		{"stacks.text.golden", TextDetails},
		{"stacks.brief.text.golden", Text},
		{"stacks.json.golden", JSON},
		{"stacks.markdown.golden", MarkdownDetails},
		{"stacks.folded.golden", Folded},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf, stackResult()); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.file, buf.Bytes())
			if tc.file != "stacks.json.golden" {
				if i := badControl(buf.Bytes()); i >= 0 {
					t.Errorf("raw control byte at %d", i)
				}
			}
		})
	}
}

// TestCallSiteLine: a site's one-line form starts at the program's own
// code, past libc and Rust's std (inlined or not).
func TestCallSiteLine(t *testing.T) {
	r := stackResult()
	for _, tc := range []struct {
		id   trace.StackID
		want string
	}{
		{1, "check_for_data ← copy_file ← copy ← main ← … (copy.rs:88)"},
		{2, "check_sparse_detection ← copy_file ← copy ← main ← … (copy.rs:120)"},
		{3, `copy_data\x1b[31m;evil ← copy_file ← copy ← main ← … (copy.rs:150)`},
		{4, "make+0x3000 ← make+0x3100 [truncated]"},
		{0, "[no stack: counted in the kernel, or not captured]"},
		{trace.StackNotKept, "[stacks past the ones kept]"},
		{99, "[stack 99 not kept]"},
	} {
		if got := siteLine(r, tc.id); got != tc.want {
			t.Errorf("site %d: %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestPProf: the profile parses back; its samples are the call sites,
// valued by calls and waste, labelled; inlined frames share a location.
func TestPProf(t *testing.T) {
	var buf bytes.Buffer
	r := stackResult()
	r.Counters.DroppedEvents = 7
	if err := PProf(&buf, r); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 4 {
		t.Fatalf("%d samples, want 4 (1 exec site, 3 open sites)", len(p.Sample))
	}
	funcs := map[string]int64{}
	var calls, wasted int64
	for _, s := range p.Sample {
		calls += s.Value[0]
		wasted += s.Value[1]
		if len(s.Label["kind"]) != 1 || len(s.Label["process"]) != 1 || len(s.Label["file"]) != 1 {
			t.Errorf("labels %v", s.Label)
		}
		for _, l := range s.Location {
			for _, ln := range l.Line {
				funcs[ln.Function.Name] += s.Value[0]
			}
		}
	}
	// The search's 2 failed attempts (not its winner), the 3 opens.
	if calls != 2+3 || wasted != 9000+1500+1800 {
		t.Errorf("calls %d wasted %d, want 5 and 12300", calls, wasted)
	}
	for _, fn := range []string{"check_for_data", "check_sparse_detection", "copy_data\\x1b[31m;evil", "std::fs::File::open"} {
		if funcs[fn] != 1 {
			t.Errorf("function %q in %d calls' stacks, want 1 (have %v)", fn, funcs[fn], funcs)
		}
	}
	for _, l := range p.Location {
		if len(l.Line) == 2 && l.Line[0].Function.Name != "std::fs::File::open" {
			t.Errorf("inlined frame not first in its location: %+v", l.Line)
		}
	}
	if !strings.Contains(p.String(), "duplicate_open /tmp/src") {
		t.Errorf("the finding's leaf is missing:\n%s", p)
	}
	// Losses travel with the profile (go tool pprof -comments).
	if len(p.Comments) == 0 || !strings.Contains(p.Comments[0], "7 events lost") {
		t.Errorf("comments %q, want the summary line with the events lost", p.Comments)
	}
	// The program the profile is of comes first (pprof's "File:"),
	// not the module of the first leaf (libc).
	if len(p.Mapping) == 0 || p.Mapping[0].File != "/usr/bin/cp" {
		t.Errorf("first mapping %v, want the command's executable /usr/bin/cp", p.Mapping)
	}
	if p.DefaultSampleType != "calls" {
		t.Errorf("default sample type %q, want calls", p.DefaultSampleType)
	}
	// What a user runs: go tool pprof -top lists every call site of the
	// duplicate, its first open (which wastes nothing) included.
	if goBin, err := exec.LookPath("go"); err == nil {
		f := filepath.Join(t.TempDir(), "once.pb.gz")
		var raw bytes.Buffer
		if err := PProf(&raw, stackResult()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, raw.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodecount=100", f).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof -top: %v\n%s", err, out)
		}
		for _, fn := range []string{"check_for_data", "check_sparse_detection", "copy_data"} {
			if !strings.Contains(string(out), fn) {
				t.Errorf("go tool pprof -top lacks %s:\n%s", fn, out)
			}
		}
	}
}

// TestPProfWasteIsTheFindings: a profile's wasted time per finding is
// the finding's WastedNs, as in every other format: with calls past the
// cap or counted in the kernel (their time is in WastedNs, not in the
// calls kept), and with a repeated miss whose repeats are a search's
// attempts (counted in that search's finding, not again here).
func TestPProfWasteIsTheFindings(t *testing.T) {
	call := func(ns uint64, id trace.StackID) trace.OpenCall {
		return trace.OpenCall{Syscall: trace.SysOpenat, Fname: "/f", Ret: 3, Ns: ns, Path: "/f", Stack: id}
	}
	miss := func(ns uint64, id trace.StackID) trace.OpenCall {
		return trace.OpenCall{Syscall: trace.SysNewfstatat, Fname: "/m", Ret: -2, Ns: ns, Stack: id}
	}
	stacks := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Addr: 0x1000, Module: "/bin/x", Offset: 0x1000, Func: "a"}}},
		{ID: 2, Frames: []trace.Frame{{Addr: 0x2000, Module: "/bin/x", Offset: 0x2000, Func: "b"}}},
	}
	r := &trace.Result{Command: []string{"x"}, Stacks: stacks, Counters: trace.Counters{Stacks: true},
		Findings: []trace.Finding{
			// 5,000 opens: 3 kept (2 of them waste, 300ns), the rest
			// counted in the kernel, without a stack: 2ms in all.
			{Kind: trace.KindDuplicateOpen, Pid: 1, Comm: "x", WastedNs: 2_000_000,
				CallSites: []trace.CallSite{{Stack: 1, Count: 2}, {Stack: 2, Count: 1}, {Stack: 0, Count: 4997}},
				FileDetail: trace.FileDetail{Path: "/f", Count: 5000, CallsOmitted: 4997,
					Calls: []trace.OpenCall{call(900, 1), call(100, 1), call(200, 2)}}},
			// 3 misses, both repeats attempts of a search: 0ns here.
			{Kind: trace.KindRepeatedMiss, Pid: 1, Comm: "x", WastedNs: 0,
				CallSites: []trace.CallSite{{Stack: 1, Count: 3}},
				FileDetail: trace.FileDetail{Path: "/m", Count: 3, Errno: 2, Chained: 2,
					Calls: []trace.OpenCall{miss(500, 1), miss(400, 1), miss(300, 1)}}},
			// 4 misses, 1 of them an attempt of a search: 2 of 3 repeats.
			{Kind: trace.KindRepeatedMiss, Pid: 1, Comm: "x", WastedNs: 700,
				CallSites: []trace.CallSite{{Stack: 1, Count: 2}, {Stack: 2, Count: 2}},
				FileDetail: trace.FileDetail{Path: "/n", Count: 4, Errno: 2, Chained: 1,
					Calls: []trace.OpenCall{miss(500, 1), miss(400, 1), miss(300, 2), miss(350, 2)}}},
		}}
	var buf bytes.Buffer
	if err := PProf(&buf, r); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	calls, wasted := map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		f := s.Label["file"][0]
		calls[f] += s.Value[0]
		wasted[f] += s.Value[1]
	}
	for _, f := range r.Findings {
		if calls[f.Path] != int64(f.Amount()) || wasted[f.Path] != int64(f.WastedNs) {
			t.Errorf("%s %s: profile has %d calls, %dns wasted; want %d, %dns", f.Kind, f.Path, calls[f.Path], wasted[f.Path], f.Amount(), f.WastedNs)
		}
	}
}

// TestStackKeysDocumented: every key of a --stacks report is in the run
// report's part of SCHEMA.md.
func TestStackKeysDocumented(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, stackResult()); err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	schema, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	run, _, _ := strings.Cut(string(schema), "# once watch JSON lines")
	keys := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				keys[k] = true
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	for _, k := range []string{"stacks", "stack", "stack_id", "call_sites", "frames", "build_id", "inlined", "notes"} {
		if !keys[k] {
			t.Errorf("the --stacks report lacks %q", k)
		}
	}
	for k := range keys {
		if !strings.Contains(run, "`"+k+"`") {
			t.Errorf("key %q is not in SCHEMA.md's run report", k)
		}
	}
}

// TestProfileCallsAreTheAmount: a profile's calls per finding (pprof's
// calls, folded's count) are what text and JSON count: a search's failed
// attempts, its winner (among the call sites, JSON's call_sites) not
// counted, wherever its site is: the sites of its misses, one of its
// own, or the sites past the ones kept.
func TestProfileCallsAreTheAmount(t *testing.T) {
	found := "/usr/bin/cc"
	chain := func(path string, failed int, winner trace.StackID, sites ...trace.CallSite) trace.Finding {
		f := trace.Finding{Kind: trace.KindFailedExecProbes, Pid: 1, Comm: "make", WastedNs: uint64(failed) * 1000, CallSites: sites,
			ChainDetail: trace.ChainDetail{Target: path, Failed: failed}}
		for i := 0; i < failed; i++ {
			f.Attempts = append(f.Attempts, trace.Attempt{Path: "/d" + strconv.Itoa(i) + "/" + path, Errno: 2, Ns: 1000, Stack: 1})
		}
		if winner != 0 {
			f.Found = &found
			f.Attempts = append(f.Attempts, trace.Attempt{Path: found, Ns: 50000, Stack: winner})
		}
		return f
	}
	stacks := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Addr: 0x1000, Module: "/bin/make", Offset: 0x1000, Func: "run"}}},
		{ID: 2, Frames: []trace.Frame{{Addr: 0x2000, Module: "/bin/make", Offset: 0x2000, Func: "last"}}},
	}
	r := &trace.Result{Command: []string{"make"}, Stacks: stacks, Counters: trace.Counters{Stacks: true},
		Findings: []trace.Finding{
			chain("a", 3, 1, trace.CallSite{Stack: 1, Count: 4}),
			chain("b", 3, 2, trace.CallSite{Stack: 1, Count: 3}, trace.CallSite{Stack: 2, Count: 1}),
			chain("c", 2, 2, trace.CallSite{Stack: 1, Count: 2}, trace.CallSite{Stack: trace.StackNotKept, Count: 1}),
			chain("d", 2, 0, trace.CallSite{Stack: 1, Count: 2}),
		}}
	var buf bytes.Buffer
	if err := PProf(&buf, r); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	calls, wasted := map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		f := s.Label["file"][0]
		calls[f] += s.Value[0]
		wasted[f] += s.Value[1]
		if s.Value[0] == 0 && s.Value[1] == 0 {
			t.Errorf("%s: a sample of no call and no waste", f)
		}
	}
	buf.Reset()
	if err := Folded(&buf, r); err != nil {
		t.Fatal(err)
	}
	folded := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil || n <= 0 {
			t.Errorf("folded line %q: count %d (%v)", line, n, err)
		}
		folded[line[strings.LastIndexByte(line[:i], ' ')+1:i]] += n
	}
	for _, f := range r.Findings {
		s := f.Subject()
		if calls[s] != int64(f.Amount()) || folded[s] != int64(f.Amount()) || wasted[s] != int64(f.WastedNs) {
			t.Errorf("%s %s: pprof %d calls %dns, folded %d calls; want %d calls (%d failed), %dns", f.Kind, s, calls[s], wasted[s], folded[s], f.Amount(), f.Failed, f.WastedNs)
		}
	}
}

// TestPProfWastePerSite: a profile charges each call site with the time
// of its avoidable calls. A duplicate's first call is not waste, but a
// duplicate_stat's first lookup is counted in the kernel and never sent:
// its calls then start at the second lookup, which is.
func TestPProfWastePerSite(t *testing.T) {
	call := func(sc trace.Syscall, ns uint64, id trace.StackID) trace.OpenCall {
		return trace.OpenCall{Syscall: sc, Fname: "/f", Ns: ns, Path: "/f", Stack: id}
	}
	stacks := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Addr: 0x1000, Module: "/bin/x", Offset: 0x1000, Func: "check_exists"}}},
		{ID: 2, Frames: []trace.Frame{{Addr: 0x2000, Module: "/bin/x", Offset: 0x2000, Func: "get_size"}}},
	}
	for _, tc := range []struct {
		name string
		f    trace.Finding
		want map[string]int64 // wasted ns by leaf function ("" no stack)
	}{
		{"duplicate_open, first open listed", trace.Finding{Kind: trace.KindDuplicateOpen, Pid: 1, Comm: "x", WastedNs: 500,
			CallSites:  []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}},
			FileDetail: trace.FileDetail{Path: "/f", Count: 2, Calls: []trace.OpenCall{call(trace.SysOpenat, 9000, 1), call(trace.SysOpenat, 500, 2)}}},
			map[string]int64{"check_exists": 0, "get_size": 500}},
		{"duplicate_stat, first lookup counted in the kernel", trace.Finding{Kind: trace.KindDuplicateStat, Pid: 1, Comm: "x", WastedNs: 1400,
			CallSites:  []trace.CallSite{{Stack: 0, Count: 1}, {Stack: 2, Count: 1}},
			FileDetail: trace.FileDetail{Path: "/f", Count: 2, Calls: []trace.OpenCall{call(trace.SysNewfstatat, 1400, 2)}}},
			map[string]int64{"": 0, "get_size": 1400}},
		{"duplicate_stat, 3 lookups, first counted in the kernel", trace.Finding{Kind: trace.KindDuplicateStat, Pid: 1, Comm: "x", WastedNs: 1000,
			CallSites:  []trace.CallSite{{Stack: 0, Count: 1}, {Stack: 1, Count: 1}, {Stack: 2, Count: 1}},
			FileDetail: trace.FileDetail{Path: "/f", Count: 3, Calls: []trace.OpenCall{call(trace.SysNewfstatat, 600, 1), call(trace.SysNewfstatat, 400, 2)}}},
			map[string]int64{"": 0, "check_exists": 600, "get_size": 400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trace.Result{Command: []string{"x"}, Stacks: stacks, Counters: trace.Counters{Stacks: true}, Findings: []trace.Finding{tc.f}}
			var buf bytes.Buffer
			if err := PProf(&buf, r); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, s := range p.Sample {
				leaf := ""
				for _, l := range s.Location {
					for _, ln := range l.Line {
						if n := ln.Function.Name; n == "check_exists" || n == "get_size" {
							leaf = n
						}
					}
				}
				got[leaf] += s.Value[1]
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("wasted at %q: %dns, want %dns (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

// TestPProfCarriesTheVerdict: once check's -o report carries its verdict
// in every format that has room for it: in a profile, its comments (go
// tool pprof -comments).
func TestPProfCarriesTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name       string
		violations []string
		want       []string
	}{
		{"once run", nil, nil},
		{"held", []string{}, []string{"check: every assertion holds"}},
		{"violated", []string{"cp opened /tmp/src 2 times, expected 1"}, []string{"check: 1 violation", "  cp opened /tmp/src 2 times, expected 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trace.Result{Command: []string{"cp"}, Violations: tc.violations}
			var buf bytes.Buffer
			if err := PProf(&buf, r); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Comments[1:]; !slices.Equal(got, tc.want) {
				t.Errorf("comments after the summary %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJSONStacksOfListedOnly: the stacks table has the stacks the JSON
// names, not those of the processes --processes findings leaves out (an
// exec of a process with no finding): a tree of 20,000 processes does
// not carry their exec stacks.
func TestJSONStacksOfListedOnly(t *testing.T) {
	r := stackResult()
	quiet := &trace.Process{Key: trace.ImageKey{Pid: 102, Start: 7, ExecID: 1}, Pid: 102, PPid: 1, Comm: "true", Exe: "/usr/bin/true",
		Argv: []string{"true"}, Totals: trace.ProcessTotals{Execs: 1},
		Execs: []trace.ExecAttempt{{Syscall: trace.SysExecve, Tid: 102, Filename: "/usr/bin/true", Path: "/usr/bin/true", Argv: []string{"true"}, Stack: 5}}}
	r.Processes = append(r.Processes, quiet)
	r.Stacks = append(r.Stacks, trace.Stack{ID: 5, Frames: []trace.Frame{{Addr: 0x1000, Module: "/usr/bin/sh", Offset: 0x1000, Func: "shell_exec"}}})
	for _, tc := range []struct {
		listed string
		want   []int
	}{{trace.ProcessesFindings, []int{1, 2, 3, 4}}, {trace.ProcessesAll, []int{1, 2, 3, 4, 5}}} {
		r.ProcessesListed = tc.listed
		var buf bytes.Buffer
		if err := JSON(&buf, r); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Stacks []struct {
				ID int `json:"id"`
			} `json:"stacks"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, s := range doc.Stacks {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("--processes %s: stacks %v, want %v", tc.listed, got, tc.want)
		}
	}
}

// TestUnnamedModules: why call sites are not named. A module without
// symbols is named; frames in no known mapping (Module "": JIT code, or
// a process whose mapping records were lost) are no module at all, and
// are said so, never as a module "without symbols".
func TestUnnamedModules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mods      []string
		why, note string
	}{
		{"one module", []string{"/usr/bin/dash"},
			"/usr/bin/dash has no symbols",
			"/usr/bin/dash has no symbols, so their frames are module+offset only (--format json keeps them, for addr2line)"},
		{"two modules", []string{"/usr/bin/dash", "/usr/bin/make"},
			"/usr/bin/dash, /usr/bin/make have no symbols",
			"/usr/bin/dash, /usr/bin/make have no symbols, so their frames are module+offset only (--format json keeps them, for addr2line)"},
		{"no known mapping", []string{""},
			"the calls are from code in no known file (JIT code, or mapping records lost)",
			"the calls are from code in no known file (JIT code, or mapping records lost), so their frames are addresses only (--format json keeps them)"},
		{"both", []string{"/usr/bin/dash", ""},
			"/usr/bin/dash has no symbols, and the other frames are in no known file (JIT code, or mapping records lost)",
			"/usr/bin/dash has no symbols, and the other frames are in no known file (JIT code, or mapping records lost), so their frames are module+offset only (--format json keeps them, for addr2line)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mods []namelessModule
			for _, m := range tc.mods {
				mods = append(mods, namelessModule{path: m})
			}
			if got := unnamedModules(mods); got != tc.why {
				t.Errorf("unnamedModules = %q, want %q", got, tc.why)
			}
			if got := unnamedNote(mods); got != tc.note {
				t.Errorf("unnamedNote = %q, want %q", got, tc.note)
			}
		})
	}
}

// TestPProfCarriesTheRunNotes: what the other formats' header says of a
// run cut short (timed out, interrupted, processes still running past
// --linger, a command that never ran) travels with a profile too, in its
// comments after the summary line: a profile of such a run is not all of
// the command's calls. A run that ended whole adds none.
func TestPProfCarriesTheRunNotes(t *testing.T) {
	running := []*trace.Process{{Key: trace.ImageKey{Pid: 7, ExecID: 1}, Comm: "sleep"}}
	for _, tc := range []struct {
		name string
		r    trace.Result
		want []string
	}{
		{"whole", trace.Result{Command: []string{"cp"}}, nil},
		{"still running", trace.Result{Command: []string{"sh"}, Processes: running},
			[]string{"command: sh (1 process still running past --linger: its later calls are not in the report)"}},
		{"timed out", trace.Result{Command: []string{"make"}, TimedOut: true, Timeout: 2 * time.Second},
			[]string{"command: make (timed out after 2s)"}},
		{"interrupted", trace.Result{Command: []string{"make"}, Interrupted: "SIGTERM"},
			[]string{"command: make (interrupted: once passed its SIGTERM on)"}},
		{"never ran", trace.Result{Command: []string{"./x"}, StartErrno: 2},
			[]string{"command: ./x (never ran: its execve failed with ENOENT)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PProf(&buf, &tc.r); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Comments[1:]; !slices.Equal(got, tc.want) {
				t.Errorf("comments after the summary %q, want %q", got, tc.want)
			}
		})
	}
}
