package report

import (
	"bufio"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// wrapperResult is dupcopy's shape: one source opened from three
// functions, each through the same retrying wrapper (sys.go), whose
// frames are the innermost ones of every site; and a second program
// without symbols whose two sites share their innermost frames too.
func wrapperResult() *trace.Result {
	const bin, libc = "/usr/bin/dupcopy", "/usr/lib/x86_64-linux-gnu/libc.so.6"
	sys := trace.Frame{Module: bin, Offset: 0x10, Func: "syscall.Syscall6", File: "/go/src/syscall/syscall_linux.go", Line: 95}
	wrap := func(caller string) []trace.Frame {
		// The wrapper's closure is inlined into each caller: its name
		// differs, its source line does not.
		return []trace.Frame{
			sys,
			{Module: bin, Offset: 0x100, Func: "refcopy." + caller + ".openat.func1", File: "/src/refcopy/sys.go", Line: 30},
			{Module: bin, Offset: 0x200, Func: "refcopy.retryN[go.shape.int]", File: "/src/refcopy/sys.go", Line: 22},
			{Module: bin, Offset: 0x300, Func: "refcopy.openat", File: "/src/refcopy/sys.go", Line: 30},
		}
	}
	site := func(id trace.StackID, caller string, line int) trace.Stack {
		fs := wrap(caller)
		fs = append(fs,
			trace.Frame{Module: bin, Offset: 0x400 + uint64(line), Func: "refcopy." + caller, File: "/src/refcopy/data.go", Line: line},
			trace.Frame{Module: bin, Offset: 0x900, Func: "refcopy.CopyFile", File: "/src/refcopy/refcopy.go", Line: 60},
			trace.Frame{Module: bin, Offset: 0x950, Func: "main.main", File: "/src/main.go", Line: 20})
		return trace.Stack{ID: id, Frames: fs}
	}
	stripped := func(id trace.StackID, off uint64) trace.Stack {
		return trace.Stack{ID: id, Frames: []trace.Frame{
			{Module: libc, Offset: 0x11111, Func: "__libc_open64"},
			{Module: "/usr/bin/coreutils", Offset: 0x7b81bd},
			{Module: "/usr/bin/coreutils", Offset: 0x7b8074},
			{Module: "/usr/bin/coreutils", Offset: off},
			{Module: "/usr/bin/coreutils", Offset: 0x553484},
			{Module: "/usr/bin/coreutils", Offset: 0x100},
			{Module: libc, Offset: 0x2a000, Func: "__libc_start_call_main"},
		}, Notes: []trace.ModuleNote{{Module: "/usr/bin/coreutils", BuildID: "9b96", Note: "stripped, no symbols and no debug file (no -dbgsym)"}}}
	}
	dup := &trace.Process{Key: trace.ImageKey{Pid: 100, Start: 5, ExecID: 1}, Pid: 100, PPid: 1, Comm: "dupcopy", Exe: bin, Argv: []string{"dupcopy", "-r", "src", "dst"}}
	cu := &trace.Process{Key: trace.ImageKey{Pid: 200, Start: 6, ExecID: 1}, Pid: 200, PPid: 1, Comm: "cp", Exe: "/usr/bin/coreutils", Argv: []string{"cp", "-r", "src", "dst"}}
	open := func(path string, sites ...trace.CallSite) trace.FileDetail {
		return trace.FileDetail{Path: path, Paths: []string{path}, Dev: 2049, Ino: 7, Count: len(sites),
			Kinds: []trace.CallKind{{Syscall: trace.SysOpenat, Flags: 0x80000, Count: len(sites)}}}
	}
	dupSites := []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}}
	cuSites := func(a, b trace.StackID) []trace.CallSite {
		return []trace.CallSite{{Stack: a, Count: 1}, {Stack: b, Count: 1}}
	}
	return &trace.Result{
		Command: []string{"sh"}, Duration: 40 * time.Millisecond, Files: trace.FilesDuplicates,
		Counters:  trace.Counters{Stacks: true},
		Processes: []*trace.Process{dup, cu},
		Stacks: []trace.Stack{site(1, "probeData", 41), site(2, "probeHoles", 77), site(3, "(*copier).copyEntry", 230),
			stripped(4, 0x7aebfc), stripped(5, 0x7b9591), stripped(6, 0x7aec00), stripped(7, 0x7b9600)},
		Findings: []trace.Finding{
			{Kind: trace.KindDuplicateOpen, Key: dup.Key, Pid: 100, Comm: "dupcopy", Proc: dup, WastedNs: 3000,
				CallSites: dupSites, FileDetail: open("/tmp/src/file1.txt", dupSites...)},
			{Kind: trace.KindDuplicateOpen, Key: cu.Key, Pid: 200, Comm: "cp", Proc: cu, WastedNs: 2000,
				CallSites: cuSites(4, 5), FileDetail: open("/tmp/src/file2.txt", cuSites(4, 5)...)},
			{Kind: trace.KindDuplicateOpen, Key: cu.Key, Pid: 200, Comm: "cp", Proc: cu, WastedNs: 1000,
				CallSites: cuSites(6, 7), FileDetail: open("/tmp/dst/file2.txt", cuSites(6, 7)...)},
		},
	}
}

// TestCallSitesCollapseShared: the frames every call site of a finding
// shares (the wrapper) are said once, and each site starts at the frame
// where it differs, with that frame's line.
func TestCallSitesCollapseShared(t *testing.T) {
	r := wrapperResult()
	var b strings.Builder
	w := bufio.NewWriter(&b)
	writeCallSites(w, &r.Findings[0], r, "")
	w.Flush()
	got := b.String()
	for _, want := range []string{
		"3 opens from 3 call sites, each through refcopy.openat (sys.go:30)\n",
		"  1  refcopy.probeData ← refcopy.CopyFile ← main.main (data.go:41)\n",
		"  1  refcopy.probeHoles ← refcopy.CopyFile ← main.main (data.go:77)\n",
		"  1  refcopy.(*copier).copyEntry ← refcopy.CopyFile ← main.main (data.go:230)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("call sites lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "sys.go:30)\n  ") && strings.Count(got, "sys.go") > 1 {
		t.Errorf("the shared wrapper's line is repeated per site:\n%s", got)
	}
	// The suggestion names the functions that differ, not the wrapper.
	g := groupAcross(r)
	for _, gr := range g {
		if gr.comm != "dupcopy" {
			continue
		}
		s := suggest(gr, r, quoteArg)
		if !strings.Contains(s, "at refcopy.probeData and pass the descriptor to refcopy.probeHoles and refcopy.(*copier).copyEntry") {
			t.Errorf("suggestion %q does not name the differing functions", s)
		}
	}
}

// TestCallSitesNoSymbols: a section whose call sites are nothing but
// module+offset frames says once why (no symbols) instead of a line per
// site; the JSON keeps the frames.
func TestCallSitesNoSymbols(t *testing.T) {
	r := wrapperResult()
	var b strings.Builder
	if err := TextDetails(&b, r); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if n := strings.Count(got, "coreutils+0x"); n > 2 {
		t.Errorf("%d module+offset frames in the details, want the section said once:\n%s", n, got)
	}
	if !strings.Contains(got, "/usr/bin/coreutils has no symbols") {
		t.Errorf("the section does not say why its call sites are not named:\n%s", got)
	}
	if !strings.Contains(got, "refcopy.probeData ← ") {
		t.Errorf("the symbolized section lost its call sites:\n%s", got)
	}
	if !strings.Contains(got, "call sites of these 2 findings (4 stacks): not shown") {
		t.Errorf("the two findings' sites are not said once:\n%s", got)
	}
	// One finding alone is "this finding", not "these 1 findings".
	r.Findings = r.Findings[:2]
	b.Reset()
	if err := TextDetails(&b, r); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "call sites of this finding (2 stacks): not shown") {
		t.Errorf("one finding's sites:\n%s", got)
	}
}

// TestSharedFramesNeedAParting: stacks whose program frames do not part
// (one a prefix of the other, or the same but for the C library's) are
// shown whole, not from their outermost frame.
func TestSharedFramesNeedAParting(t *testing.T) {
	r := wrapperResult()
	whole := r.Stacks[0]
	prefix := trace.Stack{ID: 10, Frames: whole.Frames[:len(whole.Frames)-1]}
	libc := trace.Frame{Module: "/usr/lib/x86_64-linux-gnu/libc.so.6", Offset: 0x999, Func: "__libc_open64"}
	other := trace.Stack{ID: 11, Frames: append([]trace.Frame{libc}, whole.Frames...)}
	r.Stacks = append(r.Stacks, prefix, other)
	for _, ids := range [][2]trace.StackID{{1, 10}, {1, 11}} {
		sites := []trace.CallSite{{Stack: ids[0], Count: 1}, {Stack: ids[1], Count: 1}}
		if n := sharedFrames(r, sites); n != 0 {
			t.Errorf("stacks %v: %d shared frames, want 0 (they never part)", ids, n)
		}
	}
	if n := sharedFrames(r, r.Findings[0].CallSites); n != 3 {
		t.Errorf("dupcopy's sites share %d frames, want the wrapper's 3", n)
	}
}

// TestMarkdownSitesFromWhereTheyPart: the Markdown's call-site sentence
// names each site where the sites part, not the wrapper's closure that
// is every site's innermost frame.
func TestMarkdownSitesFromWhereTheyPart(t *testing.T) {
	var b strings.Builder
	if err := MarkdownDetails(&b, wrapperResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"`refcopy.probeData`", "`refcopy.probeHoles`"} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, ".openat.func1") {
		t.Errorf("Markdown names the wrapper's closure:\n%s", out)
	}
}

// TestSitesHeadingCountsSites: the calls without a stack (counted in the
// kernel) and those from sites past the ones kept are no call site of
// their own: the heading counts the sites it knows and says the rest.
func TestSitesHeadingCountsSites(t *testing.T) {
	f := func(kind trace.FindingKind, sites ...trace.CallSite) *trace.Finding {
		return &trace.Finding{Kind: kind, CallSites: sites}
	}
	for _, tc := range []struct {
		f    *trace.Finding
		want string
	}{
		{f(trace.KindDuplicateOpen, trace.CallSite{Stack: 1, Count: 2}, trace.CallSite{Stack: 2, Count: 1}), "3 opens from 2 call sites"},
		{f(trace.KindDuplicateOpen, trace.CallSite{Stack: 1, Count: 257}, trace.CallSite{Stack: 0, Count: 243}), "500 opens, 257 from 1 call site, 243 without a stack"},
		{f(trace.KindRepeatedMiss, trace.CallSite{Stack: 0, Count: 1}, trace.CallSite{Stack: 3, Count: 1}, trace.CallSite{Stack: 4, Count: 1}), "3 lookups, 2 from 2 call sites, 1 without a stack"},
		{f(trace.KindDuplicateOpen, trace.CallSite{Stack: 0, Count: 5}), "5 opens, none with a stack"},
		{f(trace.KindDuplicateOpen, trace.CallSite{Stack: 1, Count: 1}, trace.CallSite{Stack: trace.StackNotKept, Count: 9}, trace.CallSite{Stack: 0, Count: 1}),
			"11 opens, 1 from 1 call site, 9 from call sites past the ones kept, 1 without a stack"},
	} {
		if got := sitesHeading(tc.f); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.f.CallSites, got, tc.want)
		}
	}
}

// TestSitesHeadingInterpreted: a script's calls from three lines are one
// stack of the interpreter's: the heading calls it one native call site,
// not one call site; a program's own sites stay call sites.
func TestSitesHeadingInterpreted(t *testing.T) {
	py := trace.Stack{ID: 1, Frames: []trace.Frame{
		{Func: "__libc_open64", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{Func: "_PyObject_MakeTpCall", Module: "/usr/bin/python3.11"},
		{Func: "_PyEval_EvalFrameDefault", Module: "/usr/bin/python3.11"},
		{Func: "PyEval_EvalCode", Module: "/usr/bin/python3.11"}}}
	c := trace.Stack{ID: 2, Frames: []trace.Frame{{Func: "probe", Module: "/bin/cp3"}, {Func: "main", Module: "/bin/cp3"}}}
	for _, tc := range []struct {
		name  string
		sites []trace.CallSite
		want  string
	}{
		{"a script", []trace.CallSite{{Stack: 1, Count: 3}}, "3 opens from 1 native call site"},
		{"a script, one call counted in the kernel", []trace.CallSite{{Stack: 1, Count: 2}, {Count: 1}}, "3 opens, 2 from 1 native call site, 1 without a stack"},
		{"a program", []trace.CallSite{{Stack: 2, Count: 3}}, "3 opens from 1 call site"},
	} {
		r := &trace.Result{Stacks: []trace.Stack{py, c}}
		f := &trace.Finding{Kind: trace.KindDuplicateOpen, CallSites: tc.sites}
		if got := sitesHeadingIn(f, stackSource(r)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestMarkdownSitesOneFunctionTwoLines: two call sites in one function
// (a file opened twice in a row from twice(), ln.c:13 and ln.c:15, each
// through opener) are told apart by their lines; sites in functions of
// their own are named by the function alone.
func TestMarkdownSitesOneFunctionTwoLines(t *testing.T) {
	const bin = "/tmp/ln"
	stack := func(id trace.StackID, fn string, line int) trace.Stack {
		return trace.Stack{ID: id, Frames: []trace.Frame{
			{Module: bin, Offset: 0x18d, Func: "opener", File: "/src/ln.c", Line: 6},
			{Module: bin, Offset: 0x1b0 + uint64(line), Func: fn, File: "/src/ln.c", Line: line},
			{Module: bin, Offset: 0x7b, Func: "main", File: "/src/ln.c", Line: 20},
		}}
	}
	for _, tc := range []struct {
		name   string
		stacks []trace.Stack
		want   string
	}{
		{"one function, two lines", []trace.Stack{stack(1, "twice", 13), stack(2, "twice", 15)},
			"Call sites: 2 opens of f from `twice (ln.c:13)`, `twice (ln.c:15)`."},
		{"two functions", []trace.Stack{stack(1, "first", 13), stack(2, "second", 15)},
			"Call sites: 2 opens of f from `first`, `second`."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sites := []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}}
			f := &trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "ln", CallSites: sites,
				FileDetail: trace.FileDetail{Path: "/tmp/f", Count: 2}}
			r := &trace.Result{Stacks: tc.stacks, Counters: trace.Counters{Stacks: true}}
			if got := mdSites(f, stackSource(r)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestCallSitesUnreadModule: frames of a module once could not read at
// all (its process exited and its file was deleted, or replaced) are
// module+offset too, but not for want of symbols: the suggestion and
// the section say the module could not be read, not that it "has no
// symbols" (it may well have them: gdb, run while it lived, names its
// functions).
func TestCallSitesUnreadModule(t *testing.T) {
	r := wrapperResult()
	for i := range r.Stacks {
		if len(r.Stacks[i].Notes) > 0 {
			r.Stacks[i].Notes = []trace.ModuleNote{{Module: "/usr/bin/coreutils", BuildID: "9b96",
				Note: "/usr/bin/coreutils: its process exited before the file was opened, and the path: no such file or directory", Unread: true}}
		}
	}
	var b strings.Builder
	if err := TextDetails(&b, r); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if strings.Contains(got, "coreutils has no symbols") {
		t.Errorf("an unread module is said to have no symbols:\n%s", got)
	}
	for _, want := range []string{
		"is not known (/usr/bin/coreutils could not be read)",
		"not shown: /usr/bin/coreutils could not be read, so their frames are module+offset only",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// TestSuggestStoppedStacks: calls whose stacks stopped short (the window
// ended, no unwind information) are one call site even when different
// callers made them (gdb: topA → big → leaf and topB → big → leaf, once:
// leaf ← big [truncated] twice). The suggestion does not say every call
// is from that one place, to be opened once there: it says where the
// stacks stopped and that the callers are not known.
func TestSuggestStoppedStacks(t *testing.T) {
	const bin, libc = "/tmp/deep", "/usr/lib/x86_64-linux-gnu/libc.so.6"
	p := &trace.Process{Key: trace.ImageKey{Pid: 300, Start: 7, ExecID: 1}, Pid: 300, PPid: 1, Comm: "deep", Exe: bin, Argv: []string{"deep"}}
	sites := []trace.CallSite{{Stack: 1, Count: 2}}
	for _, tc := range []struct {
		stop string
		want string
	}{
		{"truncated", "every open is from leaf as far as the stacks go (they stopped at big: the stack window (--stack-size) ended), which code called it is not known"},
		{"", "every open is from leaf: open it once there"},
	} {
		r := &trace.Result{
			Command: []string{"deep"}, Duration: 10 * time.Millisecond, Files: trace.FilesDuplicates,
			Counters:  trace.Counters{Stacks: true},
			Processes: []*trace.Process{p},
			Stacks: []trace.Stack{{ID: 1, Stop: tc.stop, Frames: []trace.Frame{
				{Addr: 0x7f00000f8011, Module: libc, Offset: 0xf8011, Func: "__libc_open64", File: "../sysdeps/unix/sysv/linux/open64.c", Line: 41},
				{Addr: 0x5500000011d2, Module: bin, Offset: 0x11d2, Func: "leaf", File: "/src/deep.c", Line: 6},
				{Addr: 0x55000000122d, Module: bin, Offset: 0x122d, Func: "big", File: "/src/deep.c", Line: 7},
			}}},
			Findings: []trace.Finding{{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: 300, Comm: "deep", Proc: p, WastedNs: 9000,
				CallSites: sites, FileDetail: trace.FileDetail{Path: "/etc/hostname", Paths: []string{"/etc/hostname"}, Dev: 2049, Ino: 7, Count: 2,
					Kinds: []trace.CallKind{{Syscall: trace.SysOpenat, Count: 2}}}}},
		}
		for _, g := range groupAcross(r) {
			if s := suggest(g, r, quoteArg); !strings.Contains(s, tc.want) {
				t.Errorf("stop %q: suggestion %q, want %q", tc.stop, s, tc.want)
			}
		}
	}
}

// TestViolationSites: once check's violation line says where the calls
// that broke it come from, each site at the frame where the sites part
// (not the shared wrapper), the most calls first, past three counted;
// nothing without --stacks.
func TestViolationSites(t *testing.T) {
	r := wrapperResult()
	for _, tc := range []struct {
		name  string
		sites []trace.CallSite
		want  string
	}{
		{"three sites", []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}},
			"3 opens from 3 call sites: 1 at refcopy.probeData (data.go:41), 1 at refcopy.probeHoles (data.go:77), 1 at refcopy.(*copier).copyEntry (data.go:230)"},
		{"most first", []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 5}},
			"6 opens from 2 call sites: 5 at refcopy.probeHoles (data.go:77), 1 at refcopy.probeData (data.go:41)"},
		{"one site", []trace.CallSite{{Stack: 3, Count: 4}},
			"4 opens from 1 call site: 4 at refcopy.(*copier).copyEntry.openat.func1 (sys.go:30)"}, // its innermost program frame, as the suggestion says
		{"past three", []trace.CallSite{{Stack: 1, Count: 4}, {Stack: 2, Count: 3}, {Stack: 3, Count: 2}, {Stack: 4, Count: 1}, {Stack: 5, Count: 1}},
			"11 opens from 5 call sites: 4 at refcopy.probeData.openat.func1 (sys.go:30), 3 at refcopy.probeHoles.openat.func1 (sys.go:30), 2 at refcopy.(*copier).copyEntry.openat.func1 (sys.go:30), 2 at 2 call sites more"}, // 4 and 5 are another program's: no frames shared
		{"some without a stack", []trace.CallSite{{Stack: 0, Count: 2}, {Stack: 1, Count: 1}},
			"3 opens, 1 from 1 call site, 2 without a stack: 1 at refcopy.probeData.openat.func1 (sys.go:30)"},
		{"sites that read the same", []trace.CallSite{{Stack: 6, Count: 50}, {Stack: 1, Count: 3}, {Stack: 4, Count: 50}},
			"103 opens from 3 call sites: 100 at coreutils+0x7b81bd (2 stacks), 3 at refcopy.probeData.openat.func1 (sys.go:30)"},
		{"no stacks", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := r.Findings[0]
			f.CallSites = tc.sites
			if got := ViolationSites(&f, r); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if got := ViolationSites(nil, r); got != "" {
		t.Errorf("no finding: %q", got)
	}
}

// TestCallSitesTellApartAlikeRows: stacks that differ only in return
// addresses within functions a module has no line information for (the
// JVM's /tmp/hsperfdata_root: libjvm.so's open_directory_secure opens it
// and opendir()s it, from two places in create_memory_region) print the
// same one-line form; each such row says where its stack is not the
// others', so that 4 call sites are not 4 identical lines.
func TestCallSitesTellApartAlikeRows(t *testing.T) {
	const jvm, libc = "/j/lib/server/libjvm.so", "/usr/lib/x86_64-linux-gnu/libc.so.6"
	stack := func(id trace.StackID, viaOpendir bool, caller uint64) trace.Stack {
		fs := []trace.Frame{{Module: libc, Offset: 0xf8090, Func: "__libc_open64"}}
		secure := uint64(0xc6e591)
		if viaOpendir {
			fs = append(fs, trace.Frame{Module: libc, Offset: 0xcfea5, Func: "__opendir"})
			secure = 0xc6e615
		}
		fs = append(fs,
			trace.Frame{Module: jvm, Offset: secure, Func: "open_directory_secure"},
			trace.Frame{Module: jvm, Offset: 0xc6e669, Func: "open_directory_secure_cwd"},
			trace.Frame{Module: jvm, Offset: caller, Func: "PerfMemory::create_memory_region"},
			trace.Frame{Module: jvm, Offset: 0xc6e2c4, Func: "PerfMemory::initialize"},
			trace.Frame{Module: jvm, Offset: 0x7fc527, Func: "vm_init_globals"})
		return trace.Stack{ID: id, Frames: fs}
	}
	sites := []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}, {Stack: 4, Count: 1}}
	f := &trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "java", CallSites: sites,
		FileDetail: trace.FileDetail{Path: "/tmp/hsperfdata_root", Count: 4}}
	r := &trace.Result{Counters: trace.Counters{Stacks: true},
		Stacks: []trace.Stack{stack(1, false, 0xc6f864), stack(2, true, 0xc6f864), stack(3, false, 0xc6fb13), stack(4, true, 0xc6fb13)}}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	writeCallSites(w, f, stackSource(r), "")
	w.Flush()
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")[1:]
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4:\n%s", len(rows), b.String())
	}
	seen := map[string]bool{}
	for _, row := range rows {
		if seen[row] {
			t.Errorf("two call sites print the same row %q:\n%s", row, b.String())
		}
		seen[row] = true
	}
	if !strings.Contains(rows[0], "libjvm.so+0xc6e591") || !strings.Contains(rows[0], "libjvm.so+0xc6f864") {
		t.Errorf("row %q does not say where its stack parts from the others'", rows[0])
	}
}

// TestCallSitesTellApartInTheRuntime: a library search's attempts from
// one dlopen (java's LoadJavaVM) are alike in the program's frames and
// part in ld.so's (open_path's tries in each directory, then
// _dl_map_object's of the cache's file): the rows say where.
func TestCallSitesTellApartInTheRuntime(t *testing.T) {
	const ldso, jli = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/j/lib/libjli.so"
	stack := func(id trace.StackID, viaPath bool) trace.Stack {
		fs := []trace.Frame{
			{Module: ldso, Offset: 0x20b1d, Func: "__GI___open64_nocancel", File: "open64_nocancel.c", Line: 39},
			{Module: ldso, Offset: 0x4e4c, Func: "open_verify", File: "elf/dl-load.c", Line: 1629}}
		if viaPath {
			fs = append(fs, trace.Frame{Module: ldso, Offset: 0x5312, Func: "open_path", File: "elf/dl-load.c", Line: 1871})
		}
		fs = append(fs, trace.Frame{Module: ldso, Offset: 0x8795, Func: "_dl_map_object", File: "elf/dl-load.c", Line: 2176},
			trace.Frame{Module: jli, Offset: 0x5d8d, Func: "LoadJavaVM"}, trace.Frame{Module: jli, Offset: 0x8a12, Func: "JLI_Launch"})
		return trace.Stack{ID: id, Frames: fs, Stop: "truncated"}
	}
	sites := []trace.CallSite{{Stack: 1, Count: 2}, {Stack: 2, Count: 1}}
	f := &trace.Finding{Kind: trace.KindFailedOpenProbes, Comm: "java", CallSites: sites}
	f.Target = "libstdc++.so.6"
	r := &trace.Result{Counters: trace.Counters{Stacks: true}, Stacks: []trace.Stack{stack(1, true), stack(2, false)}}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	writeCallSites(w, f, stackSource(r), "")
	w.Flush()
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")[1:]
	if len(rows) != 2 || rows[0] == rows[1] || !strings.Contains(rows[0], "dl-load.c:1871") {
		t.Errorf("rows do not tell the two sites apart:\n%s", b.String())
	}
}

// TestSuggestThreadPool: node's fs.readFileSync and fs.readFile of one
// file: the first open on the main thread (uv_fs_open, its stack cut by
// the window), the other run by libuv's thread pool (worker, the pool's
// loop, below which is only start_thread and clone3). worker is no call
// site to pass a descriptor to: the suggestion says the calls come
// through a thread pool, and names the frames the pool's stack has.
func TestSuggestThreadPool(t *testing.T) {
	const node, libc = "/usr/bin/node", "/usr/lib/x86_64-linux-gnu/libc.so.6"
	open := []trace.Frame{
		{Func: "__libc_open64", Module: libc, Offset: 0x10, Addr: 0x1000 + 0x10},
		{Func: "uv__fs_open", Module: node, Offset: 0x100, Addr: 0x1000 + 0x100, File: "/src/uv/fs.c", Line: 386},
		{Func: "uv__fs_work", Module: node, Offset: 0x200, Addr: 0x1000 + 0x200, File: "/src/uv/fs.c", Line: 1684},
	}
	mainStack := trace.Stack{ID: 1, Stop: "truncated", Frames: append(slices.Clone(open),
		trace.Frame{Func: "uv_fs_open", Module: node, Offset: 0x300, Addr: 0x1000 + 0x300, File: "/src/uv/fs.c", Line: 1967},
		trace.Frame{Func: "node::fs::Open", Module: node, Offset: 0x400, Addr: 0x1000 + 0x400})}
	pool := trace.Stack{ID: 2, Frames: append(slices.Clone(open),
		trace.Frame{Func: "worker", Module: node, Offset: 0x500, Addr: 0x1000 + 0x500, File: "/src/uv/threadpool.c", Line: 122},
		trace.Frame{Func: "start_thread", Module: libc, Offset: 0x20, Addr: 0x1000 + 0x20},
		trace.Frame{Func: "clone3", Module: libc, Offset: 0x30, Addr: 0x1000 + 0x30})}
	f := trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "node", WastedNs: 7000,
		CallSites: []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}}}
	f.Path, f.Count = "/tmp/f.txt", 2
	for _, tc := range []struct {
		name  string
		sites []trace.CallSite
		want  string
	}{
		{"one open on the main thread, one in the pool", []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}},
			"open it once and pass the descriptor to the later calls: 2 opens per process × 1 process, 7µs; which code repeats the opens is not known (1 of the 2 opens ran on a thread started at worker (threadpool.c:122), from uv__fs_open ← uv__fs_work: a thread's start routine is no call site, and the stack of the work a thread pool runs ends at the pool's loop, not at the code that queued it)"},
		{"both in the pool", []trace.CallSite{{Stack: 2, Count: 2}},
			"every open is from uv__fs_open: open it once there and pass the descriptor to the later calls: 2 opens per process × 1 process, 7µs; every open ran on a thread started at worker (threadpool.c:122): if that is a thread pool's loop, the code that queued the work is not in these stacks"},
		{"the main thread only", []trace.CallSite{{Stack: 1, Count: 2}},
			"every open is from uv__fs_open as far as the stacks go (they stopped at node::fs::Open: the stack window (--stack-size) ended), which code called it is not known: open it once and pass the descriptor to the later calls: 2 opens per process × 1 process, 7µs"},
		{"the pool's loop opens it itself", []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 3, Count: 1}},
			"open it once and pass the descriptor to the later calls: 2 opens per process × 1 process, 7µs; which code repeats the opens is not known (1 of the 2 opens ran on a thread started at worker (threadpool.c:122), which made the call itself: a thread's start routine is no call site, and the stack of the work a thread pool runs ends at the pool's loop, not at the code that queued it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.CallSites = tc.sites
			direct := trace.Stack{ID: 3, Frames: []trace.Frame{open[0], pool.Frames[3], pool.Frames[4], pool.Frames[5]}}
			r := &trace.Result{Stacks: []trace.Stack{mainStack, pool, direct}, Counters: trace.Counters{Stacks: true}, Findings: []trace.Finding{f}}
			got := suggest(groupAcross(r)[0], stackSource(r), quoteArg)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
