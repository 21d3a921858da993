package trace

// Counters is everything the tracer knows it missed or cut. Every output
// format shows all of them, from the one table below (Shown); none is ever
// hidden because it is zero.
type Counters struct {
	DroppedEvents uint64 // ring buffer reservations that failed: events lost
	// DroppedByRing: with more than one ring buffer, DroppedEvents by
	// ring (the ring of CPU c is c mod the rings); nil with one.
	DroppedByRing   []uint64
	EnterMapFull    uint64 // syscall entries not recorded: no room for the thread's slot or the pending exec
	MissedEnter     uint64 // syscall exits with no recorded entry, in a thread seen at an entry before
	FnameTruncated  uint64 // filenames cut at the kernel-side bound
	FnameUnreadable uint64 // filenames that could not be read from user memory
	PathTruncated   uint64 // kernel-resolved paths cut (too long or too deep)
	PathUnresolved  uint64 // successful opens whose file could not be resolved
	// PathsInternal: paths of files on kernel-internal mounts (pipes,
	// sockets, memfd, anon inodes), named as the kernel names them
	// ("pipe:[INO]", "/memfd:NAME (deleted)"): no path a mount reaches.
	PathsInternal  uint64
	ArgvTruncated  uint64 // argv lists cut at the kernel-side bound
	ArgvUnreadable uint64 // argv lists that could not be read
	DecodeErrors   uint64 // ring buffer records that failed to decode
	TrackedFull    uint64 // descendants not followed because the tracked set was full
	EventsSent     uint64 // records the kernel side put in the ring buffer
	EventsReceived uint64 // records read from the ring buffer
	// OpensTallied: opens the kernel counted instead of sending, as read
	// back so far: successful ones past the opens sent per kind, and a
	// thread's repeats of its last failed open (trace.Repeats). Not
	// lost: they are in every count; only their per-call detail is not
	// kept, and their time is scaled from a timed sample.
	OpensTallied uint64
	// LookupsTallied: lookups the kernel counted instead of sending as
	// repeats: of a file the image looked up before (past the first
	// ones of their kind sent, as OpensTallied), or of a thread's last
	// failed lookup (trace.Repeats).
	LookupsTallied uint64
	// TalliesEvicted: tallied kinds whose kernel count was evicted (the
	// tally map full of newer kinds) before it was read. The opens they
	// counted since their last read are missing from the counts.
	TalliesEvicted uint64
	// TalliesLate: tallied kinds whose last repeats, counted in their
	// thread's own slot, found the kind's kernel count gone when they
	// were added to it (evicted, or read for the last time because the
	// image had ended). Those repeats are missing from the counts.
	// Shown together with TalliesEvicted (TalliesLost).
	TalliesLate uint64
	// CountsLost: calls the kernel counted without sending (first opens,
	// lookups, repeated misses) whose count was lost: the ring had no
	// room for the thread's report at its exit or its image's end. Before
	// then a report that finds no room leaves the counts for the next.
	CountsLost uint64
	// ReportsDeferred: reports of such counts that the ring had no room
	// for before the thread's end: their counts stayed in the thread's
	// slot for its next record, so nothing is lost, only late. Not in
	// DroppedEvents.
	ReportsDeferred uint64
	// OpensUntimed: opens sent without their latency (OpenCall.Untimed):
	// present and counted, their time missing from the waste figures.
	OpensUntimed uint64
	// SeccompRefused: calls a seccomp filter answered before the kernel
	// ran them (and before the entry tracepoint, so their names are not
	// known): strace -f shows them, failed with the filter's errno. Not
	// in the counts of opens, lookups and execs, and not a loss.
	SeccompRefused uint64
	// PtraceSkipped: calls of ptraced threads that their tracer's entry
	// stop kept the kernel from running (the thread killed there, or
	// stopped by PTRACE_SYSEMU), before the entry tracepoint, so their
	// names are not known. Not in the counts, and not a loss.
	PtraceSkipped uint64
	// CompatImages: traced images of 32-bit programs. Syscall
	// tracepoints do not fire for compat syscalls, so none of their
	// opens and execs are seen: how many is unknown, but not zero.
	CompatImages uint64
	// OpensUnsent: first opens of a file the kernel counted without
	// sending. Not lost: they are in the counts, as each thread reports
	// them (EventUnsent, OpenRecord.Unsent).
	OpensUnsent uint64
	// LookupsUnsent: successful lookups (stat, access) the kernel counted
	// without sending: they end no probe and repeat no file the image
	// looked up. Not lost: in the counts, as OpensUnsent.
	LookupsUnsent uint64
	// FilesUntracked: of those, opens of files past what the kernel
	// tells apart per image: their repeats are not recognised.
	FilesUntracked uint64
	// UringSetups: io_uring rings the traced processes set up. Their
	// opens through the ring are no syscalls: once sees them only where
	// it could attach to io_uring's tracepoints (collector's
	// UringOpensSeen), and strace never does.
	UringSetups uint64

	// Evicted: process images the engine dropped under its cap before
	// they ended (once watch): their later events are not detected.
	Evicted uint64
	// FilesCapped: opens of files, and misses of paths, past what the
	// engine tells apart per image: their repeats are not found.
	FilesCapped uint64
	// DetailDropped: pieces of detail (calls, spellings, attempts, files,
	// failed opens, exec attempts) the engine did not keep because of its
	// byte budgets; the counts stay exact.
	DetailDropped uint64

	// UnnamedDropped: events of a new container's cgroup that watch
	// dropped while its runtime had not yet written the state naming it
	// (--container, --pod, --namespace: the runtime's own init, mostly).
	UnnamedDropped uint64

	// OutputDropped: records (summary lines, event lines, tables) once
	// watch could not write to its -o file (a full file system, a
	// quota, an I/O error) and went on without. Not events lost: the
	// counts are whole; the file lacks those records.
	OutputDropped uint64
	// OTLPDropped: records (findings, metric exports) the --otlp sink
	// could not deliver to its collector: its byte-bounded queue was
	// full, or the export failed after its retries, or was still pending
	// when once ended. Not events lost: the counts are whole; the
	// collector lacks those records.
	OTLPDropped uint64
	// ReaderStalls: times the drain loop was seen not to have completed
	// a poll within --stall-timeout (once watch): while stalled, the
	// kernel's events wait in the ring buffer, and may overflow it.
	ReaderStalls uint64

	// Stacks: --stacks was asked for. The stack counters below are
	// shown in the text and Markdown reports only then (JSON always has
	// them).
	Stacks bool
	// StacksCaptured: snapshots of the caller's stack received with an
	// open or exec.
	StacksCaptured uint64
	// StacksDropped: opens and execs of followed processes sent without
	// their snapshot (the ring buffer had no room for it, or the user
	// stack could not be read at all).
	StacksDropped uint64
	// StacksKept: first opens sent without their snapshot, which the
	// kernel kept to send only if the image opened the file again
	// (EventKeptStack). Not a loss.
	StacksKept uint64
	// StacksFirstLost: calls in a finding whose snapshot the kernel kept
	// (an image's first open of the file) and that never came: its slot
	// was reused by later first opens before the repeat, or the event
	// bringing it was lost. Their call site has no stack.
	StacksFirstLost uint64
	// StacksTruncated: stacks whose unwinding ran past the captured
	// window (--stack-size): their outer frames are missing.
	StacksTruncated uint64
	// StacksUnknownMapping: stacks that reached an address in no known
	// file-backed mapping (JIT code, a library unmapped or replaced, a
	// mapping record lost).
	StacksUnknownMapping uint64
	// StacksStopped: stacks whose unwinding stopped for want of unwind
	// information (no CFI and no frame pointer), at CFI it could not
	// evaluate, or at the frame cap.
	StacksStopped uint64
	// StacksNotKept: calls whose stack was unwound but not kept, the
	// stack table's byte budget spent (their call site is StackNotKept).
	StacksNotKept uint64
	// StacksMapsLost: mapping records (perf MMAP2, fork, exec, exit) the
	// kernel could not hand over: stacks through those mappings may end
	// at an unknown mapping.
	StacksMapsLost uint64
	// StacksMapsEvicted: processes whose mappings were forgotten under
	// the mapping store's byte budget before their stacks came.
	StacksMapsEvicted uint64
	// StacksCapped: parts of the traced files (a CFI section, a symbol
	// table, the DWARF, .gopclntab, a DWARF unit's rows) not read, or
	// read in part, because they claimed more than their per-module cap
	// or than the file holds: their frames show module+offset, or names
	// without lines.
	StacksCapped uint64
	// StacksNamesCut: frames whose function or file name was cut at
	// 4 KiB (a mangled name that long is not demangled), or not kept,
	// the stack table's byte budget spent.
	StacksNamesCut uint64
	// StacksModulesGone: mapped files (modules) not opened because their
	// process had exited first: their frames keep module and offset.
	StacksModulesGone uint64
	// StacksModulesRefused: mapped files refused: not a regular file, not
	// the file that was mapped (device, inode, build-id), or the open
	// failed or timed out. Their frames keep module and offset.
	StacksModulesRefused uint64
	// StacksDebugRefused: separate debug files refused: not a regular
	// file, or over the size cap.
	StacksDebugRefused uint64
	// StacksSymbolizeCut: frames left with module and offset because the
	// report's symbolizing deadline had passed.
	StacksSymbolizeCut uint64
	// StacksPerfMapsRefused: JIT perf maps (/tmp/perf-PID.map) found but
	// refused: a symlink, not a regular file, not owned by the process's
	// user nor root, or the open failed or timed out. Its JIT frames
	// stay addresses.
	StacksPerfMapsRefused uint64
	// StacksPerfMapsCut: perf maps read in part, past their caps (8 MiB,
	// 128Ki lines): frames in code named past the cap stay addresses.
	StacksPerfMapsCut uint64
}

// TalliesLost is the number of tallied kinds with opens missing from their
// counts: TalliesEvicted + TalliesLate.
func (c *Counters) TalliesLost() uint64 { return c.TalliesEvicted + c.TalliesLate }

// Lost reports the number of events known to be missing entirely (as opposed
// to present but with a truncated field): the sum of the CounterLost group.
func (c *Counters) Lost() uint64 {
	var n uint64
	for i := range Shown {
		if Shown[i].Group == CounterLost {
			n += Shown[i].Value(c)
		}
	}
	return n
}

// KernelCounter is one of the kernel side's per-CPU counters (enum counter
// in bpf/once.h): its index is its position in KernelCounters.
type KernelCounter struct {
	Name  string // the CNT_* name
	Field func(*Counters) *uint64
}

// KernelCounters lists enum counter of bpf/once.h in order, and where each
// is kept. A test in the collector holds it to the header.
var KernelCounters = []KernelCounter{
	{"CNT_RINGBUF_FULL", func(c *Counters) *uint64 { return &c.DroppedEvents }},
	{"CNT_ENTER_MAP_FULL", func(c *Counters) *uint64 { return &c.EnterMapFull }},
	{"CNT_MISSED_ENTER", func(c *Counters) *uint64 { return &c.MissedEnter }},
	{"CNT_FNAME_TRUNCATED", func(c *Counters) *uint64 { return &c.FnameTruncated }},
	{"CNT_FNAME_UNREADABLE", func(c *Counters) *uint64 { return &c.FnameUnreadable }},
	{"CNT_PATH_TRUNCATED", func(c *Counters) *uint64 { return &c.PathTruncated }},
	{"CNT_PATH_UNRESOLVED", func(c *Counters) *uint64 { return &c.PathUnresolved }},
	{"CNT_ARGV_TRUNCATED", func(c *Counters) *uint64 { return &c.ArgvTruncated }},
	{"CNT_ARGV_UNREADABLE", func(c *Counters) *uint64 { return &c.ArgvUnreadable }},
	{"CNT_TRACKED_FULL", func(c *Counters) *uint64 { return &c.TrackedFull }},
	{"CNT_EVENTS_SENT", func(c *Counters) *uint64 { return &c.EventsSent }},
	{"CNT_TALLIES_LATE", func(c *Counters) *uint64 { return &c.TalliesLate }},
	{"CNT_OPENS_UNTIMED", func(c *Counters) *uint64 { return &c.OpensUntimed }},
	{"CNT_COMPAT_IMAGES", func(c *Counters) *uint64 { return &c.CompatImages }},
	{"CNT_OPENS_UNSENT", func(c *Counters) *uint64 { return &c.OpensUnsent }},
	{"CNT_FILES_UNTRACKED", func(c *Counters) *uint64 { return &c.FilesUntracked }},
	{"CNT_URING_SETUPS", func(c *Counters) *uint64 { return &c.UringSetups }},
	{"CNT_STACKS_DROPPED", func(c *Counters) *uint64 { return &c.StacksDropped }},
	{"CNT_PATH_INTERNAL", func(c *Counters) *uint64 { return &c.PathsInternal }},
	{"CNT_STACKS_KEPT", func(c *Counters) *uint64 { return &c.StacksKept }},
	{"CNT_LOOKUPS_UNSENT", func(c *Counters) *uint64 { return &c.LookupsUnsent }},
	{"CNT_COUNTS_LOST", func(c *Counters) *uint64 { return &c.CountsLost }},
	{"CNT_REPORTS_DEFERRED", func(c *Counters) *uint64 { return &c.ReportsDeferred }},
	{"CNT_SECCOMP_REFUSED", func(c *Counters) *uint64 { return &c.SeccompRefused }},
	{"CNT_PTRACE_SKIPPED", func(c *Counters) *uint64 { return &c.PtraceSkipped }},
}

// CounterGroup is how an output presents a counter.
type CounterGroup int

const (
	// CounterLost: events missing entirely; their sum is Lost, and any
	// of them above zero makes a result incomplete.
	CounterLost CounterGroup = iota + 1
	// CounterTruncated: a string cut at its bound.
	CounterTruncated
	// CounterUnreadable: a string the kernel side could not read.
	CounterUnreadable
	// CounterNote: present and counted, but with less detail than the
	// rest (no path, no latency, counted rather than sent, not seen).
	CounterNote
	// CounterVolume: how much was read, for rates.
	CounterVolume
	// CounterStacks: the call stacks of --stacks, captured and lost.
	CounterStacks
)

// CounterSpec is how every output shows one counter.
type CounterSpec struct {
	// JSON is its key in the run report and the watch summary lines.
	JSON string
	// Label names it in the text summary line and the watch header,
	// within its group ("dropped" in "lost 3 (dropped 3, ...)").
	Label string
	// Metric is the kind label of once_events_lost_total for a
	// CounterLost counter.
	Metric string
	Group  CounterGroup
	Value  func(*Counters) uint64
}

// Shown is every counter every output shows, in the order they show them.
var Shown = []CounterSpec{
	{"dropped_events", "dropped", "ringbuf_full", CounterLost, func(c *Counters) uint64 { return c.DroppedEvents }},
	{"enter_map_full", "map-full", "enter_map_full", CounterLost, func(c *Counters) uint64 { return c.EnterMapFull }},
	{"missed_enter", "missed-enter", "missed_enter", CounterLost, func(c *Counters) uint64 { return c.MissedEnter }},
	{"decode_errors", "decode", "decode_error", CounterLost, func(c *Counters) uint64 { return c.DecodeErrors }},
	{"tracked_full", "untracked-children", "tracked_full", CounterLost, func(c *Counters) uint64 { return c.TrackedFull }},
	{"tallies_evicted", "tally-evicted", "tally_evicted", CounterLost, func(c *Counters) uint64 { return c.TalliesLost() }},
	{"counts_lost", "counts-lost", "counts_lost", CounterLost, func(c *Counters) uint64 { return c.CountsLost }},
	{"fname_truncated", "fname", "", CounterTruncated, func(c *Counters) uint64 { return c.FnameTruncated }},
	{"path_truncated", "path", "", CounterTruncated, func(c *Counters) uint64 { return c.PathTruncated }},
	{"argv_truncated", "argv", "", CounterTruncated, func(c *Counters) uint64 { return c.ArgvTruncated }},
	{"fname_unreadable", "fname", "", CounterUnreadable, func(c *Counters) uint64 { return c.FnameUnreadable }},
	{"argv_unreadable", "argv", "", CounterUnreadable, func(c *Counters) uint64 { return c.ArgvUnreadable }},
	{"path_unresolved", "unresolved paths", "", CounterNote, func(c *Counters) uint64 { return c.PathUnresolved }},
	{"paths_internal", "internal paths", "", CounterNote, func(c *Counters) uint64 { return c.PathsInternal }},
	{"opens_tallied", "repeat opens counted in the kernel", "", CounterNote, func(c *Counters) uint64 { return c.OpensTallied }},
	{"lookups_tallied", "repeat lookups counted in the kernel", "", CounterNote, func(c *Counters) uint64 { return c.LookupsTallied }},
	{"opens_untimed", "opens without their time", "", CounterNote, func(c *Counters) uint64 { return c.OpensUntimed }},
	{"compat_images", "32-bit images unseen", "", CounterNote, func(c *Counters) uint64 { return c.CompatImages }},
	{"seccomp_refused", "calls seccomp refused, unnamed and uncounted", "", CounterNote, func(c *Counters) uint64 { return c.SeccompRefused }},
	{"ptrace_skipped", "calls a ptrace stop skipped, unnamed and uncounted", "", CounterNote, func(c *Counters) uint64 { return c.PtraceSkipped }},
	{"opens_unsent", "first opens counted in the kernel", "", CounterNote, func(c *Counters) uint64 { return c.OpensUnsent }},
	{"lookups_unsent", "lookups counted in the kernel", "", CounterNote, func(c *Counters) uint64 { return c.LookupsUnsent }},
	{"files_capped", "opens and misses past the per-image cap", "", CounterNote, func(c *Counters) uint64 { return c.FilesCapped + c.FilesUntracked }},
	{"evicted", "images evicted", "", CounterNote, func(c *Counters) uint64 { return c.Evicted }},
	{"detail_dropped", "details past the byte budgets", "", CounterNote, func(c *Counters) uint64 { return c.DetailDropped }},
	{"uring_setups", "io_uring rings set up", "", CounterNote, func(c *Counters) uint64 { return c.UringSetups }},
	{"unnamed_dropped", "events of containers not yet named", "", CounterNote, func(c *Counters) uint64 { return c.UnnamedDropped }},
	{"output_dropped", "records not written (output full or closed)", "", CounterNote, func(c *Counters) uint64 { return c.OutputDropped }},
	{"otlp_dropped", "findings or metric exports not delivered (OTLP)", "", CounterNote, func(c *Counters) uint64 { return c.OTLPDropped }},
	{"reader_stalls", "reader stalls", "", CounterNote, func(c *Counters) uint64 { return c.ReaderStalls }},
	{"reports_deferred", "count reports deferred (ring full)", "", CounterNote, func(c *Counters) uint64 { return c.ReportsDeferred }},
	{"stacks_captured", "captured", "", CounterStacks, func(c *Counters) uint64 { return c.StacksCaptured }},
	{"stacks_dropped", "dropped", "", CounterStacks, func(c *Counters) uint64 { return c.StacksDropped }},
	{"stacks_first_lost", "first calls lost", "", CounterStacks, func(c *Counters) uint64 { return c.StacksFirstLost }},
	{"stacks_truncated", "window too small", "", CounterStacks, func(c *Counters) uint64 { return c.StacksTruncated }},
	{"stacks_unknown_mapping", "unknown mapping", "", CounterStacks, func(c *Counters) uint64 { return c.StacksUnknownMapping }},
	{"stacks_unwind_stopped", "unwinding stopped", "", CounterStacks, func(c *Counters) uint64 { return c.StacksStopped }},
	{"stacks_not_kept", "not kept", "", CounterStacks, func(c *Counters) uint64 { return c.StacksNotKept }},
	{"stacks_maps_lost", "mapping records lost", "", CounterStacks, func(c *Counters) uint64 { return c.StacksMapsLost }},
	{"stacks_maps_evicted", "mappings evicted", "", CounterStacks, func(c *Counters) uint64 { return c.StacksMapsEvicted }},
	{"stacks_modules_gone", "modules of exited processes", "", CounterStacks, func(c *Counters) uint64 { return c.StacksModulesGone }},
	{"stacks_modules_refused", "modules refused", "", CounterStacks, func(c *Counters) uint64 { return c.StacksModulesRefused }},
	{"stacks_debug_refused", "debug files refused", "", CounterStacks, func(c *Counters) uint64 { return c.StacksDebugRefused }},
	{"stacks_symbolize_cut", "frames past the symbolizing deadline", "", CounterStacks, func(c *Counters) uint64 { return c.StacksSymbolizeCut }},
	{"stacks_perfmaps_refused", "perf maps refused", "", CounterStacks, func(c *Counters) uint64 { return c.StacksPerfMapsRefused }},
	{"stacks_perfmaps_cut", "perf maps past their caps", "", CounterStacks, func(c *Counters) uint64 { return c.StacksPerfMapsCut }},
	{"stacks_kept", "first opens kept in the kernel", "", CounterStacks, func(c *Counters) uint64 { return c.StacksKept }},
	{"stacks_capped", "file parts past their caps", "", CounterStacks, func(c *Counters) uint64 { return c.StacksCapped }},
	{"stacks_names_cut", "names cut", "", CounterStacks, func(c *Counters) uint64 { return c.StacksNamesCut }},
	{"events_sent", "events sent", "", CounterVolume, func(c *Counters) uint64 { return c.EventsSent }},
	{"events_received", "events received", "", CounterVolume, func(c *Counters) uint64 { return c.EventsReceived }},
}

// Group returns the counters of one group, in Shown order.
func Group(g CounterGroup) []CounterSpec {
	var out []CounterSpec
	for _, s := range Shown {
		if s.Group == g {
			out = append(out, s)
		}
	}
	return out
}
