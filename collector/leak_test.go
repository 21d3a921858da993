package collector

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"

	"github.com/oncetool/once/trace"
)

func bpfFDs(n map[string]int) int {
	return n["anon_inode:bpf-prog"] + n["anon_inode:bpf-map"] + n["anon_inode:bpf_link"] + n["anon_inode:[perf_event]"]
}

func sameFDs(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// attachNames is every attachment in the order Open makes them.
func attachNames() []string {
	var names []string
	for _, i := range attachOrder() {
		a := syscallHooks[i]
		names = append(names, a.group+":"+a.name)
	}
	for _, h := range schedHooks {
		names = append(names, schedHookName(h.name, btfCastsAvailable()))
	}
	return names
}

func withAttachHook(t *testing.T, h func(string) error) {
	t.Helper()
	attachHook = h
	t.Cleanup(func() { attachHook = nil })
}

// TestAttachFailureReleasesEverything: an attachment that fails after
// others succeeded makes Open return that error, and every program, map,
// link and event descriptor it had opened is closed.
func TestAttachFailureReleasesEverything(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "leak: attach fails midway (first, middle, last hook)")
	// Warm up whatever the library caches once per process.
	tr, err := Open(Options{Tracked: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr.Released()
	before := testprog.KernelFDs(t)
	names := attachNames()
	injected := errors.New("injected attach failure")
	tried := 0
	for _, at := range []int{0, len(names) / 2, len(names) - 1} {
		name := names[at]
		t.Run(name, func(t *testing.T) {
			var held int
			withAttachHook(t, func(n string) error {
				if n != name {
					return nil
				}
				held = bpfFDs(testprog.KernelFDs(t))
				return injected
			})
			tried++
			tr, err := Open(Options{Tracked: true})
			if err == nil {
				tr.Close()
				t.Fatalf("Open succeeded with %s failing", name)
			}
			if !errors.Is(err, injected) || !strings.Contains(err.Error(), "attach "+name) {
				t.Errorf("error %q, want the injected failure of %s", err, name)
			}
			// The premise: the descriptors were there to leak. Every
			// program and map is loaded, and every earlier hook linked
			// (their perf events were opened while the programs loaded).
			if want := bpfFDs(before) + 15 + at; held < want {
				t.Errorf("%d BPF descriptors held when %s failed, want at least %d: the check can't see them", held, name, want)
			}
			if after := testprog.KernelFDs(t); !sameFDs(before, after) {
				t.Errorf("descriptors before Open %v, after its failure %v", before, after)
			}
		})
	}
	row.Inputs = fmt.Sprintf("%d injected failures", tried)
}

// TestCloseReleasesEverything: a tracer that traced something and is
// closed holds nothing any more; Detach alone lets go of the attachments.
func TestCloseReleasesEverything(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "leak: Detach then Close after tracing")
	row.Inputs = "1 command with one ring, 1 with two"
	// With two rings, the second ring, its mapping and the reader's
	// epoll and eventfd are let go too.
	var seen uint64
	defer func() { row.Seen = seen }()
	for _, rings := range []int{1, 2} {
		t.Run(fmt.Sprintf("rings=%d", rings), func(t *testing.T) {
			warm, err := Open(Options{Tracked: true, Rings: rings})
			if err != nil {
				t.Fatal(err)
			}
			warm.Close()
			warm.Released()
			before := testprog.KernelFDs(t)
			tr, err := Open(Options{Tracked: true, Rings: rings})
			if err != nil {
				t.Fatal(err)
			}
			open := testprog.KernelFDs(t)
			if bpfFDs(open) < bpfFDs(before)+15+15 {
				t.Errorf("an open tracer holds %d BPF descriptors, want its 15 programs and 15 attachments more than %d", bpfFDs(open), bpfFDs(before))
			}
			if err := tr.FollowChildren(os.Getpid()); err != nil {
				t.Fatal(err)
			}
			if err := exec.Command("/bin/true").Run(); err != nil {
				t.Fatal(err)
			}
			var ev trace.Event
			var c trace.Counters
			tr.Unfollow(os.Getpid())
			tr.SetDeadline(time.Now().Add(500 * time.Millisecond))
			for tr.Next(&ev, &c) == nil {
			}
			seen += c.EventsReceived
			if c.EventsReceived == 0 {
				t.Error("traced nothing")
			}
			if err := tr.Detach(); err != nil {
				t.Fatal(err)
			}
			if err := tr.Released(); err != nil {
				t.Fatal(err)
			}
			detached := testprog.KernelFDs(t)
			if detached["anon_inode:bpf_link"]+detached["anon_inode:[perf_event]"] != before["anon_inode:bpf_link"]+before["anon_inode:[perf_event]"] {
				t.Errorf("after Detach: %v, want no attachment beyond %v", detached, before)
			}
			if err := tr.KernelCounters(&c); err != nil {
				t.Errorf("counters unreadable after Detach: %v", err)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if after := testprog.KernelFDs(t); !sameFDs(before, after) {
				t.Errorf("descriptors before Open %v, after Close %v", before, after)
			}
		})
	}
}

// TestMissingTracepoint: a syscall tracepoint the architecture lacks
// (arm64 has no open or creat) is skipped when optional, and tracing goes
// on; a required one missing fails Open with its name, leaking nothing.
func TestMissingTracepoint(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "fault: tracepoints missing (optional, required)")
	row.Inputs = "open/creat missing; then openat exit missing"
	missing := func(names ...string) func(string) error {
		return func(n string) error {
			for _, m := range names {
				if n == m {
					return fmt.Errorf("tracepoint %s: %w", n, os.ErrNotExist)
				}
			}
			return nil
		}
	}
	t.Run("optional", func(t *testing.T) {
		gone := []string{"syscalls:sys_enter_open", "syscalls:sys_exit_open", "syscalls:sys_enter_creat", "syscalls:sys_exit_creat"}
		withAttachHook(t, missing(gone...))
		tr, err := Open(Options{Tracked: true})
		if err != nil {
			t.Fatalf("Open with open/creat missing: %v", err)
		}
		defer tr.Close()
		for _, h := range tr.Hooks() {
			isGone := false
			for _, g := range gone {
				isGone = isGone || h.Name == g
			}
			if h.Attached == isGone || (isGone && !errors.Is(h.Err, os.ErrNotExist)) {
				t.Errorf("hook %s: attached %v, err %v", h.Name, h.Attached, h.Err)
			}
		}
		// Still traces: an openat by a child is seen.
		if err := tr.FollowChildren(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command("/bin/cat", "/proc/self/stat").Run(); err != nil {
			t.Fatal(err)
		}
		tr.Unfollow(os.Getpid())
		var ev trace.Event
		var c trace.Counters
		seen := false
		tr.SetDeadline(time.Now().Add(2 * time.Second))
		for !seen && tr.Next(&ev, &c) == nil {
			seen = ev.Kind == trace.EventOpen && ev.Open.Fname == "/proc/self/stat"
		}
		row.Seen = c.EventsReceived
		if !seen {
			t.Error("no openat seen with the optional tracepoints missing")
		}
	})
	t.Run("required", func(t *testing.T) {
		AllReleased()
		before := testprog.KernelFDs(t)
		withAttachHook(t, missing("syscalls:sys_exit_openat"))
		tr, err := Open(Options{Tracked: true})
		if err == nil {
			tr.Close()
			t.Fatal("Open succeeded without sys_exit_openat")
		}
		if !strings.Contains(err.Error(), "attach syscalls:sys_exit_openat") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q: want one line naming the missing tracepoint", err)
		}
		if after := testprog.KernelFDs(t); !sameFDs(before, after) {
			t.Errorf("descriptors before %v, after the failed Open %v", before, after)
		}
	})
}

func TestPrivilegeError(t *testing.T) {
	bit := func(caps ...uint) uint64 {
		var m uint64
		for _, c := range caps {
			m |= 1 << c
		}
		return m
	}
	for _, tc := range []struct {
		name string
		euid int
		eff  uint64
		want string // "" for no error
	}{
		{"root", 0, ^uint64(0), ""},
		{"CAP_SYS_ADMIN", 1000, bit(unix.CAP_SYS_ADMIN), ""},
		{"CAP_BPF and CAP_PERFMON", 1000, bit(unix.CAP_BPF, unix.CAP_PERFMON), ""},
		{"user", 1000, 0, "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): run it with sudo"},
		{"root with CAP_BPF only", 0, bit(unix.CAP_BPF), "missing capability CAP_PERFMON: "},
		{"root with CAP_PERFMON only", 0, bit(unix.CAP_PERFMON), "missing capability CAP_BPF: "},
		{"root without either", 0, bit(unix.CAP_CHOWN), "missing capability CAP_BPF and CAP_PERFMON: "},
		{"user with CAP_BPF", 1000, bit(unix.CAP_BPF), "missing capability CAP_PERFMON: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := privilegeError(tc.euid, tc.eff)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestAttachExitsFirst: an entry that runs while its call's exit is not
// attached yet (an attach can wait for the kernel's tracing lock while it
// lets go of a tracer before) must not leave its slot for another call's
// exit to take. A flooder the comm filter leaves out alternates fstat
// (fstatat AT_EMPTY_PATH: a lookup its entry marks skipped in the
// thread's slot) and a failed open (whose entry records nothing, the
// thread being left out) while the attach of the lookups' exit is held
// up: nothing of the flooder may be read.
func TestAttachExitsFirst(t *testing.T) {
	testprog.RequireRoot(t)
	flooder := testprog.Build(t, testprog.Flooder)
	missing := t.TempDir() + "/missing"
	cmd := exec.Command(flooder, "3000", missing, "fstatfail")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	withAttachHook(t, func(n string) error {
		if n == "syscalls:sys_exit_newfstatat" {
			time.Sleep(300 * time.Millisecond) // the attach held up, by a bounded wait
		}
		return nil
	})
	tr, err := Open(Options{Filter: Filter{Comms: []string{"oncenomatch"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	time.Sleep(100 * time.Millisecond) // the flooder goes on after the attach, bounded
	cmd.Process.Kill()
	cmd.Wait()
	var read int
	for _, ev := range flushAll(t, tr) {
		if ev.Task.Pid != uint32(cmd.Process.Pid) {
			continue
		}
		if read++; read <= 3 {
			t.Errorf("an event of the flooder, which the filter leaves out: kind %v, syscall %v, fname %q, ret %d",
				ev.Kind, ev.Open.Syscall, ev.Open.Fname, ev.Open.Ret)
		}
	}
	if read > 0 {
		t.Errorf("%d events of the flooder read", read)
	}
}
