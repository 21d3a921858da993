package collector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// A syscall tracepoint's program is attached through a perf event that
// once opens itself, not through link.Tracepoint, so that the BPF link and
// the perf event close apart. Taking a program off its tracepoint (closing
// the link) waits for one grace period, which links closed together
// share. Closing the last perf event of a syscall tracepoint makes the
// kernel unregister the tracepoint's probe and wait for its grace periods
// before freeing its buffers, one tracepoint at a time under one lock.
// Detach therefore closes the links, and hands the perf events to the
// kernel to close (releasePerfEvents, Tracer.Detach).

// tracepointLink is a BPF link to a syscall tracepoint's perf event.
type tracepointLink struct {
	link.Link     // the BPF link: closing it takes the program off
	perf      int // the perf event, closed apart
}

// openTracepointPerf opens a perf event on the tracepoint group:name, for
// a program to be attached to (linkTracepoint); a tracepoint the kernel
// does not have is an error that wraps os.ErrNotExist. It is opened
// disabled: a
// syscall tracepoint runs the programs attached through any of its perf
// events whether the event is enabled or not, and an enabled event with
// none attached yet would have the tracepoint's probe build a sample at
// every call, for nothing.
func openTracepointPerf(group, name string) (int, error) {
	id, err := tracepointID(group, name)
	if err != nil {
		return -1, err
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      id,
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
		Bits:        unix.PerfBitDisabled,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	// Any CPU's event will do: the program runs wherever the tracepoint
	// fires, whichever CPU the event is bound to.
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("opening tracepoint perf event: %w", err)
	}
	return fd, nil
}

// linkTracepoint attaches prog through the perf event fd
// (openTracepointPerf), which it takes: closed if the link fails.
func linkTracepoint(fd int, prog *ebpf.Program) (*tracepointLink, error) {
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		releasePerfEventsNow([]int{fd})
		return nil, fmt.Errorf("creating BPF perf link: %w", err)
	}
	return &tracepointLink{Link: l, perf: fd}, nil
}

// hookEvents are the syscall hooks' perf events, opened in the background
// while the programs load (openHookEvents): opening one waits for the
// kernel's tracing lock, which the kernel holds through each grace period
// while it lets go of another once's tracepoints (see releasePerfEvents);
// waited for meanwhile, that costs the start nothing. And a tracepoint
// opened before the kernel gets to it is no longer let go of: its wait is
// gone for every tracer after.
type hookEvents struct {
	done chan struct{}
	fds  []int
	errs []error
}

// openHookEvents opens a perf event for each of syscallHooks, on two
// threads, in the background.
func openHookEvents() *hookEvents {
	h := &hookEvents{done: make(chan struct{}), fds: make([]int, len(syscallHooks)), errs: make([]error, len(syscallHooks))}
	go func() {
		defer close(h.done)
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for i := w; i < len(syscallHooks); i += 2 {
					a := syscallHooks[i]
					h.fds[i], h.errs[i] = openTracepointPerf(a.group, a.name)
				}
			})
		}
		wg.Wait()
	}()
	return h
}

// take waits for the events and hands them over: each hook's perf event
// (-1 where it failed) and error. Those taken are the caller's to close.
func (h *hookEvents) take() ([]int, []error) {
	<-h.done
	fds := h.fds
	h.fds = nil
	return fds, h.errs
}

// release closes the events not taken, without waiting for the kernel.
func (h *hookEvents) release() {
	if h == nil {
		return
	}
	fds, _ := h.take()
	releasePerfEventsNow(slices.DeleteFunc(fds, func(fd int) bool { return fd < 0 }))
}

// tracepointID reads the tracepoint's id from tracefs.
func tracepointID(group, name string) (uint64, error) {
	root, err := tracefsRoot()
	if err != nil {
		return 0, err
	}
	file := filepath.Join(root, "events", group, name, "id")
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("tracepoint id: %w", err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tracepoint id in %s: %w", file, err)
	}
	return id, nil
}

// tracefsRoot is where tracefs is mounted (ensureTracefs mounts it at
// tracefsPath when it is nowhere).
func tracefsRoot() (string, error) {
	for _, p := range []string{tracefsPath, "/sys/kernel/debug/tracing"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return p, nil
		}
	}
	return "", errors.New("tracefs is not mounted at " + tracefsPath + " or /sys/kernel/debug/tracing")
}

// membarrierGlobal is MEMBARRIER_CMD_GLOBAL: on a machine of more than one
// CPU the kernel waits for an RCU grace period (synchronize_rcu) before it
// returns.
const membarrierGlobal = 1

// waitProgramsDone returns once no BPF program taken off a tracepoint
// before the call is still running. The programs run inside an RCU
// read-side section with preemption off (a syscall tracepoint's perf probe,
// and the raw tracepoints' calls), which a grace period waits out; on a
// single CPU a running caller means none is midway. It fails where the
// kernel refuses the command (nohz_full, no CONFIG_MEMBARRIER).
func waitProgramsDone() error {
	if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierGlobal, 0, 0); errno != 0 {
		return fmt.Errorf("membarrier: %w", errno)
	}
	return nil
}

// Letting go of the perf events without waiting for the kernel. Closing
// a syscall tracepoint's last perf event unregisters its probe and waits
// for its grace periods, one tracepoint at a time under one lock
// (kernel/trace/trace_event_perf.c, perf_trace_destroy); and a process
// that exits closes what it still holds before its parent sees it exit,
// so once would outlive its report by as long. A perf event array holds
// a reference to each perf event put in it, and drops those put through
// one of its descriptors when that descriptor is closed, from an RCU
// callback (kernel/bpf/arraymap.c: perf_event_fd_array_release). A file
// whose last reference goes there is closed by a kernel worker
// (fs/file_table.c: fput, delayed_fput). So the events go into such an
// array, once closes its own descriptors of them (none the last), then
// the array's: the kernel unregisters the tracepoints on its own time.

// perfArrayName names the array in bpftool's listing.
const perfArrayName = "once_release"

// newPerfArray makes a perf event array of n elements. Not with
// cilium/ebpf, which makes such an array at most one element per CPU.
func newPerfArray(n int) (int, error) {
	attr := struct {
		mapType, keySize, valueSize, maxEntries, mapFlags, innerMapFD, numaNode uint32
		name                                                                    [16]byte
	}{mapType: uint32(ebpf.PerfEventArray), keySize: 4, valueSize: 4, maxEntries: uint32(n)}
	copy(attr.name[:], perfArrayName)
	fd, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(unix.BPF_MAP_CREATE), uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return -1, fmt.Errorf("create perf event array: %w", errno)
	}
	return int(fd), nil
}

// perfArrayPut puts the perf event fd at index i of the array.
func perfArrayPut(array, i, fd int) error {
	key, value := uint32(i), uint32(fd)
	// Pointers the garbage collector sees (a stack that grows moves
	// them); the kernel's fields are 64 bits, as a pointer is on the
	// 64-bit machines once runs on (a test holds the layout).
	attr := perfArrayUpdate{mapFD: uint32(array), key: unsafe.Pointer(&key), value: unsafe.Pointer(&value)}
	_, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(unix.BPF_MAP_UPDATE_ELEM), uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return fmt.Errorf("put perf event in array: %w", errno)
	}
	return nil
}

// perfArrayUpdate is union bpf_attr's BPF_MAP_UPDATE_ELEM part.
type perfArrayUpdate struct {
	mapFD uint32
	_     uint32
	key   unsafe.Pointer
	value unsafe.Pointer
	flags uint64
}

// releasePerfEvents hands the perf events to the kernel to close (see
// above) and closes once's descriptors of them. It returns those it
// could not hand over, still open: closePerfEvents closes them.
func releasePerfEvents(fds []int) []int {
	array, err := newPerfArray(len(fds))
	if err != nil {
		return fds
	}
	var rest []int
	for i, fd := range fds {
		if perfArrayPut(array, i, fd) != nil {
			rest = append(rest, fd)
			continue
		}
		// Not the event's last reference: the array holds one.
		unix.Close(fd)
	}
	unix.Close(array)
	return rest
}

// releasePerfEventsNow hands fds to the kernel to close, and closes
// those it would not take itself, waiting for the kernel: for events no
// program was ever attached through (an Open that failed), whose release
// nothing waits on.
func releasePerfEventsNow(fds []int) {
	if len(fds) > 0 {
		_ = closePerfEvents(releasePerfEvents(fds))
	}
}

// closePerfEvents closes the perf events one after another (the kernel
// takes them one at a time all the same).
func closePerfEvents(fds []int) error {
	var errs []error
	for _, fd := range fds {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, fmt.Errorf("close perf event: %w", err))
		}
	}
	return errors.Join(errs...)
}
