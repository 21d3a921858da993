package testprog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RequireRoot skips a test that needs root (to load BPF programs, mount,
// change credentials) when not root. Under CI (CI=true) a skip would hide
// a broken suite, so it fails instead.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	Skip(t, "test needs root")
}

// KernelFDs counts this process's descriptors of kernel objects by kind
// (the readlink of /proc/self/fd/N): "anon_inode:bpf-prog",
// "anon_inode:bpf-map", "anon_inode:bpf_link", "anon_inode:btf",
// "anon_inode:[perf_event]" (a tracepoint attachment),
// "anon_inode:[eventpoll]" (a ring buffer reader's). The leak tests
// compare it before and after.
func KernelFDs(t testing.TB) map[string]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, "anon_inode:") {
			n[target]++
		}
	}
	return n
}
