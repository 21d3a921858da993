package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/trace"
)

// chain is a probe chain of kind k for target, tried in dirs (each a
// miss of ns) and found in the last one, or in none when found is false.
func chain(k trace.FindingKind, sc trace.Syscall, target string, dirs []string, ns uint64, found bool) trace.Finding {
	f := trace.Finding{Kind: k}
	f.Target = target
	n := len(dirs)
	if found {
		n--
	}
	for i, d := range dirs {
		a := trace.Attempt{Path: d + "/" + target, Syscall: sc, Ns: ns}
		if i < n {
			a.Errno = int32(unix.ENOENT)
			f.Failed++
			f.WastedNs += ns
		} else {
			p := a.Path
			f.Found = &p
		}
		f.Attempts = append(f.Attempts, a)
	}
	return f
}

// shadowNote1 is what a suggestion to put an entry first says of the
// entries it would then come before (before): a file of the same name
// in one of them (a header shadowed, #include_next's next) is found
// there now, and would not be.
func shadowNote1(before string, compiler bool) string {
	next := ""
	if compiler {
		next = ", and #include_next would go on from another entry"
	}
	return "; before moving it, check that none of its files is also in " + before + ": put first, it would hide theirs from every search of the name" + next + " (the trace shows the names searched for, not what each entry holds)"
}

// shadowIInc12: shadowNote1 of /s/inc1 and /s/inc2, for a compiler.
var shadowIInc12 = shadowNote1("/s/inc1, /s/inc2", true)

// errnos is f with its attempts failed with errs, in order.
func errnos(f trace.Finding, errs ...unix.Errno) trace.Finding {
	f.Attempts = slices.Clone(f.Attempts)
	for i, e := range errs {
		f.Attempts[i].Errno = int32(e)
	}
	return f
}

// slashed is f with every name it tried ending in a slash, as a name
// that must be a directory may.
func slashed(f trace.Finding) trace.Finding {
	f.Attempts = slices.Clone(f.Attempts)
	for i := range f.Attempts {
		f.Attempts[i].Path += "/"
	}
	if f.Found != nil {
		p := *f.Found + "/"
		f.Found = &p
	}
	return f
}

// alsoIn is f found in dir too (trace.ChainDetail.AlsoFound).
func alsoIn(f trace.Finding, dir string) trace.Finding {
	f.AlsoFound = dir
	return f
}

// dirChecked is f with n failed stats of a missed directory, each taking
// ns, in its time (trace.ChainDetail.DirChecks).
func dirChecked(f trace.Finding, n int, ns uint64) trace.Finding {
	f.DirChecks = n
	f.WastedNs += uint64(n) * ns
	return f
}

// viaCache is f found through ld.so's cache (trace.ChainDetail.ViaCache).
func viaCache(f trace.Finding, cache string) trace.Finding {
	f.ViaCache = cache
	return f
}

// withVariants is f with n of its misses tried in a row with names
// (trace.ChainDetail.Variants).
func withVariants(f trace.Finding, n int, names ...string) trace.Finding {
	f.Variants, f.VariantMisses = names, n
	return f
}

// locales is dir/form/sub (dir/form for no sub) for each form.
func locales(dir, sub string, forms ...string) []string {
	out := make([]string, len(forms))
	for i, l := range forms {
		out[i] = strings.TrimSuffix(dir+"/"+l+"/"+sub, "/")
	}
	return out
}

// missIn is a repeated_miss of p, count misses with ENOENT, chained of
// them attempts of searches reported on their own (no time of its own).
func missIn(p string, count, chained int) trace.Finding {
	f := trace.Finding{Kind: trace.KindRepeatedMiss, Comm: "bash"}
	f.Path, f.Count, f.Errno, f.Chained = p, count, int32(unix.ENOENT), chained
	return f
}

// launches is n copies of f made by processes of comm, one each.
func launches(f trace.Finding, comm string, n int, argv ...string) []trace.Finding {
	out := make([]trace.Finding, n)
	for i := range out {
		out[i] = f
		out[i].Comm = comm
		out[i].Key = trace.ImageKey{Pid: uint32(1000 + i), ExecID: 1}
		out[i].Proc = &trace.Process{Key: out[i].Key, Comm: comm, Argv: argv}
	}
	return out
}

func TestSuggestions(t *testing.T) {
	path := []string{"/home/u/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/sbin", "/opt/a", "/opt/b", "/opt/c", "/snap/bin", "/usr/bin"}
	ldso := []string{"/opt/app/lib/tls/x86_64", "/opt/app/lib/tls", "/opt/app/lib/x86_64", "/opt/app/lib", "/usr/lib/x86_64-linux-gnu"}
	cargoPath := []string{"/opt/a", "/root/.cargo/bin", "/root/.cargo/bin", "/opt/b"}
	includes := []string{"inc1", "inc2", "inc3", "inc4", "/usr/lib/gcc/x86_64-linux-gnu/12/include"}

	// dupcopy: one file opened from three functions, with stacks.
	stacks := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Func: "main.probeData", Module: "/bin/dupcopy"}}},
		{ID: 2, Frames: []trace.Frame{{Func: "main.probeHoles", Module: "/bin/dupcopy"}}},
		{ID: 3, Frames: []trace.Frame{{Func: "main.copyEntry", Module: "/bin/dupcopy"}}},
	}
	dup := trace.Finding{Kind: trace.KindDuplicateOpen, WastedNs: 2 * 1500,
		CallSites: []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}, {Stack: 3, Count: 1}}}
	dup.Path, dup.Count = "/tmp/src/a", 3
	noStacks := dup
	noStacks.CallSites = nil
	loop := dup
	loop.CallSites = []trace.CallSite{{Stack: 3, Count: 3}}
	partial := dup
	partial.CallSites = []trace.CallSite{{Stack: 3, Count: 1}, {Stack: 0, Count: 2}}
	// The first call without a stack (a duplicate_stat's first lookup,
	// counted in the kernel; a first open whose kept snapshot was
	// lost): the site known is a repeat's, not where to keep the call.
	firstLost := dup
	firstLost.Count, firstLost.WastedNs = 2, 553
	firstLost.Calls = []trace.OpenCall{{Ns: 5000}, {Ns: 553, Stack: 3}}
	firstLost.CallSites = []trace.CallSite{{Stack: 0, Count: 1}, {Stack: 3, Count: 1}}
	statFirstUnsent := trace.Finding{Kind: trace.KindDuplicateStat, WastedNs: 1400,
		CallSites: []trace.CallSite{{Stack: 0, Count: 1}, {Stack: 1, Count: 1}}}
	statFirstUnsent.Path, statFirstUnsent.Count = "/tmp/f", 2
	statFirstUnsent.Calls = []trace.OpenCall{{Syscall: trace.SysNewfstatat, Ns: 1400, Stack: 1}}
	// The JVM's lib/modules: its first stat counted in the kernel, its
	// repeats from two functions. Neither is where the first was made.
	statFirstUnsentTwo := statFirstUnsent
	statFirstUnsentTwo.Count, statFirstUnsentTwo.WastedNs = 3, 2800
	statFirstUnsentTwo.Calls = []trace.OpenCall{{Syscall: trace.SysNewfstatat, Ns: 1400, Stack: 1}, {Syscall: trace.SysNewfstatat, Ns: 1400, Stack: 2}}
	statFirstUnsentTwo.CallSites = []trace.CallSite{{Stack: 0, Count: 1}, {Stack: 1, Count: 1}, {Stack: 2, Count: 1}}
	// java's /etc/ld.so.cache: ld.so reads it at start-up, on its own,
	// and again for the dlopen LoadJavaVM makes: the first site has no
	// frame of the program's, no place to keep a descriptor at.
	ldsoMod := "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	loader := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Func: "__GI___open64_nocancel", Module: ldsoMod}, {Func: "_dl_map_object", Module: ldsoMod}, {Func: "dl_main", Module: ldsoMod}, {Module: ldsoMod, Offset: 0x1ab78}}},
		{ID: 2, Frames: []trace.Frame{{Func: "__GI___open64_nocancel", Module: ldsoMod}, {Func: "_dl_open", Module: ldsoMod},
			{Func: "dlopen_doit", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, {Func: "LoadJavaVM", Module: "/j/lib/libjli.so"}, {Func: "JLI_Launch", Module: "/j/lib/libjli.so"}}},
		{ID: 3, Frames: []trace.Frame{{Func: "__GI___open64_nocancel", Module: ldsoMod}, {Func: "_dl_open", Module: ldsoMod},
			{Func: "dlopen_doit", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, {Func: "os::dll_load", Module: "/j/lib/server/libjvm.so"}}},
	}
	ownAndOne := dup
	ownAndOne.Count, ownAndOne.WastedNs = 2, 1500
	ownAndOne.CallSites = []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}}
	ownAndTwo := dup
	allOwn := loop
	allOwn.CallSites = []trace.CallSite{{Stack: 1, Count: 3}}
	procDup := noStacks
	procDup.Path, procDup.FSType = "/proc/1/stat", "proc"
	procStat := trace.Finding{Kind: trace.KindDuplicateStat, WastedNs: 1400}
	procStat.Path, procStat.Count, procStat.FSType = "/proc/1", 2, "proc"
	partialOne := dup
	partialOne.Count, partialOne.WastedNs = 2, 1500
	partialOne.CallSites = []trace.CallSite{{Stack: 3, Count: 1}, {Stack: 0, Count: 1}}
	partialOne.Calls = []trace.OpenCall{{Ns: 900, Stack: 3}, {Ns: 1500}} // the repeat's stack lost

	// A script's two opens of one file: natively the same stack, through
	// the interpreter; JIT code where a script's stacks part; code in no
	// file past where a program's own stacks part (cgo's g0 stack).
	py := []trace.Stack{{ID: 1, Frames: []trace.Frame{
		{Func: "__libc_open64", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{Module: "/usr/bin/python3.11", Offset: 0x5acfe0},
		{Func: "_PyObject_MakeTpCall", Module: "/usr/bin/python3.11"},
		{Func: "_PyEval_EvalFrameDefault", Module: "/usr/bin/python3.11"},
		{Func: "PyEval_EvalCode", Module: "/usr/bin/python3.11"}}}}
	pyDup := dup
	pyDup.CallSites = []trace.CallSite{{Stack: 1, Count: 2}}
	jit := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Func: "open_ro", Module: "/bin/jit"}, {Addr: 0x7f0000001006}, {Func: "main", Module: "/bin/jit"}}},
		{ID: 2, Frames: []trace.Frame{{Func: "open_ro", Module: "/bin/jit"}, {Func: "main", Module: "/bin/jit"}}},
	}
	twoSites := dup
	twoSites.CallSites = []trace.CallSite{{Stack: 1, Count: 1}, {Stack: 2, Count: 1}}
	// A script's opens through two of the runtime's own functions
	// (fs.openSync, fs.readFileSync): they part in the runtime, not in
	// the script; an extension's two functions part in its own code.
	node := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Func: "uv_fs_open", Module: "/usr/bin/node"}, {Func: "node::fs::Open", Module: "/usr/bin/node"},
			{Func: "v8::internal::Builtin_HandleApiCall", Module: "/usr/bin/node"}, {Func: "Builtins_InterpreterEntryTrampoline", Module: "/usr/bin/node"}}},
		{ID: 2, Frames: []trace.Frame{{Func: "uv_fs_open", Module: "/usr/bin/node"}, {Func: "node::fs::ReadFileUtf8", Module: "/usr/bin/node"},
			{Func: "v8::internal::Builtin_HandleApiCall", Module: "/usr/bin/node"}, {Func: "Builtins_InterpreterEntryTrampoline", Module: "/usr/bin/node"}}},
	}
	// The same, with node's perf map naming its JIT code: the script's
	// own function is the site, past node's fs binding and its own
	// library's JS (node:fs).
	nodeJS := func(fn string) []trace.Frame {
		return []trace.Frame{{Func: "uv_fs_open", Module: "/usr/bin/node"}, {Func: "node::fs::ReadFileUtf8", Module: "/usr/bin/node"},
			{Func: "v8::internal::Builtin_HandleApiCall", Module: "/usr/bin/node"}, {Addr: 0x7f0000001000, Func: "JS:~readFileSync node:fs:441:22"},
			{Addr: 0x7f0000002000, Func: fn}, {Addr: 0x7f0000003000, Func: "JS:~ /app/main.js:1:1"},
			{Func: "Builtins_JSEntryTrampoline", Module: "/usr/bin/node"}, {Func: "Builtins_JSEntry", Module: "/usr/bin/node"}}
	}
	nodeMap := []trace.Stack{{ID: 1, Frames: nodeJS("JS:~readConfig /app/main.js:2:20")}, {ID: 2, Frames: nodeJS("JS:~loadAll /app/main.js:9:17")}}
	nodeMapOne := dup
	nodeMapOne.CallSites = []trace.CallSite{{Stack: 1, Count: 2}}
	// Python 3.12's -X perf: the trampolines name the functions.
	pyMap := []trace.Stack{{ID: 1, Frames: []trace.Frame{
		{Func: "__libc_open64", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{Func: "_io_open", Module: "/usr/bin/python3.12"},
		{Func: "_PyEval_EvalFrameDefault", Module: "/usr/bin/python3.12"},
		{Addr: 0x7f0000001000, Func: "py::load:/app/x.py"},
		{Func: "_PyEval_EvalFrameDefault", Module: "/usr/bin/python3.12"}}}}
	ext := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Func: "__libc_open64", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, {Func: "ext_read", Module: "/usr/lib/python3/ext.so"},
			{Func: "_PyEval_EvalFrameDefault", Module: "/usr/bin/python3.11"}}},
		{ID: 2, Frames: []trace.Frame{{Func: "__libc_open64", Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, {Func: "ext_check", Module: "/usr/lib/python3/ext.so"},
			{Func: "_PyEval_EvalFrameDefault", Module: "/usr/bin/python3.11"}}},
	}
	cgo := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Func: "c_open", Module: "/bin/cgo"}, {Func: "runtime.asmcgocall", Module: "/bin/cgo"}, {Addr: 0xe3de6bc41e0}}, Stop: "unknown_mapping"},
		{ID: 2, Frames: []trace.Frame{{Func: "main.viaGo", Module: "/bin/cgo"}, {Func: "main.main", Module: "/bin/cgo"}}},
	}

	// musl's static wrapper, no CFI: the walk stops at the call's own
	// function, which a stack that reached a caller does not.
	musl := []trace.Stack{{ID: 1, Frames: []trace.Frame{{Addr: 0x403db9, Func: "__syscall_cp_c", Module: "/bin/musl2"}}, Stop: "no_unwind_info"}}
	muslDup := dup
	muslDup.CallSites = []trace.CallSite{{Stack: 1, Count: 2}}
	musl0 := []trace.Stack{
		{ID: 1, Frames: []trace.Frame{{Addr: 0x403e19, Func: "__syscall_cp_c", Module: "/bin/musl0", Offset: 0x403e19},
			{Addr: 0x4011b3, Func: "main", Module: "/bin/musl0", File: "two.c", Line: 14}}, Stop: "no_unwind_info"},
		{ID: 2, Frames: []trace.Frame{{Addr: 0x403e19, Func: "__syscall_cp_c", Module: "/bin/musl0", Offset: 0x403e19},
			{Addr: 0x4011c2, Func: "main", Module: "/bin/musl0", File: "two.c", Line: 15}}, Stop: "no_unwind_info"},
	}

	// A retry loop's search: the name missed in one directory again and
	// again, past the attempts kept (the kernel counted the rest): what
	// the attempts kept show of the directory is a floor.
	retried := chain(trace.KindFailedOpenProbes, trace.SysOpenat, "name.conf", []string{"/etc/d2", "/etc/d2", "/etc/d2", "/etc/d3"}, 1000, true)
	retried.Failed, retried.AttemptsOmitted, retried.WastedNs = 3000, 2997, 3000000

	sh := "/bin/sh"
	shebang := trace.Finding{Kind: trace.KindExecShellFallback, WastedNs: 3000}
	shebang.Target, shebang.Failed, shebang.Found = "noshebang", 3, &sh
	shebang.Attempts = []trace.Attempt{{Path: "/a/noshebang", Errno: int32(unix.EACCES), Ns: 1000}, {Path: "/b/noshebang", Errno: int32(unix.ENOENT), Ns: 1000},
		{Path: "/c/noshebang", Errno: int32(unix.ENOEXEC), Ns: 1000}, {Path: sh, Fallback: true}}

	for _, tc := range []struct {
		name     string
		findings []trace.Finding
		stacks   []trace.Stack
		want     string
	}{
		{"PATH search", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "as", path, 2300, true), "gcc", 53),
			nil, "call /usr/bin/as directly, or put /usr/bin before 9 entries (/home/u/bin, /usr/local/sbin, 7 more): 9 failed execve per launch × 53 launches, 1.1ms"},
		{"ld.so search", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libz.so.1", ldso, 1000, true), "app", 4),
			nil, "/usr/lib/x86_64-linux-gnu held libz.so.1 after 4 misses (/opt/app/lib/tls/x86_64, /opt/app/lib/tls, 2 more): put /usr/lib/x86_64-linux-gnu first in the library search path (RUNPATH, LD_LIBRARY_PATH): 4 failed opens per search × 4 searches, 16µs"},
		{"cc1 include search", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "stddef.h", includes, 1500, true), "cc1", 301,
			"/usr/libexec/gcc/cc1", "-quiet", "-I", "inc1", "-I", "inc2", "-I", "inc3", "-I", "inc4", "-I/usr/lib/gcc/x86_64-linux-gnu/12/include", "a.c"),
			nil, "/usr/lib/gcc/x86_64-linux-gnu/12/include held stddef.h after 4 misses (inc1, inc2, 2 more): put /usr/lib/gcc/x86_64-linux-gnu/12/include first in the -I order: 4 failed opens per search × 301 searches, 1.8ms" + shadowNote1("inc1, inc2, 2 more", true)},
		{"not found", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "gitk", path[:3], 800, false), "bash", 1),
			nil, "gitk was in none of the places tried (/home/u/bin, /usr/local/sbin, 1 more): 3 failed stat calls per search × 1 search, 2.4µs; nothing traced says where it is: drop the search if it cannot succeed"},
		{"a PATH naming a directory twice", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "ls", []string{"/opt/a", "/root/.cargo/bin", "/root/.cargo/bin", "/opt/b", "/usr/bin"}, 1000, true), "bash", 2),
			nil, "/usr/bin held ls after 4 misses (/opt/a, /root/.cargo/bin, 1 more): put /usr/bin first in the search list: 4 failed stat calls per search × 2 searches, 8µs; it tried /root/.cargo/bin 2 times in one search, where once is enough"},
		{"an exec search through it", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "as", []string{"/opt/a", "/opt/b", "/opt/a", "/usr/bin"}, 2000, true), "gcc", 1),
			nil, "call /usr/bin/as directly, or put /usr/bin before 3 entries (/opt/a, /opt/b, 1 more): 3 failed execve per launch × 1 launch, 6µs; it tried /opt/a 2 times in one search, where once is enough"},
		// PATH=/opt/a:/root/.cargo/bin:/root/.cargo/bin:/opt/b:/usr/bin
		// (a profile that adds an entry twice): the entries before
		// /usr/bin are 4, the two named and 2 more.
		{"an exec search through a PATH naming an entry twice in a row", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "ls", []string{"/opt/a", "/root/.cargo/bin", "/root/.cargo/bin", "/opt/b", "/usr/bin"}, 1000, true), "python3", 1),
			nil, "call /usr/bin/ls directly, or put /usr/bin before 4 entries (/opt/a, /root/.cargo/bin, 2 more): 4 failed execve per launch × 1 launch, 4µs; it tried /root/.cargo/bin 2 times in one search, where once is enough"},
		// dash's `command -v nosuch` 3 times, through a PATH naming
		// /root/.cargo/bin twice: one chain of every miss, 3 searches.
		{"a missing name searched for again and again", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "nosuch",
			slices.Concat(cargoPath, cargoPath, cargoPath), 1000, false), "sh", 1),
			nil, "nosuch was in none of the places tried (/opt/a, /root/.cargo/bin, 1 more): 4 failed stat calls per search × 3 searches, 12µs; nothing traced says where it is: drop the search if it cannot succeed; it tried /root/.cargo/bin 2 times in one search, where once is enough"},
		// A program's execvp of a missing name, made twice: one chain
		// of both searches, whose places are each PATH entry once.
		{"a missing program's PATH search made twice", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "nosuchprog",
			slices.Concat(path[:4], path[:4]), 1000, false), "ep", 1),
			nil, "nosuchprog was in none of the places tried (/home/u/bin, /usr/local/sbin, 2 more), or was there and names a #! interpreter or ELF loader that is missing (execve fails with ENOENT for both): 4 failed execve per launch × 2 launches, 8µs; nothing traced says which: drop the search if it cannot succeed"},
		// execvp stops at ETXTBSY and E2BIG: the file is where that
		// attempt looked (E2BIG: Linux 6.8+ opens it first), and the
		// misses before it are what an order of PATH saves.
		{"an exec search ended by ETXTBSY where the name is", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "tool", []string{"/a", "/b", "/c"}, 1000, false), unix.ENOENT, unix.ENOENT, unix.ETXTBSY), "make", 1),
			nil, "/c held tool, but its execve there failed (ETXTBSY: the file is open for writing), which no order of PATH saves; call /c/tool directly, or put /c before 2 entries (/a, /b), to save the misses before it: 3 failed execve per launch × 1 launch, 3µs"},
		// bash runs a file without #! itself, in its child: no exec of
		// /bin/sh follows the ENOEXEC (execvp's would).
		{"ENOEXEC, no shell exec'd after it", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "nosb", []string{"/p3"}, 1000, false), unix.ENOEXEC), "bash", 1),
			nil, "/p3 held nosb, which has no #! line and is no binary: its execve there failed with ENOEXEC, and no exec of a shell followed (the caller ran it itself, as bash does in the child it forked, or gave up): give it a #! line: 1 failed execve per launch × 1 launch, 1µs"},
		{"misses, then ENOEXEC, no shell exec'd after it", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "nosb", []string{"/p1", "/p3"}, 1000, false), unix.ENOENT, unix.ENOEXEC), "app", 1),
			nil, "/p3 held nosb, which has no #! line and is no binary: its execve there failed with ENOEXEC, and no exec of a shell followed (the caller ran it itself, as bash does in the child it forked, or gave up): give it a #! line; call /p3/nosb directly, or put /p3 before 1 entry (/p1), to save the misses before it: 2 failed execve per launch × 1 launch, 2µs"},
		// CPython's subprocess (_posixsubprocess) and os.execvp try
		// every PATH entry past the ENOEXEC before they report it:
		// the name is still where the ENOEXEC was, not nowhere.
		{"misses, ENOEXEC, then more misses (CPython's PATH search)", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "nosb", []string{"/p1", "/p3", "/p4", "/usr/bin"}, 1000, false), unix.ENOENT, unix.ENOEXEC, unix.ENOENT, unix.ENOENT), "python3", 1),
			nil, "/p3 held nosb, which has no #! line and is no binary: its execve there failed with ENOEXEC, the search went on past it through 2 more entries (/p4, /usr/bin) and no exec of a shell followed (the caller tried the entries after it, as CPython's subprocess and os.execvp do, and gave up): give it a #! line, which ends the search there; call /p3/nosb directly, or put /p3 before 1 entry (/p1), to save the misses before it: 4 failed execve per launch × 1 launch, 4µs"},
		{"ENOEXEC first, then misses", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "nosb", []string{"/p3", "/p4"}, 1000, false), unix.ENOEXEC, unix.ENOENT), "python3", 1),
			nil, "/p3 held nosb, which has no #! line and is no binary: its execve there failed with ENOEXEC, the search went on past it through 1 more entry (/p4) and no exec of a shell followed (the caller tried the entries after it, as CPython's subprocess and os.execvp do, and gave up): give it a #! line, which ends the search there: 2 failed execve per launch × 1 launch, 2µs"},
		{"an exec search ended by E2BIG where the name is", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "true", []string{"/a", "/usr/bin"}, 1000, false), unix.ENOENT, unix.E2BIG), "xargs", 1),
			nil, "/usr/bin held true, but its execve there failed (E2BIG: its arguments and environment are past the kernel's limit), which no order of PATH saves; call /usr/bin/true directly, or put /usr/bin before 1 entry (/a), to save the misses before it: 2 failed execve per launch × 1 launch, 2µs"},
		{"a missing name searched for again, and a name found", append(launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "cat", slices.Concat(path[:2], path[:2]), 1000, false), "bash", 1),
			launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "cat", []string{"/n1", "/usr/bin"}, 1000, true), "bash", 1)...),
			nil, "/usr/bin held cat after 1 miss (/n1): put /usr/bin first in the search list: 1-2 failed stat calls per search × 3 searches, 5µs; 2 of the 3 searches found it nowhere"},
		{"one directory again and again, past the attempts kept", launches(retried, "poll", 1),
			nil, "/etc/d3 held name.conf after 3000 misses (/etc/d2, and 2997 attempts past those kept): put /etc/d3 first in the search list: 3000 failed opens per search × 1 search, 3ms; it tried /etc/d2 at least 3 times in one search, where once is enough"},
		{"not found, one directory twice", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "gitk", []string{"/opt/a", "/opt/a"}, 800, false), "bash", 1),
			nil, "gitk was in none of the places tried (/opt/a): 2 failed stat calls per search × 1 search, 1.6µs; nothing traced says where it is: drop the search if it cannot succeed; it tried /opt/a 2 times in one search, where once is enough"},
		// bash's hook search (pyenv): opendir of "DIR/which/" in each
		// hook directory; the trailing slash names which, not a
		// directory inside it.
		{"directories named with a trailing slash", launches(slashed(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "which", []string{"/root/.pyenv/pyenv.d", "/usr/etc/pyenv.d", "/etc/pyenv.d", "/usr/lib/pyenv/hooks"}, 1000, true)), "bash", 1),
			nil, "/usr/lib/pyenv/hooks held which after 3 misses (/root/.pyenv/pyenv.d, /usr/etc/pyenv.d, 1 more): put /usr/lib/pyenv/hooks first in the search list: 3 failed opens per search × 1 search, 3µs"},
		{"an -I entry holding the name in a subdirectory", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "foo.h", []string{"/s/inc1/sub", "/s/inc2/sub", "/s/inc3/sub"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-I/s/inc1", "-I", "/s/inc2", "-I/s/inc3", "b.c"),
			nil, "/s/inc3 held sub/foo.h after 2 misses (/s/inc1, /s/inc2): put /s/inc3 first in the -I order: 2 failed opens per search × 1 search, 2µs" + shadowIInc12},
		{"a relative -I entry", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "foo.h", []string{"/s/inc1/sub", "/s/inc2/sub"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-Iinc1", "-Iinc2", "b.c"),
			nil, "/s/inc2 held sub/foo.h after 1 miss (/s/inc1): put /s/inc2 first in the -I order: 1 failed open per search × 1 search, 1µs" + shadowNote1("/s/inc1", true)},
		// perl -Ia -Ilib run in /w: strict.pm held in a system @INC
		// directory whose path has a "lib" in it, not the -I entry
		// lib, which is /w/lib.
		{"a relative -I entry named like a system directory", launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "strict.pm",
			[]string{"/w/a", "/w/lib", "/usr/share/perl5", "/usr/lib/x86_64-linux-gnu/perl-base"}, 1000, true), 3, "strict.pmc"), "perl", 1,
			"perl", "-Ia", "-Ilib", "-e", "use strict"),
			nil, "/usr/lib/x86_64-linux-gnu/perl-base held strict.pm after 3 misses (/w/a, /w/lib, 1 more): put /usr/lib/x86_64-linux-gnu/perl-base first in the search list: 3 failed stat calls per search × 1 search, 3µs; with each of its 3 misses it also tried strict.pmc, of the same stem, in the same directory: another file-name suffix the loader accepts for the name, tried with it where it missed"},
		// cc1 -I include run in /w, #include <stdio.h>: /usr/include
		// is a system directory, not the -I entry include.
		{"a system header after a relative -I entry of its directory's name", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "stdio.h",
			[]string{"/w/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/local/include", "/usr/include"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-quiet", "-I", "include", "y.c"),
			nil, "/usr/include held stdio.h after 3 misses (/w/include, /usr/lib/gcc/x86_64-linux-gnu/12/include, 1 more), 1 in -I entries (/w/include), which the compiler searches before its system directories for every #include <…>, whatever their order: -iquote instead of -I keeps an entry that serves only #include \"…\" out of those searches: 3 failed opens per search × 1 search, 3µs"},
		// gcc -c x.c: cc1 looks for stdc-predef.h in its own system
		// directories, which no option reorders (-I of one is ignored).
		{"a header searched for in the compiler's own directories only", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "stdc-predef.h",
			[]string{"/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/local/include", "/usr/include/x86_64-linux-gnu", "/usr/include"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-quiet", "-imultiarch", "x86_64-linux-gnu", "x.c"),
			nil, "/usr/include held stdc-predef.h after 3 misses (/usr/lib/gcc/x86_64-linux-gnu/12/include, /usr/local/include, 1 more), none of them a directory the compiler's arguments name (-I, -iquote, -isystem, -idirafter): its own system directories, which it searches in their built-in order after every directory given (an -I naming one is ignored), and for #include \"…\" the including file's directory first: no order of the options saves these misses, and nothing traced says how to avoid them: 3 failed opens per search × 1 search, 3µs"},
		{"a header after an -isystem entry", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "stdio.h",
			[]string{"/w/sys", "/usr/local/include", "/usr/include"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-quiet", "-isystem", "sys", "x.c"),
			nil, "/usr/include held stdio.h after 2 misses (/w/sys, /usr/local/include): put /usr/include first in the search list: 2 failed opens per search × 1 search, 2µs"},
		// cc1 -Ii1 -Ii2 of src/a.c, #include "h.h": the including
		// file's own directory is tried first, and no -I order saves
		// its miss.
		{"an #include \"…\" held in an -I entry after a miss in the file's own directory", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "h.h", []string{"/s/src", "/s/i1", "/s/i2"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-quiet", "-I", "i1", "-I", "i2", "src/a.c"),
			nil, "/s/i2 held h.h after 2 misses (/s/src, /s/i1): put /s/i2 first in the -I order: that saves the 1 miss in -I entries, not the 1 miss in a place no -I entry names (/s/src), searched before the entries (for #include \"…\" a compiler tries the including file's own directory and the -iquote entries first): 2 failed opens per search × 1 search, 2µs" + shadowNote1("/s/i1", true)},
		// cc1 -iquote i1 -I i2: the only -I entry held it, after
		// misses in places no -I entry names.
		{"an #include \"…\" held in the only -I entry", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "h.h", []string{"/s/src", "/s/i1", "/s/i2"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-quiet", "-iquote", "i1", "-I", "i2", "src/a.c"),
			nil, "/s/i2 held h.h after 2 misses (/s/src, /s/i1), each in a place no -I entry names, searched before the entries (for #include \"…\" a compiler tries the including file's own directory and the -iquote entries first): no order of the -I entries saves them: 2 failed opens per search × 1 search, 2µs"},
		// cc1 -Ia -Ib, #include <sys/types.h>: held in a system
		// directory, which no -I order puts first.
		{"a system header after the -I entries", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "types.h", []string{"/s/a/sys", "/s/b/sys", "/usr/local/include/sys", "/usr/include/x86_64-linux-gnu/sys"}, 1000, true), "cc1", 1,
			"/usr/libexec/gcc/cc1", "-quiet", "-I", "a", "-I", "b", "t.c"),
			nil, "/usr/include/x86_64-linux-gnu held sys/types.h after 3 misses (/s/a, /s/b, 1 more), 2 in -I entries (/s/a, /s/b), which the compiler searches before its system directories for every #include <…>, whatever their order: -iquote instead of -I keeps an entry that serves only #include \"…\" out of those searches: 3 failed opens per search × 1 search, 3µs"},
		{"a subdirectory name not under an -I entry", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "x.conf", []string{"/etc/app/sys", "/usr/share/app/sys"}, 1000, true), "app", 1,
			"app", "-I", "a"),
			nil, "/usr/share/app/sys held x.conf after 1 miss (/etc/app/sys): one miss shows no list to reorder: if /etc/app/sys comes first in a list the program is given, putting /usr/share/app/sys first saves it; if the program reads the name in every place it may be (configuration at several levels), the miss is of a file it does not have there: 1 failed open per search × 1 search, 1µs"},
		// ld.so's hwcaps subdirectories of the one LD_LIBRARY_PATH entry.
		{"misses under the directory that held it", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libz.so.1", []string{"/w/lib/glibc-hwcaps/x86-64-v3", "/w/lib/tls/haswell", "/w/lib/haswell", "/w/lib"}, 1000, true), "ls", 1),
			nil, "/w/lib held libz.so.1 after 3 misses, all in directories under it (glibc-hwcaps/x86-64-v3, tls/haswell, 1 more), missed before it was found there: the order of the search list does not remove them (ld.so tries each LD_LIBRARY_PATH and RUNPATH entry's hardware-capability subdirectories before the entry, ld.so(8); a library it finds through ldconfig's cache is not searched for): 3 failed opens per search × 1 search, 3µs"},
		// LD_LIBRARY_PATH=/a:/w/lib: /a and its subdirectories missed,
		// then /w/lib's own before it: putting /w/lib first saves /a's
		// misses only.
		{"misses elsewhere and under the directory that held it", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libz.so.1", []string{"/a/glibc-hwcaps/x86-64-v3", "/a/tls", "/a", "/w/lib/glibc-hwcaps/x86-64-v3", "/w/lib/tls", "/w/lib"}, 1000, true), "ls", 1),
			nil, "/w/lib held libz.so.1 after 5 misses (/a/glibc-hwcaps/x86-64-v3, /a/tls, 3 more): put /w/lib first in the library search path (RUNPATH, LD_LIBRARY_PATH): that leaves the 2 misses in directories under it (glibc-hwcaps/x86-64-v3, tls) (ld.so tries each LD_LIBRARY_PATH and RUNPATH entry's hardware-capability subdirectories before the entry, ld.so(8); a library it finds through ldconfig's cache is not searched for), and saves the other 3: 5 failed opens per search × 1 search, 5µs"},
		// rust-lld (lld) looks a -l library up with access() in each
		// -L directory: its -L order, not ld.so's search path.
		{"a linker's -L search", launches(chain(trace.KindFailedStatProbes, trace.SysAccess, "libgcc_s.so", []string{"/t/raw", "/s/L1", "/usr/lib/gcc/x86_64-linux-gnu/12"}, 1000, true), "rust-lld", 1,
			"rust-lld", "-flavor", "gnu", "-L/t/raw", "-L", "/s/L1", "-L/usr/lib/gcc/x86_64-linux-gnu/12", "-lgcc_s"),
			nil, "/usr/lib/gcc/x86_64-linux-gnu/12 held libgcc_s.so after 2 misses (/t/raw, /s/L1): put /usr/lib/gcc/x86_64-linux-gnu/12 first in the -L order: 2 failed stat calls per search × 1 search, 2µs" + shadowNote1("/t/raw, /s/L1", false)},
		// ld.so never stats a library it looks for: a stat search of
		// a library's name is some other program's list.
		{"a library's name stat-ed along a list", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "libfoo.so", []string{"/a", "/b", "/c"}, 1000, true), "app", 1),
			nil, "/c held libfoo.so after 2 misses (/a, /b): put /c first in the search list: 2 failed stat calls per search × 1 search, 2µs"},
		{"a library's name stat-ed under the directory that held it", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "libfoo.so", []string{"/w/lib/x86_64", "/w/lib"}, 1000, true), "app", 1),
			nil, "/w/lib held libfoo.so after 1 miss, all in directories under it (x86_64), missed before it was found there: the order of the search list does not remove them: 1 failed stat call per search × 1 search, 1µs"},
		// bash's PATH search made twice: the second miss of /a/ls is
		// an attempt of a search reported on its own.
		{"a repeated miss, once in a search", []trace.Finding{missIn("/a/ls", 2, 1)}, nil,
			"/a/ls fails with ENOENT every time: look it up once and keep the answer: 2 misses per process × 1 process, 0ns; 1 of the repeats is an attempt of a search reported as a finding of its own, whose time counts it"},
		// A lock file's exclusive create retried: the name is there.
		{"an exclusive create failing with EEXIST, retried", func() []trace.Finding {
			f := missIn("/run/app.lock", 3, 0)
			f.Errno = int32(unix.EEXIST)
			return []trace.Finding{f}
		}(), nil,
			"/run/app.lock fails with EEXIST every time: an exclusive create (O_CREAT|O_EXCL) of a name that is there, retried; each retry fails until the file is removed: wait for that (inotify) or create another name rather than retrying: 3 failed creates per process × 1 process, 0ns"},
		{"a repeated miss, thrice in searches", []trace.Finding{missIn("/a/ls", 4, 3)}, nil,
			"/a/ls fails with ENOENT every time: look it up once and keep the answer: 4 misses per process × 1 process, 0ns; 3 of the repeats are attempts of searches reported as findings of their own, whose time counts them"},
		// ld.so stats the directory of each miss: in the chain's time.
		{"the directories of the misses stat-ed", launches(dirChecked(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libz.so.1", []string{"/a/tls", "/a", "/usr/lib"}, 1000, true), 1, 500), "ls", 1),
			nil, "/usr/lib held libz.so.1 after 2 misses (/a/tls, /a): put /usr/lib first in the library search path (RUNPATH, LD_LIBRARY_PATH): 2 failed opens per search × 1 search, 2.5µs; the time includes 1 failed stat call of a directory, made right after a miss there"},
		// git status: .git/HEAD found, then refs/HEAD and the rest
		// missed (dwim_ref), then .git/HEAD found again: the trace
		// shows the misses before the second find, no more.
		{"misses under the directory that held it, no library", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "HEAD", []string{"/r/.git/refs", "/r/.git/refs/tags", "/r/.git/refs/heads", "/r/.git"}, 1000, true), "git", 1),
			nil, "/r/.git held HEAD after 3 misses, all in directories under it (refs, refs/tags, 1 more), missed before it was found there: the order of the search list does not remove them: 3 failed stat calls per search × 1 search, 3µs"},
		// git's configuration levels: the XDG file missed, the
		// repository's found, at each of 3 reads.
		{"one miss in each search, then a find elsewhere", launches(chain(trace.KindFailedStatProbes, trace.SysAccess, "config", []string{"/root/.config/git", "/r/.git"}, 1000, true), "git", 3),
			nil, "/r/.git held config after 1 miss (/root/.config/git): one miss shows no list to reorder: if /root/.config/git comes first in a list the program is given, putting /r/.git first saves it; if the program reads the name in every place it may be (configuration at several levels), the miss is of a file it does not have there: 1 failed stat call per search × 3 searches, 3µs"},
		// node's package scope: package.json in each directory up to
		// the root (detect ends the chain there).
		{"a walk up to the root that found nothing", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "package.json", []string{"/p/src/x", "/p/src", "/p", "/"}, 1000, false), "node", 1),
			nil, "package.json was in none of the 4 directories from /p/src/x up to /, each the parent of the one before: 4 failed opens per search × 1 search, 4µs; nothing traced says where it is: the walk ends only where it finds the name"},
		// node's node_modules walks, one a require: foo found in
		// /p/node_modules after /p/app/src's and /p/app's misses; a
		// missing package's walk goes on past /p to /; the next
		// lookup of /p/node_modules ends the one chain of them all.
		// /p first is no order node has, and would not save the
		// misses above it.
		{"walks up that went past the directory that held it", launches(chain(trace.KindFailedStatProbes, trace.SysStatx, "node_modules", []string{"/p/app/src", "/p/app", "/p/app/src", "/p/app", "/", "/p"}, 1000, true), "node", 1),
			nil, "/p held node_modules after 5 misses, all on walks up from /p/app/src toward / (/p/app/src, /p/app, 1 more): a walk up tries each directory's parent in turn and ends where it finds what it looks for: no list to reorder; the 4 misses below /p come before it in every walk that reaches it, and the 1 above it (/) is of a walk that went on past /p, not finding there what it looked for: 5 failed stat calls per search × 1 search, 5µs; the walk began at /p/app/src 2 times: searches of their own, which the trace, seeing one name missed until it was found, counts as one"},
		// The same with foo in /p/app/node_modules too: one walk ended
		// there, nearer its start (detect: also found).
		{"walks up, one ending nearer its start", launches(alsoIn(chain(trace.KindFailedStatProbes, trace.SysStatx, "node_modules", []string{"/p/app/src", "/p/app/src", "/", "/p"}, 1000, true), "/p/app"), "node", 1),
			nil, "/p held node_modules after 3 misses, all on walks up from /p/app/src toward / (/p/app/src, /): a walk up tries each directory's parent in turn and ends where it finds what it looks for: no list to reorder; the 2 misses below /p come before it in every walk that reaches it, and the 1 above it (/) is of a walk that went on past /p, not finding there what it looked for: 3 failed stat calls per search × 1 search, 3µs; the walk began at /p/app/src 2 times: searches of their own, which the trace, seeing one name missed until it was found, counts as one; another walk found it in /p/app"},
		{"misses ending in the root, no walk", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "tool", []string{"/usr/local/bin", "/usr/bin", "/"}, 1000, false), "bash", 1),
			nil, "tool was in none of the places tried (/usr/local/bin, /usr/bin, 1 more): 3 failed stat calls per search × 1 search, 3µs; nothing traced says where it is: drop the search if it cannot succeed"},
		// execve("/etc/passwd") fails with EACCES: the file is there,
		// not executable; the name was not missing from /etc.
		{"failed where the name is, with EACCES", launches(errnos(chain(trace.KindFailedExecProbes, trace.SysExecve, "passwd", []string{"/etc"}, 1000, false), unix.EACCES), "sh", 1),
			nil, "passwd failed in every place tried (/etc), not only as missing (EACCES 1): 1 failed execve per launch × 1 launch, 1µs; nothing traced says where it would work: drop the search if it cannot succeed"},
		{"missing in one place, ELOOP in the other", launches(errnos(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "tool", []string{"/a", "/b"}, 1000, false), unix.ENOENT, unix.ELOOP), "bash", 1),
			nil, "tool failed in every place tried (/a, /b), not only as missing (ELOOP 1, ENOENT 1): 2 failed stat calls per search × 1 search, 2µs; nothing traced says where it would work: drop the search if it cannot succeed"},
		{"found in one search, in none in another", append(launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "cat", []string{"/n1", "/n2", "/n3", "/n4"}, 1000, false), "bash", 1),
			launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "cat", []string{"/n1", "/usr/bin"}, 1000, true), "bash", 1)...),
			nil, "/usr/bin held cat after 1 miss (/n1): put /usr/bin first in the search list: 1-4 failed stat calls per search × 2 searches, 5µs; 1 of the 2 searches found it nowhere"},
		// LD_LIBRARY_PATH=/a:/b:/w/lib: libc.so.6 missed in each, then
		// found through /etc/ld.so.cache: putting its directory first
		// would add that directory's subdirectories' misses.
		{"a library found through ld.so's cache", launches(viaCache(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libc.so.6", []string{"/a", "/b", "/w/lib", "/lib/x86_64-linux-gnu"}, 1000, true), "/etc/ld.so.cache"), "main", 1),
			nil, "ld.so found libc.so.6 through its cache (/etc/ld.so.cache), in /lib/x86_64-linux-gnu, after 3 misses in the entries of the library search path (/a, /b, 1 more): ld.so tries every LD_LIBRARY_PATH and RUNPATH entry before its cache, for each library it loads (ld.so(8)), so no order of the entries saves these misses; leaving out the entries the program does not need does: 3 failed opens per search × 1 search, 3µs"},
		// java's RPATH $ORIGIN:$ORIGIN/../lib: libz.so.1 missed under
		// each entry's hardware-capability subdirectories, then in the
		// entry, then found through the cache: 2 entries, not 6.
		{"a library found through ld.so's cache after misses under the entries", launches(viaCache(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libz.so.1",
			[]string{"/j/bin/glibc-hwcaps/x86-64-v3", "/j/bin/tls/haswell", "/j/bin/tls", "/j/bin", "/j/bin/../lib/glibc-hwcaps/x86-64-v3", "/j/bin/../lib/tls/haswell", "/j/bin/../lib/tls", "/j/bin/../lib", "/lib/x86_64-linux-gnu"}, 1000, true), "/etc/ld.so.cache"), "java", 1),
			nil, "ld.so found libz.so.1 through its cache (/etc/ld.so.cache), in /lib/x86_64-linux-gnu, after 8 misses in the 2 entries of the library search path (/j/bin, /j/lib), 6 of them in the entries' hardware-capability subdirectories (glibc-hwcaps/x86-64-v3, tls/haswell, 1 more), which ld.so tries before each entry: ld.so tries every LD_LIBRARY_PATH and RUNPATH entry before its cache, for each library it loads (ld.so(8)), so no order of the entries saves these misses; leaving out the entries the program does not need does: 8 failed opens per search × 1 search, 8µs"},
		// LANG=de_DE.UTF-8 grep --help: grep.mo under each form of the
		// locale name, found under de.
		{"gettext's catalog under a shorter form of the locale name", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "grep.mo",
			locales("/usr/share/locale", "LC_MESSAGES", "de_DE.UTF-8", "de_DE.utf8", "de_DE", "de.UTF-8", "de.utf8", "de"), 1000, true), "grep", 1),
			nil, "/usr/share/locale/de/LC_MESSAGES held grep.mo after 5 misses under the more specific forms of the locale name de_DE.UTF-8 that gettext tries before it (de_DE.UTF-8, de_DE.utf8, de_DE, de.UTF-8 and de.utf8): the places come from the locale name, not from a list to reorder; LANGUAGE=de, the form that held it, makes gettext try it first: 5 failed opens per search × 1 search, 5µs"},
		{"gettext's catalog under no form of the C locale", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "bash.mo",
			locales("/usr/share/locale", "LC_MESSAGES", "C.UTF-8", "C.utf8", "C"), 1000, false), "bash", 1),
			nil, "bash.mo was under none of the forms of the locale name C.UTF-8 that gettext tries (C.UTF-8, C.utf8 and C): the places come from the locale name, most specific first, not from a list to reorder: no catalog of this name is installed for the locale there; nothing traced says where it is: 3 failed opens per search × 1 search, 3µs"},
		// LANGUAGE=qq_AT:zz_XX:fr ls: gettext tries each language of
		// the list in its forms, in the list's order.
		{"gettext's catalog under the languages of LANGUAGE", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "coreutils.mo",
			locales("/usr/share/locale", "LC_MESSAGES", "qq_AT", "qq", "zz_XX", "zz", "fr"), 1000, true), "ls", 1),
			nil, "/usr/share/locale/fr/LC_MESSAGES held coreutils.mo after 4 misses under the languages gettext was given before fr (qq_AT, qq, zz_XX and zz): the places come from the list of languages (LANGUAGE), in its order, not from a list of directories: no catalog of this name is installed there for the languages before it; a list that names fr first (or leaves out those without it), if that is the language wanted, saves the misses: 4 failed opens per search × 1 search, 4µs"},
		{"gettext's catalog under none of the languages of LANGUAGE", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "tool.mo",
			locales("/usr/share/locale", "LC_MESSAGES", "de_AT", "de", "fr"), 1000, false), "tool", 1),
			nil, "tool.mo was under none of the languages gettext was given (de and fr, each in the forms of its name it tries: de_AT, de and fr): the places come from the list of languages (LANGUAGE), in its order, not from a list of directories: no catalog of this name is installed for them there; nothing traced says where it is: 3 failed opens per search × 1 search, 3µs"},
		{"files named like catalogs in directories named like languages", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "x.mo",
			[]string{"/opt/ab/share", "/opt/cd/share", "/opt/ef/share"}, 1000, true), "tool", 1),
			nil, "/opt/ef/share held x.mo after 2 misses (/opt/ab/share, /opt/cd/share): put /opt/ef/share first in the search list: 2 failed opens per search × 1 search, 2µs"},
		// LC_ALL=fr_FR.UTF-8 ls, the locale not installed: the C
		// library's own locale files, no catalog; LANGUAGE changes
		// nothing there.
		{"a locale's own file under no form of its name", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "LC_IDENTIFICATION",
			locales("/usr/lib/locale", "", "fr_FR.UTF-8", "fr_FR.utf8", "fr_FR", "fr"), 1000, false), "ls", 1),
			nil, "LC_IDENTIFICATION was under none of the forms of the locale name fr_FR.UTF-8 that the program tries (fr_FR.UTF-8, fr_FR.utf8, fr_FR and fr): the places come from the locale name, most specific first, not from a list to reorder: no form of the locale there has it; nothing traced says where it is: 4 failed opens per search × 1 search, 4µs"},
		{"a locale's own file under a shorter form of its name", launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "LC_CTYPE",
			locales("/l", "", "fr_FR.UTF-8", "fr_FR.utf8", "fr_FR"), 1000, true), "ls", 1),
			nil, "/l/fr_FR held LC_CTYPE after 2 misses under the more specific forms of the locale name fr_FR.UTF-8 that the program tries before it (fr_FR.UTF-8 and fr_FR.utf8): the places come from the locale name, not from a list to reorder: 2 failed opens per search × 1 search, 2µs"},
		{"directories named like locales of different languages", launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "tool",
			[]string{"/opt/ab/bin", "/opt/cd/bin", "/opt/ef/bin"}, 1000, true), "bash", 1),
			nil, "/opt/ef/bin held tool after 2 misses (/opt/ab/bin, /opt/cd/bin): put /opt/ef/bin first in the search list: 2 failed stat calls per search × 1 search, 2µs"},
		// python3 importing packages: __init__ with each extension
		// suffix, then __init__.py, in each package's directory.
		{"a suffix a loader tries, found nowhere", launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "__init__.abi3.so",
			[]string{"/usr/lib/python3.11/encodings", "/usr/lib/python3.11/json", "/usr/lib/python3.11/email"}, 1000, false), 3, "__init__.cpython-311-x86_64-linux-gnu.so", "__init__.so"), "python3", 1),
			nil, "__init__.abi3.so was tried in a row with __init__.cpython-311-x86_64-linux-gnu.so and __init__.so, of the same stem, in the same directory each time (all 3 misses in /usr/lib/python3.11/encodings, /usr/lib/python3.11/json, 1 more): a loader trying the file-name suffixes it accepts for one name (as Python's import does for a module, perl's require for .pmc before .pm, a compiler for a precompiled header before the header), not a search of its own: no order of the places saves these misses, and nothing traced says how to avoid them: 3 failed stat calls per search × 1 search, 3µs"},
		// perl's require: Temp.pmc, then Temp.pm, in each @INC entry.
		{"a search whose every miss came with a suffix", launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Temp.pm",
			[]string{"/i1/File", "/i2/File", "/usr/share/perl5/File"}, 1000, true), 2, "Temp.pmc"), "perl", 1),
			nil, "/usr/share/perl5/File held Temp.pm after 2 misses (/i1/File, /i2/File): put /usr/share/perl5/File first in the search list: 2 failed stat calls per search × 1 search, 2µs; with each of its 2 misses it also tried Temp.pmc, of the same stem, in the same directory: another file-name suffix the loader accepts for the name, tried with it where it missed"},
		{"a search some of whose misses came with a suffix", launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "conf",
			[]string{"/a", "/b", "/c"}, 1000, false), 1, "conf.d"), "app", 1),
			nil, "conf was in none of the places tried (/a, /b, 1 more): 3 failed stat calls per search × 1 search, 3µs; nothing traced says where it is: drop the search if it cannot succeed; in 1 of its 3 misses it also tried conf.d, of the same stem, in the same directory"},
		{"a file replaced under its name", []trace.Finding{launches(dup, "perl", 1)[0], launches(noStacks, "perl", 1)[0]}, nil,
			"open it once and pass the descriptor to the later calls: 3 opens per file × 2 files in 1 process, 6µs; which code repeats the opens is not known (--stacks names the call sites)"},
		{"a PATH search ending in a file without #!", launches(shebang, "env", 1), nil,
			"noshebang has no #! line, so its execve fails with ENOEXEC before /bin/sh runs it: give it a #! line (1 failed execve per launch), and call /c/noshebang directly or put /c first in PATH for the other 2 misses (/a, /b): 3 failed execve per launch × 1 launch, 3µs"},
		{"a name looked for in every place", launches(alsoIn(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "include", []string{"/usr/gnu", "/usr/local"}, 1000, true), "/usr"), "make", 1), nil,
			"it looks for include in every place, found or not (found in /usr/local and /usr; missed in /usr/gnu): no order of the list saves a miss; leave out the places that never hold it: 1 failed stat call per search × 1 search, 1µs"},
		{"dupcopy, three call sites", launches(dup, "dupcopy", 1), stacks,
			"open it once at main.probeData and pass the descriptor to main.probeHoles and main.copyEntry: 3 opens per process × 1 process, 3µs"},
		{"one call site", launches(loop, "dupcopy", 2), stacks,
			"every open is from main.copyEntry: open it once there and pass the descriptor to the later calls: 3 opens per process × 2 processes, 6µs"},
		// Repeats counted in the kernel come with no stack: they may be
		// from anywhere, and the suggestion says so.
		{"some calls with no known site", launches(partial, "dupcopy", 1), stacks,
			"every open with a known call site is from main.copyEntry: open it once there and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; 2 of the 3 opens have no call site known (counted in the kernel, or not captured)"},
		{"the first open's site lost", launches(firstLost, "dupcopy", 1), stacks,
			"the repeats are from main.copyEntry, the first open's call site is not known (counted in the kernel, or not captured): open it once, before them, and pass the descriptor to main.copyEntry: 2 opens per process × 1 process, 553ns"},
		{"a stat's first lookup counted in the kernel", launches(statFirstUnsent, "dupcopy", 1), stacks,
			"the repeats are from main.probeData, the first stat's call site is not known (counted in the kernel, or not captured): stat it once, before them, and reuse its result in main.probeData: 2 stats per process × 1 process, 1.4µs"},
		{"a stat's first lookup counted in the kernel, its repeats from two sites", launches(statFirstUnsentTwo, "java", 1), stacks,
			"the repeats are from main.probeData and main.probeHoles, the first stat's call site is not known (counted in the kernel, or not captured): stat it once, before them, and reuse its result in main.probeData and main.probeHoles: 3 stats per process × 1 process, 2.8µs"},
		{"the dynamic loader's own open, and one from the program", launches(ownAndOne, "java", 1), loader,
			"1 of the 2 opens was made with no frame of the program's code in its stack (the C library's, the dynamic loader's or the language runtime's own call, as ld.so's at start-up), which no change to the program's calls saves; the other is from LoadJavaVM: 2 opens per process × 1 process, 1.5µs"},
		{"the dynamic loader's own open, and two from the program", launches(ownAndTwo, "java", 1), loader,
			"1 of the 3 opens was made with no frame of the program's code in its stack (the C library's, the dynamic loader's or the language runtime's own call, as ld.so's at start-up), which no change to the program's calls saves; of the others, open it once at LoadJavaVM and pass the descriptor to os::dll_load: 3 opens per process × 1 process, 3µs"},
		{"the dynamic loader's own opens only", launches(allOwn, "java", 1), loader,
			"every open was made with no frame of the program's code in its stack (the C library's, the dynamic loader's or the language runtime's own calls, as ld.so's at start-up), which no change to the program's calls saves: 3 opens per process × 1 process, 3µs"},
		{"one call with no known site", launches(partialOne, "dupcopy", 1), stacks,
			"every open with a known call site is from main.copyEntry: open it once there and pass the descriptor to the later calls: 2 opens per process × 1 process, 1.5µs; 1 of the 2 opens has no call site known (counted in the kernel, or not captured)"},
		// The interpreter's frames are not the script's call sites.
		{"a script's opens, one native stack", launches(pyDup, "python3", 1), py,
			"open it once and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; which code repeats the opens is not known (the calls come from code that python3.11 runs through _PyEval_EvalFrameDefault, whose functions and lines native stacks do not name (python -X perf, from 3.12, names them))"},
		{"a script's opens through two of the runtime's functions", launches(twoSites, "node", 1), node,
			"open it once and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; which code repeats the opens is not known (the calls come from code that node runs through Builtins_InterpreterEntryTrampoline, whose functions and lines native stacks do not name (node --perf-basic-prof --interpreted-frames-native-stack, with --stack-size 16384, names them))"},
		{"a script's opens from two functions its perf map names", launches(twoSites, "node", 1), nodeMap,
			"open it once at JS:~readConfig /app/main.js:2:20 and pass the descriptor to JS:~loadAll /app/main.js:9:17: 3 opens per process × 1 process, 3µs"},
		{"a script's opens from one function its perf map names", launches(nodeMapOne, "node", 1), nodeMap,
			"every open is from JS:~readConfig /app/main.js:2:20: open it once there and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs"},
		{"a Python function its perf map names", launches(pyDup, "python3", 1), pyMap,
			"every open is from py::load:/app/x.py: open it once there and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs"},
		{"an extension's opens, called by a script", launches(twoSites, "python3", 1), ext,
			"open it once at ext_read and pass the descriptor to ext_check: 3 opens per process × 1 process, 3µs"},
		{"stacks that part at JIT code", launches(twoSites, "jit", 1), jit,
			"open it once and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; which code repeats the opens is not known (the calls come through code in no file, JIT-compiled code as a rule, whose functions native stacks do not name (a perf map the runtime writes, /tmp/perf-PID.map, names them))"},
		{"code in no file past where the stacks part", launches(twoSites, "cgo", 1), cgo,
			"open it once at c_open and pass the descriptor to main.viaGo: 3 opens per process × 1 process, 3µs"},
		{"stacks stopped at the call's own function", launches(muslDup, "musl2", 1), musl,
			"open it once and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; which code repeats the opens is not known (the stacks stopped at the call's own function, __syscall_cp_c in musl2: no unwind information (no CFI, no frame pointer) there)"},
		{"stacks stopped past a caller", launches(twoSites, "musl0", 1), musl0,
			"every open is from main: open it once there and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs"},
		{"no stacks", launches(noStacks, "dupcopy", 1), nil,
			"open it once and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; which code repeats the opens is not known (--stacks names the call sites)"},
		// top reopening /proc/PID/stat each round to read it anew:
		// passing the first descriptor on would read its end.
		{"a procfs file opened again", launches(procDup, "top", 1), nil,
			"open it once and pass the descriptor to the later calls: 3 opens per process × 1 process, 3µs; which code repeats the opens is not known (--stacks names the call sites); the file is on proc, which makes its content at each read: if the opens are to read it anew, keep one descriptor and read it again from offset 0 (pread) instead"},
		{"a procfs directory stat-ed again", launches(procStat, "top", 1), nil,
			"stat it once and reuse its result in the later calls: 2 stats per process × 1 process, 1.4µs; which code repeats the stats is not known (--stacks names the call sites); the file is on proc, which makes its attributes at each stat: if the stats are to see them anew, keep a descriptor of it and fstat that instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trace.Result{Findings: tc.findings, Stacks: tc.stacks}
			groups := groupAcross(r)
			if len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			if got := suggest(groups[0], stackSource(r), quoteArg); got != tc.want {
				t.Errorf("suggestion\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestSuggestSearchLost: in a run that lost events, a search that found
// nothing may have found its name in a lost call (env's PATH search whose
// successful execve the full ring buffer dropped): the suggestion says so
// rather than "drop the search", and so does the count of those that
// found it nowhere. A search that found its name says nothing of it.
func TestSuggestSearchLost(t *testing.T) {
	path := []string{"/a", "/b", "/c", "/d", "/e", "/f", "/usr/bin"}
	for _, tc := range []struct {
		name     string
		findings []trace.Finding
		lost     uint64
		want     string
	}{
		{"a PATH search whose success was lost", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "true", path[:5], 1000, false), "env", 1), 7516,
			"true was in none of the places tried (/a, /b, 3 more), or was there and names a #! interpreter or ELF loader that is missing (execve fails with ENOENT for both): 5 failed execve per launch × 1 launch, 5µs; nothing traced says which: drop the search if it cannot succeed; 7516 events were lost in this run: the call that found it may be among them"},
		{"some of the searches found nothing", append(launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "true", path, 1000, true), "env", 3),
			launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "true", path[:4], 1000, false), "env", 1)...), 1,
			"call /usr/bin/true directly, or put /usr/bin before 6 entries (/a, /b, 4 more): 4-6 failed execve per launch × 4 launches, 22µs; 1 of the 4 launches found it nowhere; 1 event was lost in this run: the call that found it may be among them"},
		{"a search that found it", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "true", path, 1000, true), "env", 2), 100,
			"call /usr/bin/true directly, or put /usr/bin before 6 entries (/a, /b, 4 more): 6 failed execve per launch × 2 launches, 12µs"},
		{"nothing lost", launches(chain(trace.KindFailedExecProbes, trace.SysExecve, "true", path[:5], 1000, false), "env", 1), 0,
			"true was in none of the places tried (/a, /b, 3 more), or was there and names a #! interpreter or ELF loader that is missing (execve fails with ENOENT for both): 5 failed execve per launch × 1 launch, 5µs; nothing traced says which: drop the search if it cannot succeed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trace.Result{Findings: tc.findings, Counters: trace.Counters{DroppedEvents: tc.lost}}
			groups := groupAcross(r)
			if len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			if got := suggest(groups[0], stackSource(r), quoteArg); got != tc.want {
				t.Errorf("suggestion\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestSuggestOutlier: a group's total is the measured sum; one call that
// is most of it, and far above the others, is named beside it.
// statUnsentFirst is a duplicate_stat of len(ns)+1 lookups, the first
// counted in the kernel and not kept, the others taking ns.
func statUnsentFirst(ns ...uint64) []trace.Finding {
	f := trace.Finding{Kind: trace.KindDuplicateStat, Comm: "sh"}
	f.Path, f.Count = "/usr/bin", len(ns)+1
	for _, n := range ns {
		f.Calls = append(f.Calls, trace.OpenCall{Syscall: trace.SysNewfstatat, Ns: n})
		f.WastedNs += n
	}
	return []trace.Finding{f}
}

func TestSuggestOutlier(t *testing.T) {
	mk := func(ns ...uint64) []trace.Finding {
		f := trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "go"}
		f.Path, f.Count = "/cache/dir", len(ns)
		for i, n := range ns {
			f.Calls = append(f.Calls, trace.OpenCall{Ns: n})
			if i > 0 {
				f.WastedNs += n
			}
		}
		return []trace.Finding{f}
	}
	for _, tc := range []struct {
		name string
		fs   []trace.Finding
		want string // the note, "" for none
	}{
		{"one slow repeat among cheap ones", mk(2000, 5_200_000, 2000, 2000), "; one call took 5.2ms of the 5.2ms, the others 2µs each on average"},
		{"even repeats", mk(2000, 3000, 2500, 2000), ""},
		{"a single repeat is its own total", mk(2000, 5_200_000), ""},
		{"two of a kind", mk(2000, 3000, 2500), ""},
		// A duplicate_stat's first lookup is counted in the kernel and
		// not kept: every call kept is a repeat, the slow one too.
		{"a stat's slow first repeat", statUnsentFirst(5_200_000, 2000, 2000, 2000), "; one call took 5.2ms of the 5.2ms, the others 2µs each on average"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupAcross(&trace.Result{Findings: tc.fs})[0]
			if got := outlierNote(g); got != tc.want {
				t.Errorf("note %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRankByGroupTotal: a file opened 425 times across processes
// outranks a directory opened twice with one slow open, when its total
// is the larger; ranking is by a group's total, not one finding's.
func TestRankByGroupTotal(t *testing.T) {
	slow := trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "go", WastedNs: 5_200_000}
	slow.Path, slow.Count = "/home/u/.cache/go-build", 2
	var fs []trace.Finding
	fs = append(fs, slow)
	cache := trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "compile", WastedNs: 24 * 2000}
	cache.Path, cache.Count = "/home/u/.cache/go-build/trim.txt", 25
	fs = append(fs, launches(cache, "compile", 120)...) // 120 × 48µs = 5.76ms
	r := &trace.Result{Findings: fs}
	groups := groupAcross(r)
	if len(groups) != 2 || groups[0].comm != "compile" || groups[0].wasted != 120*48_000 {
		for _, g := range groups {
			t.Logf("%s %s %d", g.comm, g.subject, g.wasted)
		}
		t.Fatalf("the cache file's group is not first")
	}
	var text strings.Builder
	if err := Text(&text, r); err != nil {
		t.Fatal(err)
	}
	first := strings.Index(text.String(), "trim.txt")
	second := strings.Index(text.String(), "go-build  ")
	if first < 0 || second < 0 || first > second {
		t.Errorf("text report does not rank the cache file first:\n%s", text.String())
	}
	if want := fmt.Sprintf("wasted: %s", Duration(runWasted(r))); !strings.HasPrefix(text.String(), want) {
		t.Errorf("report does not open with %q:\n%s", want, text.String())
	}
}

// TestTextLargeFits: a large tree's default report (thousands of
// findings in hundreds of groups over thousands of processes, events
// lost) is at most 80 lines; the per-process sections wait for
// --details.
func TestTextLargeFits(t *testing.T) {
	r := &trace.Result{Duration: 81e9, CPU: 140e9, Counters: trace.Counters{DroppedEvents: 3, FnameTruncated: 2}}
	for i := range 3000 {
		p := &trace.Process{Key: trace.ImageKey{Pid: uint32(i + 2)}, Pid: uint32(i + 2), Comm: fmt.Sprintf("prog%d", i%40)}
		r.Processes = append(r.Processes, p)
		for j := range 3 {
			f := trace.Finding{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: p.Pid, Comm: p.Comm, Proc: p, WastedNs: uint64(1000 * (j + 1))}
			f.Path, f.Count = fmt.Sprintf("/cache/%d/%d", i%97, j), 2
			r.Findings = append(r.Findings, f)
		}
	}
	var brief, details strings.Builder
	if err := Text(&brief, r); err != nil {
		t.Fatal(err)
	}
	if err := TextDetails(&details, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(brief.String(), "\n"); n > 80 {
		t.Errorf("default report of %d findings is %d lines, want at most 80:\n%s", len(r.Findings), n, brief.String())
	}
	if nb, nd := strings.Count(brief.String(), "\n"), strings.Count(details.String(), "\n"); nd <= nb {
		t.Errorf("--details adds nothing: %d lines, default %d", nd, nb)
	}
}

// TestSuggestIOrderCostsOtherNames: cc1 -Ii1 … -Ii3 of src/a.c, whose
// #include "…" names are each held in one entry: h3.h in i3 after
// misses in src, i1 and i2; h2.h in i2 after src and i1. Putting i3
// first saves h3.h's misses in i1 and i2, and costs h2.h a miss in i3:
// the suggestion says so (a make -j2 of 200 files following "put inc/f
// first" made 10 more failed opens, not 165 fewer).
func TestSuggestIOrderCostsOtherNames(t *testing.T) {
	argv := []string{"/usr/libexec/gcc/cc1", "-quiet", "-I", "i1", "-I", "i2", "-I", "i3", "src/a.c"}
	h3 := launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "h3.h", []string{"/s/src", "/s/i1", "/s/i2", "/s/i3"}, 1000, true), "cc1", 2, argv...)
	h2 := launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "h2.h", []string{"/s/src", "/s/i1", "/s/i2"}, 1000, true), "cc1", 2, argv...)
	for i := range h2 { // the same images
		h2[i].Key, h2[i].Proc = h3[i].Key, h3[i].Proc
	}
	// Another image's search is not the same processes' list.
	other := launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "h2.h", []string{"/s/src", "/s/i1", "/s/i2"}, 1000, true), "cc1", 1, argv...)
	other[0].Key = trace.ImageKey{Pid: 77, ExecID: 1}
	other[0].Proc = &trace.Process{Key: other[0].Key, Comm: "cc1", Argv: argv}
	r := &trace.Result{Findings: slices.Concat(h3, h2, other)}
	want := map[string]string{
		"h3.h": "/s/i3 held h3.h after 3 misses (/s/src, /s/i1, 1 more): put /s/i3 first in the -I order: that saves the 2 misses in -I entries, not the 1 miss in a place no -I entry names (/s/src), searched before the entries (for #include \"…\" a compiler tries the including file's own directory and the -iquote entries first): 3 failed opens per search × 2 searches, 6µs; but 2 searches of other names by the same processes (h2.h) found them in -I entries before it (/s/i2): with /s/i3 first each of those misses there once more (one list serves every name: no order saves misses for all)" + shadowNote1("/s/i1, /s/i2", true),
		// i2 comes after i1 only: h3.h missed in i2, no cost to it.
		"h2.h": "/s/i2 held h2.h after 2 misses (/s/src, /s/i1): put /s/i2 first in the -I order: that saves the 1 miss in -I entries, not the 1 miss in a place no -I entry names (/s/src), searched before the entries (for #include \"…\" a compiler tries the including file's own directory and the -iquote entries first): 2 failed opens per search × 3 searches, 6µs" + shadowNote1("/s/i1", true),
	}
	for _, g := range groupAcross(r) {
		if got := suggest(g, stackSource(r), quoteArg); got != want[g.subject] {
			t.Errorf("%s:\n got %s\nwant %s", g.subject, got, want[g.subject])
		}
	}
}

// TestSuggestAccess: a duplicate whose opens asked for different access
// (read, then opened again to write) is served by one descriptor only
// when it is opened O_RDWR; the suggestion says so, and nothing where
// every open asked for the same access.
func TestSuggestAccess(t *testing.T) {
	mk := func(kinds ...trace.CallKind) *trace.Result {
		f := trace.Finding{Kind: trace.KindDuplicateOpen, Comm: "app"}
		f.Path = "/etc/app.conf"
		for _, k := range kinds {
			f.Count += k.Count
			f.Kinds = append(f.Kinds, k)
		}
		f.WastedNs = 2000
		return &trace.Result{Findings: []trace.Finding{f}}
	}
	rd := trace.CallKind{Syscall: trace.SysOpenat, Flags: unix.O_RDONLY | unix.O_CLOEXEC, Count: 1}
	rd2 := trace.CallKind{Syscall: trace.SysOpenat, Flags: unix.O_RDONLY, Count: 2}
	wr := trace.CallKind{Syscall: trace.SysOpenat, Flags: unix.O_WRONLY | unix.O_APPEND, Count: 1}
	rw := trace.CallKind{Syscall: trace.SysOpenat, Flags: unix.O_RDWR, Count: 1}
	const note = "; its opens asked for different access (%s): one descriptor serves them all only opened O_RDWR"
	for _, tc := range []struct {
		name string
		r    *trace.Result
		want string // the note, "" for none
	}{
		{"read, then write", mk(rd, wr), fmt.Sprintf(note, "O_RDONLY, O_WRONLY")},
		{"write, then read and read-write", mk(wr, rd, rw), fmt.Sprintf(note, "O_WRONLY, O_RDONLY, O_RDWR")},
		{"reads with other flags", mk(rd, rd2), ""},
		{"read-write only", mk(rw), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupAcross(tc.r)[0]
			got := suggest(g, stackSource(tc.r), quoteArg)
			if tc.want == "" {
				if strings.Contains(got, "different access") {
					t.Errorf("suggestion %q has an access note", got)
				}
				return
			}
			if !strings.HasSuffix(got, tc.want) {
				t.Errorf("suggestion\n got %s\nwant it to end %s", got, tc.want)
			}
		})
	}
}

// TestSuggestVariantAlongSearch: perl -Ia -Ib -Ilib of use Foo::Bar,
// which stats Foo/Bar.pmc, then Foo/Bar.pm, in each entry, and finds
// Bar.pm in lib; ld's -lfoo, libfoo.so then libfoo.a in each -L
// directory, libfoo.a found in the third. The suffix's misses in the
// places before are its sibling search's, which an order saves: the
// suggestion says so, not that no order saves them. Python's __init__
// suffixes, each tried in its own package's directory, found there
// (no sibling search missed anywhere), say what they said.
func TestSuggestVariantAlongSearch(t *testing.T) {
	perl := []string{"perl", "-Ia", "-Ib", "-Ilib", "-e", "use Foo::Bar"}
	inc := []string{"/w/a/Foo", "/w/b/Foo", "/w/lib/Foo"}
	pmc := launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Bar.pmc", inc, 1000, false), 3, "Bar.pm"), "perl", 1, perl...)
	pm := launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Bar.pm", inc, 1000, true), 2, "Bar.pmc"), "perl", 1, perl...)
	pm[0].Key, pm[0].Proc = pmc[0].Key, pmc[0].Proc
	ld := []string{"ld", "-L/w/L1", "-L/w/L2", "-L/w/L3", "-lfoo"}
	ls := []string{"/w/L1", "/w/L2", "/w/L3"}
	so := launches(withVariants(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libfoo.so", ls, 1000, false), 3, "libfoo.a"), "ld", 1, ld...)
	so[0].Key = trace.ImageKey{Pid: 2000, ExecID: 1}
	so[0].Proc = &trace.Process{Key: so[0].Key, Comm: "ld", Argv: ld}
	ar := launches(chain(trace.KindFailedOpenProbes, trace.SysOpenat, "libfoo.a", ls, 1000, true), "ld", 1, ld...)
	ar[0].Key, ar[0].Proc = so[0].Key, so[0].Proc
	r := &trace.Result{Findings: slices.Concat(pmc, pm, so, ar)}
	want := map[string]string{
		"Bar.pmc":   "Bar.pmc was tried in a row with Bar.pm, of the same stem, in the same directory each time (all 3 misses in /w/a/Foo, /w/b/Foo, 1 more): a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), along the places its search for Bar.pm went through, which found it in /w/lib/Foo: the 2 misses in places that search missed in are made with its misses, and whatever saves those saves these (the finding of Bar.pm says what); the 1 miss in the place that held it is the suffix's own, and nothing traced says how to avoid it: 3 failed stat calls per search × 1 search, 3µs",
		"Bar.pm":    "/w/lib held Foo/Bar.pm after 2 misses (/w/a, /w/b): put /w/lib first in the -I order: 2 failed stat calls per search × 1 search, 2µs; with each of its 2 misses it also tried Bar.pmc, of the same stem, in the same directory: another file-name suffix the loader accepts for the name, tried with it where it missed" + shadowNote1("/w/a, /w/b", false),
		"libfoo.so": "libfoo.so was tried in a row with libfoo.a, of the same stem, in the same directory each time (all 3 misses in /w/L1, /w/L2, 1 more): a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), along the places its search for libfoo.a went through, which found it in /w/L3: the 2 misses in places that search missed in are made with its misses, and whatever saves those saves these (the finding of libfoo.a says what); the 1 miss in the place that held it is the suffix's own, and nothing traced says how to avoid it: 3 failed opens per search × 1 search, 3µs",
		"libfoo.a":  "/w/L3 held libfoo.a after 2 misses (/w/L1, /w/L2): put /w/L3 first in the -L order: 2 failed opens per search × 1 search, 2µs" + shadowNote1("/w/L1, /w/L2", false),
	}
	groups := groupAcross(r)
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	for _, g := range groups {
		if got := suggest(g, stackSource(r), quoteArg); got != want[g.subject] {
			t.Errorf("%s:\n got %s\nwant %s", g.subject, got, want[g.subject])
		}
	}
}

// TestSuggestVariantAlongSearches: perl's use of Exporter::Heavy, then
// of Carp::Heavy, down the same @INC: Heavy.pmc, found nowhere, is one
// chain of both searches' suffix misses, each made along one of the two
// searches for Heavy.pm: those before the places that held them are
// theirs, as with one search, not "no order saves them".
func TestSuggestVariantAlongSearches(t *testing.T) {
	perl := []string{"perl", "-e", "use Exporter::Heavy; use Carp::Heavy"}
	under := func(sub string) []string { return []string{"/w/a/" + sub, "/w/b/" + sub, "/w/lib/" + sub} }
	pmc := launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Heavy.pmc",
		slices.Concat(under("Exporter"), under("Carp")), 1000, false), 6, "Heavy.pm"), "perl", 1, perl...)
	var pms []trace.Finding
	for _, sub := range []string{"Exporter", "Carp"} {
		pm := launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Heavy.pm", under(sub), 1000, true), 2, "Heavy.pmc"), "perl", 1, perl...)
		pm[0].Key, pm[0].Proc = pmc[0].Key, pmc[0].Proc
		pms = append(pms, pm...)
	}
	r := &trace.Result{Findings: slices.Concat(pmc, pms)}
	want := "Heavy.pmc was tried in a row with Heavy.pm, of the same stem, in the same directory each time (all 6 misses in /w/a/Exporter, /w/b/Exporter, 4 more): a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), along the places its 2 searches for Heavy.pm went through, which found it in /w/lib/Exporter and /w/lib/Carp: the 4 misses in places those searches missed in are made with their misses, and whatever saves those saves these (the findings of Heavy.pm say what); the 2 misses in the places that held it are the suffix's own, and nothing traced says how to avoid them: 6 failed stat calls per search × 1 search, 6µs"
	for _, g := range groupAcross(r) {
		if g.subject != "Heavy.pmc" {
			continue
		}
		if got := suggest(g, stackSource(r), quoteArg); got != want {
			t.Errorf("Heavy.pmc:\n got %s\nwant %s", got, want)
		}
		return
	}
	t.Fatal("no group of Heavy.pmc")
}

// TestSuggestVariantsFoundNowhere: perl -MNonExistent::Mod stats Mod.pmc,
// then Mod.pm, in each @INC entry and finds neither anywhere: a search
// of the module down its list that found nothing, which each of the two
// findings says, not "not a search of its own".
func TestSuggestVariantsFoundNowhere(t *testing.T) {
	perl := []string{"perl", "-MNonExistent::Mod", "-e", "1"}
	inc := []string{"/w/a/NonExistent", "/w/b/NonExistent", "/w/lib/NonExistent"}
	pmc := launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Mod.pmc", inc, 1000, false), 3, "Mod.pm"), "perl", 1, perl...)
	pm := launches(withVariants(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "Mod.pm", inc, 1000, false), 3, "Mod.pmc"), "perl", 1, perl...)
	pm[0].Key, pm[0].Proc = pmc[0].Key, pmc[0].Proc
	r := &trace.Result{Findings: slices.Concat(pmc, pm)}
	want := map[string]string{
		"Mod.pmc": "Mod.pmc was in none of the places tried (/w/a/NonExistent, /w/b/NonExistent, 1 more), nor Mod.pm, tried with it in each of them: a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), whose search found it nowhere: 3 failed stat calls per search × 1 search, 3µs; nothing traced says where it is: drop the search if it cannot succeed",
		"Mod.pm":  "Mod.pm was in none of the places tried (/w/a/NonExistent, /w/b/NonExistent, 1 more), nor Mod.pmc, tried with it in each of them: a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), whose search found it nowhere: 3 failed stat calls per search × 1 search, 3µs; nothing traced says where it is: drop the search if it cannot succeed",
	}
	groups := groupAcross(r)
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	for _, g := range groups {
		if got := suggest(g, stackSource(r), quoteArg); got != want[g.subject] {
			t.Errorf("%s:\n got %s\nwant %s", g.subject, got, want[g.subject])
		}
	}
}

// TestSuggestSearchListSub: perl's require of POSIX.pm stats each entry of
// its built-in @INC, its require of warnings/register.pm each entry's
// warnings/, File/Spec/Unix.pm each entry's File/Spec/: the entries, not
// their subdirectories, are what the list orders, and the suggestion
// names them as the -I ones are named. A search whose places are a walk
// up (a package scope's), or that no other search's places line up with,
// is named by its places.
func TestSuggestSearchListSub(t *testing.T) {
	perl := []string{"perl", "-e", "use POSIX"}
	inc := []string{"/w/a", "/w/b", "/w/base"}
	under := func(dirs []string, sub string) []string {
		out := make([]string, len(dirs))
		for i, d := range dirs {
			out[i] = d + sub
		}
		return out
	}
	mk := func(name string, dirs []string) trace.Finding {
		f := launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, name, dirs, 1000, true), "perl", 1, perl...)[0]
		return f
	}
	posix := mk("POSIX.pm", inc)
	reg := mk("register.pm", under(inc, "/warnings"))
	spec := mk("Spec.pm", under(inc, "/File"))
	unix := mk("Unix.pm", under(inc, "/File/Spec"))
	lone := mk("Lone.pm", []string{"/x/a/Sub", "/x/b/Sub", "/x/c/Sub"})
	r := &trace.Result{Findings: []trace.Finding{posix, reg, spec, unix, lone}}
	want := map[string]string{
		"POSIX.pm":    "/w/base held POSIX.pm after 2 misses (/w/a, /w/b): put /w/base first in the search list: 2 failed stat calls per search × 1 search, 2µs",
		"register.pm": "/w/base held warnings/register.pm after 2 misses (/w/a, /w/b): put /w/base first in the search list: 2 failed stat calls per search × 1 search, 2µs",
		"Spec.pm":     "/w/base held File/Spec.pm after 2 misses (/w/a, /w/b): put /w/base first in the search list: 2 failed stat calls per search × 1 search, 2µs",
		"Unix.pm":     "/w/base held File/Spec/Unix.pm after 2 misses (/w/a, /w/b): put /w/base first in the search list: 2 failed stat calls per search × 1 search, 2µs",
		"Lone.pm":     "/x/c/Sub held Lone.pm after 2 misses (/x/a/Sub, /x/b/Sub): put /x/c/Sub first in the search list: 2 failed stat calls per search × 1 search, 2µs",
	}
	for _, g := range groupAcross(r) {
		if got := suggest(g, stackSource(r), quoteArg); got != want[g.subject] {
			t.Errorf("%s:\n got %s\nwant %s", g.subject, got, want[g.subject])
		}
	}
	// A walk up: node's node_modules of each parent, beside its walk
	// for package.json, is no list of entries with a subdirectory.
	node := []string{"node", "app.js"}
	walk := launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "package.json", []string{"/p/a/b", "/p/a", "/p"}, 1000, true), "node", 1, node...)[0]
	mods := launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "foo", []string{"/p/a/b/node_modules", "/p/a/node_modules", "/p/node_modules"}, 1000, true), "node", 1, node...)[0]
	mods.Key, mods.Proc = walk.Key, walk.Proc
	r = &trace.Result{Findings: []trace.Finding{walk, mods}}
	for _, g := range groupAcross(r) {
		if g.subject == "foo" {
			if got := suggest(g, stackSource(r), quoteArg); !strings.HasPrefix(got, "/p/node_modules held foo after 2 misses") {
				t.Errorf("foo: %s", got)
			}
		}
	}
}

// TestSuggestSearchChildRan: gcc -c x.c looks for as in its own
// directories with stat, finds it in none, and its child runs it by
// name through PATH: the suggestion says so, not "nothing traced says
// where it is". A child that ran another name, or a process of another
// parent, says nothing of it.
func TestSuggestSearchChildRan(t *testing.T) {
	dirs := []string{"/usr/lib/gcc/x86_64-linux-gnu/12", "/usr/lib/gcc/x86_64-linux-gnu"}
	as := launches(chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "as", dirs, 1000, false), "gcc", 1, "gcc", "-c", "x.c")
	as[0].Key.Start, as[0].Pid = 50, as[0].Key.Pid
	child := func(pid, ppid uint32, exe string, argv ...string) *trace.Process {
		return &trace.Process{Key: trace.ImageKey{Pid: pid, Start: 60, ExecID: 2}, PPid: ppid, Exe: exe, Argv: argv}
	}
	for _, tc := range []struct {
		name  string
		procs []*trace.Process
		want  string
	}{
		{"its child ran the name", []*trace.Process{as[0].Proc, child(1001, as[0].Pid, "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "x.c"), child(1002, as[0].Pid, "/usr/bin/x86_64-linux-gnu-as", "as", "-o", "x.o")},
			"as was in none of the places tried (/usr/lib/gcc/x86_64-linux-gnu/12, /usr/lib/gcc/x86_64-linux-gnu), and a child of the process then ran it by that name (the executable /usr/bin/x86_64-linux-gnu-as: its exec found it elsewhere, through a search of its own as execvp's of PATH, or by a path): the program tries these places first, and nothing traced says how to leave them out: 2 failed stat calls per search × 1 search, 2µs"},
		{"another process ran it", []*trace.Process{as[0].Proc, child(1002, 77, "/usr/bin/x86_64-linux-gnu-as", "as")},
			"as was in none of the places tried (/usr/lib/gcc/x86_64-linux-gnu/12, /usr/lib/gcc/x86_64-linux-gnu): 2 failed stat calls per search × 1 search, 2µs; nothing traced says where it is: drop the search if it cannot succeed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trace.Result{Findings: as, Processes: tc.procs}
			groups := groupAcross(r)
			if got := suggest(groups[0], stackSource(r), quoteArg); got != tc.want {
				t.Errorf("suggestion\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// omittedPast is f with n more failed attempts counted past those kept
// (attempts_omitted): in Failed and WastedNs, not in Attempts.
func omittedPast(f trace.Finding, n int, ns uint64) trace.Finding {
	f.AttemptsOmitted += n
	f.Failed += n
	f.WastedNs += uint64(n) * ns
	return f
}

// TestSuggestSearchOmitted: a search with attempts past those kept names
// the places of the attempts kept and says that more were not kept: the
// count of misses is exact, the "N more" places only what the kept
// attempts show, never taken for all of them.
func TestSuggestSearchOmitted(t *testing.T) {
	dirs := []string{"/a", "/b", "/c", "/d", "/e"}
	stat := chain(trace.KindFailedStatProbes, trace.SysNewfstatat, "t.conf", append(slices.Clone(dirs), "/etc"), 1000, true)
	exec := chain(trace.KindFailedExecProbes, trace.SysExecve, "true", append(slices.Clone(dirs), "/usr/bin"), 1000, true)
	lost := chain(trace.KindFailedExecProbes, trace.SysExecve, "true", dirs, 1000, false)
	for _, tc := range []struct {
		name string
		f    trace.Finding
		want string
	}{
		{"stat search, all kept", stat,
			"/etc held t.conf after 5 misses (/a, /b, 3 more): put /etc first in the search list: 5 failed stat calls per search × 1 search, 5µs"},
		{"stat search, 76 past those kept", omittedPast(stat, 76, 1000),
			"/etc held t.conf after 81 misses (/a, /b, 3 more, and 76 attempts past those kept): put /etc first in the search list: 81 failed stat calls per search × 1 search, 81µs"},
		{"PATH search, 1 past those kept", omittedPast(exec, 1, 1000),
			"call /usr/bin/true directly, or put /usr/bin before 6 entries (/a, /b, 3 more, and 1 attempt past those kept): 6 failed execve per launch × 1 launch, 6µs"},
		{"found nowhere, past those kept", omittedPast(lost, 10, 1000),
			"true was in none of the places tried (/a, /b, 3 more, and 10 attempts past those kept), or was there and names a #! interpreter or ELF loader that is missing (execve fails with ENOENT for both): 15 failed execve per launch × 1 launch, 15µs; nothing traced says which: drop the search if it cannot succeed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trace.Result{Findings: launches(tc.f, "x", 1)}
			groups := groupAcross(r)
			if len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			if got := suggest(groups[0], stackSource(r), quoteArg); got != tc.want {
				t.Errorf("suggestion\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
