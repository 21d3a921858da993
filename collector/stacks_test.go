package collector_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/trace"
)

// stackCall is one open or exec seen with its snapshot, copied out of
// the ring record.
type stackCall struct {
	kind     trace.EventKind
	ret      int32
	filename string // exec: the file tried
	dev, ino uint64 // open: the file
	snap     *trace.StackSnapshot
	kept     bool // the snapshot came after, in an EventKeptStack
	// exitNs: an open's end; keptNs: when the kernel finished keeping
	// its snapshot (the EventKeptStack's time).
	exitNs, keptNs uint64
}

// stackTop is where a process's window may end without being cut: the
// end of [stack], or just above its initial SP (argc), past which the
// kernel reads no stack (argv, envp: no frames).
type stackTop struct {
	initial uint64       // /proc/PID/stat's startstack
	cache   *stack.Cache // the process's files, retained while it lived
}

// stackRun traces stackprog opening file from its three functions, then
// execvp'ing "true" through a PATH of two directories without it and
// /bin, and returns those opens and execs with the process's mappings,
// read while it waited between the two.
func stackRun(t *testing.T, opts collector.Options) ([]stackCall, []stack.Mapping, *trace.Result) {
	calls, maps, _, res := stackRunTop(t, opts)
	return calls, maps, res
}

// startStack reads a live process's initial SP, field 28 of its stat.
func startStack(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The comm, in parentheses, may hold spaces: count from after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 26 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after comm", pid, len(f))
	}
	var v uint64
	_, err = fmt.Sscan(f[25], &v)
	return v, err
}

func stackRunTop(t *testing.T, opts collector.Options) ([]stackCall, []stack.Mapping, stackTop, *trace.Result) {
	t.Helper()
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Stackprog)
	dir := t.TempDir()
	file := tempFile(t, dir, "target")
	none1, none2 := filepath.Join(dir, "none1"), filepath.Join(dir, "none2")

	cmd := exec.Command(bin, file, "true")
	cmd.Env = append(os.Environ(), "PATH="+none1+":"+none2+":/bin")
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer inW.Close()
	cmd.Stdout, cmd.Stdin = outW, inR
	var stderr bytes.Buffer
	cmd.Stderr = &stderr

	pids := make(chan int, 1)
	type mapsResult struct {
		maps []stack.Mapping
		top  stackTop
		err  error
	}
	mapsCh := make(chan mapsResult, 1)
	go func() {
		pid := <-pids
		b := make([]byte, 1)
		if _, err := outR.Read(b); err != nil {
			mapsCh <- mapsResult{err: fmt.Errorf("wait for stackprog: %w", err)}
			inW.Close()
			return
		}
		m, err := stack.ReadMaps(pid)
		top := stackTop{cache: stack.NewCache(stack.Options{})}
		if err == nil {
			top.initial, err = startStack(pid)
		}
		if err == nil {
			err = top.cache.Retain(pid, m)
		}
		mapsCh <- mapsResult{m, top, err}
		inW.Write(b)
	}()

	var calls []stackCall
	onEvent := func(ev *trace.Event, _ detect.Annotation) {
		c := stackCall{kind: ev.Kind}
		switch {
		case ev.Kind == trace.EventKeptStack && ev.Open.FirstCall:
			// The first open itself, kept with its snapshot until the
			// file was opened again: before the opens that repeated it.
			if ev.Open.Fname != file || ev.Snapshot == nil {
				return
			}
			c = stackCall{kind: trace.EventOpen, ret: ev.Open.Ret, dev: ev.Open.Dev, ino: ev.Open.Ino, exitNs: ev.Open.ExitNs,
				snap: copySnapshot(ev.Snapshot), kept: true, keptNs: ev.Open.ExitNs}
			i := slices.IndexFunc(calls, func(p stackCall) bool { return p.kind == trace.EventOpen && p.dev == c.dev && p.ino == c.ino })
			if i < 0 {
				i = len(calls)
			}
			calls = slices.Insert(calls, i, c)
			return
		case ev.Kind == trace.EventKeptStack:
			// The first open's, kept until the file was opened again.
			for i := range calls {
				if p := &calls[i]; p.kind == trace.EventOpen && p.snap == nil &&
					p.dev == ev.Open.Dev && p.ino == ev.Open.Ino && ev.Snapshot != nil {
					p.snap, p.kept, p.keptNs = copySnapshot(ev.Snapshot), true, ev.Open.ExitNs
					break
				}
			}
			return
		case ev.Kind == trace.EventOpen && ev.Open.Fname == file:
			c.ret, c.dev, c.ino, c.exitNs = ev.Open.Ret, ev.Open.Dev, ev.Open.Ino, ev.Open.ExitNs
		case ev.Kind == trace.EventExec && filepath.Base(ev.Exec.Filename) == "true":
			c.ret, c.filename = ev.Exec.Ret, ev.Exec.Filename
		default:
			return
		}
		if s := ev.Snapshot; s != nil {
			c.snap = copySnapshot(s)
		}
		calls = append(calls, c)
	}

	opts.Tracked = true
	tr, err := collector.Open(opts)
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runCommand(ctx, tr, cmd, runOpts{linger: time.Second, onEvent: onEvent,
		onStart: func(pid int) {
			outW.Close()
			inR.Close()
			pids <- pid
		}})
	if err != nil {
		t.Fatalf("trace stackprog: %v (stderr: %s)", err, stderr.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("stackprog exited %d: %s", res.ExitCode, stderr.String())
	}
	mr := <-mapsCh
	if mr.err != nil {
		t.Fatalf("maps of stackprog: %v", mr.err)
	}
	return calls, mr.maps, mr.top, res
}

// stackTopSlack is STACK_TOP_SLACK of bpf/stack.bpf.h.
const stackTopSlack = 64

// copySnapshot copies s out of its ring record: valid only until the
// next event.
func copySnapshot(s *trace.StackSnapshot) *trace.StackSnapshot {
	cp := *s
	cp.Window = bytes.Clone(s.Window)
	cp.FP = slices.Clone(s.FP)
	return &cp
}

// funcs unwinds snap with maps and returns its frames' functions.
func funcs(t *testing.T, cache *stack.Cache, snap *trace.StackSnapshot, maps []stack.Mapping) ([]string, stack.Stack) {
	t.Helper()
	s := stack.Snapshot{
		Regs: stack.Regs{IP: snap.IP, SP: snap.SP, BP: snap.BP, BX: snap.BX,
			R12: snap.R12, R13: snap.R13, R14: snap.R14, R15: snap.R15},
		Stack: snap.Window, StackTruncated: snap.WindowCut, FP: snap.FP,
	}
	st := cache.Stack(&s, maps)
	var names []string
	for _, f := range st.Frames {
		names = append(names, f.Func)
	}
	return names, st
}

func mappingOf(maps []stack.Mapping, addr uint64) *stack.Mapping {
	for i := range maps {
		if addr >= maps[i].Start && addr < maps[i].End {
			return &maps[i]
		}
	}
	return nil
}

// TestStackSnapshots: with StackSize, every open and exec of a traced
// process comes with a snapshot of its caller's stack, from which the
// stack package unwinds the very function that made the call: three
// distinct ones for stackprog's three opens of one file, exec_delta for
// each of execvp's three execve attempts (two failed, then /bin/true).
// The first open's snapshot is kept in the kernel and comes after the
// second open, in an EventKeptStack (with KeptStacks -1, with the open);
// with first opens unsent the first open is kept with it and comes in
// that EventKeptStack (FirstCall): it is the first call site of the file.
func TestStackSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts collector.Options
		kept bool // the first open's snapshot comes after it
	}{
		{"every open sent", collector.Options{StackSize: 8192}, true},
		{"first opens unsent", collector.Options{StackSize: 8192, SendOpensPerKind: 8, FirstOpensUnsent: true}, true},
		{"small window", collector.Options{StackSize: 1000}, true},
		{"none kept", collector.Options{StackSize: 8192, KeptStacks: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, maps, top, res := stackRunTop(t, tc.opts)
			checkStackCalls(t, calls, maps, top, tc.opts.StackSize)
			c := res.Counters
			if c.StacksDropped != 0 || c.StacksCaptured < 6 || !c.Stacks {
				t.Errorf("counters: stacks %v, captured %d, dropped %d; want 6 or more captured, none dropped",
					c.Stacks, c.StacksCaptured, c.StacksDropped)
			}
			var kept []bool
			for _, call := range calls {
				if call.kind == trace.EventOpen {
					kept = append(kept, call.kept)
				}
			}
			if want := []bool{tc.kept, false, false}; !slices.Equal(kept, want) {
				t.Errorf("the opens' snapshots kept in the kernel: %v, want %v", kept, want)
			}
			// The open's time ends before its snapshot is taken (the
			// kept one is stamped with it): the copy is once's time,
			// and a duplicate's waste must not grow with --stacks.
			for _, call := range calls {
				if call.kept && call.exitNs != call.keptNs {
					t.Errorf("an open ended at %d ns, its snapshot kept at %d: want the open's end, read before the copy",
						call.exitNs, call.keptNs)
				}
			}
			// Every file the program opened once (libc, the locale...)
			// and the first of the repeated one.
			if tc.kept && c.StacksKept < 2 || !tc.kept && c.StacksKept != 0 {
				t.Errorf("counters: %d snapshots kept, want %s", c.StacksKept, map[bool]string{true: "2 or more", false: "none"}[tc.kept])
			}
			if c.StacksFirstLost != 0 {
				t.Errorf("counters: %d first calls' stacks lost, want none", c.StacksFirstLost)
			}
		})
	}
}

func checkStackCalls(t *testing.T, calls []stackCall, maps []stack.Mapping, top stackTop, size int) {
	t.Helper()
	cache := top.cache
	defer cache.Close()
	var openers []string
	var execs []int32
	for i, c := range calls {
		if c.snap == nil {
			t.Errorf("call %d (kind %d, ret %d, %s): no snapshot", i, c.kind, c.ret, c.filename)
			continue
		}
		s := c.snap
		if len(s.Window) < 256 || len(s.Window) > size {
			t.Errorf("call %d: a window of %d bytes, want 256 to %d", i, len(s.Window), size)
		}
		if m := mappingOf(maps, s.IP); m == nil || !m.Exec() || !strings.Contains(filepath.Base(m.Path), "libc") {
			t.Errorf("call %d: IP %#x in %+v, want libc's code (the syscall stub)", i, s.IP, m)
		}
		if m := mappingOf(maps, s.SP); m == nil || m.Path != "[stack]" {
			t.Errorf("call %d: SP %#x in %+v, want the main thread's [stack]", i, s.SP, m)
		} else if end := s.SP + uint64(len(s.Window)); s.WindowCut != (len(s.Window) == size) ||
			(!s.WindowCut && end != m.End && end != top.initial+stackTopSlack &&
				(end%uint64(os.Getpagesize()) != 0 || end > m.End)) {
			// The stack is shallower than the window: it ends just
			// above the initial SP (stack.bpf.h's STACK_TOP_SLACK),
			// or, where the kernel could not tell the stack's extent,
			// read page by page, at the top of [stack], where one read
			// of the whole would have failed, or at a page below it
			// that was not in the page tables.
			t.Errorf("call %d: window [%#x, %#x) cut %v, want %d bytes cut, or up to %#x (initial SP + %d) or the end of [stack] at %#x",
				i, s.SP, end, s.WindowCut, size, top.initial+stackTopSlack, stackTopSlack, m.End)
		}
		names, st := funcs(t, cache, s, maps)
		t.Logf("call %d (kind %d, ret %d): IP %#x SP %#x, window %d bytes (cut %v), %d kernel frames: %q",
			i, c.kind, c.ret, s.IP, s.SP, len(s.Window), s.WindowCut, len(s.FP), names)
		callers := []string{}
		for _, n := range names {
			if strings.HasPrefix(n, "open_") || n == "exec_delta" {
				callers = append(callers, n)
			}
		}
		if len(callers) != 1 || !slices.Contains(names, "main") {
			t.Errorf("call %d (kind %d): unwound to %q (stop %v %s), want one caller of stackprog's and main",
				i, c.kind, names, st.Stop, st.StopDetail)
			continue
		}
		switch c.kind {
		case trace.EventOpen:
			if c.ret < 0 {
				t.Errorf("call %d: open failed: %d", i, c.ret)
			}
			openers = append(openers, callers[0])
		case trace.EventExec:
			if callers[0] != "exec_delta" {
				t.Errorf("exec %d: made from %s, want exec_delta", i, callers[0])
			}
			execs = append(execs, c.ret)
		}
	}
	if want := []string{"open_alpha", "open_beta", "open_gamma"}; !slices.Equal(openers, want) {
		t.Errorf("opens of the file made from %q, want %q", openers, want)
	}
	if want := []int32{-2, -2, 0}; !slices.Equal(execs, want) {
		t.Errorf("execs of true returned %v, want %v (PATH: two misses, then /bin)", execs, want)
	}
}

// TestStackSnapshotsDropped: a snapshot the ring has no room for is
// not lost with its event: the event comes without it, counted. A ring
// of one page holds none of stackprog's records with their windows (some
// 4 KiB of its stack, and the strings), and any without.
func TestStackSnapshotsDropped(t *testing.T) {
	// Which records a one-page ring has room for depends on how soon the
	// reader drains it: a run in which no exec record fit (each counted
	// dropped) exercised less, and is made again, up to three times.
	// Every run must account for every call.
	for run := 1; ; run++ {
		calls, _, res := stackRun(t, collector.Options{StackSize: 8192, RingBufferSize: os.Getpagesize()})
		opens, execs, with := 0, 0, 0
		for i, c := range calls {
			if c.snap != nil {
				// One whose window was short (its stack's top near SP)
				// fits the ring: it must then be whole.
				with++
				if len(c.snap.Window) >= os.Getpagesize() {
					t.Errorf("call %d (kind %d): a snapshot of %d bytes in a ring of %d", i, c.kind, len(c.snap.Window), os.Getpagesize())
				}
			}
			if c.kind == trace.EventOpen {
				opens++
			} else {
				execs++
			}
		}
		c := res.Counters
		if c.StacksCaptured+c.StacksDropped < uint64(len(calls)) || c.StacksCaptured < uint64(with) {
			t.Errorf("%d calls seen (%d with a snapshot), stacks captured %d, dropped %d: want every call captured or counted dropped",
				len(calls), with, c.StacksCaptured, c.StacksDropped)
		}
		if opens > 0 && execs > 0 && c.StacksDropped > 0 {
			return
		}
		if run == 3 || c.DroppedEvents == 0 {
			t.Fatalf("run %d: %d opens and %d execs seen, stacks dropped %d, events dropped %d: want some of each",
				run, opens, execs, c.StacksDropped, c.DroppedEvents)
		}
		t.Logf("run %d: %d opens and %d execs seen, %d events dropped: again", run, opens, execs, c.DroppedEvents)
	}
}

// TestStackSizeBounds: a stack size past the kernel side's bound is
// refused before anything is loaded.
func TestStackSizeBounds(t *testing.T) {
	for _, n := range []int{-1, collector.MaxStackSize + 1} {
		if _, err := collector.Open(collector.Options{StackSize: n}); err == nil || !strings.Contains(err.Error(), "stack size") {
			t.Errorf("StackSize %d: %v, want a stack size error", n, err)
		}
	}
}
