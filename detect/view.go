package detect

import (
	"cmp"
	"slices"
	"time"

	"github.com/oncetool/once/trace"
)

// Row is one process image of a live table.
type Row struct {
	Key       trace.ImageKey
	Pid, PPid uint32
	UID       uint32
	Comm      string
	// LastComm: the process's latest name (trace.Process.LastComm);
	// a group's row has it only when all its images have the same.
	LastComm string
	Exe      string
	Waste
	Opens int
	Execs int
	// LookupCalls: its stat and access calls that named a file (Waste's
	// Lookups are the avoidable ones among them).
	LookupCalls int
	Exited      bool // the process exited, or (Replaced) exec'd another image
	// ExitUnseen: Exited, its exit event not seen (lost, or left out by
	// the kernel's filters) but /proc without its pid: ExitCode unknown.
	ExitUnseen bool
	Replaced   bool
	ExitCode   int
	LastSeen   time.Time
	// Processes is how many images the row stands for: 1, or more for
	// a row of a group (Group), whose Pid and PPid are its first's.
	Processes int
	Running   int // of those, still running
	Container *trace.Container
	// Delta is what the row's images did since the last Mark (the
	// watch's previous tick): its rates, over the snapshot's Interval.
	Delta Delta
}

// Delta is what a row, or the whole watch, did in one interval.
type Delta struct {
	Opens    uint64 // open-family calls
	Lookups  uint64 // stat and access calls that named a file
	WastedNs uint64 // wasted time added (Row.WastedNs)
}

func (d *Delta) add(o Delta) {
	d.Opens += o.Opens
	d.Lookups += o.Lookups
	d.WastedNs += o.WastedNs
}

// counts is the image's counts as a Delta from zero.
func (im *image) counts() Delta {
	w := &im.waste
	return Delta{Opens: uint64(im.p.Totals.Opens), Lookups: uint64(im.p.Totals.Lookups),
		WastedNs: w.DupNs + w.ExecNs + w.OpenNs + w.LookupNs}
}

// since is what the image did since its mark; a count can't go back, but
// a clamp keeps a rate from wrapping if one ever did.
func (im *image) since() Delta {
	c, m := im.counts(), im.mark
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return Delta{Opens: sub(c.Opens, m.Opens), Lookups: sub(c.Lookups, m.Lookups), WastedNs: sub(c.WastedNs, m.WastedNs)}
}

// Mark ends an interval: it returns what every image held did since the
// last Mark, and starts the next interval's counts from now. Rows made
// before it carry the same interval's Delta. An image evicted or expired
// between two marks takes its last interval's part with it (an ended
// image's counts stop at its end, and the grace outlasts an interval).
func (e *Engine) Mark() Delta {
	var d Delta
	for _, im := range e.images {
		d.add(im.since())
		im.mark = im.counts()
	}
	return d
}

// WastedNs is the row's total waste: extra opens and failed probes.
func (r *Row) WastedNs() uint64 { return r.DupNs + r.ExecNs + r.OpenNs + r.LookupNs }

func (im *image) row() Row {
	p := im.p
	r := Row{Key: p.Key, Pid: p.Pid, PPid: p.PPid, UID: p.UID, Comm: p.Comm, LastComm: p.LastComm, Exe: p.Exe, Waste: im.waste,
		Opens: p.Totals.Opens, Execs: p.Totals.Execs, LookupCalls: p.Totals.Lookups, Exited: p.Exited || p.ExitUnseen || im.replaced, ExitUnseen: p.ExitUnseen && !p.Exited, Replaced: im.replaced,
		ExitCode: p.ExitCode, LastSeen: im.lastSeen, Processes: 1, Container: p.Container, Delta: im.since()}
	r.Worst = im.worstBrief()
	if !r.Exited {
		r.Running = 1
	}
	return r
}

// SortKey orders a live table.
type SortKey string

const (
	SortDup    SortKey = "dup"
	SortExec   SortKey = "exec"
	SortLookup SortKey = "lookup" // avoidable lookups (Waste.Lookups)
	SortTime   SortKey = "time"
)

// Group is what a live table's rows stand for.
type Group string

const (
	GroupPid  Group = "pid"  // a row per process image
	GroupExe  Group = "exe"  // a row per executable
	GroupComm Group = "comm" // a row per comm
	// GroupContainer: a row per container (and one for the processes
	// outside any).
	GroupContainer Group = "container"
)

// Rows returns up to n rows (all with n <= 0) of the images held that
// wasted something, grouped by g and sorted by key.
func (e *Engine) Rows(key SortKey, n int, g Group) []Row {
	rows, _ := e.Table(key, n, g)
	return rows
}

// Table is Rows and how many rows there were before the first n were
// kept.
func (e *Engine) Table(key SortKey, n int, g Group) ([]Row, int) {
	if g != GroupExe && g != GroupComm && g != GroupContainer {
		return e.imageRows(key, n)
	}
	rows := make([]Row, 0, 64)
	groups := map[string]int{} // index in rows, by group key
	for _, im := range e.images {
		w := &im.waste
		if !w.wasted() {
			continue
		}
		r := im.row()
		var k string
		switch g {
		case GroupExe:
			k = r.Exe
			if k == "" {
				k = "[" + r.Comm + "]"
			}
		case GroupComm:
			k = r.Comm
		case GroupContainer:
			if c := r.Container; c != nil {
				k = c.Runtime + "/" + c.ID + "/" + c.Namespace + "/" + c.Pod
			}
		default:
			rows = append(rows, r)
			continue
		}
		if i, ok := groups[k]; ok {
			rows[i].add(&r)
			continue
		}
		groups[k] = len(rows)
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int { return rowOrder(key, &a.Waste, &b.Waste, a.Key, b.Key) })
	all := len(rows)
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows, all
}

// imageRows is Rows of a row per image: the images ordered, then rows
// made of the first n only. A table of every image held (65,536 under
// churn) was tens of MiB made and thrown away at every tick.
func (e *Engine) imageRows(key SortKey, n int) ([]Row, int) {
	ims := make([]*image, 0, len(e.images))
	for _, im := range e.images {
		if im.waste.wasted() {
			ims = append(ims, im)
		}
	}
	slices.SortFunc(ims, func(a, b *image) int { return rowOrder(key, &a.waste, &b.waste, a.p.Key, b.p.Key) })
	all := len(ims)
	if n > 0 && len(ims) > n {
		ims = ims[:n]
	}
	rows := make([]Row, len(ims))
	for i, im := range ims {
		rows[i] = im.row()
	}
	return rows, all
}

// rowOrder orders rows by key, most first, then by wasted time, then by
// pid and exec id.
func rowOrder(key SortKey, a, b *Waste, ak, bk trace.ImageKey) int {
	score := func(w *Waste) uint64 {
		switch key {
		case SortDup:
			return uint64(w.ExtraOpens)
		case SortExec:
			return uint64(w.ExecProbes)
		case SortLookup:
			return uint64(w.Lookups)
		}
		return w.DupNs + w.ExecNs + w.OpenNs + w.LookupNs
	}
	if c := cmp.Compare(score(b), score(a)); c != 0 {
		return c
	}
	if c := cmp.Compare(b.DupNs+b.ExecNs+b.OpenNs+b.LookupNs, a.DupNs+a.ExecNs+a.OpenNs+a.LookupNs); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(ak.Pid, bk.Pid), cmp.Compare(ak.ExecID, bk.ExecID))
}

// add folds r into a group's row: waste summed, the worst kept, the
// first process (the lowest pid) standing for the group.
func (g *Row) add(r *Row) {
	if r.Pid < g.Pid {
		g.Key, g.Pid, g.PPid = r.Key, r.Pid, r.PPid
	}
	if r.LastComm != g.LastComm {
		g.LastComm = g.Comm
	}
	worstG, worstR := g.WastedNs(), r.WastedNs()
	w := &g.Waste
	w.DupFiles += r.DupFiles
	w.ExtraOpens += r.ExtraOpens
	w.DupNs += r.DupNs
	w.ExecProbes += r.ExecProbes
	w.ExecNs += r.ExecNs
	w.Launches += r.Launches
	w.OpenProbes += r.OpenProbes
	w.OpenNs += r.OpenNs
	w.Lookups += r.Lookups
	w.LookupNs += r.LookupNs
	if worstR > worstG {
		w.Worst = r.Worst
	}
	g.Opens += r.Opens
	g.Execs += r.Execs
	g.LookupCalls += r.LookupCalls
	g.Delta.add(r.Delta)
	g.Processes += r.Processes
	g.Running += r.Running
	g.Exited = g.Running == 0
	if r.LastSeen.After(g.LastSeen) {
		g.LastSeen = r.LastSeen
	}
}

// WithKernel is t with what the kernel has counted but not yet reported by
// image: first opens that each thread reports only with its next event,
// exit or exec. For the totals shown, which must not lag.
func (t Totals) WithKernel(c *trace.Counters) Totals {
	if c.OpensUnsent > t.OpensUnsent {
		t.Opens += c.OpensUnsent - t.OpensUnsent
		t.OpensUnsent = c.OpensUnsent
	}
	return t
}

// Snapshot is the state of a watch at one moment: what the live table and
// the periodic summary show.
type Snapshot struct {
	Time         time.Time
	Uptime       time.Duration
	EventsPerSec float64
	Counters     trace.Counters
	Totals       Totals
	Processes    int // images held
	Sort         SortKey
	Group        Group
	Rows         []Row
	// RowsAll: how many rows there were before the first Top were
	// kept in Rows.
	RowsAll int
	// Interval is the time since the previous snapshot (the first: since
	// the start), which the rows' and Delta's counts cover: their rates.
	// Zero when unknown.
	Interval time.Duration
	// Delta is what every image did in that interval; Opens and
	// Lookups are the totals' own (images not held included).
	Delta Delta
	// LinesRepaired: the output file's cut last line, ended with a
	// newline when once opened it (an unclean stop before).
	LinesRepaired int
}
