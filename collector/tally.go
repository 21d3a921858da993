package collector

import (
	"errors"
	"time"

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
	// exits are exit events held back a little (exitGrace), in the
	// order they came, with their images' final tallies unread.
	exits []heldExit
}

// heldExit is an exit event waiting for the group's other threads until
// due, a time of the kernel's clock (CLOCK_MONOTONIC, as the events').
type heldExit struct {
	ev  trace.Event
	due uint64
}

// exitGrace is how long the exit of a process whose other threads the
// kernel had not yet released (trace.ProcRecord.ThreadsLeft) waits before
// its tallies are read for the last time. exit_group's threads each leave
// the group, then pass the exit hook, which adds their slot's repeats to
// the tallies; the one that left last sends the exit event, and another,
// preempted between the two, may pass the hook after it: its repeats,
// added to a tally already read and forgotten, were lost (counted in
// tallies_late). Its counts sent after the exit event come before it too.
const exitGrace = 30 * time.Millisecond

// maxHeldExits bounds the exits held at once: past it the oldest goes
// on at once (a churn of thousands of multi-threaded exits a second).
const maxHeldExits = 4096

// noted is what noteEvent did with an event.
type noted int

const (
	notedPass   noted = iota // deliver it now
	notedQueued              // queued behind its image's tallies
	notedHeld                // an exit held back (exitGrace)
)

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
// have some, queues their final tallies ahead of it: it says whether ev
// was queued (behind them), or held (an exit whose process's other
// threads may still add to them: see exitGrace).
func (t *Tracer) noteEvent(ev *trace.Event, c *trace.Counters) noted {
	ts := &t.tallies
	switch ev.Kind {
	case trace.EventOpen:
		countMissRepeats(c, ev.Open.MissRepeats)
		countMissRepeats(c, ev.Open.LookupMissRepeats)
		if ev.Open.Status&trace.StTallyNext == 0 {
			return notedPass
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
			return notedPass
		}
		ts.hot[k] = &tally{comm: ev.Task.Comm}
		pk := trace.ProcKey{Pid: k.Pid, Start: k.StartNs}
		ts.byProc[pk] = append(ts.byProc[pk], k)
		return notedPass
	case trace.EventUnsent:
		countMissRepeats(c, ev.Proc.MissRepeats)
		countMissRepeats(c, ev.Proc.LookupMissRepeats)
		return notedPass
	case trace.EventExec:
		// A successful exec's record ends the image it replaced (the
		// engine ends it there), and it comes when the image event
		// does not: the kernel sends none for a new image the filters
		// refuse (--comm, the new comm another). Its tallies, flushed
		// at the exec, are read here then; after an image event there
		// are none left to read.
		if ev.Exec.Ret != 0 {
			return notedPass
		}
	case trace.EventExit, trace.EventImage:
	default:
		return notedPass
	}
	pk := ev.Task.Proc()
	if len(ts.byProc[pk]) == 0 {
		return notedPass
	}
	if ev.Kind == trace.EventExit && ev.Proc.ThreadsLeft > 0 {
		if len(ts.exits) >= maxHeldExits {
			t.releaseOldestExit(c)
		}
		ts.exits = append(ts.exits, heldExit{ev: *ev, due: ev.Proc.TSNs + uint64(exitGrace)})
		return notedHeld
	}
	if t.endTallies(ev, c) {
		return notedQueued
	}
	return notedPass
}

// endTallies queues the final tallies of the images ev ends, then ev;
// false, and nothing queued, when they counted nothing since last read.
func (t *Tracer) endTallies(ev *trace.Event, c *trace.Counters) bool {
	ts := &t.tallies
	pk := ev.Task.Proc()
	keys := ts.byProc[pk]
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

// releaseExits queues the held exits due by now (a time of the kernel's
// clock), or every one (all), each behind its images' final tallies, in
// the order they came. It reports whether it queued any.
func (t *Tracer) releaseExits(now uint64, all bool, c *trace.Counters) bool {
	ts := &t.tallies
	n := 0
	for n < len(ts.exits) && (all || now >= ts.exits[n].due) {
		t.endHeld(&ts.exits[n].ev, c)
		ts.exits[n] = heldExit{}
		n++
	}
	if n == 0 {
		return false
	}
	ts.exits = ts.exits[n:]
	if len(ts.exits) == 0 {
		ts.exits = nil
	}
	return true
}

// releaseOldestExit lets the oldest held exit go on now: past
// maxHeldExits.
func (t *Tracer) releaseOldestExit(c *trace.Counters) {
	ts := &t.tallies
	t.endHeld(&ts.exits[0].ev, c)
	ts.exits[0] = heldExit{}
	ts.exits = ts.exits[1:]
}

// endHeld queues a held exit behind its images' final tallies.
func (t *Tracer) endHeld(ev *trace.Event, c *trace.Counters) {
	if !t.endTallies(ev, c) {
		t.tallies.queue = append(t.tallies.queue, *ev)
	}
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
