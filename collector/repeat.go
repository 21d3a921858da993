package collector

import (
	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

// openRepeat is EVENT_OPEN_REPEAT: a successful open sent as its call,
// times, dirfd and result only. Its name, path, task fields, flags and file
// are those of the thread's last open sent in full, the one whose ExitNs
// the record names (see bpf/repeat.bpf.h). Next gives it them and passes
// it on as an EventOpen.
const openRepeat = trace.EventKind(bpf.OnceEventKindEVENT_OPEN_REPEAT)

// repeatRef is a thread's last successful open seen in full: what a
// repeat of it takes.
type repeatRef struct {
	task trace.Task
	open trace.OpenRecord
}

// The bounds of what repeats keep. The kernel repeats only a name of at
// most 63 bytes and a path of at most 16 components of 32 bytes (see
// bpf/repeat.bpf.h): longer strings are never asked for. And a process
// whose exit is never seen (its comm changed away from --comm's, the exit
// lost) must not hold its entries for ever: past maxRepeatThreads a
// process's are dropped, and a repeat that then names an open no longer
// kept is no line, counted in decode_errors, as one whose open was lost.
const (
	maxRepeatName    = 64
	maxRepeatPath    = 16 * 33
	maxRepeatThreads = 8192
)

// repeats holds each thread's repeatRef, by process then thread, so that
// a process's exit drops its threads'. The last one used is kept apart:
// a loop's events come from one thread.
type repeats struct {
	procs   map[uint32]map[uint32]*repeatRef
	threads int // entries in procs, in all
	lastTid uint32
	last    *repeatRef
}

// ref is the thread's entry, made if make and it has none.
func (r *repeats) ref(pid, tid uint32, make bool) *repeatRef {
	if r.last != nil && r.lastTid == tid {
		return r.last
	}
	threads := r.procs[pid]
	ref := threads[tid]
	if ref == nil {
		if !make {
			return nil
		}
		if r.procs == nil {
			r.procs = map[uint32]map[uint32]*repeatRef{}
		}
		if r.threads >= maxRepeatThreads {
			r.evict(pid)
			threads = r.procs[pid]
		}
		if threads == nil {
			threads = map[uint32]*repeatRef{}
			r.procs[pid] = threads
		}
		ref = &repeatRef{}
		threads[tid] = ref
		r.threads++
	}
	r.lastTid, r.last = tid, ref
	return ref
}

// keep records a successful open seen in full (every one may be repeated:
// the kernel says which it repeats by ExitNs).
func (r *repeats) keep(ev *trace.Event) {
	o := &ev.Open
	if o.Ret < 0 || o.Syscall.IsLookup() {
		return
	}
	if len(o.Fname) > maxRepeatName || len(o.Path) > maxRepeatPath {
		// Never repeated: the thread's last is none the kernel names.
		if ref := r.ref(ev.Task.Pid, ev.Task.Tid, false); ref != nil {
			*ref = repeatRef{}
		}
		return
	}
	ref := r.ref(ev.Task.Pid, ev.Task.Tid, true)
	ref.task, ref.open = ev.Task, *o
}

// expand gives a repeat (its call, status, times, dirfd and result
// decoded) the rest of the open it repeats; false when that open was not
// seen (not decoded): the record is then no line.
func (r *repeats) expand(ev *trace.Event, refNs uint64) bool {
	ref := r.ref(ev.Task.Pid, ev.Task.Tid, false)
	if ref == nil || ref.open.ExitNs != refNs {
		return false
	}
	o, from := &ev.Open, &ref.open
	ev.Task = ref.task
	o.Flags, o.Mode, o.Resolve = from.Flags, from.Mode, from.Resolve
	o.Dev, o.Ino, o.Gen, o.FileType = from.Dev, from.Ino, from.Gen, from.FileType
	o.Fname, o.Path = from.Fname, from.Path
	return true
}

// drop forgets the threads of a process that exited.
func (r *repeats) drop(pid uint32) {
	if r.last != nil {
		if _, ok := r.procs[pid][r.lastTid]; ok {
			r.last = nil
		}
	}
	r.threads -= len(r.procs[pid])
	delete(r.procs, pid)
}

// evict drops processes other than pid until there is room for one more
// thread, or pid's are all that are left (then pid's own are dropped).
func (r *repeats) evict(pid uint32) {
	for p := range r.procs {
		if r.threads < maxRepeatThreads {
			return
		}
		if p != pid {
			r.drop(p)
		}
	}
	if r.threads >= maxRepeatThreads {
		r.drop(pid)
	}
}
