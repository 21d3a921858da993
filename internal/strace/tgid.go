package strace

import (
	"strconv"
	"strings"
)

// resolveTgids sets Tgid on every call from the parent/child relations of
// the clone-family calls in the trace: a clone with CLONE_THREAD adds a
// thread to the caller's process, anything else (fork, vfork, clone
// without it) starts a new process whose tgid is the child's tid.
//
// This assumes tids are not reused within one trace, which holds for the
// short runs tests make; a reused tid would inherit the last relation seen.
func resolveTgids(calls []Call) {
	type origin struct {
		parent int
		thread bool
	}
	origins := map[int]origin{}
	for _, c := range calls {
		if !c.Succeeded() || c.Ret <= 0 {
			continue
		}
		switch c.Syscall {
		case "clone", "clone3":
			origins[int(c.Ret)] = origin{parent: c.Pid, thread: hasCloneThread(c.Flags)}
		case "fork", "vfork":
			origins[int(c.Ret)] = origin{parent: c.Pid}
		}
	}
	tgid := func(tid int) int {
		// Walk up through thread creations; the bound guards against a
		// cycle that reused tids could produce.
		for range len(origins) + 1 {
			o, ok := origins[tid]
			if !ok || !o.thread {
				return tid
			}
			tid = o.parent
		}
		return tid
	}
	for i := range calls {
		calls[i].Tgid = tgid(calls[i].Pid)
	}
}

// hasCloneThread reports whether clone flags as printed include
// CLONE_THREAD, in raw ("0x3d0f00", "0x1200000|17") or symbolic form.
func hasCloneThread(flags string) bool {
	for part := range strings.SplitSeq(flags, "|") {
		if part == "CLONE_THREAD" {
			return true
		}
		if v, err := strconv.ParseUint(part, 0, 64); err == nil && v&cloneThread != 0 {
			return true
		}
	}
	return false
}
