package collector

import (
	"os"
	"regexp"
	"testing"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

// TestTraceConstantsMatchBPF holds package trace, which can't import the
// bpf2go output, to it: event kinds, syscalls and the counter table.
func TestTraceConstantsMatchBPF(t *testing.T) {
	kinds := []struct {
		got  trace.EventKind
		want bpf.OnceEventKind
	}{
		{trace.EventOpen, bpf.OnceEventKindEVENT_OPEN}, {trace.EventExec, bpf.OnceEventKindEVENT_EXEC},
		{trace.EventFork, bpf.OnceEventKindEVENT_FORK}, {trace.EventExit, bpf.OnceEventKindEVENT_EXIT},
		{trace.EventImage, bpf.OnceEventKindEVENT_IMAGE}, {trace.EventUnsent, bpf.OnceEventKindEVENT_UNSENT},
		{trace.EventExecArgs, bpf.OnceEventKindEVENT_EXEC_ARGS},
	}
	for _, k := range kinds {
		if uint32(k.got) != uint32(k.want) {
			t.Errorf("event kind %d in trace, %d in bpf", k.got, k.want)
		}
	}
	syscalls := []struct {
		got  trace.Syscall
		want bpf.OnceSyscallKind
	}{
		{trace.SysOpen, bpf.OnceSyscallKindSYS_OPEN}, {trace.SysOpenat, bpf.OnceSyscallKindSYS_OPENAT},
		{trace.SysOpenat2, bpf.OnceSyscallKindSYS_OPENAT2}, {trace.SysCreat, bpf.OnceSyscallKindSYS_CREAT},
		{trace.SysExecve, bpf.OnceSyscallKindSYS_EXECVE}, {trace.SysExecveat, bpf.OnceSyscallKindSYS_EXECVEAT},
		{trace.SysIoUringOpenat, bpf.OnceSyscallKindSYS_IORING_OPENAT}, {trace.SysIoUringOpenat2, bpf.OnceSyscallKindSYS_IORING_OPENAT2},
		{trace.SysNewfstatat, bpf.OnceSyscallKindSYS_NEWFSTATAT}, {trace.SysStatx, bpf.OnceSyscallKindSYS_STATX},
		{trace.SysStat, bpf.OnceSyscallKindSYS_NEWSTAT}, {trace.SysLstat, bpf.OnceSyscallKindSYS_NEWLSTAT},
		{trace.SysAccess, bpf.OnceSyscallKindSYS_ACCESS}, {trace.SysFaccessat, bpf.OnceSyscallKindSYS_FACCESSAT},
		{trace.SysFaccessat2, bpf.OnceSyscallKindSYS_FACCESSAT2},
		{trace.SysMkdir, bpf.OnceSyscallKindSYS_MKDIR}, {trace.SysMkdirat, bpf.OnceSyscallKindSYS_MKDIRAT},
		{trace.SysIoUringStatx, bpf.OnceSyscallKindSYS_IORING_STATX},
	}
	for _, s := range syscalls {
		if uint32(s.got) != uint32(s.want) {
			t.Errorf("syscall %v is %d in trace, %d in bpf", s.got, s.got, s.want)
		}
	}
}

// TestEveryKernelCounterHasASpec: every CNT_* of bpf/once.h is in
// trace.KernelCounters, at its index, and so read and shown.
func TestEveryKernelCounterHasASpec(t *testing.T) {
	src, err := os.ReadFile("../bpf/once.h")
	if err != nil {
		t.Fatal(err)
	}
	enum := regexp.MustCompile(`(?s)enum counter \{(.*?)\};`).FindSubmatch(src)
	if enum == nil {
		t.Fatal("enum counter not found in once.h")
	}
	names := regexp.MustCompile(`\b(CNT_[A-Z_]+)\b`).FindAllString(string(enum[1]), -1)
	if len(names) == 0 || names[len(names)-1] != "CNT_MAX" {
		t.Fatalf("enum counter: %v, want CNT_MAX last", names)
	}
	names = names[:len(names)-1]
	if len(names) != int(bpf.OnceCounterCNT_MAX) || len(trace.KernelCounters) != len(names) {
		t.Fatalf("once.h has %d counters (CNT_MAX %d), trace.KernelCounters %d", len(names), bpf.OnceCounterCNT_MAX, len(trace.KernelCounters))
	}
	var c trace.Counters
	seen := map[*uint64]string{}
	for i, n := range names {
		k := trace.KernelCounters[i]
		if k.Name != n {
			t.Errorf("counter %d is %s in once.h, %s in trace.KernelCounters", i, n, k.Name)
		}
		p := k.Field(&c)
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s are kept in the same field", other, n)
		}
		seen[p] = n
	}
	// Each field a kernel counter is kept in is shown by some spec.
	for p, n := range seen {
		*p = 7
		shown := false
		for _, s := range trace.Shown {
			if s.Value(&c) != 0 {
				shown = true
			}
		}
		*p = 0
		if !shown {
			t.Errorf("%s is read from the kernel but no output shows it", n)
		}
	}
}
