package detect

import (
	"container/list"
	"time"

	"github.com/oncetool/once/trace"
)

// image is one exec image: its Process (identity, totals, and the lists a
// report shows once it ends) and, while it lives, its detectors' state.
type image struct {
	p   *trace.Process
	seq int // order of first appearance
	// live is nil once the image has ended.
	live *liveState
	// prev is the image this one replaced by exec: it ends when the exec's
	// own event, which closes its PATH search, arrives after this one's.
	prev *image
	// launcher: once's copy of itself, before it execs the command.
	launcher bool
	// unnamed: p.Comm is not yet the image's own name, which is its
	// leader's comm at its exec or, without one, at the leader's first
	// event seen (names.go): it is a fork record's (the parent's comm at
	// the fork, which the child may change before its first call), or a
	// thread's other than the leader (comm is per thread:
	// pthread_setname_np).
	unnamed bool

	waste Waste
	bytes int64 // detail charged to it (budget.go)
	// detail: of bytes, what keepDetail charged (its listing's calls,
	// spellings, attempts), which has a budget of its own.
	detail int64
	// Its files listed packed (packed.go): packedN of the engine's
	// packed files from packedAt, packedBytes of its listing.
	packedAt, packedN int
	packedBytes       int64
	listed            int64  // without Bounded: of its listing, the bytes charged to Engine.listBytes
	worst             uint64 // what waste.Worst, or worstFile, describes
	// worstFile: the file opened again that wasted the most, when that is
	// the image's worst; its brief is made when a row is, not at each open.
	worstFile *file
	replaced  bool // ended by an exec, not an exit
	lastSeen  time.Time
	asked     time.Time // when EndGone last asked whether its process was gone
	// mark: its counts at the last Mark (a watch's tick), what the rates
	// of its row are measured from.
	mark    Delta
	elem    *list.Element // Bounded: on e.active or e.ended
	onEnded bool
}

// Waste is an image's waste so far, after --ignore: what a live table shows
// of it.
type Waste struct {
	DupFiles   int    // files opened more than once
	ExtraOpens int    // opens beyond the first of those files
	DupNs      uint64 // time spent in those extra opens
	ExecProbes int    // failed exec attempts of finished chains
	ExecNs     uint64 // their time
	Launches   int    // exec chains that failed at least once
	OpenProbes int    // failed opens of finished open probe chains
	OpenNs     uint64
	// Lookups: avoidable lookups (failed stat probes, stats and misses
	// repeated), LookupNs their time.
	Lookups  int
	LookupNs uint64
	// Worst is the brief (trace.Finding.Brief) of what wasted the most:
	// a finding, or a file being opened again while the image runs.
	Worst string
}

// wasted says whether the image has wasted anything: a table has a row
// for it, whatever the kind of its waste.
func (w *Waste) wasted() bool {
	return w.ExtraOpens != 0 || w.ExecProbes != 0 || w.OpenProbes != 0 || w.Lookups != 0
}

// noteWorst makes brief the image's worst waste if ns is at least what
// the one before cost.
func (im *image) noteWorst(ns uint64, brief func() string) {
	if ns >= im.worst {
		im.worst, im.worstFile = ns, nil
		im.waste.Worst = brief()
	}
}

// noteWorstFile is noteWorst of a file opened again: its brief, its path
// and how many times it was opened, is made by worstBrief.
func (im *image) noteWorstFile(f *file) {
	if f.fo.ExtraNs >= im.worst {
		im.worst, im.worstFile = f.fo.ExtraNs, f
		im.waste.Worst = ""
	}
}

// worstBrief is the brief of the image's worst waste.
func (im *image) worstBrief() string {
	if ls := im.live; ls != nil && ls.worstLiveNs > 0 && ls.worstLiveNs >= im.worst {
		// A file looked up again or a path missed again, counted
		// as it happens: its finding, made at the image's end,
		// will say it (noteWorst).
		return ls.liveBrief()
	}
	if f := im.worstFile; f != nil {
		return f.fo.Path + " x" + itoa(f.fo.Count)
	}
	return im.waste.Worst
}

// liveState is what the detectors need of an image while it runs.
type liveState struct {
	files map[fileKey]*file
	opath map[fileKey]*file
	// special: devices, FIFOs and sockets (trace.FileApart), apart
	// like opath.
	special map[fileKey]*file
	order   []*file // files, opath and special in first-open order
	failed  map[failKey]*trace.FailedOpen
	tids    map[uint32]struct{}
	// tidsCapped: a thread was seen that tids, full, had no room for.
	tidsCapped bool
	chain      execChain
	probes     map[string]*openProbe
	// probesCut: a basename was refused a chain (probes or lprobes) for
	// want of budget; no new one is taken (probeFailedN).
	probesCut bool
	// Lookups (lookup.go): probe chains of stat and access misses, files
	// looked up, paths missed (opens' too).
	lprobes map[string]*openProbe
	held    map[string][]*heldChain
	// openWon: the first open chain of each name that found it (its
	// misses and where it found it), kept while the image runs: a new
	// chain of the name that misses first where that one neither
	// missed nor found is the same look past a find (foundBefore).
	openWon map[string]*heldChain
	// lookGen counts the changes to lprobes, held and heldIn (and to the
	// chains in them); won is the last lookupProbeWon that changed
	// nothing, at lookGen then: the same call again, with lookGen still
	// that, would change nothing either (a loop opening one file).
	lookGen uint64
	won     wonCall
	// nameMask has nameBit of each name lprobes and held were given since
	// both were last empty, or since it was made again from them (at
	// lookGen maskGen): a name whose bit is clear is in neither.
	nameMask uint64
	maskGen  uint64
	// heldIn: the held chains by name and a directory each failed in
	// (hashed), so that a lookup that finds a name looks at the chains
	// that missed it there, not at every one held (a shell's loop holds a
	// search per command).
	heldIn    map[heldDir][]*heldChain
	heldGone  int // held chains dropped, still in held
	stats     map[fileKey]*statFile
	statOrder []*statFile
	misses    map[missKey]*miss
	missOrder []*miss
	// lastMiss: each thread's last failed lookup, which the kernel's
	// counts of repeats (trace.Repeats) are of.
	lastMiss map[uint32]*lastMiss
	// ldCache: where the image opened ld.so's cache, "" before it did;
	// cacheDirs: the directories (hashed) its chains found through the
	// cache right after opening it missed in (foundViaCache).
	ldCache   string
	cacheDirs map[uint64]struct{}
	// liveLookups, liveLookupNs: what the files looked up again and the
	// paths missed again count in the image's waste before their
	// findings do (countLive).
	liveLookups  int
	liveLookupNs uint64
	// worstStat or worstMiss: of those, the one that wastes the most,
	// worstLiveNs (countLive).
	worstStat   *statFile
	worstMiss   *miss
	worstLiveNs uint64
}

// fileKey is a file's identity: device and inode number, and the inode's
// generation, which tells apart two files given the same number one after
// the other (ext4 and tmpfs reuse a freed number for the next file made).
// On tracefs, whose event files share one number, the kernel side puts a
// hash of the file's path in gen (trace.OpenRecord.Gen).
type fileKey struct {
	dev, ino uint64
	gen      uint32
	ftype    uint16 // a looked-up file's only (see statKey)
}

type failKey struct {
	errno       int32
	fname, base string
}

// maxThreads bounds the thread ids remembered per image.
const maxThreads = 4096

func (e *Engine) image(key trace.ImageKey, t *trace.Task, now time.Time) *image {
	if im := e.last; im != nil && im.p.Key == key {
		e.touch(im, now)
		e.named(im, t)
		return im
	}
	if im := e.images[key]; im != nil {
		e.last = im
		e.touch(im, now)
		e.named(im, t)
		return im
	}
	e.admit(now)
	p := &trace.Process{Key: key, Pid: key.Pid}
	if t != nil {
		p.PPid, p.UID, p.CgroupID, p.Comm = t.PPid, t.UID, t.CgroupID, t.Comm
		p.LastComm = t.Comm
		// A forked process is in its parent's container but where
		// clone3 put it in another cgroup: fork copies the parent's
		// label or asks; an exec asks anew.
		if e.label != nil && !e.forking {
			p.Container = e.label(key.Pid, t.CgroupID)
		}
	}
	e.seq++
	im := &image{p: p, seq: e.seq, lastSeen: now, bytes: imageBytes, live: &liveState{
		files: map[fileKey]*file{},
	}}
	// Tid 0: no thread said (a count held at the end), the leader's.
	im.unnamed = t != nil && (e.forking || e.replacing || e.counting || (t.Tid != 0 && t.Tid != t.Pid))
	if im.unnamed && !e.forking && !e.replacing && !e.counting {
		// A thread other than the leader of a process first seen now
		// (older than the trace, or evicted): its own name is no name
		// of the process's, whose leader may never make a call seen
		// (a JVM's, parked in pthread_join). The leader's comm, as ps
		// says it, names it until the leader's first event does.
		if c := e.unseenParent(key.Pid); c != "" {
			p.Comm, p.LastComm = c, c
		}
	}
	e.bytes += imageBytes
	if e.pol.Bounded {
		im.elem = e.active.PushFront(im)
	} else {
		e.order = append(e.order, im)
	}
	e.images[key] = im
	e.last = im

	pk := key.Proc()
	pr := e.procs[pk]
	switch {
	case pr == nil:
		pr = &proc{key: pk, cur: im}
		e.procs[pk] = pr
		e.running++
		if old := e.byPid[key.Pid]; old == nil || old.key.Start <= key.Start {
			e.byPid[key.Pid] = pr
		}
	case pr.cur == nil || pr.cur.p.Key.ExecID < key.ExecID:
		// An image that succeeds another of the same process inherits
		// what exec keeps: the parent. Unless the process was
		// reparented before it exec'd (its parent exited: to init or a
		// subreaper): its ppid is then the new parent's, and so is the
		// name, looked up below.
		if prev := pr.cur; prev != nil {
			if p.PPid == 0 {
				p.PPid = prev.p.PPid
			}
			if p.PPid == prev.p.PPid {
				p.ParentComm = prev.p.ParentComm
			}
			im.prev = prev
		}
		pr.cur = im
	}
	if p.ParentComm == "" {
		if parent := e.byPid[p.PPid]; parent != nil && parent.cur != nil {
			p.ParentComm = parent.cur.p.Comm
		} else if !e.forking {
			// A parent from before the trace (the shell): fork names
			// its child's from the fork record's parent.
			p.ParentComm = e.unseenParent(p.PPid)
		}
	}
	return im
}

// unseenParent names pid, a parent the engine never saw, with
// Options.ParentComm; "" without it.
func (e *Engine) unseenParent(pid uint32) string {
	if e.pcomm == nil || pid == 0 {
		return ""
	}
	return e.pcomm(pid)
}

func (e *Engine) fork(t *trace.Task, r *trace.ProcRecord, now time.Time) {
	_, known := e.images[t.Image()]
	e.forking = true
	im := e.image(t.Image(), t, now)
	e.forking = false
	im.p.PPid = r.ParentPid
	if e.spawner != 0 && r.ParentPid == e.spawner {
		im.launcher = true
		im.p.ParentComm = "once"
		if pr := e.procs[t.Proc()]; pr != nil && !pr.launcher {
			pr.launcher = true
			e.running--
		}
	}
	parent := e.procs[trace.ProcKey{Pid: r.ParentPid, Start: r.ParentStart}]
	switch {
	case parent != nil && parent.cur != nil:
		im.p.ParentComm = parent.cur.p.Comm
		im.p.Exe = parent.cur.p.Exe
	case im.p.ParentComm == "" && !known:
		im.p.ParentComm = e.unseenParent(r.ParentPid)
	}
	if t.PPid != 0 && t.PPid != r.ParentPid && !im.launcher {
		// CLONE_PARENT (runc's nsexec): the child is its caller's
		// sibling, a copy of the caller's image whose parent, as
		// getppid and its images after an exec say, is the caller's.
		im.p.PPid = t.PPid
		if pp := e.byPid[t.PPid]; pp != nil && pp.cur != nil {
			im.p.ParentComm = pp.cur.p.Comm
		} else {
			im.p.ParentComm = e.unseenParent(t.PPid)
		}
	}
	if e.label != nil && !known {
		// Fork moves no one: the child is in its parent's container,
		// unless the kernel gives it another cgroup than the parent's
		// image had (runc's init, which runc moved into the container's
		// cgroup; clone3's CLONE_INTO_CGROUP): then it is asked anew.
		if parent != nil && parent.cur != nil && parent.cur.p.CgroupID == t.CgroupID {
			im.p.Container = parent.cur.p.Container
		} else {
			im.p.Container = e.label(t.Pid, t.CgroupID)
		}
	}
}

func (e *Engine) exit(t *trace.Task, r *trace.ProcRecord, now time.Time) {
	pr := e.procs[t.Proc()]
	var im *image
	if pr != nil && pr.cur != nil {
		im = pr.cur
		// The exit's task is the thread that ended the group: when the
		// leader, its comm is the process's last name.
		e.named(im, t)
	} else {
		im = e.image(t.Image(), t, now)
		pr = e.procs[t.Proc()]
	}
	im.p.Exited, im.p.ExitCode = true, trace.ExitStatus(r.ExitCode)
	im.lastSeen = now
	e.endReplaced(im, now)
	e.end(im, now)
	if !pr.exited {
		pr.exited = true
		if !pr.launcher {
			e.running--
		}
	}
	if e.pol.Bounded && e.byPid[t.Pid] == pr {
		delete(e.byPid, t.Pid)
	}
}

// endReplaced ends the images im replaced by exec.
func (e *Engine) endReplaced(im *image, now time.Time) {
	for p := im.prev; p != nil; p = p.prev {
		p.replaced, p.lastSeen = true, now
		e.end(p, now)
	}
	im.prev = nil
}

// end closes what an image still has open (a chain that never found, open
// probes that never succeeded), turns its repeated files into findings and
// frees its per-file state; what a report lists of it stays in its
// Process.
func (e *Engine) end(im *image, now time.Time) {
	ls := im.live
	if ls == nil {
		return
	}
	delete(e.holding, im)
	if !im.launcher {
		e.closeChain(im, nil, nil)
		e.endOpenProbes(im)
		e.endLookups(im)
		e.endFiles(im)
	}
	// A launcher's lookups make no finding: what they counted goes.
	e.uncountLive(im)
	if e.pol.Lists {
		im.p.Threads = len(ls.tids)
		im.p.ThreadsCapped = ls.tidsCapped
	}
	im.live = nil
	// What it keeps now is its Process and, with lists, what its report
	// shows: the rest of what it was charged goes back.
	if e.pol.Bounded {
		e.release(im, im.bytes-retainedBytes(im.p))
	} else {
		// Detection's budget gets all of it back; what stays is the
		// listing's (endFiles charged the part it may cut).
		e.release(im, im.bytes)
		n := retainedBytes(im.p) + im.packedBytes - im.listed
		e.listBytes += n
		im.listed += n
	}
	if e.pol.Bounded && !im.onEnded {
		e.active.Remove(im.elem)
		im.elem = e.ended.PushBack(im)
		im.onEnded = true
	}
}
