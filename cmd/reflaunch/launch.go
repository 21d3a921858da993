package main

/*
#include <stdlib.h>
#include "launch.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// method selects one of the loops in launch.c.
type method C.int

const (
	forkExecvpe = method(C.RL_FORK_EXECVPE)
	posixSpawnp = method(C.RL_POSIX_SPAWNP)
	forkExecve  = method(C.RL_FORK_EXECVE)
	forkExit    = method(C.RL_FORK_EXIT)
	cloneVMExit = method(C.RL_CLONE_VM_EXIT)
	failedExec  = method(C.RL_FAILED_EXECVE)
	forkFail    = method(C.RL_FORK_FAIL_EXIT)
	cloneVMFail = method(C.RL_CLONE_VM_FAIL_EXIT)
)

// timings is a buffer of n nanosecond samples outside the Go heap. It is
// mapped with MADV_DONTFORK so that fork does not copy its page tables:
// otherwise the cost of every forking iteration would grow with n, and the
// buffer would be the largest thing fork copies.
type timings struct {
	mem []byte
	ns  []int64
}

func newTimings(n int) (*timings, error) {
	mem, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocating %d samples: %w", n, err)
	}
	if err := unix.Madvise(mem, unix.MADV_DONTFORK); err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("madvise(MADV_DONTFORK): %w", err)
	}
	// Touch every page now, so that first-touch page faults land here and
	// not inside the first timed iterations.
	for i := 0; i < len(mem); i += unix.Getpagesize() {
		mem[i] = 0
	}
	ns := unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), n)
	return &timings{mem: mem, ns: ns}, nil
}

func (t *timings) free() { unix.Munmap(t.mem) }

// cStrings holds C copies of Go strings until free is called.
type cStrings []*C.char

func (cs *cStrings) add(s string) *C.char {
	p := C.CString(s)
	*cs = append(*cs, p)
	return p
}

func (cs cStrings) free() {
	for _, p := range cs {
		C.free(unsafe.Pointer(p))
	}
}

// measure runs n iterations of m in a single call into C and returns the
// time of each. file is the name to search for or the path to execute;
// searchPath is the PATH for the search and is also the target's only
// environment variable. cpu >= 0 pins the calling thread, and so the
// children it forks, to that CPU for the call.
func measure(m method, file, searchPath string, n, cpu int) ([]int64, error) {
	buf, err := newTimings(n)
	if err != nil {
		return nil, err
	}
	defer buf.free()
	if cpu >= 0 {
		// The cgo call runs on this thread: lock it to the calling
		// goroutine for the rest of the run rather than hand a pinned
		// thread back to the scheduler.
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return nil, fmt.Errorf("pin to CPU %d: %w", cpu, err)
		}
	}

	var cs cStrings
	defer cs.free()
	cfile := cs.add(file)
	cpath := cs.add(searchPath)
	// The environment array itself lives in C memory too: cgo forbids
	// handing C a Go pointer to memory that holds other pointers.
	envp := (*[2]*C.char)(C.calloc(2, C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(envp))
	envp[0] = cs.add("PATH=" + searchPath)

	var fail C.struct_rl_failure
	rc := C.rl_measure(C.int(m), cfile, cpath, &envp[0], C.long(n), (*C.int64_t)(unsafe.Pointer(&buf.ns[0])), &fail)
	if rc != 0 {
		return nil, failure(fail)
	}
	return append([]int64(nil), buf.ns...), nil
}

// errChildFailed marks a child that did not exit 0; for the fork methods
// exit status 127 means its exec failed.
var errChildFailed = errors.New("target did not exit 0")

func failure(f C.struct_rl_failure) error {
	op := C.GoString(f.op)
	where := fmt.Sprintf("iteration %d", int64(f.iteration)+1)
	if f.iteration < 0 {
		where = "before the first iteration"
	}
	if op != "child" {
		return fmt.Errorf("%s: %s: %w", where, op, syscall.Errno(f.err))
	}
	ws := syscall.WaitStatus(f.status)
	switch {
	case ws.Exited() && ws.ExitStatus() == 127:
		return fmt.Errorf("%s: %w: exit status 127 (exec failed in the child)", where, errChildFailed)
	case ws.Exited():
		return fmt.Errorf("%s: %w: exit status %d", where, errChildFailed, ws.ExitStatus())
	case ws.Signaled():
		return fmt.Errorf("%s: %w: killed by %v", where, errChildFailed, ws.Signal())
	}
	return fmt.Errorf("%s: %w: wait status %#x", where, errChildFailed, f.status)
}

// resolve looks name up in searchPath once, as a launcher that caches the
// result would, and returns the path, the time the lookup took, and how
// many PATH entries it probed.
func resolve(name, searchPath string) (path string, ns int64, probes int, err error) {
	var cs cStrings
	defer cs.free()
	const outLen = unix.PathMax
	out := (*C.char)(C.malloc(outLen))
	defer C.free(unsafe.Pointer(out))

	var cns C.int64_t
	var cprobes C.int
	if e := C.rl_resolve(cs.add(name), cs.add(searchPath), out, outLen, &cns, &cprobes); e != 0 {
		return "", int64(cns), int(cprobes), fmt.Errorf("looking up %s in PATH: %w", name, syscall.Errno(e))
	}
	return C.GoString(out), int64(cns), int(cprobes), nil
}
