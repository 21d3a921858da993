package collector

import (
	"encoding/binary"
	"slices"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/oncetool/once/bpf"
)

// fakeRing is a mappedRing over plain memory laid out as the kernel lays
// out a ring: its data twice in a row, so that a record that wraps reads
// whole.
type fakeRing struct {
	*mappedRing
	size int
}

func newFakeRing(size int) *fakeRing {
	pos := make([]uint64, 2)
	return &fakeRing{&mappedRing{
		consPos: &pos[0], prodPos: &pos[1],
		data: make([]byte, 2*size), mask: uint64(size - 1),
		batch: consumerLag(uint64(size)),
	}, size}
}

// push appends a proc event with time ts (discarded: a record the
// reader must skip) as a BPF program would.
func (f *fakeRing) push(ts uint64, discard bool) {
	var ev bpf.OnceProcEvent
	n := int(unsafe.Sizeof(ev))
	rec := make([]byte, rbHdrSize+n)
	hdr := uint32(n)
	if discard {
		hdr |= rbDiscard
	}
	binary.LittleEndian.PutUint32(rec, hdr)
	binary.LittleEndian.PutUint32(rec[rbHdrSize:], uint32(bpf.OnceEventKindEVENT_FORK))
	binary.LittleEndian.PutUint64(rec[rbHdrSize+int(unsafe.Offsetof(ev.TsNs)):], ts)
	p := *f.prodPos
	for i, b := range rec {
		off := (p + uint64(i)) & f.mask
		f.data[off], f.data[off+uint64(f.size)] = b, b
	}
	*f.prodPos = p + (uint64(len(rec))+7)&^7
}

// drain reads m until every ring is empty: the records' times in order.
func drain(m *multiRing) []uint64 {
	var out []uint64
	var rec ringbuf.Record
	for {
		r := m.next()
		if r == nil {
			return out
		}
		r.take(&rec)
		out = append(out, recordTime(rec.RawSample))
	}
}

func TestMultiRingMerge(t *testing.T) {
	type rec struct {
		ts      uint64
		discard bool
	}
	for _, tc := range []struct {
		name  string
		rings [][]rec
		want  []uint64
	}{
		{"interleaved", [][]rec{{{1, false}, {4, false}, {5, false}}, {{2, false}, {3, false}, {6, false}}}, []uint64{1, 2, 3, 4, 5, 6}},
		// A ring's records stay in its order, times or not: a program
		// reserves after it takes its time, so two CPUs sharing a ring
		// may put a later time first.
		{"a ring's order kept", [][]rec{{{5, false}, {1, false}}, {{3, false}}}, []uint64{3, 5, 1}},
		{"discarded records skipped", [][]rec{{{1, true}, {2, false}}, {{3, true}}}, []uint64{2}},
		{"one ring empty", [][]rec{{}, {{7, false}, {8, false}}, {}}, []uint64{7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &multiRing{}
			for _, rs := range tc.rings {
				f := newFakeRing(4096)
				for _, r := range rs {
					f.push(r.ts, r.discard)
				}
				m.rings = append(m.rings, f.mappedRing)
			}
			if got := drain(m); !slices.Equal(got, tc.want) {
				t.Errorf("read %v, want %v", got, tc.want)
			}
			for i, r := range m.rings {
				if *r.consPos != *r.prodPos {
					t.Errorf("ring %d: consumer at %d, producer at %d: not all freed", i, *r.consPos, *r.prodPos)
				}
			}
		})
	}
}

// TestConsumerPositionBatched: the consumer position the kernel sees
// lags the records taken by less than the ring's batch, and catches up
// whenever the ring is seen empty (before the reader would wait); records
// pushed after the producer position was last read are found.
func TestConsumerPositionBatched(t *testing.T) {
	f := newFakeRing(1 << 16)
	m := &multiRing{rings: []*mappedRing{f.mappedRing}}
	var rec ringbuf.Record
	var taken []uint64
	for round := range 3 {
		for i := range 10 {
			f.push(uint64(round*10+i+1), false)
		}
		for range 10 {
			r := m.next()
			if r == nil {
				t.Fatalf("round %d: ring empty after %d records", round, len(taken))
			}
			r.take(&rec)
			taken = append(taken, recordTime(rec.RawSample))
			if lag := f.consAt - *f.consPos; lag >= f.batch {
				t.Fatalf("round %d: consumer position %d behind, batch %d", round, lag, f.batch)
			}
		}
		if round == 0 && *f.consPos == f.consAt {
			t.Errorf("every record taken was written out: no batching")
		}
		if m.next() != nil {
			t.Fatalf("round %d: a record past the ones pushed", round)
		}
		if *f.consPos != *f.prodPos {
			t.Errorf("round %d: seen empty, consumer at %d, producer at %d", round, *f.consPos, *f.prodPos)
		}
	}
	for i, ts := range taken {
		if ts != uint64(i+1) {
			t.Fatalf("read %v, want 1..30 in order", taken)
		}
	}
}

// TestMultiRingWraps: records that wrap around the end of a small ring
// read whole, many times round.
func TestMultiRingWraps(t *testing.T) {
	// Two records of a round fit; over the rounds they start anywhere.
	a, b := newFakeRing(512), newFakeRing(512)
	m := &multiRing{rings: []*mappedRing{a.mappedRing, b.mappedRing}}
	var ts uint64
	for round := range 50 {
		var want []uint64
		for i := range 1 + round%3 {
			ts++
			want = append(want, ts)
			if i%2 == 0 {
				a.push(ts, false)
			} else {
				b.push(ts, false)
			}
		}
		if got := drain(m); !slices.Equal(got, want) {
			t.Fatalf("round %d: read %v, want %v", round, got, want)
		}
	}
}

// TestMultiRingWatermark: a ring last seen empty before the time of the
// record about to go out is looked at again, and a record it got since,
// older, goes first; a ring seen empty after that time is not, and its
// later record (not one that can have come before in cause) follows.
func TestMultiRingWatermark(t *testing.T) {
	now := uint64(nanotime())
	for _, tc := range []struct {
		name    string
		emptyAt uint64
		want    []uint64
	}{
		{"seen empty before", now - 1000, []uint64{now - 500, now}},
		{"seen empty after", now + 1000, []uint64{now, now - 500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newFakeRing(4096), newFakeRing(4096)
			m := &multiRing{rings: []*mappedRing{a.mappedRing, b.mappedRing}}
			a.push(now, false)
			b.emptyAt = tc.emptyAt
			b.push(now-500, false)
			var rec ringbuf.Record
			var got []uint64
			for range 2 {
				r := m.next()
				if r == nil {
					t.Fatalf("read %v, then nothing", got)
				}
				r.take(&rec)
				got = append(got, recordTime(rec.RawSample))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("read %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRecordTimeEveryKind: every kind of record the kernel sends has its
// time where recordTime reads it. A kind without one would be merged out
// first, ahead of earlier records of the other rings.
func TestRecordTimeEveryKind(t *testing.T) {
	for k := bpf.OnceEventKindEVENT_OPEN; k <= bpf.OnceEventKindEVENT_OPEN_REPEAT; k++ {
		off := tsOffset[k]
		if off == 0 {
			t.Errorf("event kind %d: no time offset", k)
			continue
		}
		rec := make([]byte, off+8)
		binary.LittleEndian.PutUint32(rec, uint32(k))
		binary.LittleEndian.PutUint64(rec[off:], 12345)
		if got := recordTime(rec); got != 12345 {
			t.Errorf("event kind %d: recordTime %d, want 12345", k, got)
		}
	}
}
