package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
)

// Rings per CPU group.
//
// Every producer of one BPF ring buffer reserves its records under the
// ring's one spinlock, so the cost of a record grows with the CPUs that
// write the ring at once; with several rings each CPU writes one of them
// (CPU c the ring c mod N, bpf/emit.bpf.h). Records of one ring are in
// the order they were reserved, but a task that migrates between CPUs
// writes its next records to another ring, and a forked child may run on
// another CPU than the fork that made it: the rings are merged here back
// into one stream in an order the engine can use.
//
// The merge is by the kernel timestamp each record carries (the time its
// program took, bpf_ktime_get_ns, before the record was reserved), kept in
// the order of each ring, as perf's ordered events are, rather than a
// per-task sequence number: what the engine needs in order is not only one
// task's records but those of several tasks (a fork before its child's
// first record, an exit before the next process with the same pid, an
// io_uring submission before its completion in a worker thread), which no
// per-task number orders, and every record has a timestamp already. The
// rule is a watermark: the oldest record at the rings' heads goes out only
// once every ring with nothing to read was last seen empty at or after that
// record's time. A record B that follows another, A, in cause (A was
// written before B's program began) has a later time; A was then visible
// in its ring when B was read, so a ring seen empty after B's time holds
// no A still to come, and a ring that holds A has it (or a record written
// before it) at its head, older than B. Records that are not ordered by
// cause may come out in either order, as they may from one ring.

// DefaultRingCPUs is how many CPUs share a ring by default, and up to how
// many CPUs one ring serves them all (see DefaultRings).
const DefaultRingCPUs = 4

// MaxDefaultRings bounds the rings DefaultRings gives: past 128 CPUs more
// than DefaultRingCPUs share a ring, which keeps the rings' memory (see
// RingSizeFor) and the reader's rings to look at bounded.
const MaxDefaultRings = 32

// DefaultRings is the number of rings for ncpu CPUs: one per
// DefaultRingCPUs CPUs, rounded up (one up to DefaultRingCPUs), at most
// MaxDefaultRings.
func DefaultRings(ncpu int) int {
	return min(max((ncpu+DefaultRingCPUs-1)/DefaultRingCPUs, 1), MaxDefaultRings)
}

// MinDefaultRingSize is the least RingSizeFor gives each ring: a ring
// below it fills between two of the reader's polls, and wakes the reader
// at every record (see Options.BatchWakeups).
const MinDefaultRingSize = 1 << 20

// RingSizeFor is the size of each of n rings when none was asked for,
// where one ring would get single: single each up to 4 rings, then a
// share of 4 × single (a power of two, at least MinDefaultRingSize), so
// that the total stays bounded however many CPUs there are: 32 MiB for
// the default 8 MiB.
func RingSizeFor(single, n int) int {
	if n <= 4 {
		return single
	}
	share := 4 * single / n
	return max(1<<(bits.Len(uint(share))-1), min(single, MinDefaultRingSize))
}

// CPUCount is the number of CPUs the kernel may run a program on (the
// possible CPUs), which DefaultRings is given; runtime.NumCPU when the
// kernel does not say.
func CPUCount() int {
	if n, err := ebpf.PossibleCPU(); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// ringReader is what Next reads records from: multiRing, over one ring or
// several merged.
type ringReader interface {
	ReadInto(rec *ringbuf.Record) error
	SetDeadline(t time.Time)
	Flush() error
	Close() error
}

// The timestamp of a record, by kind: where its program's time is.
var tsOffset = func() [16]int {
	var o [16]int
	var open bpf.OnceOpenEvent
	var exec bpf.OnceExecEvent
	var proc bpf.OnceProcEvent
	var sub bpf.OnceUringSubmitEvent
	var comp bpf.OnceUringCompleteEvent
	var repeat bpf.OnceOpenRepeatEvent
	o[bpf.OnceEventKindEVENT_OPEN] = int(unsafe.Offsetof(open.ExitNs))
	o[bpf.OnceEventKindEVENT_OPEN_REPEAT] = int(unsafe.Offsetof(repeat.ExitNs))
	o[bpf.OnceEventKindEVENT_KEPT_STACK] = int(unsafe.Offsetof(open.ExitNs))
	o[bpf.OnceEventKindEVENT_EXEC] = int(unsafe.Offsetof(exec.ExitNs))
	o[bpf.OnceEventKindEVENT_EXEC_ARGS] = int(unsafe.Offsetof(exec.ExitNs))
	for _, k := range []bpf.OnceEventKind{bpf.OnceEventKindEVENT_FORK, bpf.OnceEventKindEVENT_EXIT, bpf.OnceEventKindEVENT_IMAGE, bpf.OnceEventKindEVENT_UNSENT} {
		o[k] = int(unsafe.Offsetof(proc.TsNs))
	}
	o[bpf.OnceEventKindEVENT_URING_SUBMIT] = int(unsafe.Offsetof(sub.EnterNs))
	o[bpf.OnceEventKindEVENT_URING_COMPLETE] = int(unsafe.Offsetof(comp.ExitNs))
	return o
}()

// recordTime is the kernel time of a record, 0 when it has none (too
// short, an unknown kind: it goes out first and fails to decode).
func recordTime(b []byte) uint64 {
	if len(b) < 4 {
		return 0
	}
	k := binary.LittleEndian.Uint32(b)
	if k >= uint32(len(tsOffset)) || tsOffset[k] == 0 || len(b) < tsOffset[k]+8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b[tsOffset[k]:])
}

// nanotime is CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns, read
// without a system call.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

const (
	rbBusy    = 1 << 31 // BPF_RINGBUF_BUSY_BIT: reserved, not yet committed
	rbDiscard = 1 << 30 // BPF_RINGBUF_DISCARD_BIT
	rbHdrSize = 8
)

// mappedRing is one BPF ring buffer mapped into this process: its
// consumer position (ours to write), its producer position and its data,
// mapped twice in a row by the kernel so that a record that wraps is
// contiguous.
type mappedRing struct {
	cons, prod []byte // the mappings
	consPos    *uint64
	prodPos    *uint64
	data       []byte
	mask       uint64

	// The record at the head, once seen (has): its bytes in data, its
	// length with the header's padding, and its time.
	has   bool
	start uint64 // data offset of its sample
	n     int    // sample length
	adv   uint64 // bytes to advance the consumer by
	ts    uint64
	// emptyAt: the monotonic time of the last look that found the ring
	// empty (taken before the look); 0 when not known (read from since).
	emptyAt uint64

	// The positions as this reader knows them. Each BPF program that
	// reserves a record reads the consumer position, and each record
	// committed writes the producer position: a reader that wrote the one
	// and read the other at every record pulled both cache lines to its
	// CPU and back, a miss in the producer's program for each record.
	// consAt runs ahead of what the kernel sees (consPub) by less than
	// batch bytes, and is written out whenever the ring is seen empty,
	// before any wait: the kernel wakes a reader only when the consumer
	// position it sees has caught up. The producer position is read again
	// only once the records known to be there (up to prodSeen) are taken.
	consAt, consPub, prodSeen uint64
	batch                     uint64
}

// maxConsumerLag bounds how far behind its reads a ring's consumer
// position may be written: the room it keeps from the producers.
const maxConsumerLag = 64 << 10

// consumerLag is the lag for a ring of size bytes: a small ring's room
// matters more.
func consumerLag(size uint64) uint64 {
	return min(maxConsumerLag, size/32)
}

func mapRing(m *ebpf.Map) (*mappedRing, error) {
	page := os.Getpagesize()
	size := int(m.MaxEntries())
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map ring consumer page: %w", err)
	}
	prod, err := unix.Mmap(m.FD(), int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		_ = unix.Munmap(cons)
		return nil, fmt.Errorf("map ring data: %w", err)
	}
	r := &mappedRing{
		cons: cons, prod: prod,
		consPos: (*uint64)(unsafe.Pointer(&cons[0])),
		prodPos: (*uint64)(unsafe.Pointer(&prod[0])),
		data:    prod[page:],
		mask:    uint64(size - 1),
		batch:   consumerLag(uint64(size)),
	}
	r.consAt = atomic.LoadUint64(r.consPos)
	r.consPub = r.consAt
	return r, nil
}

func (r *mappedRing) unmap() error {
	return errors.Join(unix.Munmap(r.prod), unix.Munmap(r.cons))
}

// peek finds the record at the head, skipping discarded ones: false when
// the ring is empty. A record reserved but not yet committed is waited
// for: the ones behind it may be older than another ring's head.
func (r *mappedRing) peek() bool {
	if r.has {
		return true
	}
	c := r.consAt
	for spins := 0; ; {
		if c >= r.prodSeen {
			r.prodSeen = atomic.LoadUint64(r.prodPos)
			if c >= r.prodSeen {
				r.publish()
				return false
			}
		}
		off := c & r.mask
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[off])))
		if hdr&rbBusy != 0 {
			if spins++; spins > 64 {
				runtime.Gosched()
			}
			continue
		}
		n := hdr &^ (rbBusy | rbDiscard)
		adv := (uint64(n) + rbHdrSize + 7) &^ 7
		if hdr&rbDiscard != 0 {
			c += adv
			r.consAt = c
			continue
		}
		r.has, r.start, r.n, r.adv = true, off+rbHdrSize, int(n), adv
		r.ts = recordTime(r.data[r.start : r.start+uint64(n)])
		return true
	}
}

// take copies the head record into rec and frees its room in the ring.
func (r *mappedRing) take(rec *ringbuf.Record) {
	if cap(rec.RawSample) < r.n {
		rec.RawSample = make([]byte, r.n)
	}
	rec.RawSample = rec.RawSample[:r.n]
	copy(rec.RawSample, r.data[r.start:r.start+uint64(r.n)])
	r.consAt += r.adv
	if r.consAt-r.consPub >= r.batch {
		r.publish()
	}
	rec.Remaining = int(r.prodSeen - r.consAt)
	r.has, r.emptyAt = false, 0
}

// publish writes the consumer position for the kernel: the room of the
// records taken is free from now on.
func (r *mappedRing) publish() {
	if r.consPub != r.consAt {
		atomic.StoreUint64(r.consPos, r.consAt)
		r.consPub = r.consAt
	}
}

// multiRing reads several rings as one stream, merged by time (see the
// comment at the top of this file). ReadInto, SetDeadline, Flush and
// Close behave as ringbuf.Reader's.
type multiRing struct {
	mu       sync.Mutex
	rings    []*mappedRing
	epfd     int
	efd      int // eventfd: Flush and Close wake a waiting ReadInto
	deadline time.Time
	flushed  atomic.Bool
	closed   atomic.Bool
	events   []unix.EpollEvent
}

func newMultiRing(maps []*ebpf.Map) (_ *multiRing, err error) {
	m := &multiRing{epfd: -1, efd: -1}
	defer func() {
		if err != nil {
			m.free()
		}
	}()
	if m.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if m.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	add := func(fd, i int) error {
		return unix.EpollCtl(m.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)})
	}
	if err := add(m.efd, -1); err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	for i, rm := range maps {
		r, err := mapRing(rm)
		if err != nil {
			return nil, err
		}
		m.rings = append(m.rings, r)
		if err := add(rm.FD(), i); err != nil {
			return nil, fmt.Errorf("epoll: %w", err)
		}
	}
	m.events = make([]unix.EpollEvent, len(maps)+1)
	return m, nil
}

func (m *multiRing) SetDeadline(t time.Time) {
	m.mu.Lock()
	m.deadline = t
	m.mu.Unlock()
}

func (m *multiRing) wake() error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(m.efd, one[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("wake ring reader: %w", err)
	}
	return nil
}

// Flush makes ReadInto return what the rings hold, then ErrFlushed.
func (m *multiRing) Flush() error {
	m.flushed.Store(true)
	return m.wake()
}

func (m *multiRing) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	err := m.wake()
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(err, m.free())
}

func (m *multiRing) free() error {
	var errs []error
	for _, r := range m.rings {
		errs = append(errs, r.unmap())
	}
	m.rings = nil
	for _, fd := range []int{m.epfd, m.efd} {
		if fd >= 0 {
			errs = append(errs, unix.Close(fd))
		}
	}
	m.epfd, m.efd = -1, -1
	return errors.Join(errs...)
}

// ReadInto reads the next record of the merged stream into rec.
func (m *multiRing) ReadInto(rec *ringbuf.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if m.closed.Load() {
			return os.ErrClosed
		}
		if r := m.next(); r != nil {
			r.take(rec)
			return nil
		}
		if m.flushed.Swap(false) {
			m.drainEventfd()
			return ringbuf.ErrFlushed
		}
		if err := m.wait(); err != nil {
			return err
		}
	}
}

// next is the ring whose head goes out now, nil when every ring is empty.
func (m *multiRing) next() *mappedRing {
	for {
		var best *mappedRing
		for _, r := range m.rings {
			// A ring just read from is looked at first without a
			// clock: it is the one most likely to have more.
			if !r.has && r.emptyAt == 0 {
				r.peek()
			}
			if r.has && (best == nil || r.ts < best.ts) {
				best = r
			}
		}
		// The rings seen empty before best's time (every ring, when
		// none has a record) are looked at again; now is read before
		// the look, and is after best's time (best was written before
		// it was read). A ring seen empty since then can't hold a
		// record that must go before best.
		again := false
		var now uint64
		for _, r := range m.rings {
			if r.has || (best != nil && r.emptyAt >= best.ts) {
				continue
			}
			if now == 0 {
				now = uint64(nanotime())
			}
			if r.peek() {
				again = true
			} else {
				r.emptyAt = now
			}
		}
		if !again {
			return best
		}
	}
}

func (m *multiRing) drainEventfd() {
	var b [8]byte
	_, _ = unix.Read(m.efd, b[:])
}

// wait blocks until a ring may have a record, Flush or Close was called,
// or the deadline passed (os.ErrDeadlineExceeded).
func (m *multiRing) wait() error {
	timeout := -1
	if !m.deadline.IsZero() {
		d := time.Until(m.deadline)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		// Rounded up: a wait of 0 ms would spin until the deadline.
		timeout = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	_, err := unix.EpollWait(m.epfd, m.events, timeout)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("wait for ring buffers: %w", err)
	}
	return nil
}
