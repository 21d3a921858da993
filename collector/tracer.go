package collector

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"

	"github.com/oncetool/once/trace"
)

// DefaultRingBufferSize holds about 60,000 typical open events: enough for a
// burst while the reader is descheduled.
const DefaultRingBufferSize = 8 << 20

// Options configure a Tracer.
type Options struct {
	// Tracked limits tracing to the processes put in the tracked set (and
	// everything they fork). Without it every process is traced.
	Tracked bool
	// RingBufferSize in bytes, of each ring: a power of two, at least
	// one page. Zero means RingSizeFor(DefaultRingBufferSize, rings).
	RingBufferSize int
	// Rings is how many ring buffers the CPUs write to: CPU c writes
	// ring c mod Rings, and Next merges them back into one stream (see
	// rings.go). Zero means DefaultRings(CPUCount()); more than CPUCount
	// is CPUCount. Each ring is RingBufferSize bytes.
	Rings int
	// Filter selects the processes reported, in the kernel. Its Pids go
	// in the tracked set (as Follow does when Filter.Tree, without their
	// future children otherwise), which implies Tracked.
	Filter Filter
	// RedactArgs replaces every argv entry after argv[0] with RedactArg
	// of it as each record is decoded, before any consumer sees it: no
	// report, event line or JSON line can hold an argument's value.
	RedactArgs bool
	// BatchWakeups lets the kernel side wake the reader only when a
	// sixteenth of the ring is waiting (the record that reaches it forces
	// the wakeup, bpf/emit.bpf.h), instead of on every event. The reader
	// must then poll with a short deadline (the session's loop does): it
	// saves an interrupt and a context switch per event on a busy system.
	BatchWakeups bool
	// SendOpensPerKind bounds the successful opens sent per kind (one
	// image, one file, one syscall, one set of flags): once a thread
	// repeats an open, the kernel counts the repeats, sends the first
	// SendOpensPerKind of them and only counts the rest, which Next
	// returns as EventTally events (see SyncTallies). At least that many
	// opens of a kind are sent, more when several threads open it or a
	// thread opens other files in between. Zero sends every open: what a
	// consumer that shows each call (an event stream) needs.
	SendOpensPerKind int
	// FirstOpensUnsent has the kernel count, not send, a successful open
	// of a file its image has not opened before, unless the open may end
	// a failed probe (its basename failed to open before). What reaches
	// Next is then what the findings need: every failure, every repeat
	// (StSeenBefore on the first one sent when the first open was not),
	// and each thread's count of the opens not sent (OpenRecord.Unsent,
	// EventUnsent). Sending a first open, with its path resolved, is most
	// of what tracing an open costs. For a consumer that wants findings,
	// not every call; needs SendOpensPerKind > 0.
	//
	// With StackSize and kept snapshots (KeptStacks), such a first open
	// is counted all the same, and its call (its fields and name, no
	// path) kept with its snapshot: should the image open the file
	// again, it comes after that repeat as an EventKeptStack marked
	// OpenRecord.FirstCall, so that a duplicate's first call is listed
	// with its stack. A first open whose name is longer than 255 bytes,
	// or that could not be kept, is sent as without FirstOpensUnsent.
	FirstOpensUnsent bool
	// TallySlots sizes the kernel's map of tallied kinds (0: 65,536).
	// Least recently used kinds are evicted when it is full; one evicted
	// before it was read back is counted in Counters.TalliesEvicted.
	TallySlots int
	// StackSize, when not zero, has the kernel take a snapshot of the
	// caller's user stack at every open and exec of a traced process
	// that it sends (trace.Event.Snapshot): the registers, the kernel's
	// frame-pointer walk and StackSize bytes of the stack from SP upward
	// (rounded up to a multiple of 8; at most MaxStackSize). Opens are
	// snapshotted at their exit, execs at their entry (see
	// docs/hooks.md). A snapshot's Window aliases the ring record: valid
	// until the next call to Next. A first open's snapshot is kept in
	// the kernel and sent only if the file is opened again (KeptStacks);
	// with FirstOpensUnsent its call is kept with it. Opens tallied in
	// the kernel (SendOpensPerKind) have none. x86-64 only; needs Linux 5.19 (ring buffer dynptrs).
	StackSize int
	// KeptStacks is how many snapshots of first opens the kernel holds
	// at a time, with StackSize: an image's first open of a file is
	// sent without its snapshot (trace.StStackKept), which follows as an
	// EventKeptStack only if the image opens the file again; the oldest
	// is overwritten first. Most files are opened once: sending each
	// first open's snapshot was most of what stacks cost. 0:
	// DefaultKeptStacks; negative: none held, every open goes with its
	// snapshot (an event stream that shows each call's stack).
	KeptStacks int
	// LinkCacheDir keeps what loading resolves from the kernel's BTF,
	// per kernel build, so that later starts skip decoding it (most of
	// start-up). Empty: no cache. Only a directory that no one
	// but this user can write is used.
	LinkCacheDir string
}

// Hook is one attachment point and whether it could be attached.
type Hook struct {
	Name     string // e.g. "syscalls:sys_enter_openat", "raw_tp:sched_process_fork"
	Attached bool
	Err      error // why not, when !Attached
}

// Tracer owns the loaded BPF objects, their links and the ring buffer
// reader. Close releases all of them; every link is tied to a file
// descriptor of this process, so even a SIGKILLed once leaves nothing
// attached.
type Tracer struct {
	objs  bpf.OnceObjects
	links []attachedLink
	// released: the perf events Detach left closing, their result
	// (see Released); nil if none.
	released chan error
	reader   ringReader
	rec      ringbuf.Record
	// closedAfterExits: the ring read to its end, Next returned the
	// exits that released first; it says ErrClosed once they are read.
	closedAfterExits bool
	// lastTs: the kernel time of the last record read while exits were
	// held (releaseExits).
	lastTs uint64
	// rings: the ring buffers, rings[0] objs.Events; the others made
	// by Open, closed by Close. CPU c writes rings[c % len(rings)].
	rings  []*ebpf.Map
	hooks  []Hook
	redact bool
	// startup: how long each part of Open took (Startup).
	startup []Phase

	tallies tallies
	sendMax uint64 // Options.SendOpensPerKind
	// tracefsDev is tracefs's device (userspace encoding; 0: unknown):
	// its files' lookups are named by path (sharedIno).
	tracefsDev uint64
	stackSize  int // Options.StackSize, as rounded

	link     linkState
	linkFile string // the cache file linked from (link == linkCached)
	byCgroup bool   // Filter.CgroupIDs: cgroup_mkdir attached
	// Filter.CgroupPath, and the cgroup the kernel's filter holds now
	// (its inode number): see FollowCgroupPath.
	cgroupPath string
	cgroupIno  uint64
	cgroupGone bool
	rawSched   bool // sched programs loaded as raw tracepoints, not tp_btf
	// selfKnown: self_tgid is once's tgid as the kernel knows it (see
	// selfTgid); false only in a pid namespace of its own where the
	// kernel could not be asked, where once's own calls are traced.
	selfKnown bool
	selfTgid  uint32

	execArgs map[uint32]execArgs  // by the tid that called exec; see joinExecArgs
	uring    map[uint64]uringOpen // io_uring opens submitted, by request; see joinUring
	uringOn  bool                 // both io_uring hooks attached
	half     uringHalf            // the last io_uring half decoded
	repeats  repeats              // each thread's last open, for its repeats
	// The kernel may send repeats (repeats_on in bpf/repeat.bpf.h):
	// every open sent, no stacks, BTF casts.
	repeatsOn bool
	// execArgsSeen, set only by tests, sees each exec's strings record
	// before it is joined to its exit's (SetExecArgsSeen).
	execArgsSeen func(*trace.Event)
	// repeatSeen, set only by tests, sees each open that came as a
	// repeat record (EVENT_OPEN_REPEAT), once expanded.
	repeatSeen func(*trace.Event)
}

type attachedLink struct {
	link.Link
	enter bool // a sys_enter_* program: detached last
	// perf: a syscall tracepoint's perf event, which Detach closes
	// apart from the link (see tracepointLink); -1 for the others.
	perf int
}

// attachHook, when set (by tests only), runs before each attachment with
// its name ("syscalls:sys_enter_openat", "raw_tp:sched_process_fork"); an
// error it returns is taken as that attachment's error. It lets a test
// fail an attachment midway, or make an optional tracepoint missing.
var attachHook func(name string) error

// specHook, when set (by tests only), sees the spec just before it is
// loaded, and may break it.
var specHook func(spec *ebpf.CollectionSpec)

type attachment struct {
	group, name string
	prog        func(*bpf.OncePrograms) *ebpf.Program
	optional    bool // absent on some architectures (arm64 has no open/creat)
}

var syscallHooks = []attachment{
	{"syscalls", "sys_enter_open", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterOpen }, true},
	{"syscalls", "sys_exit_open", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitOpen }, true},
	{"syscalls", "sys_enter_creat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterCreat }, true},
	{"syscalls", "sys_exit_creat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitOpen }, true},
	{"syscalls", "sys_enter_openat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterOpenat }, false},
	{"syscalls", "sys_exit_openat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitOpen }, false},
	{"syscalls", "sys_enter_openat2", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterOpenat2 }, true},
	{"syscalls", "sys_exit_openat2", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitOpen }, true},
	{"syscalls", "sys_enter_execve", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterExec }, false},
	{"syscalls", "sys_exit_execve", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitExec }, false},
	{"syscalls", "sys_enter_execveat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterExec }, true},
	{"syscalls", "sys_exit_execveat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitExec }, true},
	// Lookups (bpf/stat.bpf.h): stat and lstat, and access, exist on
	// x86-64 only.
	{"syscalls", "sys_enter_newfstatat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterNewfstatat }, false},
	{"syscalls", "sys_exit_newfstatat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, false},
	{"syscalls", "sys_enter_statx", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterStatx }, false},
	{"syscalls", "sys_exit_statx", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, false},
	{"syscalls", "sys_enter_newstat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterNewstat }, true},
	{"syscalls", "sys_exit_newstat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, true},
	{"syscalls", "sys_enter_newlstat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterNewlstat }, true},
	{"syscalls", "sys_exit_newlstat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, true},
	{"syscalls", "sys_enter_access", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterAccess }, true},
	{"syscalls", "sys_exit_access", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, true},
	{"syscalls", "sys_enter_faccessat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterFaccessat }, false},
	{"syscalls", "sys_exit_faccessat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, false},
	{"syscalls", "sys_enter_faccessat2", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterFaccessat2 }, true},
	{"syscalls", "sys_exit_faccessat2", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, true},
	// Directories made (mkdir exists on x86-64 only): a lookup that
	// missed one where it was then made was a check, not a search.
	{"syscalls", "sys_enter_mkdir", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterMkdir }, true},
	{"syscalls", "sys_exit_mkdir", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, true},
	{"syscalls", "sys_enter_mkdirat", func(p *bpf.OncePrograms) *ebpf.Program { return p.EnterMkdirat }, false},
	{"syscalls", "sys_exit_mkdirat", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitLookup }, false},
	// Counts the rings traced processes set up (absent without io_uring).
	{"syscalls", "sys_exit_io_uring_setup", func(p *bpf.OncePrograms) *ebpf.Program { return p.ExitUringSetup }, true},
}

// uringHooks see the opens made through io_uring (bpf/uring.bpf.h), raw
// tracepoints on every kernel: they need no kernel BTF to load, and load
// (doing nothing) on a kernel without io_uring, where they are not
// attached. Optional: where they can't be attached, Hooks says why and
// UringOpensSeen is false.
var uringHooks = []struct {
	name string
	prog func(*bpf.OncePrograms) *ebpf.Program
}{
	{"io_uring_submit_req", func(p *bpf.OncePrograms) *ebpf.Program { return p.UringSubmit }},
	// A request that failed in its prep: its submission half, which
	// io_uring_submit_req never sees.
	{"io_uring_req_failed", func(p *bpf.OncePrograms) *ebpf.Program { return p.UringFailed }},
	{"io_uring_complete", func(p *bpf.OncePrograms) *ebpf.Program { return p.UringComplete }},
}

var schedHooks = []struct {
	name, spec string
	prog       func(*bpf.OncePrograms) *ebpf.Program
}{
	{"sched_process_fork", "handle_fork", func(p *bpf.OncePrograms) *ebpf.Program { return p.HandleFork }},
	{"sched_process_exec", "handle_exec", func(p *bpf.OncePrograms) *ebpf.Program { return p.HandleExec }},
	{"sched_process_exit", "handle_exit", func(p *bpf.OncePrograms) *ebpf.Program { return p.HandleExit }},
}

// schedAsTpBtf makes the sched programs tp_btf, for a kernel without BTF
// casts. Their sections say raw_tp: with casts they walk their task and
// binprm arguments as untrusted copies, so they need no typed arguments
// and load as raw tracepoints, which attach by name. As tp_btf they need
// the kernel's BTF decoded for their attach points (btf_trace_*), the
// cost the link cache saves; without casts they read their arguments'
// fields with plain loads, which only tp_btf's typed arguments allow.
func schedAsTpBtf(spec *ebpf.CollectionSpec) {
	for _, h := range schedHooks {
		p := spec.Programs[h.spec]
		p.Type, p.AttachType, p.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, h.name
	}
}

// Open loads and attaches every program. The caller must call Close.
func Open(opts Options) (*Tracer, error) {
	if err := opts.Filter.Validate(); err != nil {
		return nil, err
	}
	var phases phaseClock
	phases.start()
	if err := Preflight(); err != nil {
		return nil, err
	}
	if opts.Tracked {
		// once's children are followed by its pid (run, check,
		// compare); watch --pid takes the pids it is given.
		if err := checkPidNamespace(); err != nil {
			return nil, err
		}
	}
	if opts.StackSize != 0 {
		if err := checkStacksPidNamespace(); err != nil {
			return nil, err
		}
	}
	phases.mark("checks")
	// After Preflight, which mounts tracefs if it is not. Whatever attach
	// does not take, an Open that fails lets go of.
	events := openHookEvents()
	defer events.release()
	// Loading without the link cache builds tens of MB of BTF types that
	// all stay live until it ends: each collection as the heap doubles
	// only marks them again, taking CPU from the decoding and the
	// verifier on a small machine, for no memory saved. Collection resumes, with the caller's setting, when Open returns.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// The link (what the programs need from the kernel's BTF) is looked
	// for in the cache, or the kernel's BTF decoded, while the object is
	// parsed.
	kernel := btf.NewCache()
	pending := startLink(opts.LinkCacheDir, kernel)
	earlyTallies := makeEarly(tallySpec(opts))
	taken := false
	defer func() {
		if !taken {
			earlyTallies.discard()
		}
	}()
	spec, err := loadSpec()
	if err != nil {
		return nil, fmt.Errorf("load BPF spec: %w", err)
	}
	phases.mark("decode")
	nrings, err := ringCount(opts.Rings)
	if err != nil {
		return nil, err
	}
	size := opts.RingBufferSize
	if size == 0 {
		size = RingSizeFor(DefaultRingBufferSize, nrings)
	}
	if size < os.Getpagesize() || size&(size-1) != 0 {
		return nil, fmt.Errorf("ring buffer size %d: must be a power of two and at least %d", size, os.Getpagesize())
	}
	spec.Maps["events"].MaxEntries = uint32(size)
	if err := spec.Variables["nrings"].Set(uint32(nrings)); err != nil {
		return nil, fmt.Errorf("set nrings: %w", err)
	}
	spec.Maps["rings"].MaxEntries = uint32(nrings)
	spec.Maps["rings"].InnerMap.MaxEntries = uint32(os.Getpagesize())
	// The kernel takes no BTF for a ring buffer: given the event type,
	// it allocates the whole ring, fails, and cilium/ebpf tries again
	// without, a measurable part of start-up. The type is for bpf2go only.
	spec.Maps["events"].Key, spec.Maps["events"].Value = nil, nil
	// Nor does it need the types of any map but task storage's (whose
	// value it must know): each map's types are marshalled into a BTF
	// object of their own and loaded before the map is made.
	for _, m := range spec.Maps {
		if m.Type != ebpf.TaskStorage {
			m.Key, m.Value = nil, nil
		}
	}
	// Maps a mode leaves unused get a token size: preallocating 65,536
	// entries costs milliseconds of start-up each.
	if !opts.Tracked && len(opts.Filter.Pids) == 0 {
		spec.Maps["tracked"].MaxEntries = 1
	}
	spec.Maps[bpf.OnceMapOpenTallies].MaxEntries = tallySpec(opts).MaxEntries
	f := opts.Filter
	comms, noComms, uids := dedup(f.Comms), dedup(f.ExcludeComms), dedup(f.UIDs)
	for name, v := range map[string]bool{
		"filter_tracked":    opts.Tracked || len(f.Pids) > 0,
		"filter_comm":       len(comms) > 0,
		"filter_no_comm":    len(noComms) > 0,
		"filter_uid":        len(uids) > 0,
		"filter_cgroup":     f.CgroupPath != "",
		"filter_cgroup_ids": f.ByCgroupID || len(f.CgroupIDs) > 0,
	} {
		var flag uint32
		if v {
			flag = 1
		}
		if err := spec.Variables[name].Set(flag); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	linked, how, err := pending.finish(spec)
	if err != nil {
		return nil, err
	}
	phases.mark("link")
	var casts uint32
	if btfCastsAvailable() && linked.Casts {
		casts = 1
	} else {
		schedAsTpBtf(spec)
	}
	if err := spec.Variables["btf_casts"].Set(casts); err != nil {
		return nil, fmt.Errorf("set btf_casts: %w", err)
	}
	if err := spec.Variables["nr_execveat"].Set(int64(unix.SYS_EXECVEAT)); err != nil {
		return nil, fmt.Errorf("set nr_execveat: %w", err)
	}
	self, selfKnown := selfTgid()
	phases.mark("self")
	if err := spec.Variables["self_tgid"].Set(self); err != nil {
		return nil, fmt.Errorf("set self_tgid: %w", err)
	}
	var wakeup uint64
	if opts.BatchWakeups && size >= 1<<20 {
		// A small ring fills between two polls: there every event wakes
		// the reader, as without batching.
		wakeup = uint64(size / 16)
	}
	if err := spec.Variables["wakeup_bytes"].Set(wakeup); err != nil {
		return nil, fmt.Errorf("set wakeup_bytes: %w", err)
	}
	if opts.SendOpensPerKind < 0 {
		return nil, fmt.Errorf("SendOpensPerKind %d: must be 0 or more", opts.SendOpensPerKind)
	}
	if err := spec.Variables["open_send_max"].Set(uint32(opts.SendOpensPerKind)); err != nil {
		return nil, fmt.Errorf("set open_send_max: %w", err)
	}
	if opts.FirstOpensUnsent && opts.SendOpensPerKind == 0 {
		return nil, errors.New("FirstOpensUnsent needs SendOpensPerKind > 0")
	}
	stackSize, err := stackSizeOf(opts.StackSize)
	if err != nil {
		return nil, err
	}
	if err := spec.Variables["stack_size"].Set(uint32(stackSize)); err != nil {
		return nil, fmt.Errorf("set stack_size: %w", err)
	}
	kept := 0
	if stackSize > 0 {
		kept = opts.KeptStacks
		if kept == 0 {
			kept = DefaultKeptStacks
		}
		kept = max(kept, 0)
	}
	if err := spec.Variables["kept_nslots"].Set(uint32(kept)); err != nil {
		return nil, fmt.Errorf("set kept_nslots: %w", err)
	}
	spec.Maps["kept_slots"].MaxEntries = uint32(max(kept, 1))
	var unsent, callsKept uint32
	switch {
	case opts.FirstOpensUnsent && stackSize == 0:
		unsent = 1
	case opts.FirstOpensUnsent && kept > 0:
		// With stacks a first open's snapshot is the first call site
		// of a file opened again: it is kept, and the call with it.
		callsKept = 1
	}
	if err := spec.Variables["first_opens_unsent"].Set(unsent); err != nil {
		return nil, fmt.Errorf("set first_opens_unsent: %w", err)
	}
	if err := spec.Variables["first_calls_kept"].Set(callsKept); err != nil {
		return nil, fmt.Errorf("set first_calls_kept: %w", err)
	}
	ncalls := uint32(0)
	if callsKept != 0 {
		ncalls = KeptCalls
	}
	if err := spec.Variables["kept_ncalls"].Set(ncalls); err != nil {
		return nil, fmt.Errorf("set kept_ncalls: %w", err)
	}
	spec.Maps["kept_calls"].MaxEntries = max(ncalls, 1)
	tracefsDev := tracefsDevice()
	if err := spec.Variables["tracefs_dev"].Set(kernelDev(tracefsDev)); err != nil {
		return nil, fmt.Errorf("set tracefs_dev: %w", err)
	}
	if !f.ByCgroupID && len(f.CgroupIDs) == 0 {
		spec.Maps["cgroup_ids"].MaxEntries = 1
	}
	for name, n := range map[string]int{"comm_include": len(comms), "comm_exclude": len(noComms), "uid_include": len(uids)} {
		spec.Maps[name].MaxEntries = uint32(max(n, 1))
	}

	t := &Tracer{redact: opts.RedactArgs, sendMax: uint64(opts.SendOpensPerKind), tracefsDev: tracefsDev, stackSize: stackSize, link: how, linkFile: pending.file(), rawSched: casts == 1, selfKnown: selfKnown, selfTgid: self,
		repeatsOn: opts.SendOpensPerKind == 0 && stackSize == 0 && casts == 1}
	if specHook != nil {
		specHook(spec)
	}
	taken = true
	tallyMap, err := earlyTallies.take(spec.Maps[bpf.OnceMapOpenTallies])
	if err != nil {
		return nil, err
	}
	err = loadObjects(spec, kernel, &t.objs, &phases, map[string]*ebpf.Map{bpf.OnceMapOpenTallies: tallyMap}, func(maps map[string]*ebpf.Map) error {
		return t.makeRings(maps["events"], maps["rings"], nrings, size)
	})
	if err != nil {
		t.closeNow()
		return nil, err
	}
	// Filled before anything is attached: no event escapes a filter.
	if err := t.fillFilter(f, comms, noComms, uids); err != nil {
		t.closeNow()
		return nil, err
	}
	if err := t.attach(events); err != nil {
		t.closeNow()
		return nil, err
	}
	// A pid that exited before its exit could be seen stays followed,
	// and would follow the next process given its number.
	if p := pidsGone(f.Pids); p != 0 {
		t.closeNow()
		return nil, fmt.Errorf("filter: pid %d: no such process (it exited as once started)", p)
	}
	phases.mark("attach")
	t.startup = phases.phases
	// From now on every entry is recorded: an exit without one is a loss.
	// A thread started after attach_ns has all its calls in the trace.
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err == nil {
		if err := t.objs.AttachNs.Set(uint64(now.Nano())); err != nil {
			t.closeNow()
			return nil, fmt.Errorf("mark attached: %w", err)
		}
	}
	if err := t.objs.AttachDone.Set(uint32(1)); err != nil {
		t.closeNow()
		return nil, fmt.Errorf("mark attached: %w", err)
	}
	// One ring too is read by multiRing, whose positions are written in
	// batches (mappedRing), not at every record as ringbuf.Reader does.
	t.reader, err = newMultiRing(t.rings)
	if err != nil {
		t.closeNow()
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	return t, nil
}

// ringCount is the number of rings Options.Rings asks for.
func ringCount(n int) (int, error) {
	ncpu := CPUCount()
	switch {
	case n < 0:
		return 0, fmt.Errorf("rings %d: must be 0 (the default) or more", n)
	case n == 0:
		return DefaultRings(ncpu), nil
	}
	return min(n, ncpu), nil
}

// makeRings makes the rings past the first (events), size bytes each,
// and puts every ring in its slot of rings (the outer map). One ring is
// events alone: its programs never look at rings.
//
// Each update of an array of maps waits for an RCU grace period (the
// kernel's maybe_wait_bpf_programs), milliseconds each: the rings are
// made and put in their slots in parallel, so that the updates share
// their grace periods, and while the programs load (loadObjects).
func (t *Tracer) makeRings(events, rings *ebpf.Map, n, size int) error {
	made := make([]*ebpf.Map, n)
	made[0] = events
	defer func() {
		// Close closes what was made, whatever failed.
		t.rings = slices.DeleteFunc(made, func(m *ebpf.Map) bool { return m == nil })
	}()
	if n == 1 {
		return nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := made[i]
			if m == nil {
				var err error
				m, err = ebpf.NewMap(&ebpf.MapSpec{Name: "events", Type: ebpf.RingBuf, MaxEntries: uint32(size)})
				if err != nil {
					errs[i] = fmt.Errorf("make ring buffer %d of %d (%d bytes each): %w", i+1, n, size, err)
					return
				}
				made[i] = m
			}
			if err := rings.Put(uint32(i), m); err != nil {
				errs[i] = fmt.Errorf("ring buffer %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Rings is the number of ring buffers the kernel side writes to.
func (t *Tracer) Rings() int { return len(t.rings) }

// stackSizeOf checks Options.StackSize and rounds it up to whole words.
func stackSizeOf(n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	if n < 0 || n > MaxStackSize {
		return 0, fmt.Errorf("stack size %d: must be between 1 and %d bytes", n, MaxStackSize)
	}
	if runtime.GOARCH != "amd64" {
		return 0, fmt.Errorf("stack snapshots: only on amd64, not %s", runtime.GOARCH)
	}
	return (n + 7) &^ 7, nil
}

// DefaultKeptStacks is Options.KeptStacks when 0: 2.5 MiB of kernel
// memory (21 KiB each, whatever the stack size: a slot holds the largest
// window). Few enough to stay in the CPU's caches, whose misses a cold
// slot paid at every first open; enough for a repeat that follows its
// first open within 128 other first opens.
const DefaultKeptStacks = 128

// KeptCalls is how many first opens' calls the kernel holds at a time
// with FirstOpensUnsent and stacks: 1.75 MiB of kernel memory (448 bytes
// each). A call outlives its snapshot's slot, so that a repeat within
// that many first opens still has its first call listed, without its
// stack past DefaultKeptStacks.
const KeptCalls = 4096

// StackSize is the stack window the kernel snapshots (Options.StackSize
// as rounded), 0 without stack snapshots.
func (t *Tracer) StackSize() int { return t.stackSize }

func (t *Tracer) fillFilter(f Filter, comms, noComms []string, uids []uint32) error {
	one := uint8(1)
	for _, c := range comms {
		if err := t.objs.CommInclude.Put(commKey(c), one); err != nil {
			return fmt.Errorf("filter comm %q: %w", c, err)
		}
	}
	for _, c := range noComms {
		if err := t.objs.CommExclude.Put(commKey(c), one); err != nil {
			return fmt.Errorf("filter excluded comm %q: %w", c, err)
		}
	}
	for _, u := range uids {
		if err := t.objs.UidInclude.Put(u, one); err != nil {
			return fmt.Errorf("filter uid %d: %w", u, err)
		}
	}
	if f.CgroupPath != "" {
		// The map holds its own reference to the cgroup: the fd can go.
		fd, err := unix.Open(f.CgroupPath, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("filter: cgroup %s: %w", f.CgroupPath, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err == nil {
			err = t.objs.CgroupInclude.Put(uint32(0), uint32(fd))
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("filter: cgroup %s: %w", f.CgroupPath, err)
		}
		t.cgroupPath, t.cgroupIno = f.CgroupPath, st.Ino
	}
	selected := uint8(cgroupSelected)
	for _, id := range f.CgroupIDs {
		if err := t.objs.CgroupIds.Put(id, selected); err != nil {
			return fmt.Errorf("filter cgroup id %d: %w", id, err)
		}
	}
	t.byCgroup = f.ByCgroupID || len(f.CgroupIDs) > 0
	kind := bpf.OnceTrackKindTRACK_ONLY
	if f.Tree {
		kind = bpf.OnceTrackKindTRACK_TREE
	}
	for _, p := range f.Pids {
		if err := t.objs.Tracked.Put(uint32(p), kind); err != nil {
			return fmt.Errorf("filter pid %d: %w", p, err)
		}
		// The kernel side asks a bitmap whether a process is followed.
		// A read-modify-write from here is safe only now, before
		// attach: afterwards handle_fork and handle_exit change its
		// words.
		if p < 0 || p >= 64*int(t.objs.TrackedBits.MaxEntries()) {
			return fmt.Errorf("filter pid %d: out of range", p)
		}
		w, bit := uint32(p/64), uint64(1)<<(p%64)
		var v uint64
		if err := t.objs.TrackedBits.Lookup(w, &v); err != nil {
			return fmt.Errorf("filter pid %d: %w", p, err)
		}
		if err := t.objs.TrackedBits.Put(w, v|bit); err != nil {
			return fmt.Errorf("filter pid %d: %w", p, err)
		}
	}
	return nil
}

func dedup[T comparable](s []T) []T {
	seen := make(map[T]bool, len(s))
	var out []T
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func (t *Tracer) attach(events *hookEvents) error {
	// Each syscall hook's perf event was opened while the programs
	// loaded (openHookEvents); linking a program through it is a
	// syscall. Nothing is counted before AttachDone, but the order
	// matters all the same: every exit goes first (attachOrder).
	fds, errs := events.take()
	links := make([]*tracepointLink, len(syscallHooks))
	for _, i := range attachOrder() {
		a := syscallHooks[i]
		if errs[i] != nil {
			continue
		}
		if errs[i] = hookErr(a.group + ":" + a.name); errs[i] != nil {
			releasePerfEventsNow(fds[i : i+1])
			continue
		}
		links[i], errs[i] = linkTracepoint(fds[i], a.prog(&t.objs.OncePrograms))
	}
	var failed error
	for i, a := range syscallHooks {
		name := a.group + ":" + a.name
		switch err := errs[i]; {
		case err == nil:
			t.links = append(t.links, attachedLink{links[i].Link, strings.HasPrefix(a.name, "sys_enter_"), links[i].perf})
			t.hooks = append(t.hooks, Hook{Name: name, Attached: true})
		case a.optional && errors.Is(err, os.ErrNotExist):
			t.hooks = append(t.hooks, Hook{Name: name, Err: err})
		case failed == nil:
			failed = fmt.Errorf("attach %s: %w", name, err)
		}
	}
	if failed != nil {
		// The links made stay in t.links for Close.
		return failed
	}
	for _, h := range schedHooks {
		name := schedHookName(h.name, t.rawSched)
		var l link.Link
		err := hookErr(name)
		if err == nil && t.rawSched {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: h.name, Program: h.prog(&t.objs.OncePrograms)})
		} else if err == nil {
			l, err = link.AttachTracing(link.TracingOptions{Program: h.prog(&t.objs.OncePrograms)})
		}
		if err != nil {
			return fmt.Errorf("attach %s: %w", name, err)
		}
		t.links = append(t.links, attachedLink{Link: l, perf: -1})
		t.hooks = append(t.hooks, Hook{Name: name, Attached: true})
	}
	// An exec's strings, read where the entry could not, as the caller
	// passed them (bpf/sched.bpf.h handle_prepare_exec). Linux 6.10+:
	// without it handle_exec falls back to the kernel's copies, which
	// for a script are its interpreter's (then argv is unreadable).
	{
		const name = "raw_tp:sched_prepare_exec"
		err := hookErr(name)
		var l link.Link
		if err == nil {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_prepare_exec", Program: t.objs.HandlePrepareExec})
		}
		if err != nil {
			t.hooks = append(t.hooks, Hook{Name: name, Err: err})
		} else {
			t.links = append(t.links, attachedLink{Link: l, perf: -1})
			t.hooks = append(t.hooks, Hook{Name: name, Attached: true})
		}
	}
	if t.byCgroup {
		// Before anything of the filter could be missed: the cgroups
		// made from now on pass until they are decided on.
		const name = "raw_tp:cgroup_mkdir"
		err := hookErr(name)
		var l link.Link
		if err == nil {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "cgroup_mkdir", Program: t.objs.HandleCgroupMkdir})
		}
		if err != nil {
			return fmt.Errorf("attach %s: %w", name, err)
		}
		t.links = append(t.links, attachedLink{Link: l, perf: -1})
		t.hooks = append(t.hooks, Hook{Name: name, Attached: true})
	}
	// The completion first: a submission whose completion is not seen
	// would only wait in user space.
	var uring []link.Link
	for i := len(uringHooks) - 1; i >= 0; i-- {
		h := uringHooks[i]
		name := "raw_tp:" + h.name
		err := hookErr(name)
		var l link.Link
		if err == nil {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: h.name, Program: h.prog(&t.objs.OncePrograms)})
		}
		if err != nil {
			t.hooks = append(t.hooks, Hook{Name: name, Err: err})
			continue
		}
		uring = append(uring, l)
		t.hooks = append(t.hooks, Hook{Name: name, Attached: true})
	}
	if len(uring) < len(uringHooks) {
		// One half is no open: without both, neither.
		for _, l := range uring {
			l.Close()
		}
		for i := range t.hooks {
			if strings.HasPrefix(t.hooks[i].Name, "raw_tp:io_uring_") && t.hooks[i].Attached {
				t.hooks[i] = Hook{Name: t.hooks[i].Name, Err: errors.New("detached: the other io_uring hook could not be attached")}
			}
		}
		return nil
	}
	for _, l := range uring {
		t.links = append(t.links, attachedLink{Link: l, perf: -1})
	}
	t.uringOn = true
	return nil
}

// UringOpensSeen reports whether opens made through io_uring are traced:
// the io_uring tracepoints are attached. When they are not, a traced
// process's io_uring opens are missing, and Counters.UringSetups says
// whether any process set up a ring.
func (t *Tracer) UringOpensSeen() bool { return t.uringOn }

func schedHookName(tp string, raw bool) string {
	if raw {
		return "raw_tp:" + tp
	}
	return "tp_btf:" + tp
}

// attachOrder is the order syscallHooks attach in: every exit, then every
// entry. An entry records its call in the thread's slot for the call's
// exit; one that ran while that exit was not attached yet (an attach can
// wait for the kernel's tracing lock, while it lets go of a tracer
// before) left the slot to the thread's next exit of another call.
func attachOrder() []int {
	var exits, entries []int
	for i, a := range syscallHooks {
		if strings.HasPrefix(a.name, "sys_enter_") {
			entries = append(entries, i)
		} else {
			exits = append(exits, i)
		}
	}
	return append(exits, entries...)
}

func hookErr(name string) error {
	if attachHook == nil {
		return nil
	}
	return attachHook(name)
}

// Hooks lists the attachment points and whether each is attached.
func (t *Tracer) Hooks() []Hook { return t.hooks }

// FollowChildren makes every process pid forks from now on traced, without
// tracing pid itself. once uses it on itself to start a command that is
// traced from its very first instruction; pid must be the tracer's own
// process, whose entry the kernel side then never has to remove (a
// spawner is only in the tracked map, which handle_fork reads, not in the
// bitmap of followed processes).
func (t *Tracer) FollowChildren(pid int) error {
	if pid != os.Getpid() {
		return fmt.Errorf("follow children of pid %d: only the tracer's own process (%d) can be a spawner", pid, os.Getpid())
	}
	return t.objs.Tracked.Put(uint32(pid), bpf.OnceTrackKindTRACK_SPAWNER)
}

// Unfollow removes pid from the tracked set (its descendants stay). Only
// for a spawner (FollowChildren): the kernel's bitmap of followed
// processes, which it does not change, never had it.
func (t *Tracer) Unfollow(pid int) error {
	err := t.objs.Tracked.Delete(uint32(pid))
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	}
	return err
}

// RedactsArgs reports whether the tracer was opened with RedactArgs.
func (t *Tracer) RedactsArgs() bool { return t.redact }

// ErrTimeout is returned by Next when the deadline passed with no record.
var ErrTimeout = os.ErrDeadlineExceeded

// ErrClosed is returned by Next once the tracer is closed or, after Flush,
// when every record that was in the ring has been returned.
var ErrClosed = errors.New("tracer closed")

// SetDeadline bounds how long Next waits for a record.
func (t *Tracer) SetDeadline(d time.Time) { t.reader.SetDeadline(d) }

// Flush makes Next return every record already in the ring buffer, then
// ErrClosed: the way to read everything before a final report.
func (t *Tracer) Flush() error { return t.reader.Flush() }

// Next reads and decodes the next record into ev. A record that fails to
// decode is counted (Counters.DecodeErrors) and skipped. The returned
// error is ErrTimeout, ErrClosed or a read failure.
func (t *Tracer) Next(ev *trace.Event, c *trace.Counters) error {
	// Held exits go on by the time of the records read since (the
	// kernel's clock, no clock read per event), or at a timeout.
	if len(t.tallies.exits) > 0 {
		t.releaseExits(t.lastTs, false, c)
	}
	if t.nextQueued(ev) {
		return nil
	}
	if t.closedAfterExits {
		// The ring's end, put off for the exits it released.
		t.closedAfterExits = false
		return ErrClosed
	}
	for {
		err := t.reader.ReadInto(&t.rec)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if len(t.tallies.exits) > 0 && t.releaseExits(uint64(nanotime()), false, c) && t.nextQueued(ev) {
				return nil
			}
			return ErrTimeout
		case errors.Is(err, ringbuf.ErrFlushed), errors.Is(err, ringbuf.ErrClosed), errors.Is(err, os.ErrClosed):
			// The ring read to its end: nothing more can come before
			// a held exit.
			if t.releaseExits(0, true, c) && t.nextQueued(ev) {
				t.closedAfterExits = true // once they are read
				return nil
			}
			return ErrClosed
		default:
			return fmt.Errorf("read ring buffer: %w", err)
		}
		c.EventsReceived++
		if len(t.tallies.exits) > 0 {
			t.lastTs = recordTime(t.rec.RawSample)
		}
		if err := decode(t.rec.RawSample, ev, &t.half); err != nil {
			c.DecodeErrors++
			continue
		}
		switch ev.Kind {
		case trace.EventOpen:
			if t.tracefsDev != 0 && ev.Open.Dev == t.tracefsDev && ev.Open.Syscall.IsLookup() {
				sharedIno(&ev.Open)
			}
			if t.repeatsOn {
				t.repeats.keep(ev)
			}
		case openRepeat:
			if !t.repeats.expand(ev, t.half.ref) {
				c.DecodeErrors++
				continue
			}
			ev.Kind = trace.EventOpen
			if t.repeatSeen != nil {
				t.repeatSeen(ev)
			}
		case trace.EventExecArgs:
			if t.execArgsSeen != nil {
				t.execArgsSeen(ev)
			}
			t.keepExecArgs(ev)
			continue
		case trace.EventExec:
			t.joinExecArgs(ev, c)
			if t.redact {
				redactArgv(ev.Exec.Argv)
			}
		case trace.EventExit:
			t.repeats.drop(ev.Task.Pid)
			if len(t.execArgs) > 0 {
				t.dropExecArgs(ev.Task.Pid)
			}
			if len(t.uring) > 0 {
				t.dropUring(ev.Task.Pid)
			}
		case uringSubmit:
			t.keepUringSubmit(ev, &t.half)
			continue
		case uringComplete:
			if !t.joinUring(ev, &t.half) {
				continue
			}
		}
		if ev.Snapshot != nil {
			c.StacksCaptured++
		}
		switch t.noteEvent(ev, c) {
		case notedQueued:
			t.nextQueued(ev)
		case notedHeld:
			continue
		}
		return nil
	}
}

// KernelCounters sums the kernel side's per-CPU loss counters into c.
func (t *Tracer) KernelCounters(c *trace.Counters) error {
	get := func(idx bpf.OnceCounter) (uint64, error) {
		var perCPU []uint64
		if err := t.objs.Counters.Lookup(idx, &perCPU); err != nil {
			return 0, fmt.Errorf("read counter %d: %w", idx, err)
		}
		var sum uint64
		for _, v := range perCPU {
			sum += v
		}
		return sum, nil
	}
	// trace.KernelCounters is enum counter of bpf/once.h in order (held
	// to it by TestEveryKernelCounterHasASpec): a counter's index there is
	// its bpf.OnceCounter, so a counter added to the header and the table
	// is read with no list here to keep in step.
	for i, k := range trace.KernelCounters {
		v, err := get(bpf.OnceCounter(i))
		if err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
		*k.Field(c) = v
	}
	if t.stackSize > 0 {
		c.Stacks = true
	}
	c.DroppedByRing = nil
	if len(t.rings) > 1 {
		var perCPU []uint64
		if err := t.objs.Counters.Lookup(bpf.OnceCounterCNT_RINGBUF_FULL, &perCPU); err != nil {
			return fmt.Errorf("read counter %d: %w", bpf.OnceCounterCNT_RINGBUF_FULL, err)
		}
		c.DroppedByRing = make([]uint64, len(t.rings))
		for cpu, v := range perCPU {
			c.DroppedByRing[cpu%len(t.rings)] += v
		}
	}
	return nil
}

// Detach stops every program: once it returns no new record is produced,
// while the records already in the ring buffer and the counters stay
// readable until Close. Call it before Flush to read a final, bounded
// backlog even while traced processes keep going.
//
// The exit and lifecycle programs go first, the syscall entry programs
// last: an exit whose entry program is already gone would count a
// spurious missed entry, while an entry whose exit is gone only leaves
// its thread's slot in the pending map to be overwritten. Closing a
// syscall tracepoint's link waits until no run of its program is left (a
// grace period, which the closes of a group share when made in parallel);
// the raw tracepoints' do not wait, so one RCU grace period is waited
// for them (waitProgramsDone), beside the entry group's closes.
//
// The syscall tracepoints' perf events, whose closing makes the kernel
// wait a grace period for each, one tracepoint at a time, are disabled
// and handed to the kernel to close once their programs are off
// (releasePerfEvents): neither the report nor once's exit waits for them.
// Those it would not take are closed in the background (Released); where
// the grace period cannot be waited for alone, all are closed here.
func (t *Tracer) Detach() error {
	if len(t.links) == 0 {
		return nil
	}
	var errs []error
	var perf []int
	var waited chan error
	for _, enter := range []bool{false, true} {
		var group []link.Link
		for _, l := range t.links {
			if l.enter != enter {
				continue
			}
			group = append(group, l.Link)
			if l.perf >= 0 {
				perf = append(perf, l.perf)
			}
		}
		if enter {
			waited = make(chan error, 1)
			go func() { waited <- waitProgramsDone() }()
		}
		errs = append(errs, closeAll(group))
	}
	t.links = nil
	werr := <-waited
	if len(perf) == 0 {
		return errors.Join(errs...)
	}
	for _, fd := range perf {
		// Disabled, the event costs the tracepoint's probe nothing
		// while it waits to be closed.
		_ = unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
	if werr != nil {
		// Closing a tracepoint's last perf event waits for its grace
		// periods: the programs are then done all the same.
		return errors.Join(append(errs, closePerfEvents(perf))...)
	}
	if perf = releasePerfEvents(perf); len(perf) == 0 {
		return errors.Join(errs...)
	}
	t.released = make(chan error, 1)
	releasing.Add(1)
	go func(done chan<- error) {
		defer releasing.Done()
		done <- closePerfEvents(perf)
	}(t.released)
	return errors.Join(errs...)
}

// Released waits until once has closed every syscall tracepoint's perf
// event that Detach could not hand to the kernel (releasePerfEvents), and
// returns what closing them said. Close does not wait for it: a process
// exiting meanwhile waits for the kernel all the same.
func (t *Tracer) Released() error {
	if t.released == nil {
		return nil
	}
	err := <-t.released
	t.released <- err
	return err
}

func closeAll(links []link.Link) error {
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// releasing counts the tracers whose perf events once is still closing.
var releasing sync.WaitGroup

// AllReleased waits until every tracer's perf events that once closes
// itself are closed (Released, for all tracers of the process).
func AllReleased() { releasing.Wait() }

// closeNow is Close that also waits for the tracepoints' release: an Open
// that fails leaves nothing behind.
func (t *Tracer) closeNow() {
	t.Close()
	t.Released()
}

// Close detaches every program, closes the reader and frees the maps.
// The kernel may still be unregistering the syscall tracepoints when it
// returns, and once may still be closing those it would not take
// (Released).
func (t *Tracer) Close() error {
	var errs []error
	if t.reader != nil {
		errs = append(errs, t.reader.Close())
	}
	errs = append(errs, t.Detach())
	errs = append(errs, t.objs.Close())
	for _, m := range t.rings[min(1, len(t.rings)):] {
		errs = append(errs, m.Close())
	}
	t.rings = nil
	return errors.Join(errs...)
}
