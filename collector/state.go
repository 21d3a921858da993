package collector

import (
	"path"
	"sort"
	"strings"
	"syscall"
)

// State turns the event stream into per-image state and, on Result, runs
// the detectors. It is fed in ring buffer order and is not safe for
// concurrent use.
type State struct {
	images  map[ImageKey]*image
	order   []*image
	latest  map[procKey]*image // each live process's current image
	hidden  map[procKey]bool   // once's own launcher copy, before it execs the command
	spawner uint32
	ignore  []string
	totals  struct{ opens, failedOpens, execs, failedExecs int }
}

type procKey struct {
	pid   uint32
	start uint64
}

type fileKey struct{ dev, ino uint64 }

type image struct {
	p        *Process
	files    map[fileKey]*FileOpens
	opath    map[fileKey]*FileOpens
	failed   map[string]*FailedOpen // by errno + fname + base
	tids     map[uint32]struct{}
	chain    []ExecAttempt // consecutive failed execs not yet closed
	enoexec  *ExecAttempt  // the last attempt failed with ENOEXEC: a /bin/sh retry may follow
	probes   map[string][]Attempt
	findings []Finding
}

// NewState returns an empty state. spawner is the pid that launches traced
// commands (once itself): the copy of it that execs the command is not
// reported. ignore holds globs (path.Match) of files to leave out of
// findings.
func NewState(spawner int, ignore []string) *State {
	return &State{
		images:  map[ImageKey]*image{},
		latest:  map[procKey]*image{},
		hidden:  map[procKey]bool{},
		spawner: uint32(spawner),
		ignore:  ignore,
	}
}

// Processes returns the number of images seen so far.
func (s *State) Processes() int { return len(s.order) }

// Live reports whether any seen process has not exited.
func (s *State) Live() int {
	n := 0
	for k, im := range s.latest {
		if !im.p.Exited && !s.hidden[k] {
			n++
		}
	}
	return n
}

// Exited reports whether the process pid (any start time) has exited.
func (s *State) Exited(pid int) bool {
	for k, im := range s.latest {
		if k.pid == uint32(pid) && im.p.Exited {
			return true
		}
	}
	return false
}

func (s *State) image(key ImageKey, t *Task) *image {
	if im, ok := s.images[key]; ok {
		return im
	}
	p := &Process{Key: key, Pid: key.Pid}
	if t != nil {
		p.PPid, p.UID, p.CgroupID, p.Comm = t.PPid, t.UID, t.CgroupID, t.Comm
	}
	im := &image{
		p:      p,
		files:  map[fileKey]*FileOpens{},
		opath:  map[fileKey]*FileOpens{},
		failed: map[string]*FailedOpen{},
		tids:   map[uint32]struct{}{},
		probes: map[string][]Attempt{},
	}
	// An image that succeeds another of the same process inherits what
	// exec keeps: the parent.
	pk := procKey{key.Pid, key.Start}
	if prev := s.latest[pk]; prev != nil && prev.p.Key.ExecID < key.ExecID {
		if p.PPid == 0 {
			p.PPid = prev.p.PPid
		}
		p.ParentComm = prev.p.ParentComm
	}
	if s.latest[pk] == nil || s.latest[pk].p.Key.ExecID <= key.ExecID {
		s.latest[pk] = im
	}
	if p.ParentComm == "" {
		p.ParentComm = s.commOf(p.PPid)
	}
	s.images[key] = im
	s.order = append(s.order, im)
	return im
}

func (s *State) commOf(pid uint32) string {
	var best *image
	for k, im := range s.latest {
		if k.pid == pid && (best == nil || k.start > best.p.Key.Start) {
			best = im
		}
	}
	if best == nil {
		return ""
	}
	return best.p.Comm
}

// Handle applies one event.
func (s *State) Handle(ev *Event) {
	t := &ev.Task
	switch ev.Kind {
	case EventFork:
		if ev.Proc.ParentPid == s.spawner {
			s.hidden[procKey{t.Pid, t.Start}] = true
		}
		im := s.image(t.Image(), t)
		im.p.PPid = ev.Proc.ParentPid
		if ev.Proc.ParentPid == s.spawner {
			im.p.ParentComm = "once"
		}
		if parent := s.latest[procKey{ev.Proc.ParentPid, ev.Proc.ParentStart}]; parent != nil {
			im.p.ParentComm = parent.p.Comm
			im.p.Exe = parent.p.Exe
		}
	case EventImage:
		im := s.image(t.Image(), t)
		im.p.Comm = t.Comm
		im.p.Exe = ev.Proc.Exe
		im.p.Compat = ev.Proc.Status&StCompat != 0
	case EventExec:
		s.exec(t, &ev.Exec)
	case EventOpen:
		s.open(t, &ev.Open)
	case EventTally:
		s.tally(t, &ev.Tally)
	case EventExit:
		pk := procKey{t.Pid, t.Start}
		im := s.latest[pk]
		if im == nil {
			im = s.image(t.Image(), t)
		}
		im.p.Exited = true
		im.p.ExitCode = exitStatus(ev.Proc.ExitCode)
	}
}

func (s *State) exec(t *Task, e *ExecRecord) {
	a := ExecAttempt{
		Syscall: e.Syscall, Tid: t.Tid, Filename: e.Filename, Argv: e.Argv,
		ArgvTruncated:      e.Status&StArgvTruncated != 0,
		FilenameTruncated:  e.Status&StFnameTruncated != 0,
		FilenameUnreadable: e.Status&StFnameUnreadable != 0,
		ArgvUnreadable:     e.Status&StArgvUnreadable != 0,
		Dirfd:              e.Dirfd, AtFlags: e.AtFlags, EnterNs: e.EnterNs, Ns: e.ExitNs - e.EnterNs,
	}
	key := t.Image()
	if e.Ret == 0 {
		// The attempt belongs to the image that made it: the one the
		// exec replaced. self_exec_id goes up by one per exec.
		key.ExecID--
		next := s.image(t.Image(), t)
		next.p.Argv, next.p.ArgvTruncated = e.Argv, a.ArgvTruncated
		next.p.Comm = t.Comm
	} else {
		a.Errno = -e.Ret
	}
	pk := procKey{t.Pid, t.Start}
	prevLatest := s.latest[pk]
	im := s.image(key, t)
	if e.Ret == 0 && prevLatest != nil && prevLatest.p.Key.ExecID > key.ExecID {
		s.latest[pk] = prevLatest
	}
	im.tids[t.Tid] = struct{}{}
	im.p.Execs = append(im.p.Execs, a)
	// once's launcher copy execs the command: that exec is the command's
	// first (strace -f shows it too), but not a probe of the command's.
	s.totals.execs++
	if a.Errno != 0 {
		s.totals.failedExecs++
	}
	if s.hidden[pk] && key.ExecID == s.hiddenExecID(pk) {
		return
	}
	s.execChain(im, a)
}

// hiddenExecID is the exec generation of the launcher copy of a hidden
// process: its first image.
func (s *State) hiddenExecID(pk procKey) uint64 {
	min := ^uint64(0)
	for k := range s.images {
		if k.Pid == pk.pid && k.Start == pk.start && k.ExecID < min {
			min = k.ExecID
		}
	}
	return min
}

// execChain runs the exec probe detector on one more attempt.
func (s *State) execChain(im *image, a ExecAttempt) {
	if fb := im.enoexec; fb != nil {
		im.enoexec = nil
		if len(a.Argv) >= 2 && sameArg(a.Argv[1], fb.Filename) {
			found := (*string)(nil)
			if a.Errno == 0 {
				f := a.Filename
				found = &f
			}
			im.findings = append(im.findings, s.finding(im, Finding{
				Kind: KindExecShellFallback, Target: path.Base(fb.Filename),
				Attempts: []Attempt{{Path: fb.Filename, Errno: fb.Errno, Ns: fb.Ns}, {Path: a.Filename, Errno: a.Errno, Ns: a.Ns}},
				Failed:   1, Found: found, WastedNs: fb.Ns,
			}))
			if a.Errno != 0 {
				im.chain = append(im.chain, a)
			}
			return
		}
	}
	if a.Errno == int32(syscall.ENOEXEC) {
		// The file exists but isn't a binary: the PATH search (if any)
		// ended here, and execvp will hand it to /bin/sh next.
		fb := a
		im.enoexec = &fb
		a.Errno = 0
		s.closeExecChain(im, &a)
		return
	}
	if a.Errno != 0 {
		im.chain = append(im.chain, a)
		return
	}
	s.closeExecChain(im, &a)
}

func (s *State) closeExecChain(im *image, winner *ExecAttempt) {
	if len(im.chain) == 0 {
		return
	}
	f := probeChainFinding(im.chain, winner)
	im.chain = nil
	im.findings = append(im.findings, s.finding(im, f))
}

// probeChainFinding is the finding for a chain of failed execs (non-empty)
// and the exec that ended it (nil: none succeeded). State and Live both
// build it this way.
func probeChainFinding(chain []ExecAttempt, winner *ExecAttempt) Finding {
	f := Finding{Kind: KindFailedExecProbes}
	for _, c := range chain {
		f.Attempts = append(f.Attempts, Attempt{Path: c.Filename, Errno: c.Errno, Ns: c.Ns})
		f.Failed++
		f.WastedNs += c.Ns
	}
	last := chain[len(chain)-1].Filename
	if winner != nil {
		f.Attempts = append(f.Attempts, Attempt{Path: winner.Filename, Ns: winner.Ns})
		found := winner.Filename
		f.Found = &found
		last = winner.Filename
	}
	f.Target = path.Base(last)
	return f
}

func (s *State) finding(im *image, f Finding) Finding {
	f.Key, f.Pid, f.PPid = im.p.Key, im.p.Pid, im.p.PPid
	f.Comm, f.ParentComm = im.p.Comm, im.p.ParentComm
	return f
}

// probeErrno says whether a failed open looks like one step of a search.
func probeErrno(errno int32) bool {
	switch syscall.Errno(errno) {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.EACCES, syscall.ELOOP:
		return true
	}
	return false
}

const oPath = 0x200000 // O_PATH on every architecture once supports

func (s *State) open(t *Task, o *OpenRecord) {
	im := s.image(t.Image(), t)
	im.tids[t.Tid] = struct{}{}
	call := OpenCall{
		Syscall: o.Syscall, Tid: t.Tid, Fname: o.Fname, Dirfd: o.Dirfd,
		Flags: o.Flags, Mode: o.Mode, Resolve: o.Resolve, Ret: o.Ret,
		EnterNs: o.EnterNs, Ns: o.ExitNs - o.EnterNs, Path: o.Path,
		FnameTruncated:  o.Status&StFnameTruncated != 0,
		FnameUnreadable: o.Status&StFnameUnreadable != 0,
		PathTruncated:   o.Status&StPathTruncated != 0,
		Untimed:         o.Status&StUntimed != 0,
	}
	s.totals.opens++
	if o.Ret < 0 {
		s.totals.failedOpens++
		errno := -o.Ret
		base := ""
		if o.Status&StPathIsBase != 0 {
			base = o.Path
		}
		k := string(rune(errno)) + "\x00" + o.Fname + "\x00" + base
		fo := im.failed[k]
		if fo == nil {
			fo = &FailedOpen{Fname: o.Fname, Base: base, Errno: errno}
			im.failed[k] = fo
			im.p.FailedOpens = append(im.p.FailedOpens, fo)
		}
		fo.Count++
		if len(fo.Calls) < MaxCalls {
			fo.Calls = append(fo.Calls, call)
		} else {
			fo.CallsOmitted++
		}
		if probeErrno(errno) && o.Fname != "" {
			b := path.Base(o.Fname)
			im.probes[b] = append(im.probes[b], Attempt{Path: absName(o.Fname, base), Errno: errno, Ns: call.Ns})
		}
		return
	}
	if o.Status&StPathUnresolved != 0 {
		return // counted; no identity to group it by
	}
	k := fileKey{o.Dev, o.Ino}
	group, list := im.files, &im.p.Opens
	if o.Flags&oPath != 0 {
		group, list = im.opath, &im.p.PathOpens
	}
	fo := group[k]
	if fo == nil {
		fo = &FileOpens{Dev: o.Dev, Ino: o.Ino, Path: o.Path}
		group[k] = fo
		*list = append(*list, fo)
	}
	fo.Count++
	if len(fo.Calls) < MaxCalls {
		fo.Calls = append(fo.Calls, call)
	} else {
		fo.CallsOmitted++
	}
	if fo.Count > 1 {
		fo.ExtraNs += call.Ns
	}
	addKind(fo, call.Syscall, call.Flags, 1)
	if !contains(fo.Paths, o.Path) {
		fo.Paths = append(fo.Paths, o.Path)
	}
	if o.Flags&oPath == 0 {
		s.openProbeWon(im, o.Fname, o.Path, call.Ns)
	}
}

// tally adds opens the kernel counted without sending them. They come
// after the sent opens of their kind, so they are never a file's first.
func (s *State) tally(t *Task, r *TallyRecord) {
	im := s.image(t.Image(), t)
	n := int(r.Opens)
	s.totals.opens += n
	k := fileKey{r.Dev, r.Ino}
	group, list := im.files, &im.p.Opens
	if r.Flags&oPath != 0 {
		group, list = im.opath, &im.p.PathOpens
	}
	fo := group[k]
	if fo == nil { // the opens sent before were lost (counted)
		fo = &FileOpens{Dev: r.Dev, Ino: r.Ino}
		group[k] = fo
		*list = append(*list, fo)
	}
	fo.Count += n
	fo.CallsOmitted += n
	fo.ExtraNs += r.Ns
	addKind(fo, r.Syscall, r.Flags, n)
}

// absName is fname made absolute against base, for display; fname as is
// when that can't be done.
func absName(fname, base string) string {
	if strings.HasPrefix(fname, "/") || base == "" {
		return fname
	}
	return path.Join(base, fname)
}

// minOpenProbes is the fewest failed opens of one basename that make a
// probe chain finding. One miss before a hit is everywhere (glibc tries
// C.UTF-8 before C.utf8 for each locale category) and stays listed under
// failed opens; a search through a list of directories misses more.
const minOpenProbes = 2

// openProbeWon closes an open probe chain when a file of the same basename
// opens from another directory than the ones that failed.
func (s *State) openProbeWon(im *image, fname, resolved string, ns uint64) {
	b := path.Base(fname)
	tries := im.probes[b]
	delete(im.probes, b)
	if len(tries) < minOpenProbes {
		return
	}
	f := Finding{Kind: KindFailedOpenProbes, Target: b}
	for _, a := range tries {
		f.Attempts = append(f.Attempts, a)
		f.Failed++
		f.WastedNs += a.Ns
	}
	found := fname
	f.Found = &found
	f.Attempts = append(f.Attempts, Attempt{Path: fname, Ns: ns})
	im.findings = append(im.findings, s.finding(im, f))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *State) ignored(paths ...string) bool {
	for _, g := range s.ignore {
		for _, p := range paths {
			if ok, _ := path.Match(g, p); ok {
				return true
			}
		}
	}
	return false
}

// Result runs the detectors that need the whole run (duplicates, chains
// still open) and returns the result. Call it once, at the end.
func (s *State) Result() *Result {
	r := &Result{}
	for _, im := range s.order {
		pk := procKey{im.p.Key.Pid, im.p.Key.Start}
		if s.hidden[pk] && im.p.Key.ExecID == s.hiddenExecID(pk) {
			continue
		}
		im.p.Threads = len(im.tids)
		s.closeExecChain(im, nil)
		if im.enoexec != nil {
			// ENOEXEC with no shell retry: a failed exec like any other.
			im.chain = append(im.chain, *im.enoexec)
			im.enoexec = nil
			s.closeExecChain(im, nil)
		}
		for b, tries := range im.probes {
			if len(tries) < minOpenProbes || !distinctDirs(tries) {
				continue
			}
			f := Finding{Kind: KindFailedOpenProbes, Target: b, Attempts: tries, Failed: len(tries)}
			for _, a := range tries {
				f.WastedNs += a.Ns
			}
			im.findings = append(im.findings, s.finding(im, f))
		}
		for _, fo := range im.p.Opens {
			if fo.Count < 2 || s.ignored(append([]string{fo.Path}, fo.Paths...)...) {
				continue
			}
			f := Finding{
				Kind: KindDuplicateOpen, Path: fo.Path, Paths: fo.Paths,
				Dev: fo.Dev, Ino: fo.Ino, Count: fo.Count, Calls: fo.Calls,
				Kinds: fo.Kinds, CallsOmitted: fo.CallsOmitted, WastedNs: fo.ExtraNs,
			}
			im.findings = append(im.findings, s.finding(im, f))
		}
		for _, f := range im.findings {
			if f.Kind != KindDuplicateOpen && s.ignoredChain(f) {
				continue
			}
			r.Findings = append(r.Findings, f)
		}
		r.Processes = append(r.Processes, im.p)
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.WastedNs != b.WastedNs {
			return a.WastedNs > b.WastedNs
		}
		return a.Failed+a.Count > b.Failed+b.Count
	})
	r.Opens, r.FailedOpens = s.totals.opens, s.totals.failedOpens
	r.Execs, r.FailedExecs = s.totals.execs, s.totals.failedExecs
	return r
}

func (s *State) ignoredChain(f Finding) bool {
	for _, a := range f.Attempts {
		if !s.ignored(a.Path) {
			return false
		}
	}
	return len(f.Attempts) > 0
}

func distinctDirs(tries []Attempt) bool {
	first := path.Dir(tries[0].Path)
	for _, a := range tries[1:] {
		if path.Dir(a.Path) != first {
			return true
		}
	}
	return false
}

// addKind counts n opens under (syscall, flags) in fo.Kinds.
func addKind(fo *FileOpens, sc Syscall, flags uint64, n int) {
	for i := range fo.Kinds {
		if fo.Kinds[i].Syscall == sc && fo.Kinds[i].Flags == flags {
			fo.Kinds[i].Count += n
			return
		}
	}
	fo.Kinds = append(fo.Kinds, CallKind{Syscall: sc, Flags: flags, Count: n})
}
