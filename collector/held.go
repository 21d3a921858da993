package collector

import (
	"errors"
	"os"
	"strconv"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

// CollectHeld takes from every live thread's slot what it counted and
// did not report, which the kernel reports with the thread's next event,
// exec or exit, none of which comes once the trace ends: the repeats of
// its recent opens and lookups go into their tallies, for SyncTallies to
// read; the rest (first opens and lookups counted, not sent; repeats of
// its last failed call) is returned as an EventUnsent of the thread,
// whose Task has its pid and tid only: the session gives it the image. Call it after Detach: no program
// writes a slot then, so nothing is counted twice or lost between the
// read and the thread. A thread's slot is found by a pidfd of the
// thread (PIDFD_THREAD, Linux 6.9); an older kernel gives one for a
// process's main thread only, and the other threads' counts are missing,
// counted in CountsLost.
func (t *Tracer) CollectHeld(c *trace.Counters) []trace.Event {
	if t.objs.PendingOpens == nil || t.objs.OpenTallies == nil {
		return nil
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	// In a pid namespace of once's own, a pid names a thread by its
	// number there (pidfd_open, a /proc mounted there), not the kernel's
	// that events carry: what it holds would go to the image of another
	// process with that number. It goes to none, counted lost (the threads
	// outside the namespace can't be named at all: see
	// PidNamespaceWarning).
	kernelPids := checkPidNamespace() == nil && t.procKernelPids()
	var out []trace.Event
	threadFDs := true
	for _, p := range procs {
		pid, err := strconv.ParseUint(p.Name(), 10, 32)
		if err != nil {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + p.Name() + "/task")
		if err != nil {
			continue // gone meanwhile
		}
		for _, tk := range tasks {
			tid, err := strconv.ParseUint(tk.Name(), 10, 32)
			if err != nil {
				continue
			}
			var fd int
			if threadFDs {
				fd, err = unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
				if errors.Is(err, unix.EINVAL) {
					threadFDs = false
				}
			}
			if !threadFDs {
				if tid != pid {
					// Its slot can't be named: what it holds is
					// lost, and unknown.
					continue
				}
				fd, err = unix.PidfdOpen(int(tid), 0)
			}
			if err != nil {
				continue
			}
			r, ok := t.takeHeld(fd, c)
			_ = unix.Close(fd)
			if ok && !kernelPids {
				// Pid 0, no process's: the session counts it lost.
				out = append(out, trace.Event{Kind: trace.EventUnsent, Proc: r})
			} else if ok {
				out = append(out, trace.Event{Kind: trace.EventUnsent, Task: trace.Task{Pid: uint32(pid), Tid: uint32(tid)}, Proc: r})
			}
		}
	}
	return out
}

// takeHeld reads the slot of the thread pidfd names: its local tallies
// added to open_tallies, the rest returned (ok: some was held).
func (t *Tracer) takeHeld(pidfd int, c *trace.Counters) (trace.ProcRecord, bool) {
	var v bpf.OncePendingOpen
	if err := t.objs.PendingOpens.Lookup(int32(pidfd), &v); err != nil {
		return trace.ProcRecord{}, false // no slot: a thread never followed
	}
	if v.LocalAny != 0 {
		for i := range v.Local {
			lt := &v.Local[i]
			if lt.On == 0 || lt.Opens == 0 {
				continue
			}
			var tv bpf.OnceOpenTally
			err := t.objs.OpenTallies.Lookup(&lt.Key, &tv)
			if err == nil {
				tv.Opens += uint64(lt.Opens)
				tv.Timed += uint64(lt.Timed)
				tv.TimedNs += lt.Ns
				err = t.objs.OpenTallies.Update(&lt.Key, &tv, ebpf.UpdateExist)
			}
			if err != nil {
				// As the kernel's flush: the kind is gone from the map.
				c.TalliesLate++
			}
		}
	}
	r := trace.ProcRecord{Unsent: v.Unsent, LookupsUnsent: v.LookupsUnsent,
		MissRepeats: trace.Repeats{N: v.Miss.Count, Timed: v.Miss.Timed, TimedNs: v.Miss.Ns, Syscall: trace.Syscall(v.Miss.Sys)},
		LookupMissRepeats: trace.Repeats{N: v.Lmiss.Count, Timed: v.Lmiss.Timed, TimedNs: v.Lmiss.Ns,
			Syscall: trace.Syscall(v.Lmiss.Sys)}}
	countMissRepeats(c, r.MissRepeats)
	countMissRepeats(c, r.LookupMissRepeats)
	return r, r.Unsent > 0 || r.LookupsUnsent > 0 || r.MissRepeats.N > 0 || r.LookupMissRepeats.N > 0
}

// procKernelPids reports whether /proc names processes by the kernel's
// pids: its self is once's tgid as the kernel knows it.
func (t *Tracer) procKernelPids() bool {
	link, err := os.Readlink("/proc/self")
	return t.selfKnown && err == nil && link == strconv.FormatUint(uint64(t.selfTgid), 10)
}
