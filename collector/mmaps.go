package collector

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/stack"
)

// MapsSink receives the mapping events of every process, in time order
// within one Drain (t is CLOCK_MONOTONIC nanoseconds, the clock of
// bpf_ktime_get_ns). *callstack.Maps is one.
type MapsSink interface {
	// Mmap: process pid mapped m (executable) at t.
	Mmap(pid int, t uint64, m stack.Mapping)
	// Exec: process pid executed a new program at t; its earlier
	// mappings are gone. Its new program's mappings follow.
	Exec(pid int, t uint64)
	// Fork: process parent made process child at t, which has the
	// parent's mappings. Threads are not reported.
	Fork(parent, child int, t uint64)
	// Exit: process pid exited at t.
	Exit(pid int, t uint64)
}

// MapsOptions tune a MapsReader. The zero value is fine.
type MapsOptions struct {
	// Pages is the size of each CPU's ring in pages, a power of two.
	// Default 64 (256 KiB with 4 KiB pages).
	Pages int
	// Inherited: the records of the calling thread and of what it
	// forks from then on (and they fork, and so on), not of every
	// process: the events are the thread's, inherited at each fork, and
	// write to these rings. Call it on a locked OS thread that then
	// forks the command (see session.Stacks.Launch): other processes'
	// mappings, however many they make, neither cost the reader nor
	// crowd the command's records out of the rings.
	Inherited bool
}

// MapsReader reads the kernel's record of every executable mapping as it
// is made, system-wide: one perf software dummy event per online CPU,
// counting nothing, whose ring carries the side-band records perf itself
// uses to symbolize: MMAP2 (path, device and inode or, kernel 5.12 and
// later, the file's build-id), COMM with the exec bit, FORK, EXIT.
//
// Why these records and not /proc/PID/maps: each is emitted at the very
// mmap, exec or fork, in the process's own context, so a process that
// lived a millisecond has its mappings all the same, timestamped on the
// clock the BPF snapshots use; /proc/PID/maps read at exec misses later
// mappings, read at each call is racy, and is gone once the process has
// exited. Processes that were running before the reader opened are not
// reported: the sink reads their /proc/PID/maps when first asked.
//
// A record is in its ring before the mmap, exec or fork that made it
// returns, so a snapshot taken at a later call has its mappings there:
// read a batch of snapshots, then Drain, then look their mappings up.
// A ring that overflows loses records (Lost counts them): drain often.
// Needs CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid
// at most 0. Drain and Close serialize.
type MapsReader struct {
	mu       sync.Mutex
	rings    []*perfRing
	buildIDs bool
	lost     atomic.Uint64
	pending  []mapsRecord
	bad      uint64
}

// perfRing is one CPU's event and its mmap'd ring.
type perfRing struct {
	cpu  int
	fd   int
	mem  []byte
	meta *unix.PerfEventMmapPage
	data []byte
	tmp  []byte // a record that wraps around the ring's end, copied
}

// perfBitBuildID is perf_event_attr.build_id (bit 34 of the flags;
// golang.org/x/sys names bits up to 27 only).
const perfBitBuildID = 1 << 34

// mapsSampleType is what every record's trailing sample_id holds.
const mapsSampleType = unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME

// OpenMaps opens a reader on every online CPU. It reports from now on.
func OpenMaps(opts MapsOptions) (*MapsReader, error) {
	pages := opts.Pages
	if pages <= 0 {
		pages = 64
	}
	if pages&(pages-1) != 0 {
		return nil, fmt.Errorf("maps reader: %d pages per CPU is not a power of two", pages)
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("maps reader: %w", err)
	}
	r := &MapsReader{buildIDs: true}
	for _, cpu := range cpus {
		rg, err := openRing(cpu, pages, r.buildIDs, opts.Inherited)
		if err != nil && r.buildIDs && len(r.rings) == 0 && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG)) {
			// Before 5.12: no build-ids, device and inode only.
			r.buildIDs = false
			rg, err = openRing(cpu, pages, false, opts.Inherited)
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		r.rings = append(r.rings, rg)
	}
	return r, nil
}

// openRing opens CPU cpu's event and maps its ring: system-wide, or with
// inherited the calling thread's and its future children's (per CPU, as
// the kernel maps no ring of an inherited event on every CPU at once).
func openRing(cpu, pages int, buildID, inherited bool) (*perfRing, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Sample_type: mapsSampleType,
		// mmap with mmap2: executable mappings, as MMAP2 records; no
		// mmap_data, so data mappings are not reported.
		Bits: unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec |
			unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitUseClockID | unix.PerfBitWatermark,
		Clockid: unix.CLOCK_MONOTONIC,
	}
	if buildID {
		attr.Bits |= perfBitBuildID
	}
	pid, scope := -1, "a system-wide perf event"
	if inherited {
		pid, scope = 0, "a perf event on every CPU"
		attr.Bits |= unix.PerfBitInherit
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	pageSize := os.Getpagesize()
	// Wake a poller when the ring is half full (nobody polls yet: Drain
	// is called on the session's tick).
	attr.Wakeup = uint32(pages * pageSize / 2)
	fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("maps reader: perf_event_open on CPU %d: %w: %s needs CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid at most 0 (it is %s)",
				cpu, err, scope, paranoid())
		}
		return nil, fmt.Errorf("maps reader: perf_event_open on CPU %d: %w", cpu, err)
	}
	mem, err := unix.Mmap(fd, 0, (1+pages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("maps reader: mmap the ring of CPU %d (%d pages): %w", cpu, pages, err)
	}
	rg := &perfRing{cpu: cpu, fd: fd, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))}
	off, size := rg.meta.Data_offset, rg.meta.Data_size
	if size == 0 { // before 4.1: the data follows the first page
		off, size = uint64(pageSize), uint64(pages*pageSize)
	}
	rg.data = mem[off : off+size]
	return rg, nil
}

func paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "unreadable"
	}
	return strings.TrimSpace(string(b))
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,6").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("cpu list %q: no CPU", s)
	}
	return cpus, nil
}

// BuildIDs says whether the kernel puts build-ids in the MMAP2 records
// (5.12 and later). Without, a Mapping has the device and inode only.
func (r *MapsReader) BuildIDs() bool { return r.buildIDs }

// Lost is the count of records the kernel dropped because a ring was
// full (the caller adds it to its counters, as maps_lost).
func (r *MapsReader) Lost() uint64 { return r.lost.Load() }

// Drain reads every record pending on every CPU without blocking and
// gives them to sink in time order. It returns how many it gave.
func (r *MapsReader) Drain(sink MapsSink) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rings == nil {
		return 0, errors.New("maps reader: closed")
	}
	recs := r.pending[:0]
	for _, rg := range r.rings {
		rg.read(func(rec []byte) {
			if mr, ok := r.parse(rec); ok {
				recs = append(recs, mr)
			}
		})
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].t < recs[j].t })
	for i := range recs {
		mr := &recs[i]
		switch mr.kind {
		case unix.PERF_RECORD_MMAP2:
			sink.Mmap(mr.pid, mr.t, mr.m)
		case unix.PERF_RECORD_COMM:
			sink.Exec(mr.pid, mr.t)
		case unix.PERF_RECORD_FORK:
			sink.Fork(mr.ppid, mr.pid, mr.t)
		case unix.PERF_RECORD_EXIT:
			sink.Exit(mr.pid, mr.t)
		}
	}
	n := len(recs)
	clear(recs)
	r.pending = recs[:0]
	return n, nil
}

// Close releases the rings and events.
func (r *MapsReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, rg := range r.rings {
		if err := unix.Munmap(rg.mem); err != nil {
			errs = append(errs, err)
		}
		if err := unix.Close(rg.fd); err != nil {
			errs = append(errs, err)
		}
	}
	r.rings = nil
	return errors.Join(errs...)
}

// read hands fn each record between the ring's tail and head, then frees
// them. The slice is valid during the call only.
func (rg *perfRing) read(fn func(rec []byte)) {
	head := atomic.LoadUint64(&rg.meta.Data_head) // acquire: the records before head are written
	tail := atomic.LoadUint64(&rg.meta.Data_tail)
	size := uint64(len(rg.data))
	for tail+8 <= head {
		off := tail % size // records are 8-byte aligned: a header never wraps
		n := uint64(binary.NativeEndian.Uint16(rg.data[off+6:]))
		if n < 8 || tail+n > head {
			tail = head // corrupt: give the rest up
			break
		}
		var rec []byte
		if off+n <= size {
			rec = rg.data[off : off+n]
		} else {
			rg.tmp = append(rg.tmp[:0], rg.data[off:]...)
			rg.tmp = append(rg.tmp, rg.data[:off+n-size]...)
			rec = rg.tmp
		}
		fn(rec)
		tail += n
	}
	atomic.StoreUint64(&rg.meta.Data_tail, tail) // release: the kernel may reuse what was read
}

// mapsRecord is one decoded record.
type mapsRecord struct {
	kind uint32
	t    uint64
	pid  int // the process (MMAP2, COMM, EXIT) or the child (FORK)
	ppid int // FORK: the parent
	m    stack.Mapping
}

// parse decodes a record; ok is false for a record that is not given to
// the sink (a LOST record counts, a thread's fork or exit, a rename).
func (r *MapsReader) parse(rec []byte) (mr mapsRecord, ok bool) {
	le := binary.NativeEndian
	typ, misc := le.Uint32(rec), le.Uint16(rec[4:])
	body := rec[8:]
	// sample_id (TID, TIME) ends every record but samples.
	if len(body) < 16 {
		r.bad++
		return mr, false
	}
	mr.kind = typ
	mr.t = le.Uint64(body[len(body)-8:])
	body = body[:len(body)-16]
	switch typ {
	case unix.PERF_RECORD_LOST:
		if len(body) >= 16 {
			r.lost.Add(le.Uint64(body[8:]))
		}
		return mr, false
	case unix.PERF_RECORD_MMAP2:
		m, pid, ok := parseMmap2(body, misc)
		if !ok {
			r.bad++
			return mr, false
		}
		if m.Inode == 0 && m.BuildID != "" && !m.Deleted && strings.HasPrefix(m.Path, "/") {
			// The build-id layout carries no device and inode: the
			// mapped file's, through /proc/PID/map_files while the
			// mapping lives (stat opens nothing). Not the host's file at
			// the path: in another mount namespace it is another file.
			// Without them the mapping is known by its build-id. The
			// attributes the kernel has cached (AT_STATX_DONT_SYNC): a
			// stat may otherwise ask a FUSE server, which may never
			// answer, and this is the drain's path.
			var stx unix.Statx_t
			if unix.Statx(unix.AT_FDCWD, fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End),
				unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &stx) == nil {
				m.Dev, m.Inode = unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino
			}
		}
		mr.pid, mr.m = pid, m
		return mr, true
	case unix.PERF_RECORD_COMM:
		if misc&unix.PERF_RECORD_MISC_COMM_EXEC == 0 || len(body) < 8 {
			return mr, false // a rename (prctl), not an exec
		}
		mr.pid = int(le.Uint32(body))
		return mr, true
	case unix.PERF_RECORD_FORK, unix.PERF_RECORD_EXIT:
		if len(body) < 16 {
			r.bad++
			return mr, false
		}
		pid, ppid, tid := int(le.Uint32(body)), int(le.Uint32(body[4:])), int(le.Uint32(body[8:]))
		if typ == unix.PERF_RECORD_FORK {
			if pid == ppid {
				return mr, false // a new thread
			}
			mr.pid, mr.ppid = pid, ppid
			return mr, true
		}
		if pid != tid {
			return mr, false // a thread's exit
		}
		mr.pid = pid
		return mr, true
	}
	return mr, false
}

// parseMmap2 decodes the body of a MMAP2 record (its sample_id cut):
//
//	u32 pid, tid; u64 addr, len, pgoff;
//	u32 maj, min; u64 ino, ino_generation;   (misc without MMAP_BUILD_ID)
//	u8 build_id_size, 3 reserved, build_id[20];  (misc with it)
//	u32 prot, flags; char filename[] (NUL-padded to 8 bytes)
func parseMmap2(b []byte, misc uint16) (m stack.Mapping, pid int, ok bool) {
	le := binary.NativeEndian
	if len(b) < 64 {
		return m, 0, false
	}
	pid = int(le.Uint32(b))
	addr, n, pgoff := le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	m = stack.Mapping{Start: addr, End: addr + n, FileOffset: pgoff}
	if misc&unix.PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
		size := int(b[32])
		if size > 20 {
			return m, 0, false
		}
		if size > 0 {
			m.BuildID = hex.EncodeToString(b[36 : 36+size])
		}
	} else {
		m.Dev = unix.Mkdev(le.Uint32(b[32:]), le.Uint32(b[36:]))
		m.Inode = le.Uint64(b[40:])
	}
	prot, flags := le.Uint32(b[56:]), le.Uint32(b[60:])
	perms := []byte("---p")
	if prot&unix.PROT_READ != 0 {
		perms[0] = 'r'
	}
	if prot&unix.PROT_WRITE != 0 {
		perms[1] = 'w'
	}
	if prot&unix.PROT_EXEC != 0 {
		perms[2] = 'x'
	}
	if flags&unix.MAP_SHARED != 0 {
		perms[3] = 's'
	}
	m.Perms = string(perms)
	name := b[64:]
	if i := strings.IndexByte(string(name), 0); i >= 0 {
		name = name[:i]
	}
	m.Path = string(name)
	switch {
	case m.Path == "//anon":
		m.Path = "" // anonymous executable memory (JIT code)
	case strings.HasPrefix(m.Path, "/"):
		if p, del := strings.CutSuffix(m.Path, " (deleted)"); del {
			m.Path, m.Deleted = p, true
		}
	}
	return m, pid, true
}
