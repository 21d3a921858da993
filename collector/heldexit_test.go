package collector

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// scriptedReader hands out records in turn, then says the deadline passed
// (or, once flushed, that the ring was read to its end).
type scriptedReader struct {
	recs    [][]byte
	flushed bool
}

func (r *scriptedReader) ReadInto(rec *ringbuf.Record) error {
	if len(r.recs) == 0 {
		if r.flushed {
			r.flushed = false
			return ringbuf.ErrFlushed
		}
		return os.ErrDeadlineExceeded
	}
	rec.RawSample, r.recs = r.recs[0], r.recs[1:]
	return nil
}
func (r *scriptedReader) SetDeadline(time.Time) {}
func (r *scriptedReader) Flush() error          { r.flushed = true; return nil }
func (r *scriptedReader) Close() error          { return nil }

// smallTallyMap is a real open_tallies map of 16 entries, closed when t
// ends: what readTally reads, with no programs loaded.
func smallTallyMap(t *testing.T) *ebpf.Map {
	t.Helper()
	testprog.RequireRoot(t)
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	ms := spec.Maps[bpf.OnceMapOpenTallies].Copy()
	ms.MaxEntries = 16
	m, err := ebpf.NewMap(ms)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestExitWaitsForThreadsLeft: exit_group's threads each leave the group,
// then pass the exit hook, where their slot's repeats go into the
// tallies; the last to leave sends the exit event, and another, preempted
// between the two, may pass the hook after it. An exit whose group had
// threads not yet released (ThreadsLeft) is held exitGrace before its
// tallies are read for the last time: repeats added meanwhile are its
// process's, not lost as late. One with none goes on at once. At the
// ring's end every held exit goes on, and the end is said after them.
func TestExitWaitsForThreadsLeft(t *testing.T) {
	tallies := smallTallyMap(t)
	task := bpf.OnceTaskInfo{Pid: 10, Tid: 10, StartNs: 5, ExecId: 1}
	open := bpf.OnceOpenEvent{
		Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN, Syscall: uint8(trace.SysOpenat), Status: uint16(trace.StTallyNext)},
		Task: task, Ino: 42, Dev: 8<<20 | 1, Ret: 3, Dirfd: -100, FnameLen: 1,
	}
	key := bpf.OnceOpenKey{StartNs: 5, ExecId: 1, Ino: 42, Pid: 10, Dev: 8<<20 | 1, Syscall: uint32(trace.SysOpenat)}
	for _, tc := range []struct {
		name        string
		threadsLeft uint32
		flush       bool // the ring read to its end before the grace
		want        uint64
	}{
		{"a thread left: held, the late repeats counted", 1, false, 1 + 3 + 2},
		{"none left: at once", 0, false, 1 + 3},
		{"a thread left, the ring's end: released", 1, true, 1 + 3 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exit := bpf.OnceProcEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXIT}, Task: task, ParentPid: tc.threadsLeft,
				TsNs: uint64(nanotime())}
			r := &scriptedReader{recs: [][]byte{record(&open, "f"), record(&exit)}}
			tr := &Tracer{reader: r, sendMax: 1}
			tr.objs.OpenTallies = tallies
			// The first open sent; 3 repeats counted in the kernel.
			if err := tallies.Put(&key, &bpf.OnceOpenTally{Opens: 4}); err != nil {
				t.Fatal(err)
			}
			var c trace.Counters
			var got []trace.Event
			next := func() error {
				var ev trace.Event
				err := tr.Next(&ev, &c)
				if err == nil {
					got = append(got, ev)
				}
				return err
			}
			if err := next(); err != nil || got[0].Kind != trace.EventOpen {
				t.Fatalf("first: %v, %+v", err, got)
			}
			err := next()
			if tc.threadsLeft == 0 {
				if err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, ErrTimeout) {
				t.Fatalf("the exit went on (%v, %d events), want it held", err, len(got))
			}
			// The thread that left first passes its exit hook: 2 more.
			var v bpf.OnceOpenTally
			if err := tallies.Lookup(&key, &v); err == nil {
				v.Opens += 2
				_ = tallies.Put(&key, &v)
			}
			if tc.flush {
				_ = r.Flush()
			} else {
				time.Sleep(exitGrace + 5*time.Millisecond)
			}
			for next() == nil {
			}
			var opens uint64 = 1
			exits := 0
			for _, ev := range got {
				switch ev.Kind {
				case trace.EventTally:
					opens += ev.Tally.Opens
					if exits > 0 {
						t.Error("a tally after its image's exit")
					}
				case trace.EventExit:
					exits++
				}
			}
			if opens != tc.want || exits != 1 {
				t.Errorf("%d opens, %d exits; want %d, 1", opens, exits, tc.want)
			}
			_ = tallies.Delete(&key)
		})
	}
}

// TestHeldExitGoesOnByRecordTime: a held exit goes on once a record of
// its grace's end or later has been read (the kernel's clock, no clock
// read per event), after that record's event, before the next.
func TestHeldExitGoesOnByRecordTime(t *testing.T) {
	tallies := smallTallyMap(t)
	task := bpf.OnceTaskInfo{Pid: 10, Tid: 10, StartNs: 5, ExecId: 1}
	other := bpf.OnceTaskInfo{Pid: 20, Tid: 20, StartNs: 6, ExecId: 1}
	now := uint64(nanotime())
	openAt := func(task bpf.OnceTaskInfo, ts uint64, st trace.Status) []byte {
		return record(&bpf.OnceOpenEvent{
			Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN, Syscall: uint8(trace.SysOpenat), Status: uint16(st)},
			Task: task, Ino: 42, Dev: 8<<20 | 1, Ret: 3, Dirfd: -100, FnameLen: 1, EnterNs: ts, ExitNs: ts,
		}, "f")
	}
	exit := bpf.OnceProcEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXIT}, Task: task, ParentPid: 1, TsNs: now}
	grace := uint64(exitGrace)
	r := &scriptedReader{recs: [][]byte{
		openAt(task, now-1000, trace.StTallyNext), record(&exit),
		openAt(other, now+grace/2, 0), openAt(other, now+grace, 0), openAt(other, now+grace+1, 0),
	}}
	tr := &Tracer{reader: r, sendMax: 1}
	tr.objs.OpenTallies = tallies
	key := bpf.OnceOpenKey{StartNs: 5, ExecId: 1, Ino: 42, Pid: 10, Dev: 8<<20 | 1, Syscall: uint32(trace.SysOpenat)}
	if err := tallies.Put(&key, &bpf.OnceOpenTally{Opens: 2}); err != nil {
		t.Fatal(err)
	}
	defer tallies.Delete(&key)
	var c trace.Counters
	var got []string
	for {
		var ev trace.Event
		if err := tr.Next(&ev, &c); err != nil {
			break
		}
		name := map[trace.EventKind]string{trace.EventOpen: "open", trace.EventTally: "tally", trace.EventExit: "exit"}[ev.Kind]
		got = append(got, fmt.Sprintf("%s %d", name, ev.Task.Pid))
	}
	want := []string{"open 10", "open 20", "open 20", "tally 10", "exit 10", "open 20"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
