package collector

import (
	"errors"

	"github.com/cilium/ebpf"

	"github.com/oncetool/once/bpf"

	"github.com/oncetool/once/trace"
)

// Opens past the first Options.SendOpensPerKind of one kind (image, file,
// syscall, flags) are not sent: the kernel counts them in the open_tallies
// map. The event that was the last one sent carries StTallyNext; from then
// on the Tracer knows the key and reads its count back, as EventTally
// events, in two places:
//
//   - when the image ends (its exit, or the exec that replaced it: its
//     image event, else the exec's record): the
//     tallies come out of Next right before that event, so a consumer has
//     the image's every open counted by the time it sees the image end;
//   - from SyncTallies, which a long-running consumer calls now and then
//     for images still alive, and every consumer calls once at the end.
//
// The tallies only ever add opens: a consumer sums the EventOpen records
// and the EventTally records of a kind to get its exact count.

// tally is what was read of one tallied key so far.
type tally struct {
	unsent, timed, timedNs uint64
	comm                   string
}

type tallies struct {
	hot    map[bpf.OnceOpenKey]*tally
	byProc map[trace.ProcKey][]bpf.OnceOpenKey
	queue  []trace.Event
}

func openKeyOf(ev *trace.Event) bpf.OnceOpenKey {
	k := bpf.OnceOpenKey{
		StartNs: ev.Task.Start, ExecId: ev.Task.ExecID, Ino: ev.Open.Ino, Flags: ev.Open.Flags,
		Pid: ev.Task.Pid, Dev: kernelDev(ev.Open.Dev), Syscall: uint32(ev.Open.Syscall), Gen: ev.Open.Gen,
	}
	if ev.Open.Syscall.IsLookup() {
		// A stat's buffer has no generation: the kernel keys it by
		// its file type instead (bpf/stat.bpf.h).
		k.Gen = uint32(ev.Open.FileType)
	}
	return k
}

// countMissRepeats counts a miss run's repeats the kernel did not send, as
// tallied lookups or opens by their call.
func countMissRepeats(c *trace.Counters, r trace.Repeats) {
	if r.Syscall.IsLookup() {
		c.LookupsTallied += uint64(r.N)
	} else {
		c.OpensTallied += uint64(r.N)
	}
}

// noteEvent keeps track of tallied keys and, when ev ends images that
// have some, queues their final tallies ahead of it. It reports whether
// ev was queued (behind them).
func (t *Tracer) noteEvent(ev *trace.Event, c *trace.Counters) bool {
	ts := &t.tallies
	switch ev.Kind {
	case trace.EventOpen:
		countMissRepeats(c, ev.Open.MissRepeats)
		countMissRepeats(c, ev.Open.LookupMissRepeats)
		if ev.Open.Status&trace.StTallyNext == 0 {
			return false
		}
		k := openKeyOf(ev)
		if ts.hot == nil {
			ts.hot, ts.byProc = map[bpf.OnceOpenKey]*tally{}, map[trace.ProcKey][]bpf.OnceOpenKey{}
		}
		if h := ts.hot[k]; h != nil {
			// Evicted and made again: the kernel counts from zero, and
			// what it counted since the last read is gone.
			c.TalliesEvicted++
			*h = tally{comm: ev.Task.Comm}
			return false
		}
		ts.hot[k] = &tally{comm: ev.Task.Comm}
		pk := trace.ProcKey{Pid: k.Pid, Start: k.StartNs}
		ts.byProc[pk] = append(ts.byProc[pk], k)
		return false
	case trace.EventUnsent:
		countMissRepeats(c, ev.Proc.MissRepeats)
		countMissRepeats(c, ev.Proc.LookupMissRepeats)
		return false
	case trace.EventExec:
		// A successful exec's record ends the image it replaced (the
		// engine ends it there), and it comes when the image event
		// does not: the kernel sends none for a new image the filters
		// refuse (--comm, the new comm another). Its tallies, flushed
		// at the exec, are read here then; after an image event there
		// are none left to read.
		if ev.Exec.Ret != 0 {
			return false
		}
	case trace.EventExit, trace.EventImage:
	default:
		return false
	}
	pk := ev.Task.Proc()
	keys := ts.byProc[pk]
	if len(keys) == 0 {
		return false
	}
	n := len(ts.queue)
	kept := keys[:0]
	for _, k := range keys {
		if ev.Kind != trace.EventExit && k.ExecId >= ev.Task.ExecID {
			kept = append(kept, k) // the new image's own
			continue
		}
		t.readTally(k, true, c, &ts.queue)
	}
	if len(kept) == 0 {
		delete(ts.byProc, pk)
	} else {
		ts.byProc[pk] = kept
	}
	if len(ts.queue) == n {
		return false
	}
	ts.queue = append(ts.queue, *ev)
	return true
}

// readTally appends to out an EventTally for what key counted since it was
// last read; with final (its image ended) it forgets the key and frees its
// slot.
func (t *Tracer) readTally(k bpf.OnceOpenKey, final bool, c *trace.Counters, out *[]trace.Event) {
	ts := &t.tallies
	h := ts.hot[k]
	if h == nil {
		return
	}
	var v bpf.OnceOpenTally
	err := t.objs.OpenTallies.Lookup(&k, &v)
	var unsent uint64
	if v.Opens > t.sendMax {
		unsent = v.Opens - t.sendMax
	}
	switch {
	case errors.Is(err, ebpf.ErrKeyNotExist):
		// Evicted by newer keys while its image lived: what it counted
		// since the last read is gone. Said in Counters, never silent.
		c.TalliesEvicted++
		delete(ts.hot, k)
		return
	case err != nil:
		c.TalliesEvicted++
		return
	}
	if unsent < h.unsent || v.Timed < h.timed {
		c.TalliesEvicted++ // evicted and made again between two reads
		*h = tally{comm: h.comm}
	}
	if d := unsent - h.unsent; d > 0 {
		r := trace.TallyRecord{Syscall: trace.Syscall(k.Syscall), Flags: k.Flags, Dev: userDev(k.Dev), Ino: k.Ino, Gen: k.Gen,
			Opens: d, Ns: scaledNs(d, v.Timed-h.timed, v.TimedNs-h.timedNs, v.Timed, v.TimedNs)}
		if r.Syscall.IsLookup() {
			c.LookupsTallied += d
			r.Gen, r.FileType = 0, uint16(k.Gen) // see openKeyOf
		} else {
			c.OpensTallied += d
		}
		*out = append(*out, trace.Event{
			Kind:  trace.EventTally,
			Task:  trace.Task{Pid: k.Pid, Start: k.StartNs, ExecID: k.ExecId, Comm: h.comm},
			Tally: r,
		})
	}
	h.unsent, h.timed, h.timedNs = unsent, v.Timed, v.TimedNs
	if final {
		delete(ts.hot, k)
		_ = t.objs.OpenTallies.Delete(&k)
	}
}

// scaledNs is the time n tallied opens took, from the sample the kernel
// timed: timed of them took timedNs since the last read, allTimed took
// allNs in all (the mean used when none of the new ones was timed).
func scaledNs(n, timed, timedNs, allTimed, allNs uint64) uint64 {
	if n == 0 {
		return 0
	}
	if timed == 0 {
		timed, timedNs = allTimed, allNs
	}
	if timed == 0 {
		return 0
	}
	if timed >= n {
		return timedNs
	}
	return uint64(float64(timedNs) / float64(timed) * float64(n))
}

// SyncTallies returns an EventTally for every tallied kind that counted
// opens since it was last read, for images still alive. Call it now and
// then (a live view), and once after the final drain of the ring. Any
// event already returned by Next comes before these.
func (t *Tracer) SyncTallies(c *trace.Counters) []trace.Event {
	var out []trace.Event
	for k := range t.tallies.hot {
		t.readTally(k, false, c, &out)
	}
	return out
}

// nextQueued moves the first queued event into ev.
func (t *Tracer) nextQueued(ev *trace.Event) bool {
	q := t.tallies.queue
	if len(q) == 0 {
		return false
	}
	*ev = q[0]
	q[0] = trace.Event{}
	t.tallies.queue = q[1:]
	if len(t.tallies.queue) == 0 {
		t.tallies.queue = q[:0]
	}
	return true
}
