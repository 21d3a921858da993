package detect

import (
	"cmp"
	"container/list"
	"hash/maphash"
	"slices"
	"time"

	"github.com/oncetool/once/trace"
)

// Options configure an Engine.
type Options struct {
	Policy Policy
	Ignore Ignore
	// Spawner is the pid that launches traced commands (once itself): the
	// copy of it that execs the command is not reported as a process.
	Spawner int
	// Label, when set, names the container a process runs in, from its
	// pid and cgroup id: called when an image is first seen and when one
	// starts (exec), the moments a process can change containers. It
	// may read the system (the engine itself does not); nil for none.
	Label func(pid uint32, cgroupID uint64) *trace.Container
	// ParentComm, when set, names the parent pid of a process whose
	// parent the engine never saw (one that predates the trace, such as
	// the shell a command runs from): called once per such image; and
	// a process first seen from a thread other than its leader, by its
	// leader's comm. It may read the system; nil leaves those parents
	// unnamed, and such a process named by the thread.
	ParentComm func(pid uint32) string
	// Stacks: events carry their caller's StackID (--stacks): count the
	// calls of each file and chain per call site.
	Stacks bool
}

// Engine runs every detector over one event stream. It is fed in ring
// buffer order and is not safe for concurrent use.
type Engine struct {
	pol Policy
	// Ended images' files listed for --files all, packed (packed.go).
	packed  packedFiles
	strs    strArena
	ignore  Ignore
	spawner uint32
	label   func(pid uint32, cgroupID uint64) *trace.Container
	pcomm   func(pid uint32) string
	stacks  bool
	stack   trace.StackID // the stack of the event being handled

	images map[trace.ImageKey]*image
	procs  map[trace.ProcKey]*proc
	byPid  map[uint32]*proc // each pid's latest process: parent comms, Exited
	last   *image           // the image of the event before: most often this one's

	// KeepAll: every image, in order of first appearance.
	order []*image
	// Bounded: every image is on exactly one list, active ones by recency
	// (front: most recent), ended ones by the time they ended (front:
	// oldest), so that eviction and expiry are O(1) per image.
	active, ended *list.List

	// holding: Bounded, the live images holding found lookup chains
	// (heldChain), released by Expire after HeldFor.
	holding map[*image]struct{}

	running int   // processes not seen to exit, once's launcher copy aside
	seq     int   // images made so far
	bytes   int64 // detail kept, in all (budget.go)
	// listBytes: without Bounded, what ended images keep for the report
	// and the findings (Policy.MaxListBytes), apart from bytes.
	listBytes int64
	forking   bool // image() is making a fork's child: fork labels it
	// replacing: image() is finding the image a successful exec
	// replaced, whose event's task (comm, tid) is the new image's.
	replacing bool
	// counting: the event is a record of counts (a tally; the opens
	// unsent, reported for the image an exec left once comm is the new
	// image's), not a call: its task's comm names no image (names.go).
	counting bool
	seed     maphash.Seed
	pending  []trace.Finding
	totals   Totals
}

// proc is one process across its images.
type proc struct {
	key    trace.ProcKey
	cur    *image // the image with the highest exec id seen
	exited bool
	// launcher: once's copy of itself that execs the command, until it
	// does (Options.Spawner).
	launcher bool
}

// Totals are sums over everything the engine was fed.
type Totals struct {
	Events      uint64
	Opens       uint64
	FailedOpens uint64
	Execs       uint64
	FailedExecs uint64
	OpensUnsent uint64 // of Opens, those the kernel counted without sending
	// Waste, after --ignore: extra opens of files an image had opened,
	// failed attempts of exec and open probe chains that ended.
	DuplicateOpens uint64
	ExecProbes     uint64
	ExecProbeNs    uint64
	OpenProbes     uint64
	// Lookups: stat and access calls that named a file; LookupWaste the
	// avoidable ones of the lookup findings.
	Lookups       uint64
	FailedLookups uint64
	LookupWaste   uint64
	Findings      uint64
	// What a Policy's caps dropped: images evicted, opens of files past
	// MaxFiles (their repeats not found).
	Evicted     uint64
	FilesCapped uint64
	// DetailDropped: pieces of detail (calls, spellings, attempts,
	// failed opens, exec attempts, files) not kept because of the byte
	// budgets; the counts they would have shown stay exact.
	DetailDropped uint64
	// StacksFirstLost: calls of duplicates whose stack the kernel kept
	// and never brought (trace.Counters.StacksFirstLost).
	StacksFirstLost uint64
}

// New returns an empty engine.
func New(opts Options) *Engine {
	e := &Engine{
		pol:     opts.Policy,
		ignore:  opts.Ignore,
		spawner: uint32(opts.Spawner),
		label:   opts.Label,
		pcomm:   opts.ParentComm,
		stacks:  opts.Stacks,
		images:  map[trace.ImageKey]*image{},
		procs:   map[trace.ProcKey]*proc{},
		byPid:   map[uint32]*proc{},
		seed:    maphash.MakeSeed(),
	}
	if e.pol.Bounded {
		e.active, e.ended = list.New(), list.New()
	}
	return e
}

func (e *Engine) hash(s string) uint64 { return maphash.String(e.seed, s) }

// Totals returns the sums so far.
func (e *Engine) Totals() Totals { return e.totals }

// Images is the number of images held.
func (e *Engine) Images() int { return len(e.images) }

// Running is the number of processes seen that have not exited, not
// counting once's own launcher copy.
func (e *Engine) Running() int { return e.running }

// Launcher reports whether t runs in once's launcher copy (Spawner's
// child before it execs the command): its calls are once's own code, no
// call site of the command's.
func (e *Engine) Launcher(t *trace.Task) bool {
	im := e.images[t.Image()]
	return im != nil && im.launcher
}

// Exited reports whether the latest process with this pid has exited.
func (e *Engine) Exited(pid int) bool {
	p := e.byPid[uint32(pid)]
	return p != nil && p.exited
}

// LiveTask is the task of pid's latest image, while it runs: whom the
// counts its threads still held when the trace ended belong to (see
// collector.CollectHeld). False for a pid the engine holds no live
// image of.
func (e *Engine) LiveTask(pid uint32) (trace.Task, bool) {
	p := e.byPid[pid]
	if p == nil || p.exited || p.cur == nil || p.cur.live == nil {
		return trace.Task{}, false
	}
	k := p.cur.p.Key
	return trace.Task{Pid: pid, Tid: pid, Start: k.Start, ExecID: k.ExecID, Comm: p.cur.p.Comm}, true
}

// Comm is the name of an image held (trace.Process.Comm).
func (e *Engine) Comm(key trace.ImageKey) (string, bool) {
	if im := e.images[key]; im != nil {
		return im.p.Comm, true
	}
	return "", false
}

// Annotation is what the engine made of one event, for the renderers of
// event streams and the metrics: no renderer keeps detector state.
type Annotation struct {
	// Proc is the image the event belongs to, as the engine knows it
	// (nil for an event of none): who did it, container included.
	Proc *trace.Process
	// Dup is the opens of the file so far in its image when this open
	// repeats one (2 for the first repeat), 0 otherwise or when the
	// file is ignored.
	Dup int
	// Extra is the duplicate opens this event added (after --ignore):
	// 1 for a repeat, the count of a tally's repeats.
	Extra uint64
	// ProbeFailed and ProbeFound: the event ended a probe chain of
	// ProbeFailed failed attempts, found as ProbeFound ("" for none).
	ProbeFailed int
	ProbeFound  string
}

// Handle applies one event at time now.
func (e *Engine) Handle(ev *trace.Event, now time.Time) Annotation {
	e.totals.Events++
	var ann Annotation
	t := &ev.Task
	e.stack = ev.Stack
	e.counting = ev.Kind == trace.EventUnsent || ev.Kind == trace.EventTally || ev.Kind == trace.EventKeptStack
	switch ev.Kind {
	case trace.EventFork:
		e.fork(t, &ev.Proc, now)
	case trace.EventImage:
		_, had := e.images[t.Image()]
		im := e.image(t.Image(), t, now)
		execNamed(im, t.Comm)
		im.p.Exe = ev.Proc.Exe
		im.p.Compat = ev.Proc.Status.Has(trace.StCompat)
		if e.label != nil && had {
			// Made by an earlier event of the image: asked then, but a
			// new image is the moment to ask.
			im.p.Container = e.label(t.Pid, t.CgroupID)
		}
	case trace.EventExec:
		e.exec(t, &ev.Exec, now, &ann)
	case trace.EventOpen:
		if ev.Open.MissRepeats.N > 0 {
			e.missRepeats(t, ev.Open.MissRepeats, now)
		}
		if ev.Open.LookupMissRepeats.N > 0 {
			e.missRepeats(t, ev.Open.LookupMissRepeats, now)
		}
		if ev.Open.Unsent > 0 {
			e.unsent(t, uint64(ev.Open.Unsent), now)
		}
		if ev.Open.LookupsUnsent > 0 {
			e.lookupsUnsent(t, uint64(ev.Open.LookupsUnsent), now)
		}
		if ev.Open.Syscall.IsLookup() {
			e.lookup(t, &ev.Open, now, &ann)
		} else {
			e.open(t, &ev.Open, now, &ann)
		}
	case trace.EventUnsent:
		if ev.Proc.MissRepeats.N > 0 {
			e.missRepeats(t, ev.Proc.MissRepeats, now)
		}
		if ev.Proc.LookupMissRepeats.N > 0 {
			e.missRepeats(t, ev.Proc.LookupMissRepeats, now)
		}
		if ev.Proc.Unsent > 0 {
			e.unsent(t, uint64(ev.Proc.Unsent), now)
		}
		if ev.Proc.LookupsUnsent > 0 {
			e.lookupsUnsent(t, uint64(ev.Proc.LookupsUnsent), now)
		}
	case trace.EventTally:
		e.tally(t, &ev.Tally, now, &ann)
	case trace.EventKeptStack:
		e.keptStack(t, &ev.Open)
	case trace.EventMade:
		e.made(t, &ev.Open, now)
	case trace.EventExit:
		e.exit(t, &ev.Proc, now)
	}
	if e.last != nil && e.last.p.Key.Pid == t.Pid {
		ann.Proc = e.last.p
	}
	return ann
}

// Drain returns the findings completed since the last call.
func (e *Engine) Drain() []trace.Finding {
	out := e.pending
	e.pending = nil
	return out
}

// Finish ends every image still live: their open chains and duplicates
// become findings. For the end of a run or of a watch.
func (e *Engine) Finish(now time.Time) {
	if e.pol.Bounded {
		for el := e.active.Front(); el != nil; {
			im := el.Value.(*image)
			el = el.Next()
			e.end(im, now)
		}
		return
	}
	for _, im := range e.order {
		e.end(im, now)
	}
}

// Result finishes the run and returns every process and finding (KeepAll
// only), findings most wasteful first. Call it once, at the end.
func (e *Engine) Result() *trace.Result {
	e.Finish(time.Time{})
	r := &trace.Result{Files: e.pol.Files}
	for _, im := range e.order {
		// once's launcher copy is the command's own process before the
		// command runs: listed only when the command never ran (its exec
		// failed), as strace -f shows that pid's failed execve.
		if im.launcher {
			// (Go's own probe of clone flags forks a child that only
			// exits: never listed.)
			if pr := e.procs[im.p.Key.Proc()]; pr == nil || !pr.launcher || im.p.Totals.Execs == 0 {
				continue
			}
		}
		e.unpack(im)
		r.Processes = append(r.Processes, im.p)
	}
	r.Findings = e.sorted(e.Drain())
	r.Opens, r.FailedOpens = int(e.totals.Opens), int(e.totals.FailedOpens)
	r.Execs, r.FailedExecs = int(e.totals.Execs), int(e.totals.FailedExecs)
	r.Lookups, r.FailedLookups = int(e.totals.Lookups), int(e.totals.FailedLookups)
	r.Waste = trace.TotalsOf(r.Findings)
	return r
}

// sorted orders findings most wasteful first; ties keep the order of
// their processes' first appearance, then the order they completed in.
func (e *Engine) sorted(fs []trace.Finding) []trace.Finding {
	type ranked struct {
		f        trace.Finding
		seq, idx int
	}
	rs := make([]ranked, len(fs))
	for i := range fs {
		seq := 0
		if im := e.images[fs[i].Key]; im != nil {
			seq = im.seq
		}
		rs[i] = ranked{fs[i], seq, i}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := cmp.Compare(b.f.WastedNs, a.f.WastedNs); c != 0 {
			return c
		}
		if c := cmp.Compare(b.f.Failed+b.f.Count, a.f.Failed+a.f.Count); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.idx, b.idx))
	})
	for i := range rs {
		fs[i] = rs[i].f
	}
	return fs
}

// emit delivers a finding of im, unless --ignore leaves it out.
func (e *Engine) emit(im *image, f trace.Finding) bool {
	if f.Info().Shape == trace.ShapeChain {
		paths := make([]string, len(f.Attempts))
		for i, a := range f.Attempts {
			paths[i] = a.Path
		}
		if e.ignore.matchAll(paths) {
			return false
		}
	}
	f.Key, f.Pid, f.PPid = im.p.Key, im.p.Pid, im.p.PPid
	f.Comm, f.LastComm, f.ParentComm = im.p.Comm, im.p.LastComm, im.p.ParentComm
	f.Proc = im.p
	if !e.pol.Bounded {
		// Kept until the end of the run: charged to the listing's
		// budget, and past it kept without its calls and attempts,
		// never left out.
		n := findingBytes(&f)
		if !e.listFits(n) {
			f.CallsOmitted += len(f.Calls)
			f.AttemptsOmitted += len(f.Attempts)
			f.Calls, f.Attempts = nil, nil
			im.p.DetailDropped++
			e.totals.DetailDropped++
			n = findingBytes(&f)
		}
		e.listBytes += n
	}
	e.pending = append(e.pending, f)
	e.totals.Findings++
	return true
}
