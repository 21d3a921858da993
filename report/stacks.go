package report

import (
	"bufio"
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/oncetool/once/trace"
)

// With --stacks a finding's calls carry the stacks they were made from.
// A call site is one distinct stack; what a reader wants first is the
// code that made the call, not the C library's open() or Rust's
// File::open that it went through, so the one-line form of a stack
// starts at the first frame outside the language runtimes.

// maxSiteFuncs is how many functions a one-line call site names.
const maxSiteFuncs = 4

// runtimeFrame says whether f belongs to a language runtime or system
// library rather than to the program: the C library and the dynamic
// loader, Rust's std, core and alloc, Go's runtime, syscall, os and
// internal packages.
func runtimeFrame(f *trace.Frame) bool {
	base := path.Base(f.Module)
	for _, p := range []string{"libc.so", "libc-", "ld-linux", "ld64.so", "libpthread", "libstdc++"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	for _, p := range []string{"std::", "core::", "alloc::", "<std::", "<core::", "<alloc::",
		"runtime.", "syscall.", "os.", "internal/", "golang.org/x/sys/unix."} {
		if strings.HasPrefix(f.Func, p) {
			return true
		}
	}
	// Rust's standard library, inlined into the program: its source
	// paths say so even where the names do not.
	return strings.Contains(f.File, "/library/std/") || strings.Contains(f.File, "/library/core/") ||
		strings.Contains(f.File, "/library/alloc/")
}

// programFrames are st's frames from the first one outside the runtimes
// on (all of them when every frame is a runtime's); in a stack whose
// script frames a perf map names, from the script's first frame on
// (scriptStart).
func programFrames(st *trace.Stack) []trace.Frame {
	for i := range st.Frames {
		if !runtimeFrame(&st.Frames[i]) {
			return st.Frames[scriptStart(st.Frames, i):]
		}
	}
	return st.Frames
}

// scriptStart is where, in fs, the code that made a call starts when a
// script's frames are named (scriptFrame) and the native frames from
// fs[i] to them are the script runtime's own: node's fs binding and
// V8's API calls under a JS function, CPython's C functions under a
// Python one. The runtime's frames are those of one module that also
// runs the script (a frame of it is an interpreterFuncs', as
// Builtins_JSEntry, _PyEval_EvalFrameDefault); the first script frame
// that is not the runtime's own library's (node's "node:fs") is taken,
// else the first script frame. i when there is none, or a frame of
// another module (an extension's, the program's) comes first.
func scriptStart(fs []trace.Frame, i int) int {
	first, user := -1, -1
	for j := i; j < len(fs) && user < 0; j++ {
		if scriptFrame(&fs[j]) {
			if first < 0 {
				first = j
			}
			if !runtimeScript(&fs[j]) {
				user = j
			}
		}
	}
	if first < 0 {
		return i
	}
	if user < 0 {
		user = first
	}
	m := fs[i].Module
	if m == "" || !slices.ContainsFunc(fs, func(f trace.Frame) bool { return f.Module == m && interpreterFuncs[f.Func] }) {
		return i
	}
	for k := i; k < user; k++ {
		if !scriptFrame(&fs[k]) && !runtimeFrame(&fs[k]) && fs[k].Module != m {
			return i
		}
	}
	return user
}

// runtimeScript says whether a script frame is the runtime's own
// library's: node's built-in modules ("JS:~readFileSync node:fs:441:22"),
// CPython's frozen ones ("<frozen importlib._bootstrap>").
func runtimeScript(f *trace.Frame) bool {
	return strings.Contains(f.Func, " node:") || strings.Contains(f.Func, "<frozen ")
}

// frameName is a frame's function, or module+offset where the module has
// no symbol for it (what addr2line takes), escaped. A Go function is
// named by its package's last element, as pprof shows it: the one-line
// form is read, the JSON keeps the whole name.
func frameName(f *trace.Frame) string {
	if scriptFrame(f) {
		return Escape(f.Func)
	}
	if f.Func != "" {
		return Escape(shortGoName(f.Func))
	}
	if f.Module == "" {
		return fmt.Sprintf("%#x", f.Addr)
	}
	return fmt.Sprintf("%s+%#x", Escape(path.Base(f.Module)), f.Offset)
}

// shortGoName drops the import path before a Go function's package:
// "github.com/x/y/pkg.(*T).m" is "pkg.(*T).m". Other names are kept.
func shortGoName(name string) string {
	if strings.Contains(name, "::") || strings.Contains(name, " ") || strings.Contains(name, "operator") {
		return name
	}
	end := len(name)
	if i := strings.IndexAny(name, "(["); i >= 0 {
		end = i
	}
	if i := strings.LastIndex(name[:end], "/"); i >= 0 && i+1 < len(name) {
		return name[i+1:]
	}
	return name
}

// frameLine is "file.c:12" for a frame with line information, else "".
func frameLine(f *trace.Frame) string {
	if f.File == "" {
		return ""
	}
	return Escape(path.Base(f.File)) + ":" + strconv.Itoa(f.Line)
}

// siteLine is the one-line form of a call site: "check_for_data ←
// copy_file ← copy ← main (copy.rs:120)", escaped.
func siteLine(src trace.StackSource, id trace.StackID) string { return siteLineFrom(src, id, 0) }

// siteLineFrom is siteLine from the program's skip'th frame on: the
// frames before it are the ones every site of a finding shares, said
// once in the heading.
func siteLineFrom(src trace.StackSource, id trace.StackID, skip int) string {
	switch id {
	case 0:
		return "[no stack: counted in the kernel, or not captured]"
	case trace.StackNotKept:
		return "[stacks past the ones kept]"
	}
	var st *trace.Stack
	if src != nil {
		st = src.Stack(id)
	}
	if st == nil || len(st.Frames) == 0 {
		return fmt.Sprintf("[stack %d not kept]", id)
	}
	fs := programFrames(st)
	fs = fs[min(skip, len(fs)-1):]
	names := make([]string, 0, maxSiteFuncs+1)
	for i := range fs[:min(len(fs), maxSiteFuncs)] {
		names = append(names, frameName(&fs[i]))
	}
	if len(fs) > maxSiteFuncs {
		names = append(names, "…")
	}
	s := strings.Join(names, " ← ")
	if l := frameLine(&fs[0]); l != "" {
		s += " (" + l + ")"
	}
	if st.Stop != "" {
		s += " [" + st.Stop + "]"
	}
	return s
}

// siteFuncFrom is the function skip program frames up id's stack (the
// frames a finding's sites share: sharedFrames), or its outermost.
func siteFuncFrom(src trace.StackSource, id trace.StackID, skip int) string {
	if f := siteFrame(src, id, skip); f != nil {
		return frameName(f)
	}
	return ""
}

// siteFrameLine is the line ("file.c:12") of the frame siteFuncFrom
// names, "" when it has none.
func siteFrameLine(src trace.StackSource, id trace.StackID, skip int) string {
	if f := siteFrame(src, id, skip); f != nil {
		return frameLine(f)
	}
	return ""
}

// siteFrame is the frame skip program frames up id's stack, or its
// outermost; nil when the stack is unknown or has no program frame.
func siteFrame(src trace.StackSource, id trace.StackID, skip int) *trace.Frame {
	if src == nil || id == 0 || id == trace.StackNotKept {
		return nil
	}
	st := src.Stack(id)
	if st == nil || len(st.Frames) == 0 {
		return nil
	}
	fs := programFrames(st)
	if len(fs) == 0 {
		return nil
	}
	return &fs[min(skip, len(fs)-1)]
}

// frameKey is what makes two frames of different stacks the same place:
// the source line where there is one (a wrapper's closure inlined into
// each caller has a name per caller but one line), else the exact
// module offset.
func frameKey(f *trace.Frame) string {
	if f.File != "" {
		return f.File + ":" + strconv.Itoa(f.Line)
	}
	if f.Module == "" {
		return "#" + strconv.FormatUint(f.Addr, 16)
	}
	return f.Module + "+" + strconv.FormatUint(f.Offset, 16)
}

// siteStacks are the distinct stacks sites name that src has, in order.
func siteStacks(src trace.StackSource, sites []trace.CallSite) []*trace.Stack {
	if src == nil {
		return nil
	}
	var out []*trace.Stack
	seen := map[trace.StackID]bool{}
	for _, c := range sites {
		if c.Stack == 0 || c.Stack == trace.StackNotKept || seen[c.Stack] {
			continue
		}
		seen[c.Stack] = true
		if st := src.Stack(c.Stack); st != nil && len(st.Frames) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// sharedFrames is how many innermost program frames all the distinct
// stacks of sites have in common before they part: 0 with fewer than two
// stacks, or when one of them parts from none (the same program frames,
// or a prefix of another's). Those frames (a wrapper such as a retrying
// open) are said once; each site is shown from the frame where they part.
func sharedFrames(src trace.StackSource, sites []trace.CallSite) int {
	stacks := siteStacks(src, sites)
	if len(stacks) < 2 {
		return 0
	}
	first := programFrames(stacks[0])
	n, shortest := len(first), len(first)
	for _, st := range stacks[1:] {
		fs := programFrames(st)
		n, shortest = min(n, len(fs)), min(shortest, len(fs))
		for i := 0; i < n; i++ {
			if frameKey(&fs[i]) != frameKey(&first[i]) {
				n = i
				break
			}
		}
	}
	if n >= shortest {
		return 0
	}
	return n
}

// siteNames are the functions where the sites' stacks part, escaped and
// each once, in order: what the sites' own code is, past the frames they
// share. One distinct stack gives its innermost program function.
func siteNames(src trace.StackSource, sites []trace.CallSite) []string {
	skip := sharedFrames(src, sites)
	var out []string
	seen := map[string]bool{}
	for _, st := range siteStacks(src, sites) {
		fs := programFrames(st)
		name := frameName(&fs[min(skip, len(fs)-1)])
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// interpreterFuncs are the functions through which language runtimes run
// a script's code or bytecode (CPython's eval loop, V8's interpreter and
// JS entry, perl's, Ruby's, Lua's, PHP's, the JVM's): past one of them, a
// native stack names the runtime's own functions, never the script's.
var interpreterFuncs = map[string]bool{
	"_PyEval_EvalFrameDefault": true, "PyEval_EvalFrameEx": true,
	"Builtins_InterpreterEntryTrampoline": true, "Builtins_JSEntryTrampoline": true, "Builtins_JSEntry": true,
	"Perl_runops_standard": true, "Perl_runops_debug": true,
	"vm_exec_core": true, "luaV_execute": true, "execute_ex": true, "JavaCalls::call_helper": true,
}

// scriptFrame says whether f is JIT code (in no file) named from its
// process's perf map (/tmp/perf-PID.map): a script's function, node's
// "JS:~resolve node:internal/modules/cjs/loader:1090" or Python's
// "py::func:/path/x.py", shown whole (its file and line are in it).
func scriptFrame(f *trace.Frame) bool { return f.Module == "" && f.Func != "" }

// interpreterAt is the index in fs of the first frame that runs a
// script's code unnamed: an interpreter's (interpreterFuncs) or code in
// no file (JIT code) that no perf map names; -1 when none does. JIT
// frames a perf map names are the script's own, named.
func interpreterAt(fs []trace.Frame) int {
	for i := range fs {
		if scriptFrame(&fs[i]) {
			continue
		}
		if fs[i].Module == "" || interpreterFuncs[fs[i].Func] {
			return i
		}
	}
	return -1
}

// interpreted says, when the sites' stacks cannot tell the code that made
// the calls apart because that code is a script's (or JIT code's), why:
// one distinct stack through an interpreter (its script's calls from
// different lines look the same natively), or stacks that part at or past
// the frame where the interpreter or JIT code runs. Escaped; "" when the
// native frames where the stacks part are the callers'.
func interpreted(src trace.StackSource, sites []trace.CallSite) string {
	stacks := siteStacks(src, sites)
	skip := sharedFrames(src, sites)
	for _, st := range stacks {
		fs := programFrames(st)
		i := interpreterAt(fs)
		if i < 0 || (len(stacks) > 1 && i > skip && !runtimeOwn(fs[skip:i+1])) {
			continue
		}
		if scriptFrame(&fs[min(skip, len(fs)-1)]) {
			// Where the stacks part (or the one stack's first
			// frame) is a script's function its perf map names.
			continue
		}
		f := &fs[i]
		if f.Module == "" {
			return "the calls come through code in no file, JIT-compiled code as a rule, whose functions native stacks do not name" +
				" (a perf map the runtime writes, /tmp/perf-PID.map, names them)"
		}
		return "the calls come from code that " + Escape(path.Base(f.Module)) + " runs through " + Escape(f.Func) +
			", whose functions and lines native stacks do not name" + perfMapHint(f)
	}
	return ""
}

// perfMapHint says how the runtime whose interpreter frame f is would
// name its script's functions in a perf map (docs/stacks.md), where once
// knows it: CPython's evaluation loop, node's interpreter entry.
func perfMapHint(f *trace.Frame) string {
	switch {
	case strings.HasPrefix(f.Func, "_PyEval_"):
		return " (python -X perf, from 3.12, names them)"
	case strings.HasPrefix(f.Func, "Builtins_"):
		return " (node --perf-basic-prof --interpreted-frames-native-stack, with --stack-size 16384, names them)"
	}
	return ""
}

// threadEntryFuncs are the C library's functions a thread's stack ends
// in, below the function the thread was started at: glibc's
// start_thread and clone3 (clone before 2.34), musl's __clone.
var threadEntryFuncs = map[string]bool{
	"start_thread": true, "clone": true, "clone3": true, "__clone": true, "__clone3": true, "__clone_internal": true,
}

// threadStartAt is the index in st.Frames of the function st's thread was
// started at (pthread_create's start routine: libuv's worker, a thread
// pool's loop), below which are only threadEntryFuncs; -1 for a stack
// that does not end so (the main thread's, ending at _start), or whose
// walk stopped before its outermost frame.
func threadStartAt(st *trace.Stack) int {
	if st.Stop != "" {
		return -1
	}
	i := len(st.Frames) - 1
	for i >= 0 && threadEntryFuncs[st.Frames[i].Func] {
		i--
	}
	if i == len(st.Frames)-1 {
		return -1
	}
	return i
}

// threadStarted says, when the frame the sites' stacks are told apart at
// (siteNames) is, for some of them, the function their thread was started
// at (threadStartAt), how many of the calls that is, that function and
// the frames inside it, escaped: a start routine is no call site to keep
// a call at or pass its result to, and the stack of work a thread pool
// runs (node's fs calls in libuv's worker) ends at the pool's loop, not
// at the code that queued the work. "" when no site is such a frame.
func threadStarted(src trace.StackSource, sites []trace.CallSite, call string) string {
	if src == nil {
		return ""
	}
	skip := sharedFrames(src, sites)
	n, total := 0, 0
	var start *trace.Frame
	var inner []trace.Frame
	for _, c := range sites {
		total += c.Count
		if c.Stack == 0 || c.Stack == trace.StackNotKept {
			continue
		}
		st := src.Stack(c.Stack)
		if st == nil || len(st.Frames) == 0 {
			continue
		}
		fs := programFrames(st)
		k := threadStartAt(st) - (len(st.Frames) - len(fs))
		if k < 0 || k != min(skip, len(fs)-1) {
			continue
		}
		n += c.Count
		if start == nil {
			start, inner = &fs[k], fs[:k]
		}
	}
	if n == 0 {
		return ""
	}
	who := "every " + call
	if n < total {
		who = fmt.Sprintf("%d of the %d %ss", n, total, call)
	}
	from := ", which made the call itself"
	if len(inner) > 0 {
		var names []string
		for i := range inner[:min(len(inner), maxSiteFuncs)] {
			names = append(names, frameName(&inner[i]))
		}
		if len(inner) > maxSiteFuncs {
			names = append(names, "…")
		}
		from = ", from " + strings.Join(names, " ← ")
	}
	return fmt.Sprintf("%s ran on a thread started at %s (%s)%s: a thread's start routine is no call site, and the stack of the work a thread pool runs ends at the pool's loop, not at the code that queued it",
		who, frameName(start), framePlace(start), from)
}

// threadNote says, when every call with a stack ran on a thread started
// at one function (threadStartAt) that is not itself the site named
// (threadStarted), which function that is, escaped, for a suggestion to
// add: if it is a thread pool's loop, the sites are the pool's work
// functions, and the code that queued the work is in none of the stacks.
// "" otherwise.
func threadNote(src trace.StackSource, sites []trace.CallSite, call string) string {
	stacks := siteStacks(src, sites)
	if len(stacks) == 0 {
		return ""
	}
	var start *trace.Frame
	for _, st := range stacks {
		k := threadStartAt(st)
		if k < 0 || (start != nil && frameKey(&st.Frames[k]) != frameKey(start)) {
			return ""
		}
		start = &st.Frames[k]
	}
	who := "every " + call
	if unsited(sites) > 0 {
		who = "every " + call + " with a stack"
	}
	return fmt.Sprintf("; %s ran on a thread started at %s (%s): if that is a thread pool's loop, the code that queued the work is not in these stacks",
		who, frameName(start), framePlace(start))
}

// runtimeOwn says whether frames, from where stacks part to the
// interpreter's frame (last), are all the interpreter's module's: the
// runtime's own functions (node's fs bindings node::fs::Open and
// node::fs::ReadFileUtf8, CPython's io.open and os.stat), which the
// script calls from wherever it does: they part by which of the
// runtime's functions the script called, not by where. Code of another
// file (an extension's) parts where its own code does.
func runtimeOwn(fs []trace.Frame) bool {
	m := fs[len(fs)-1].Module
	if m == "" {
		return false
	}
	for i := range fs {
		if fs[i].Module != m {
			return false
		}
	}
	return true
}

// stopWhy says why a stack's walk stopped, for its Stop key.
var stopWhy = map[string]string{
	"truncated":       "the stack window (--stack-size) ended",
	"no_unwind_info":  "no unwind information (no CFI, no frame pointer) there",
	"unknown_mapping": "it led to code in no known file",
	"bad_cfi":         "its CFI could not be evaluated",
}

// stoppedAtCall says, when every one of the sites' stacks stopped at the
// call's own address (the system call's wrapper, the IP, with the frames
// inlined there) and names no caller of it, which function that is and
// why the walk stopped there, escaped: such stacks are one whoever made
// the calls. "" when a stack reached a caller.
func stoppedAtCall(src trace.StackSource, sites []trace.CallSite) string {
	stacks := siteStacks(src, sites)
	if len(stacks) == 0 {
		return ""
	}
	for _, st := range stacks {
		if st.Stop == "" || st.Frames[len(st.Frames)-1].Addr != st.Frames[0].Addr {
			return ""
		}
	}
	st := stacks[0]
	out := frameName(&st.Frames[len(st.Frames)-1])
	if f := &st.Frames[0]; f.Module != "" {
		out += " in " + Escape(path.Base(f.Module))
	}
	why, ok := stopWhy[st.Stop]
	if !ok {
		why = Escape(st.Stop)
	}
	return out + ": " + why
}

// stoppedShort says, when the sites' stacks do not part (one distinct
// stack, or each the same frames as the others as far as the shorter
// goes) and one of them stopped before its outermost frame (Stop), at
// which function and why, escaped: calls from different callers are one
// site past such a stop, so which code made them is not known. "" when
// the stacks reached their outermost frames, or part where they were
// walked (the calls are then told apart below the stop: musl's, with
// frame pointers from main only).
func stoppedShort(src trace.StackSource, sites []trace.CallSite) string {
	stacks := siteStacks(src, sites)
	var stopped *trace.Stack
	for _, st := range stacks {
		if st.Stop != "" && stopped == nil {
			stopped = st
		}
	}
	if stopped == nil || stacksPart(stacks) {
		return ""
	}
	why, ok := stopWhy[stopped.Stop]
	if !ok {
		why = Escape(stopped.Stop)
	}
	return frameName(&stopped.Frames[len(stopped.Frames)-1]) + ": " + why
}

// stacksPart says whether two of the stacks differ in a program frame
// both have (by frameKey), not merely in how far they go.
func stacksPart(stacks []*trace.Stack) bool {
	if len(stacks) < 2 {
		return false
	}
	// None part when each is a prefix of the longest.
	var longest []trace.Frame
	for _, st := range stacks {
		if fs := programFrames(st); len(fs) > len(longest) {
			longest = fs
		}
	}
	for _, st := range stacks {
		fs := programFrames(st)
		for i := range fs {
			if frameKey(&fs[i]) != frameKey(&longest[i]) {
				return true
			}
		}
	}
	return false
}

// unnamed says whether every program frame of the sites' stacks is
// module+offset (no function, no line: the module has no symbols, or
// could not be read at all), and returns those modules, each once; false
// when no stack is there.
func unnamed(src trace.StackSource, sites []trace.CallSite) ([]namelessModule, bool) {
	stacks := siteStacks(src, sites)
	if len(stacks) == 0 {
		return nil, false
	}
	var mods []namelessModule
	seen := map[string]bool{}
	for _, st := range stacks {
		for _, f := range programFrames(st) {
			// The C library's start-up frames outside the program
			// name nothing of it.
			if runtimeFrame(&f) {
				continue
			}
			if f.Func != "" || f.File != "" {
				return nil, false
			}
			if m := f.Module; !seen[m] {
				seen[m] = true
				mods = append(mods, namelessModule{path: m, unread: moduleUnread(st, m)})
			}
		}
	}
	// Every frame the C library's or ld.so's: named, and nothing of
	// the program to blame.
	return mods, len(mods) > 0
}

// namelessModule is a module whose frames name no function: without
// symbols, or unread (gone before once could open it, refused, not ELF).
type namelessModule struct {
	path   string
	unread bool
}

// moduleUnread says whether st's notes have module m as one that could
// not be read at all.
func moduleUnread(st *trace.Stack, m string) bool {
	for _, n := range st.Notes {
		if n.Module == m && n.Unread {
			return true
		}
	}
	return false
}

// unsited is how many of the calls of sites came with no stack known:
// counted in the kernel, not captured, or past the sites told apart.
func unsited(sites []trace.CallSite) int {
	n := 0
	for _, c := range sites {
		if c.Stack == 0 || c.Stack == trace.StackNotKept {
			n += c.Count
		}
	}
	return n
}

// unnamedNote is why call sites are not shown: "/usr/bin/coreutils has
// no symbols, so ...", escaped.
func unnamedNote(mods []namelessModule) string {
	if slices.ContainsFunc(mods, func(m namelessModule) bool { return m.path != "" }) {
		return unnamedModules(mods) + ", so their frames are module+offset only (--format json keeps them, for addr2line)"
	}
	return unnamedModules(mods) + ", so their frames are addresses only (--format json keeps them)"
}

// unknownCode is what a frame in no known mapping (Module "") is: no
// module, so none without symbols either.
const unknownCode = "no known file (JIT code, or mapping records lost)"

// unnamedModules is "/usr/bin/coreutils has no symbols", escaped; a
// module that could not be read at all is said so, not that it lacks
// symbols ("/tmp/prog could not be read"), and frames in no known
// mapping are said apart.
func unnamedModules(mods []namelessModule) string {
	var names, unread []string
	unknown := false
	for _, m := range mods {
		switch {
		case m.path == "":
			unknown = true
		case m.unread:
			unread = append(unread, quoteArg(m.path))
		default:
			names = append(names, quoteArg(m.path))
		}
	}
	var parts []string
	if len(names) > 0 {
		verb := "has"
		if len(names) > 1 {
			verb = "have"
		}
		parts = append(parts, strings.Join(names, ", ")+" "+verb+" no symbols")
	}
	if len(unread) > 0 {
		parts = append(parts, strings.Join(unread, ", ")+" could not be read")
	}
	if len(parts) == 0 {
		return "the calls are from code in " + unknownCode
	}
	out := strings.Join(parts, "; ")
	if unknown {
		out += ", and the other frames are in " + unknownCode
	}
	return out
}

// callsNoun is what a finding's calls are: "opens" or "attempts".
func callsNoun(f *trace.Finding, n int) string {
	noun := f.Info().Call
	if n != 1 {
		noun += "s"
	}
	return noun
}

// sitesHeading is "3 opens from 3 call sites". Calls without a stack
// (counted in the kernel, or not captured) and those from the sites past
// the ones kept are said apart, not counted as a site each: "500 opens,
// 257 from 1 call site, 243 without a stack".
func sitesHeading(f *trace.Finding) string {
	return sitesHeadingNoun(f, "call site")
}

// sitesHeadingIn is sitesHeading for the sites' stacks in src: where
// interpreted says the native stacks cannot tell the script's calls
// apart, the sites are "native call sites" ("3 opens from 1 native call
// site": three lines of a Python script, one stack of the interpreter's).
func sitesHeadingIn(f *trace.Finding, src trace.StackSource) string {
	if interpreted(src, f.CallSites) != "" {
		return sitesHeadingNoun(f, "native call site")
	}
	return sitesHeading(f)
}

func sitesHeadingNoun(f *trace.Finding, site string) string {
	var n, sited, sites, past, none int
	for _, c := range f.CallSites {
		n += c.Count
		switch c.Stack {
		case 0:
			none += c.Count
		case trace.StackNotKept:
			past += c.Count
		default:
			sited += c.Count
			sites++
		}
	}
	calls := strconv.Itoa(n) + " " + callsNoun(f, n)
	if none == 0 && past == 0 {
		return calls + " from " + plural(sites, site, site+"s")
	}
	if none == n {
		return calls + ", none with a stack"
	}
	var parts []string
	if sites > 0 {
		parts = append(parts, fmt.Sprintf("%d from %s", sited, plural(sites, site, site+"s")))
	}
	if past > 0 {
		parts = append(parts, fmt.Sprintf("%d from %ss past the ones kept", past, site))
	}
	if none > 0 {
		parts = append(parts, fmt.Sprintf("%d without a stack", none))
	}
	return calls + ", " + strings.Join(parts, ", ")
}

// writeCallSites writes, under a finding's table, its call sites one per
// line with how many calls each made (nothing without --stacks). The
// innermost frames all of them share are said once, in the heading; each
// site starts where it differs.
func writeCallSites(w *bufio.Writer, f *trace.Finding, src trace.StackSource, indent string) {
	if len(f.CallSites) == 0 {
		return
	}
	subject, _, _ := findingSummary(f)
	heading := sitesHeadingIn(f, src)
	skip := sharedFrames(src, f.CallSites)
	if skip > 0 {
		fs := programFrames(siteStacks(src, f.CallSites)[0])
		each := ", each through "
		if n := unsited(f.CallSites); n > 0 {
			each = "; each known site through "
		}
		heading += each + frameName(&fs[skip-1])
		if l := frameLine(&fs[skip-1]); l != "" {
			heading += " (" + l + ")"
		}
	}
	fmt.Fprintf(w, "%scall sites of %s: %s\n", indent, quoteArg(subject), heading)
	width := 1
	for _, c := range f.CallSites {
		width = max(width, len(strconv.Itoa(c.Count)))
	}
	rows := make([]string, len(f.CallSites))
	for i, c := range f.CallSites {
		rows[i] = siteLineFrom(src, c.Stack, skip)
	}
	tellApart(rows, f.CallSites, src, skip)
	for i, c := range f.CallSites {
		fmt.Fprintf(w, "%s  %*d  %s\n", indent, width, c.Count, rows[i])
	}
}

// partings are the first maxPartings positions at which the frames of
// stacks are not all alike (by frameKey; one stack ending where another
// goes on is not alike either). Past the first, only for stacks of one
// depth: in stacks of different depths (a frame more in one) the frames
// past a parting no longer line up.
func partings(stacks [][]trace.Frame) []int {
	var at []int
	for p := 0; len(at) < maxPartings && (len(at) == 0 || !slices.ContainsFunc(stacks, func(fs []trace.Frame) bool { return len(fs) != len(stacks[0]) })); p++ {
		in, differ := 0, false
		for _, fs := range stacks {
			if p >= len(fs) {
				continue
			}
			in++
			differ = differ || p >= len(stacks[0]) || frameKey(&fs[p]) != frameKey(&stacks[0][p])
		}
		if in == 0 {
			break
		}
		if differ || in < len(stacks) {
			at = append(at, p)
		}
	}
	return at
}

// framePlace is where in the code f is, escaped: its source line, else
// module+offset, else its address (code in no file).
func framePlace(f *trace.Frame) string {
	switch {
	case f.File != "":
		return frameLine(f)
	case f.Module == "":
		return fmt.Sprintf("%#x", f.Addr)
	}
	return fmt.Sprintf("%s+%#x", Escape(path.Base(f.Module)), f.Offset)
}

// maxPartings is how many of the frames where alike rows' stacks differ
// a row names.
const maxPartings = 2

// tellApart appends to each of rows that reads the same as another (the
// one-line form of stacks that differ only in return addresses, in
// functions a module has no line information for: two calls from one
// function) the places its stack has where the others' differ, as
// module+offset (what addr2line takes), escaped: " [at libjvm.so+0x…]".
func tellApart(rows []string, sites []trace.CallSite, src trace.StackSource, skip int) {
	alike := map[string][]int{}
	for i, r := range rows {
		if c := sites[i].Stack; c != 0 && c != trace.StackNotKept && src != nil && src.Stack(c) != nil {
			alike[r] = append(alike[r], i)
		}
	}
	for _, idx := range alike {
		if len(idx) < 2 {
			continue
		}
		frames := make([][]trace.Frame, len(idx))
		for j, i := range idx {
			fs := programFrames(src.Stack(sites[i].Stack))
			frames[j] = fs[min(skip, len(fs)-1):]
		}
		at := partings(frames)
		if len(at) == 0 {
			// Alike in the program's frames: they part in the
			// runtime's (ld.so's own search of a library, then its
			// cache, under one dlopen).
			for j, i := range idx {
				frames[j] = src.Stack(sites[i].Stack).Frames
			}
			at = partings(frames)
		}
		for j, i := range idx {
			var places []string
			for _, p := range at {
				if p < len(frames[j]) {
					places = append(places, framePlace(&frames[j][p]))
				}
			}
			if len(places) > 0 {
				rows[i] += " [at " + strings.Join(places, ", ") + "]"
			}
		}
	}
}

// writeSectionSites writes the call sites of a section's findings: when
// none of them has a frame better than module+offset, and they would
// take more than one line, one line for the whole section says why
// instead.
func writeSectionSites(w *bufio.Writer, fs []*trace.Finding, src trace.StackSource, indent string) {
	var all []trace.CallSite
	for _, f := range fs {
		all = append(all, f.CallSites...)
	}
	if mods, ok := unnamed(src, all); ok && len(all) > 1 {
		these := fmt.Sprintf("these %d findings", len(fs))
		if len(fs) == 1 {
			these = "this finding"
		}
		fmt.Fprintf(w, "%scall sites of %s (%s): not shown: %s\n", indent, these, plural(len(siteStacks(src, all)), "stack", "stacks"), unnamedNote(mods))
		return
	}
	for _, f := range fs {
		writeCallSites(w, f, src, indent)
	}
}

// stackNotes are the notes of every module the findings' stacks pass
// through, once each, in the order first met: "/usr/bin/cp: stripped, no
// symbols and no debug file (no -dbgsym)", escaped.
func stackNotes(fs []*trace.Finding, src trace.StackSource) []string {
	if src == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range fs {
		for _, c := range f.CallSites {
			st := src.Stack(c.Stack)
			if st == nil {
				continue
			}
			for _, n := range st.Notes {
				k := n.Module + "\x00" + n.BuildID
				if seen[k] || n.Note == "" {
					continue
				}
				seen[k] = true
				s := quoteArg(n.Module)
				if n.BuildID != "" {
					s += " (build-id " + Escape(n.BuildID) + ")"
				}
				out = append(out, s+": "+Escape(n.Note))
			}
		}
	}
	return out
}

// jsonFrame is one frame of a call's "stack".
type jsonFrame struct {
	Addr    uint64 `json:"addr"`
	Module  jstr   `json:"module"`
	BuildID string `json:"build_id"`
	Offset  uint64 `json:"offset"`
	Func    jstr   `json:"func"`
	File    jstr   `json:"file"`
	Line    int    `json:"line"`
	Inlined bool   `json:"inlined"`
}

// jsonStackEntry is one element of the top-level "stacks".
type jsonStackEntry struct {
	ID     trace.StackID    `json:"id"`
	Frames []jsonFrame      `json:"frames"`
	Stop   string           `json:"stop"`
	Notes  []jsonModuleNote `json:"notes"`
}

type jsonModuleNote struct {
	Module  jstr   `json:"module"`
	BuildID string `json:"build_id"`
	Note    string `json:"note"`
}

// jsonCallSite is one element of a finding's "call_sites".
type jsonCallSite struct {
	StackID trace.StackID `json:"stack_id"`
	Count   int           `json:"count"`
}

func jsonFrames(src trace.StackSource, id trace.StackID) []jsonFrame {
	if src == nil || id == 0 {
		return nil
	}
	st := src.Stack(id)
	if st == nil {
		return []jsonFrame{}
	}
	out := make([]jsonFrame, len(st.Frames))
	for i, f := range st.Frames {
		out[i] = jsonFrame{Addr: f.Addr, Module: jstr(f.Module), BuildID: f.BuildID, Offset: f.Offset,
			Func: jstr(f.Func), File: jstr(f.File), Line: f.Line, Inlined: f.Inlined}
	}
	return out
}

func jsonStack(st *trace.Stack) jsonStackEntry {
	e := jsonStackEntry{ID: st.ID, Frames: jsonFrames(singleStack{st}, st.ID), Stop: st.Stop, Notes: []jsonModuleNote{}}
	if e.Frames == nil {
		e.Frames = []jsonFrame{}
	}
	for _, n := range st.Notes {
		e.Notes = append(e.Notes, jsonModuleNote{Module: jstr(n.Module), BuildID: n.BuildID, Note: n.Note})
	}
	return e
}

// singleStack is a StackSource of one stack.
type singleStack struct{ st *trace.Stack }

func (s singleStack) Stack(id trace.StackID) *trace.Stack {
	if s.st.ID == id {
		return s.st
	}
	return nil
}

func jsonCallSites(sites []trace.CallSite) []jsonCallSite {
	if sites == nil {
		return nil
	}
	out := make([]jsonCallSite, len(sites))
	for i, c := range sites {
		out[i] = jsonCallSite{StackID: c.Stack, Count: c.Count}
	}
	return out
}

// findingStacks are the stacks the findings' call sites name, by ID: what
// a stream that writes findings one at a time carries with each.
func findingStacks(f *trace.Finding, src trace.StackSource) []*trace.Stack {
	if src == nil {
		return nil
	}
	var out []*trace.Stack
	seen := map[trace.StackID]bool{}
	for _, c := range f.CallSites {
		if seen[c.Stack] {
			continue
		}
		seen[c.Stack] = true
		if st := src.Stack(c.Stack); st != nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// maxViolationSites is how many call sites a violation line of once check
// names; the rest are counted.
const maxViolationSites = 3

// ViolationSites says in one line where a finding's calls come from, for
// the violation of once check that it broke: "3 opens from 3 call sites:
// 1 at probe_data (cp3.c:5), 1 at probe_holes (cp3.c:6), 1 at main
// (cp3.c:11)", each site named at the frame where the sites' stacks part,
// the most calls first; sites that read the same there are one, with how
// many stacks they are ("150 at file_status (3 stacks)"); "" without
// --stacks (no call sites). Escaped.
func ViolationSites(f *trace.Finding, src trace.StackSource) string {
	if f == nil || len(f.CallSites) == 0 {
		return ""
	}
	skip := sharedFrames(src, f.CallSites)
	type site struct {
		name          string
		calls, stacks int
	}
	var sites []*site
	byName := map[string]*site{}
	for _, c := range f.CallSites {
		if c.Stack == 0 || c.Stack == trace.StackNotKept {
			continue
		}
		name := siteFuncFrom(src, c.Stack, skip)
		if name == "" {
			name = fmt.Sprintf("[stack %d not kept]", c.Stack)
		}
		if l := siteFrameLine(src, c.Stack, skip); l != "" {
			name += " (" + l + ")"
		}
		s := byName[name]
		if s == nil {
			s = &site{name: name}
			byName[name] = s
			sites = append(sites, s)
		}
		s.calls += c.Count
		s.stacks++
	}
	slices.SortStableFunc(sites, func(x, y *site) int { return cmp.Compare(y.calls, x.calls) })
	var parts []string
	for i, st := range sites {
		if i == maxViolationSites {
			rest, stacks := 0, 0
			for _, st := range sites[i:] {
				rest += st.calls
				stacks += st.stacks
			}
			parts = append(parts, fmt.Sprintf("%d at %s more", rest, plural(stacks, "call site", "call sites")))
			break
		}
		p := fmt.Sprintf("%d at %s", st.calls, st.name)
		if st.stacks > 1 {
			p += fmt.Sprintf(" (%d stacks)", st.stacks)
		}
		parts = append(parts, p)
	}
	s := sitesHeadingIn(f, src)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}
