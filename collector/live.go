package collector

import (
	"container/list"
	"path"
	"sort"
	"syscall"
	"time"
)

// LiveOptions bound a Live aggregator's memory for runs of any length.
type LiveOptions struct {
	// MaxProcesses caps the process images held at once (live and
	// recently exited). Past it the oldest exited, then the least
	// recently active, are evicted and counted. Default 65536.
	MaxProcesses int
	// MaxFiles caps the distinct files remembered per image; opens of
	// further files are counted but can't be recognised as duplicates.
	// Default 4096.
	MaxFiles int
	// Grace is how long an exited process keeps its row. Default 30s.
	Grace time.Duration
	// Ignore holds path.Match globs of files never reported.
	Ignore []string
}

func (o *LiveOptions) defaults() {
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = 65536
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 4096
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
}

// Live aggregates a system-wide event stream with bounded memory: per
// image only a count per file, the exec chain in progress and the open
// probes in progress; everything else is summed. It yields findings as they
// complete (Drain) and a table of processes (Rows). Not safe for
// concurrent use.
type Live struct {
	opts   LiveOptions
	images map[ImageKey]*liveImage
	// Every image is on exactly one list: active ones by recency (front:
	// most recent), ended ones by the time they ended (front: oldest).
	// Both make eviction and expiry O(1) per image.
	active  *list.List
	ended   *list.List
	current map[procKey]*liveImage
	last    *liveImage // the image of the event before: most often this one's
	pending []Finding
	Totals  LiveTotals
}

// LiveTotals are sums over the whole run.
type LiveTotals struct {
	Events         uint64
	Opens          uint64
	FailedOpens    uint64
	Execs          uint64
	FailedExecs    uint64
	DuplicateOpens uint64 // opens of a file the same image had already opened
	ExecProbes     uint64 // failed attempts in PATH searches that ended
	ExecProbeNs    uint64
	OpenProbes     uint64
	Findings       uint64
	Evicted        uint64 // images dropped under MaxProcesses
	FilesCapped    uint64 // opens of files past MaxFiles, not tracked
	OpensUnsent    uint64 // of Opens, those the kernel reported counted, not sent
}

// WithKernel is t with what the kernel has counted but not yet reported
// by image (Options.FirstOpensUnsent): first opens that each thread
// reports only with its next event, exit or exec, and files past the
// kernel's own per-image bound. For the totals shown, which must not lag.
func (t LiveTotals) WithKernel(c *Counters) LiveTotals {
	if c.OpensUnsent > t.OpensUnsent {
		t.Opens += c.OpensUnsent - t.OpensUnsent
		t.OpensUnsent = c.OpensUnsent
	}
	t.FilesCapped += c.FilesUntracked
	return t
}

type liveFile struct {
	count uint32
	ns    uint64 // latency of the opens after the first
	path  string
	paths []string // other spellings, at most a few
}

type liveImage struct {
	row     Row
	files   map[fileKey]*liveFile
	chain   []ExecAttempt
	enoexec *ExecAttempt
	probes  map[string][]Attempt
	worst   uint64
	prev    *liveImage // the image this one replaced by exec, until it ends
	elem    *list.Element
	onEnded bool
}

// Row is one process image in the live table.
type Row struct {
	Key        ImageKey
	Pid, PPid  uint32
	UID        uint32
	Comm       string
	Exe        string
	DupFiles   int    // files opened more than once
	ExtraOpens int    // opens beyond the first of those files
	DupNs      uint64 // time spent in those extra opens
	ExecProbes int    // failed exec attempts of finished PATH searches
	ExecNs     uint64 // their time
	Launches   int    // PATH searches that failed at least once
	OpenProbes int    // failed opens of finished open probe chains
	OpenNs     uint64
	Opens      int
	Execs      int
	Worst      string // the worst file or launch of this process
	Exited     bool   // the process exited, or (Replaced) exec'd another image
	Replaced   bool
	ExitCode   int
	LastSeen   time.Time
}

// WastedNs is the row's total waste: extra opens and failed probes.
func (r *Row) WastedNs() uint64 { return r.DupNs + r.ExecNs + r.OpenNs }

// NewLive returns an empty aggregator.
func NewLive(opts LiveOptions) *Live {
	opts.defaults()
	return &Live{opts: opts, images: map[ImageKey]*liveImage{}, current: map[procKey]*liveImage{},
		active: list.New(), ended: list.New()}
}

// Len is the number of images held.
func (l *Live) Len() int { return len(l.images) }

func (l *Live) image(key ImageKey, t *Task, now time.Time) *liveImage {
	if im := l.last; im != nil && im.row.Key == key {
		im.row.LastSeen = now
		if !im.onEnded && l.active.Front() != im.elem {
			l.active.MoveToFront(im.elem)
		}
		return im
	}
	if im := l.images[key]; im != nil {
		l.last = im
		im.row.LastSeen = now
		if !im.onEnded {
			l.active.MoveToFront(im.elem)
		}
		return im
	}
	if len(l.images) >= l.opts.MaxProcesses {
		l.evict(now)
	}
	im := &liveImage{
		row:    Row{Key: key, Pid: key.Pid, PPid: t.PPid, UID: t.UID, Comm: t.Comm, LastSeen: now},
		files:  map[fileKey]*liveFile{},
		probes: map[string][]Attempt{},
	}
	l.images[key] = im
	l.last = im
	im.elem = l.active.PushFront(im)
	pk := procKey{key.Pid, key.Start}
	if prev := l.current[pk]; prev == nil || prev.row.Key.ExecID <= key.ExecID {
		// The image an exec replaced ends when the exec's own event
		// (which closes its PATH search) arrives, after this one.
		im.prev = prev
		l.current[pk] = im
	}
	return im
}

// evict drops one image: the oldest exited one, else the least recently
// active.
func (l *Live) evict(now time.Time) {
	var victim *liveImage
	if e := l.ended.Front(); e != nil {
		victim = e.Value.(*liveImage)
	} else if e := l.active.Back(); e != nil {
		victim = e.Value.(*liveImage)
	}
	if victim != nil {
		l.end(victim, now)
		l.remove(victim)
		l.Totals.Evicted++
	}
}

func (l *Live) remove(im *liveImage) {
	pk := procKey{im.row.Key.Pid, im.row.Key.Start}
	for cur := l.current[pk]; cur != nil; cur = cur.prev {
		if cur.prev == im {
			cur.prev = im.prev
			break
		}
	}
	delete(l.images, im.row.Key)
	if l.last == im {
		l.last = nil
	}
	if im.onEnded {
		l.ended.Remove(im.elem)
	} else {
		l.active.Remove(im.elem)
	}
	if l.current[pk] == im {
		delete(l.current, pk)
	}
}

// end closes what an image still has open (a PATH search that never
// found, open probes that never succeeded) and frees its per-file state;
// the row stays for the grace period.
func (l *Live) end(im *liveImage, now time.Time) {
	if im.files == nil {
		return
	}
	if im.enoexec != nil {
		im.chain = append(im.chain, *im.enoexec)
		im.enoexec = nil
	}
	l.closeChain(im, nil)
	for b, tries := range im.probes {
		if len(tries) >= minOpenProbes && distinctDirs(tries) {
			l.openProbeFinding(im, b, tries, nil)
		}
	}
	for k, f := range im.files {
		if f.count > 1 && !l.ignored(f.path) {
			l.emit(im, Finding{Kind: KindDuplicateOpen, Path: f.path, Paths: append([]string{f.path}, f.paths...),
				Dev: k.dev, Ino: k.ino, Count: int(f.count), WastedNs: f.ns})
		}
	}
	im.files, im.probes, im.chain = nil, nil, nil
	if !im.onEnded {
		l.active.Remove(im.elem)
		im.elem = l.ended.PushBack(im)
		im.onEnded = true
	}
}

func (l *Live) ignored(p string) bool {
	for _, g := range l.opts.Ignore {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

func (l *Live) emit(im *liveImage, f Finding) {
	f.Key, f.Pid, f.PPid, f.Comm = im.row.Key, im.row.Pid, im.row.PPid, im.row.Comm
	l.pending = append(l.pending, f)
	l.Totals.Findings++
}

// Drain returns the findings completed since the last call.
func (l *Live) Drain() []Finding {
	out := l.pending
	l.pending = nil
	return out
}

// Expire drops the rows of processes that exited more than Grace ago.
func (l *Live) Expire(now time.Time) {
	for e := l.ended.Front(); e != nil; {
		im := e.Value.(*liveImage)
		if now.Sub(im.row.LastSeen) <= l.opts.Grace {
			break
		}
		e = e.Next()
		l.remove(im)
	}
}

// Finish ends every image, so their findings can be drained: for the
// final summary.
func (l *Live) Finish(now time.Time) {
	for _, im := range l.images {
		l.end(im, now)
	}
}

// Handle applies one event at time now.
func (l *Live) Handle(ev *Event, now time.Time) {
	l.Totals.Events++
	t := &ev.Task
	switch ev.Kind {
	case EventImage:
		im := l.image(t.Image(), t, now)
		im.row.Comm, im.row.Exe = t.Comm, ev.Proc.Exe
	case EventExit:
		pk := procKey{t.Pid, t.Start}
		im := l.current[pk]
		if im == nil {
			return
		}
		l.end(im, now)
		im.row.Exited, im.row.ExitCode, im.row.LastSeen = true, exitStatus(ev.Proc.ExitCode), now
		l.endReplaced(im, now)
		delete(l.current, pk)
	case EventFork:
		l.image(t.Image(), t, now)
	case EventExec:
		l.exec(t, &ev.Exec, now)
	case EventOpen:
		if ev.Open.Unsent > 0 {
			l.unsent(t, uint64(ev.Open.Unsent), now)
		}
		l.open(t, &ev.Open, now)
	case EventUnsent:
		l.unsent(t, uint64(ev.Proc.Unsent), now)
	case EventTally:
		l.tally(t, &ev.Tally, now)
	}
}

func (l *Live) exec(t *Task, e *ExecRecord, now time.Time) {
	l.Totals.Execs++
	a := ExecAttempt{Syscall: e.Syscall, Tid: t.Tid, Filename: e.Filename, Argv: e.Argv, Ns: e.ExitNs - e.EnterNs}
	key := t.Image()
	if e.Ret == 0 {
		key.ExecID--
	} else {
		a.Errno = -e.Ret
		l.Totals.FailedExecs++
	}
	im := l.image(key, t, now)
	im.row.Execs++
	if im.files == nil {
		return // already ended (evicted or exited): nothing to attach to
	}
	if fb := im.enoexec; fb != nil {
		im.enoexec = nil
		if len(a.Argv) >= 2 && sameArg(a.Argv[1], fb.Filename) {
			var found *string
			if a.Errno == 0 {
				f := a.Filename
				found = &f
			}
			l.emit(im, Finding{Kind: KindExecShellFallback, Target: path.Base(fb.Filename),
				Attempts: []Attempt{{Path: fb.Filename, Errno: fb.Errno, Ns: fb.Ns}, {Path: a.Filename, Errno: a.Errno, Ns: a.Ns}},
				Failed:   1, Found: found, WastedNs: fb.Ns})
			return
		}
	}
	switch {
	case a.Errno == int32(syscall.ENOEXEC):
		fb := a
		im.enoexec = &fb
		a.Errno = 0
		l.closeChain(im, &a)
	case a.Errno != 0:
		if len(im.chain) < 256 {
			im.chain = append(im.chain, a)
		}
	default:
		l.closeChain(im, &a)
	}
	if e.Ret == 0 {
		next := l.image(t.Image(), t, now)
		next.row.Comm = t.Comm
		l.endReplaced(next, now)
	}
}

// endReplaced ends the images im replaced by exec.
func (l *Live) endReplaced(im *liveImage, now time.Time) {
	for p := im.prev; p != nil; p = p.prev {
		l.end(p, now)
		p.row.Exited, p.row.Replaced, p.row.LastSeen = true, true, now
	}
	im.prev = nil
}

func (l *Live) closeChain(im *liveImage, winner *ExecAttempt) {
	if len(im.chain) == 0 {
		return
	}
	f := probeChainFinding(im.chain, winner)
	im.chain = nil
	im.row.ExecProbes += f.Failed
	im.row.ExecNs += f.WastedNs
	im.row.Launches++
	l.Totals.ExecProbes += uint64(f.Failed)
	l.Totals.ExecProbeNs += f.WastedNs
	if f.WastedNs >= im.worst {
		im.worst = f.WastedNs
		im.row.Worst = "launch " + f.Target + " (" + itoa(f.Failed) + " failed)"
	}
	l.emit(im, f)
}

// unsent counts n opens of t's image that the kernel counted without
// sending: first opens of files, none of them a duplicate.
func (l *Live) unsent(t *Task, n uint64, now time.Time) {
	l.Totals.Opens += n
	l.Totals.OpensUnsent += n
	im := l.image(t.Image(), t, now)
	im.row.Opens += int(n)
}

// Comm is the comm of an image held, as its events last gave it: for an
// EventUnsent sent at exec, whose task already has the new image's comm.
func (l *Live) Comm(key ImageKey) (string, bool) {
	if im := l.images[key]; im != nil {
		return im.row.Comm, true
	}
	return "", false
}

func (l *Live) open(t *Task, o *OpenRecord, now time.Time) {
	l.Totals.Opens++
	im := l.image(t.Image(), t, now)
	im.row.Opens++
	if o.Ret < 0 {
		l.Totals.FailedOpens++
		if im.files != nil && probeErrno(-o.Ret) && o.Fname != "" {
			b := path.Base(o.Fname)
			base := ""
			if o.Status&StPathIsBase != 0 {
				base = o.Path
			}
			if tries := im.probes[b]; len(tries) < 64 && (len(tries) > 0 || len(im.probes) < 1024) {
				im.probes[b] = append(tries, Attempt{Path: absName(o.Fname, base), Errno: -o.Ret, Ns: o.ExitNs - o.EnterNs})
			}
		}
		return
	}
	if im.files == nil || o.Status&StPathUnresolved != 0 || o.Flags&oPath != 0 {
		return
	}
	if len(im.probes) == 0 {
		// Nothing to close: the common case, without hashing the name.
	} else if tries, ok := im.probes[path.Base(o.Fname)]; ok {
		delete(im.probes, path.Base(o.Fname))
		if len(tries) >= minOpenProbes {
			found := o.Fname
			l.openProbeFinding(im, path.Base(o.Fname), append(tries, Attempt{Path: o.Fname, Ns: o.ExitNs - o.EnterNs}), &found)
		}
	}
	k := fileKey{o.Dev, o.Ino}
	f := im.files[k]
	if f == nil {
		if len(im.files) >= l.opts.MaxFiles {
			l.Totals.FilesCapped++
			return
		}
		if o.Status&StSeenBefore == 0 {
			im.files[k] = &liveFile{count: 1, path: o.Path}
			return
		}
		// The image's first open of it was counted, not sent: this
		// one is its second.
		f = &liveFile{count: 1, path: o.Path}
		im.files[k] = f
	}
	f.count++
	if f.count == 2 {
		im.row.DupFiles++
	}
	ns := o.ExitNs - o.EnterNs
	f.ns += ns
	if o.Path != f.path && len(f.paths) < 4 && !contains(f.paths, o.Path) {
		f.paths = append(f.paths, o.Path)
	}
	if l.ignored(f.path) {
		return
	}
	im.row.ExtraOpens++
	im.row.DupNs += ns
	l.Totals.DuplicateOpens++
	if f.ns >= im.worst {
		im.worst = f.ns
		im.row.Worst = f.path + " x" + itoa(int(f.count))
	}
}

// tally adds opens the kernel counted without sending them: all of them
// repeats of a file the image opened before.
func (l *Live) tally(t *Task, r *TallyRecord, now time.Time) {
	l.Totals.Opens += r.Opens
	im := l.image(t.Image(), t, now)
	im.row.Opens += int(r.Opens)
	if im.files == nil || r.Flags&oPath != 0 {
		return
	}
	k := fileKey{r.Dev, r.Ino}
	f := im.files[k]
	if f == nil { // the opens sent before were lost (counted)
		if len(im.files) >= l.opts.MaxFiles {
			l.Totals.FilesCapped += r.Opens
			return
		}
		f = &liveFile{}
		im.files[k] = f
	}
	extra := r.Opens
	if f.count == 0 {
		extra--
	}
	if f.count < 2 && uint64(f.count)+r.Opens >= 2 {
		im.row.DupFiles++
	}
	f.count += uint32(r.Opens)
	f.ns += r.Ns
	if l.ignored(f.path) {
		return
	}
	im.row.ExtraOpens += int(extra)
	im.row.DupNs += r.Ns
	l.Totals.DuplicateOpens += extra
	if f.ns >= im.worst {
		im.worst = f.ns
		im.row.Worst = f.path + " x" + itoa(int(f.count))
	}
}

func (l *Live) openProbeFinding(im *liveImage, target string, tries []Attempt, found *string) {
	f := Finding{Kind: KindFailedOpenProbes, Target: target, Attempts: tries, Found: found}
	for _, a := range tries {
		if a.Errno != 0 {
			f.Failed++
			f.WastedNs += a.Ns
		}
	}
	im.row.OpenProbes += f.Failed
	im.row.OpenNs += f.WastedNs
	l.Totals.OpenProbes += uint64(f.Failed)
	l.emit(im, f)
}

// SortKey orders the live table.
type SortKey string

const (
	SortDup  SortKey = "dup"
	SortExec SortKey = "exec"
	SortTime SortKey = "time"
)

// Rows returns up to n rows (all with n <= 0) that have something to
// show, sorted by key.
func (l *Live) Rows(key SortKey, n int) []Row {
	rows := make([]Row, 0, len(l.images))
	for _, im := range l.images {
		r := im.row
		if r.ExtraOpens == 0 && r.ExecProbes == 0 && r.OpenProbes == 0 {
			continue
		}
		rows = append(rows, r)
	}
	score := func(r *Row) uint64 {
		switch key {
		case SortDup:
			return uint64(r.ExtraOpens)
		case SortExec:
			return uint64(r.ExecProbes)
		}
		return r.WastedNs()
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := score(&rows[i]), score(&rows[j])
		if a != b {
			return a > b
		}
		if rows[i].WastedNs() != rows[j].WastedNs() {
			return rows[i].WastedNs() > rows[j].WastedNs()
		}
		return rows[i].Pid < rows[j].Pid
	})
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Snapshot is the state of a watch at one moment: what the live table and
// the periodic summary show.
type Snapshot struct {
	Time         time.Time
	Uptime       time.Duration
	EventsPerSec float64
	Counters     Counters
	Totals       LiveTotals
	Processes    int // images held
	Sort         SortKey
	Rows         []Row
}
