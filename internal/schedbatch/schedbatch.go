// Package schedbatch moves once's own threads to SCHED_BATCH once the
// program it watches is running.
//
// A collector thread that wakes (its poll timer, a ring's wakeup, the Go
// runtime's garbage collector starting a mark worker on an idle P) may
// preempt whatever runs on the CPU it is woken on, and on a small machine
// that is often the traced program. The kernel's fair scheduler does not
// let a SCHED_BATCH task preempt a normal one at wakeup (it waits for the
// tick, or runs on an idle CPU), while giving it the same share of CPU
// time: the collector keeps its throughput and stops interrupting the
// program it measures. See sched(7).
package schedbatch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Process puts every thread of the calling process in SCHED_BATCH at its
// current nice value. Threads made later inherit it from the thread that
// makes them; so do child processes forked later, which is why once sets
// it only after starting the command it traces. A thread that exits
// meanwhile is skipped.
func Process() error {
	return setAll(unix.SCHED_BATCH)
}

// setAll gives every thread of the process policy (SCHED_NORMAL or
// SCHED_BATCH).
func setAll(policy uint32) error {
	// Twice: a thread made while the first pass ran was cloned either
	// from a thread already moved (and inherits) or before it was, and
	// the second pass finds it.
	for range 2 {
		tids, err := threads()
		if err != nil {
			return err
		}
		for _, tid := range tids {
			if err := set(tid, policy); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("sched_setattr thread %d: %w", tid, err)
			}
		}
	}
	return nil
}

// policy is the scheduling policy of thread tid (unix.SCHED_*).
func policy(tid int) (uint32, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, fmt.Errorf("sched_getattr %d: %w", tid, err)
	}
	return a.Policy, nil
}

func set(tid int, policy uint32) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil // real-time or idle, as the user asked: left alone
	}
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: policy, Nice: a.Nice}
	return unix.SchedSetAttr(tid, &attr, 0)
}

func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
