package detect

import (
	"path"
	"slices"
	"strings"
	"time"

	"github.com/oncetool/once/trace"
)

// Lookups: stat, statx, lstat, access, faccessat and faccessat2 (an
// OpenRecord whose Syscall IsLookup). Three detectors read them:
//   - failed_stat_probes: a basename missed by lookups in one or more
//     directories before a lookup of any kind (a stat, an open, an exec)
//     found it, or missed in two or more directories and never found;
//   - duplicate_stat: one file (device, inode) looked up again;
//   - repeated_miss: one path failing again with one errno, whatever
//     looked it up (opens too).
// The kernel sends a lookup's failure always and its success only when it
// may end a probe or repeats a file the image looked up (ST_SEEN_BEFORE on
// the first one sent then): the rest come as counts (LookupsUnsent).

// minStatProbes: one miss before a find is a search already when a lookup
// made it (a shell's PATH search misses once for a command in the second
// directory); glibc's one-miss locale habit is opens.
const minStatProbes = 1

// statFile is a file one image looked up successfully.
type statFile struct {
	fo      trace.FileOpens
	ignored bool
}

type missKey struct {
	errno int32
	path  string
}

// miss is one path one image failed to look up with one errno.
type miss struct {
	fd     trace.FileDetail
	wasted uint64 // the failures after the first
	sites  []trace.CallSite
	// The failures that are attempts of chain findings (claimed by
	// them, chainFinding): their time is the chains' waste, so the
	// repeated_miss counts them but does not add it again.
	claimed      int
	claimedNs    uint64
	firstClaimed bool // the first failure is one of them
	// quiet: never a repeated_miss (a restart, a cancel, a path
	// --ignore matches), so never counted in the image's live waste.
	quiet   bool
	firstNs uint64 // the first failure's time
}

// avoidable is the repeated_miss m makes now: the failures after its
// first that are no attempts of chains reported (chained), how many
// that leaves and their time. endLookups reports it; until then the
// image's live waste counts it (countMiss), and a chain reported later
// takes back what it claims.
func (m *miss) avoidable() (chained, n int, ns uint64) {
	chained, chainedNs := m.claimed, m.claimedNs
	if m.firstClaimed {
		chained--
		chainedNs -= min(m.firstNs, chainedNs)
	}
	n = max(m.fd.Count-1-chained, 0)
	return chained, n, m.wasted - min(chainedNs, m.wasted)
}

// live is what m counts in its image's live waste now.
func (m *miss) live() (int, uint64) {
	if m.quiet || m.fd.Count < 2 {
		return 0, 0
	}
	_, n, ns := m.avoidable()
	return n, ns
}

// live is what f counts in its image's live waste now: its duplicate_stat
// as endLookups would report it.
func (f *statFile) live() (int, uint64) {
	if f.fo.Count < 2 || f.ignored {
		return 0, 0
	}
	return f.fo.Count - 1, f.fo.ExtraNs
}

// countLive moves im's live lookup waste from what the file looked up
// again f, or the path missed again m, counted (n0, ns0) to what it
// counts now: a repeat is counted as it happens, as a file opened again
// is (addOpens), and what a chain reported later claims, or --ignore,
// is taken back. endLookups replaces it with the findings'
// (uncountLive).
func (e *Engine) countLive(im *image, f *statFile, m *miss, n0 int, ns0 uint64) {
	var n1 int
	var ns1 uint64
	if f != nil {
		n1, ns1 = f.live()
	} else {
		n1, ns1 = m.live()
	}
	if n0 == n1 && ns0 == ns1 {
		return
	}
	ls, w := im.live, &im.waste
	w.Lookups += n1 - n0
	w.LookupNs += ns1 - ns0 // modulo 2^64: a take-back subtracts
	ls.liveLookups += n1 - n0
	ls.liveLookupNs += ns1 - ns0
	e.totals.LookupWaste += uint64(n1 - n0)
	// The row's WORST, until the findings say it (worstBrief).
	switch {
	case f == ls.worstStat && m == ls.worstMiss:
		ls.worstLiveNs = ns1
		if ns1 == 0 {
			ls.worstStat, ls.worstMiss = nil, nil
		}
	case ns1 > 0 && ns1 >= ls.worstLiveNs:
		ls.worstStat, ls.worstMiss, ls.worstLiveNs = f, m, ns1
	}
}

// liveBrief is the brief of the file looked up again or the path
// missed again that wastes the most so far, as its finding will say it.
func (ls *liveState) liveBrief() string {
	f := trace.Finding{Kind: trace.KindDuplicateStat}
	if s := ls.worstStat; s != nil {
		f.Path, f.Count = s.fo.Path, s.fo.Count
	} else if m := ls.worstMiss; m != nil {
		f.Kind, f.FileDetail = trace.KindRepeatedMiss, trace.FileDetail{Path: m.fd.Path, Count: m.fd.Count, Errno: m.fd.Errno}
	} else {
		return ""
	}
	return f.Brief()
}

// uncountLive takes back the lookup waste countLive counted: the
// findings endLookups makes count it again, exactly.
func (e *Engine) uncountLive(im *image) {
	ls, w := im.live, &im.waste
	w.Lookups -= ls.liveLookups
	w.LookupNs -= ls.liveLookupNs
	e.totals.LookupWaste -= uint64(ls.liveLookups)
	ls.liveLookups, ls.liveLookupNs = 0, 0
	ls.worstStat, ls.worstMiss, ls.worstLiveNs = nil, nil, 0
}

// missRef is a failure's miss record, for the chain it is an attempt of
// to claim: first says it was the record's first failure.
type missRef struct {
	m     *miss
	first bool
}

// missClaim is the failures of one miss record in one chain.
type missClaim struct {
	missRef
	n  int
	ns uint64
}

// maxClaims bounds the miss records one chain claims: a chain tries few
// paths. Past it a failure is not claimed, and its time may be counted
// by its chain and its repeated_miss both.
const maxClaims = 32

const missBytes = 160 // a miss, its map entry and order slot

func (e *Engine) lookup(t *trace.Task, o *trace.OpenRecord, now time.Time, ann *Annotation) {
	e.totals.Lookups++
	im := e.image(t.Image(), t, now)
	im.p.Totals.Lookups++
	ls := im.live
	if ls != nil {
		e.thread(im, t.Tid)
	}
	base := ""
	if o.Status.Has(trace.StPathIsBase) {
		base = o.Path
	}
	if o.Ret < 0 {
		e.totals.FailedLookups++
		im.p.Totals.FailedLookups++
		if ls == nil {
			return
		}
		c := e.call(t, o)
		ref := e.missed(im, o, c, base)
		if isExecCheck(o) {
			e.foundRejected(im, o.Fname, absName(o.Fname, base))
		}
		openChain, run := "", false
		if e.dirChecked(ls, t.Tid, o, base, c.Ns, ref) {
			// Of the open chain the thread missed in just before.
			openChain = ls.lastMiss[t.Tid].openChain
		} else {
			e.probeFailed(im, &ls.lprobes, o.Fname, base, -o.Ret, c.Ns, c.Stack, o.Syscall, ref)
			run = e.noteVariants(im, t.Tid, o.Fname, base, o.Syscall, true)
		}
		e.rememberMiss(im, t.Tid, o, base, c.Ns, openChain, run)
		return
	}
	if ls == nil {
		return
	}
	if len(ls.lastMiss) > 0 && len(ls.probes)+len(ls.lprobes) > 0 {
		e.noteVariants(im, t.Tid, o.Fname, base, o.Syscall, false)
	}
	e.lookupProbeWon(im, o.Fname, absName(o.Fname, base), o.Ns(), o.Syscall, false, ann)
	if o.Ino != 0 {
		e.statAgain(im, t, o, absName(o.Fname, base))
	}
}

// dirChecked adds the failed lookup o to the open probe chain whose miss
// the thread made just before in the directory o names, and says whether
// it did: ld.so, after each failed open of a library in a directory,
// stats the directory (to skip it in later searches when it is missing):
// a check of the place the search missed in, no search for the
// directory's name (glibc-hwcaps, x86-64-v3, tls).
func (e *Engine) dirChecked(ls *liveState, tid uint32, o *trace.OpenRecord, base string, ns uint64, ref missRef) bool {
	lm := ls.lastMiss[tid]
	if lm == nil || lm.sc.IsLookup() || !probeErrno(lm.key.errno) || len(ls.probes) == 0 {
		return false
	}
	missedIn := trace.NameDir(absName(lm.fname, lm.base))
	if path.Clean(absName(o.Fname, base)) != missedIn {
		return false
	}
	p := ls.probes[path.Base(lm.fname)]
	if p == nil || p.failed == 0 {
		return false
	}
	p.dirChecks++
	p.wasted += ns
	p.claim(ref, 1, ns)
	return true
}

// made ends the lookup probe chains a directory made shows were checks
// before making it (git init looks for .git/branches, finds its
// template's, and makes the directory, empty: nothing it later opens
// inside shows it made). The kernel sends a mkdir only when a chain may
// have missed it. Not counted as a lookup.
func (e *Engine) made(t *trace.Task, o *trace.OpenRecord, now time.Time) {
	im := e.image(t.Image(), t, now)
	if im.live == nil {
		return
	}
	// mkdir("dir/") makes dir.
	name := strings.TrimRight(o.Fname, "/")
	if name == "" {
		return
	}
	base := ""
	if o.Status.Has(trace.StPathIsBase) {
		base = o.Path
	}
	e.lookupProbeWon(im, name, absName(name, base), o.Ns(), o.Syscall, true, nil)
}

// lookupsUnsent counts successful lookups the kernel did not send.
func (e *Engine) lookupsUnsent(t *trace.Task, n uint64, now time.Time) {
	e.totals.Lookups += n
	im := e.image(t.Image(), t, now)
	im.p.Totals.Lookups += int(n)
}

// statKey is a looked-up file's key among the image's stats. A stat's
// buffer has no generation (gen is set on tracefs only: a hash of the
// file's path). Its file type stands in where it can, as in the kernel
// (bpf/stat.bpf.h), so that a file deleted and a symlink made with its
// inode number (git init's check that symlinks work, on ext4) are two
// files. A regular file made with the number of one deleted is still
// taken for it.
func statKey(dev, ino uint64, gen uint32, ftype uint16) fileKey {
	return fileKey{dev, ino, gen, ftype}
}

// statAgain counts a successful stat of a file with its identity.
func (e *Engine) statAgain(im *image, t *trace.Task, o *trace.OpenRecord, p string) {
	ls := im.live
	k := statKey(o.Dev, o.Ino, o.Gen, o.FileType)
	f := ls.stats[k]
	if f == nil {
		if e.pol.MaxFiles > 0 && len(ls.stats) >= e.pol.MaxFiles || !e.keep(im, fileBytes+int64(len(p))) {
			e.totals.FilesCapped++
			return
		}
		f = &statFile{fo: trace.FileOpens{Dev: o.Dev, Ino: o.Ino, Gen: o.Gen, FileType: o.FileType, Path: p,
			PathTruncated: o.Status.Has(trace.StPathTruncated)}}
		f.ignored = e.ignore.Match(p)
		if o.Status.Has(trace.StSeenBefore) {
			// The first lookup was counted, not sent: in the count,
			// and among the call sites as one without a stack, so
			// that they still add up to it.
			f.fo.Count = 1
			if e.stacks {
				e.addSite(im, &f.fo.CallSites, 0, 1)
			}
		}
		if ls.stats == nil {
			ls.stats = map[fileKey]*statFile{}
		}
		ls.stats[k] = f
		ls.statOrder = append(ls.statOrder, f)
	}
	n0, ns0 := f.live()
	fo := &f.fo
	if fo.Count > 0 {
		fo.ExtraNs += o.Ns()
	}
	if fo.Count == 1 {
		// Named by its first repeat's spelling: the one lookup of the
		// file every mode sends (where the kernel counts first lookups
		// instead, the first is not), so that a program that looks a
		// file up as /lib/x and then as /usr/lib/x gives one finding,
		// however its lookups were sent.
		fo.Path, fo.PathTruncated = p, o.Status.Has(trace.StPathTruncated)
	}
	fo.Count++
	e.addKind(fo, o.Syscall, o.Flags, 1)
	e.addSite(im, &fo.CallSites, e.stack, 1)
	if (e.pol.MaxCalls <= 0 || len(fo.Calls) < e.pol.MaxCalls) && e.keepDetail(im, callBytes+int64(len(o.Fname))) {
		c := e.call(t, o)
		c.Path = p
		fo.Calls = append(fo.Calls, c)
	} else {
		fo.CallsOmitted++
	}
	if !contains(fo.Paths, p) {
		if (e.pol.MaxPaths <= 0 || len(fo.Paths) < e.pol.MaxPaths) && e.keepDetail(im, pathBytes+int64(len(p))) {
			fo.Paths = append(fo.Paths, p)
		} else {
			fo.PathsCapped = true
		}
		if !f.ignored && e.ignore.Match(p) {
			f.ignored = true
		}
	}
	e.countLive(im, f, nil, n0, ns0)
}

// missed counts a failed lookup or open of one path with one errno, and
// returns its record (nil past the caps).
func (e *Engine) missed(im *image, o *trace.OpenRecord, c trace.OpenCall, base string) missRef {
	if o.Status.Has(trace.StFnameUnreadable) {
		// No name read (EFAULT): nothing says two such failures
		// tried one path (strace -f shows each its own pointer), and
		// the kernel counts no repeat of one (bpf/miss.bpf.h).
		return missRef{}
	}
	ls := im.live
	p := missPath(o, base)
	k := missKey{-o.Ret, p}
	m := ls.misses[k]
	if m == nil {
		if e.pol.MaxFiles > 0 && len(ls.misses) >= e.pol.MaxFiles || !e.keep(im, missBytes+int64(len(p))) {
			e.totals.FilesCapped++
			return missRef{}
		}
		m = &miss{fd: trace.FileDetail{Path: p, Errno: -o.Ret}}
		// As endLookups leaves them out.
		m.quiet = trace.Restarted(m.fd.Errno) || trace.Canceled(m.fd.Errno) || e.ignore.Match(p)
		if ls.misses == nil {
			ls.misses = map[missKey]*miss{}
		}
		ls.misses[k] = m
		ls.missOrder = append(ls.missOrder, m)
	}
	n0, ns0 := m.live()
	first := m.fd.Count == 0
	if first {
		m.firstNs = c.Ns
	} else {
		m.wasted += c.Ns
	}
	m.fd.Count++
	e.countLive(im, nil, m, n0, ns0)
	e.addSite(im, &m.sites, c.Stack, 1)
	m.fd.Kinds = addCallKind(m.fd.Kinds, o.Syscall, o.Flags, 1)
	if (e.pol.MaxCalls <= 0 || len(m.fd.Calls) < e.pol.MaxCalls) && e.keepDetail(im, callBytes+int64(len(o.Fname))) {
		m.fd.Calls = append(m.fd.Calls, c)
	} else {
		m.fd.CallsOmitted++
	}
	return missRef{m, first}
}

// missPath is the path a failed call tried, as missed and rememberMiss
// key it: its name made absolute (absName), and a name cut at the
// kernel's bound (one of PATH_MAX bytes or more: ENAMETOOLONG) ending in
// trace.PathCut. What is left of a cut name is no path that was tried:
// "././" repeated past the bound, joined lexically, would name its
// directory, which a report would then say fails every time.
func missPath(o *trace.OpenRecord, base string) string {
	p := absName(triedName(o, base), base)
	if o.Status.Has(trace.StFnameTruncated) {
		p += trace.PathCut
	}
	return p
}

func addCallKind(ks []trace.CallKind, sc trace.Syscall, flags uint64, n int) []trace.CallKind {
	for i := range ks {
		if ks[i].Syscall == sc && ks[i].Flags == flags {
			ks[i].Count += n
			return ks
		}
	}
	return append(ks, trace.CallKind{Syscall: sc, Flags: flags, Count: n})
}

// heldChain is a lookup chain that found its name, held until its image
// ends (once watch: for HeldFor at most): should the name then appear
// where it was missing, the chain was a check before making it (a copy
// stats its destination, finds the source, then creates the
// destination), not a search.
type heldChain struct {
	p        *openProbe
	attempts []trace.Attempt
	found    string
	at       time.Time // when it found its name
	dropped  bool      // made where it was missing: no search
}

// foundAgain marks b's held chains found again in dir (absDir: where the
// kernel resolved it), neither where they found it nor where they missed
// it: the program looks in every place, found or not (make's include
// directories, man's manual paths), and no order of its list saves a
// miss. A repeat of the search finds it where it did, and a name made
// where a chain missed it dropped that chain already. p, the chain the
// find ends (nil for none), found where found is: a held chain it went
// along side by side (alongSameList) is of another name.
func (e *Engine) foundAgain(ls *liveState, b, dir, absDir string, p *openProbe, found string) {
	for _, h := range ls.held[b] {
		if h.dropped || h.p.alsoFound != "" || p != nil && alongSameList(h, p, found) {
			continue
		}
		fd := trace.NameDir(h.found)
		if dir == fd || absDir == fd || e.failedIn(h.p, dir) || absDir != "" && e.failedIn(h.p, absDir) {
			continue
		}
		if absDir != "" {
			dir = absDir
		}
		h.p.alsoFound = dir
		ls.lookGen++
	}
}

// alongSameList says whether chain p (found in found, "" for nowhere)
// tried its places side by side with held chain h's, from the first:
// each under the same place of one list as h's at that step (a sibling,
// a subdirectory or the parent of it, below the directory both share),
// that place another at every step, and never h's own. That is one list
// searched for another name of the same basename (perl's require of
// Exporter/Heavy.pm, then of Carp/Heavy.pm, @INC entry by entry), not a
// look in every place. Places that share only the root, or the same
// directory at every step (/a/man, /b/man, then /c/man, /d/man), are no
// such list.
func alongSameList(h *heldChain, p *openProbe, found string) bool {
	was, now, ok := sideBySide(h, p, found)
	if !ok {
		return false
	}
	var under []string
	for i := range was {
		w, d := was[i], now[i]
		c := commonDir(w, d)
		if w == d || c == "/" || slices.Contains(under, c) {
			return false
		}
		under = append(under, c)
	}
	return true
}

// commonDir is the longest directory a and b, absolute and clean, are
// both in or are: "/x" for /x/a and /x/b, "/x/a" for /x/a and /x/a/b.
func commonDir(a, b string) string {
	for a != b {
		if len(a) > len(b) {
			a = path.Dir(a)
		} else {
			b = path.Dir(b)
		}
	}
	return a
}

// otherListName clears p.alsoFound when it is where a held chain of b
// found the name, which p went along side by side (alongSameList): the
// same list searched for another name, not a look past the find.
func (e *Engine) otherListName(ls *liveState, b string, p *openProbe, found string) {
	if p.alsoFound == "" {
		return
	}
	for _, h := range ls.held[b] {
		if !h.dropped && trace.NameDir(h.found) == p.alsoFound && alongSameList(h, p, found) {
			p.alsoFound = ""
			return
		}
	}
}

// foundBefore is the directory a held chain of b found it in, when a new
// chain of b misses first in dir, where that chain did not look: the
// search goes on past a find (every place is looked in). "" for none,
// or when dir is one the held chain missed: the same search again.
func (e *Engine) foundBefore(ls *liveState, b, dir string) string {
	for _, h := range ls.held[b] {
		if e.foundBeforeIn([]*heldChain{h}, dir) {
			return trace.NameDir(h.found)
		}
	}
	return ""
}

// foundBeforeIn says whether one of hs, chains of a name that found it, found
// it elsewhere than dir and did not miss it in dir.
func (e *Engine) foundBeforeIn(hs []*heldChain, dir string) bool {
	for _, h := range hs {
		if h.dropped {
			continue
		}
		if fd := trace.NameDir(h.found); fd != dir && !e.failedIn(h.p, dir) {
			return true
		}
	}
	return false
}

// heldDir keys image.heldIn: a name and the hash of a directory a held
// chain of it failed in.
type heldDir struct {
	name string
	dir  uint64
}

// hold keeps h, found, under its name b, charged to im: a finding to be,
// kept whatever the budgets.
func (e *Engine) hold(im *image, b string, h *heldChain) {
	ls := im.live
	if ls.held == nil {
		ls.held, ls.heldIn = map[string][]*heldChain{}, map[heldDir][]*heldChain{}
	}
	ls.held[b] = append(ls.held[b], h)
	ls.lookGen++
	ls.nameMask |= nameBit(b)
	dirs := e.heldDirs(h)
	for _, d := range dirs {
		k := heldDir{b, d}
		ls.heldIn[k] = append(ls.heldIn[k], h)
	}
	e.charge(im, int64(len(dirs))*heldInBytes)
}

// heldDirs are the directories (hashed) failedIn finds h's chain failed
// in: the first failure's and those of the attempts kept.
func (e *Engine) heldDirs(h *heldChain) []uint64 {
	dirs := []uint64{h.p.firstDir}
	for _, a := range h.p.attempts {
		if d := e.hash(trace.NameDir(a.Path)); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// dropHeld drops the chains held under b that failed in dir (made there
// since: checks, not searches).
func (e *Engine) dropHeld(ls *liveState, b, dir string) {
	k := heldDir{b, e.hash(dir)}
	hs := ls.heldIn[k]
	if len(hs) == 0 {
		return
	}
	kept := hs[:0]
	for _, h := range hs {
		switch {
		case h.dropped:
		case e.failedIn(h.p, dir):
			h.dropped = true
			ls.heldGone++
			ls.lookGen++
		default:
			kept = append(kept, h) // another directory, the same hash
		}
	}
	if len(kept) == 0 {
		delete(ls.heldIn, k)
	} else {
		ls.heldIn[k] = kept
	}
	if ls.heldGone > 0 && ls.heldGone >= len(ls.held[b])/2 {
		e.compactHeld(ls, b)
	}
}

// compactHeld removes b's dropped chains from held, and from heldIn
// those no chain is kept under.
func (e *Engine) compactHeld(ls *liveState, b string) {
	ls.heldGone -= pruneDropped(ls.held, b)
}

// pruneDropped takes the dropped chains out of m[k], and the entry out of
// m when none is left; it returns how many it took out.
func pruneDropped[K comparable](m map[K][]*heldChain, k K) int {
	hs := m[k]
	kept := hs[:0]
	for _, h := range hs {
		if !h.dropped {
			kept = append(kept, h)
		}
	}
	clear(hs[len(kept):])
	if len(kept) == 0 {
		delete(m, k)
	} else {
		m[k] = kept
	}
	return len(hs) - len(kept)
}

// nameBit is a name's bit in liveState.nameMask: of its length and its
// first and last bytes.
func nameBit(s string) uint64 {
	if s == "" {
		return 1
	}
	return 1 << ((uint(len(s))*7 + uint(s[0]) + uint(s[len(s)-1])*3) & 63)
}

// mayName says whether a name pending in lprobes or held may be a
// component of p (its base, or a directory above it): path.Base, path.Dir
// and cleaning only ever give components p has, "." or "/", and p with no
// component at all is taken to name anything.
func (ls *liveState) mayName(p string) bool {
	any := false
	for p != "" {
		i := strings.IndexByte(p, '/')
		seg := p
		if i >= 0 {
			seg, p = p[:i], p[i+1:]
		} else {
			p = ""
		}
		if seg == "" {
			continue
		}
		any = true
		if ls.nameMask&nameBit(seg) != 0 {
			return true
		}
	}
	return !any
}

// mayNameAny is mayName of fname or abs. A name gone since the mask was
// made may make it say yes: then, while few names pend, the mask is made
// again from them.
func (ls *liveState) mayNameAny(fname, abs string) bool {
	may := func() bool { return ls.mayName(fname) || abs != "" && abs != fname && ls.mayName(abs) }
	if !may() {
		return false
	}
	if ls.maskGen == ls.lookGen || len(ls.lprobes)+len(ls.held) > maskRemake {
		return true
	}
	ls.maskGen, ls.nameMask = ls.lookGen, 0
	for b := range ls.lprobes {
		ls.nameMask |= nameBit(b)
	}
	for b := range ls.held {
		ls.nameMask |= nameBit(b)
	}
	return may()
}

// maskRemake is how many names pending, at most, liveState.nameMask is
// made again from when it let a name through: more would saturate it.
const maskRemake = 16

// wonCall is a call of lookupProbeWon: its arguments that decide what it
// changes, and liveState.lookGen when it was made.
type wonCall struct {
	fname, abs string
	created    bool
	gen        uint64
	set        bool
}

// HeldFor is how long once watch holds a found lookup chain: a copy makes
// its destination within milliseconds of looking, and a long-lived
// shell's searches must not wait for its exit to be seen.
const HeldFor = time.Second

// lookupProbeWon ends a lookup probe chain of fname's basename: a lookup,
// an open or an exec of it worked. abs is where. created: the open made
// the file, which then ends a chain only where the chain missed it.
func (e *Engine) lookupProbeWon(im *image, fname, abs string, ns uint64, sc trace.Syscall, created bool, ann *Annotation) {
	ls := im.live
	if len(ls.lprobes) == 0 && len(ls.held) == 0 {
		ls.nameMask = 0
		return
	}
	// Most opens name nothing pending, at no level: no chain to look at.
	if !ls.mayNameAny(fname, abs) {
		return
	}
	call := wonCall{fname: fname, abs: abs, created: created, gen: ls.lookGen, set: true}
	if ls.won == call {
		return
	}
	// What it is when the call changes nothing.
	defer func() {
		if ls.lookGen == call.gen {
			ls.won = call
		}
	}()
	b := path.Base(fname)
	dir, absDir := trace.NameDir(fname), ""
	if abs != "" {
		absDir = trace.NameDir(abs)
	}
	e.dirsMade(ls, fname)
	if abs != "" && abs != fname {
		e.dirsMade(ls, abs)
	}
	// Found where it was missing: made, or waited for; no search.
	made := func(p *openProbe) bool { return e.failedIn(p, dir) || absDir != "" && e.failedIn(p, absDir) }
	p := ls.lprobes[b]
	found := fname
	if !strings.HasPrefix(found, "/") && abs != "" {
		found = abs // absolute, as the misses are
	}
	if len(ls.held[b]) > 0 && !rejectedBy(ls.held[b], fname, abs) {
		e.dropHeld(ls, b, dir)
		if absDir != "" {
			e.dropHeld(ls, b, absDir)
		}
		// Found again by a lookup, as the chain looked: an open or an
		// exec of another file of the name (Go's exec.LookPath finds
		// hostname in /usr/bin, the program later reads /etc/hostname)
		// is no look in every place of the chain's list.
		if !created && sc.IsLookup() {
			e.foundAgain(ls, b, dir, absDir, p, found)
		}
	}
	if p == nil {
		return
	}
	if p.rejected != "" && (fname == p.rejected || abs == p.rejected) {
		return // refused to an execute check: no find, the search goes on
	}
	if created && !made(p) {
		return // made elsewhere: not found, the search goes on
	}
	delete(ls.lprobes, b)
	ls.lookGen++
	if p.failed < minStatProbes || made(p) {
		return
	}
	attempts := append(p.attempts, trace.Attempt{Path: abs, Syscall: sc, Ns: ns, Stack: e.stack})
	p.sites = e.attemptSites(im, p.sites, e.stack, true)
	if p.alsoFound == trace.NameDir(found) {
		// Begun past a find, it found the name where that did: another
		// search, not a look in every place.
		p.alsoFound = ""
	}
	e.otherListName(ls, b, p, found)
	e.hold(im, b, &heldChain{p: p, attempts: attempts, found: found, at: im.lastSeen})
	if e.pol.Bounded {
		if e.holding == nil {
			e.holding = map[*image]struct{}{}
		}
		e.holding[im] = struct{}{}
	}
	if ann != nil {
		ann.ProbeFailed, ann.ProbeFound = p.failed, found
	}
}

// isExecCheck says whether o, a failed lookup, is an access check for
// execute permission refused (access, faccessat or faccessat2 with X_OK,
// EACCES): what a shell's PATH search asks of each name its stat found.
func isExecCheck(o *trace.OpenRecord) bool {
	switch o.Syscall {
	case trace.SysAccess, trace.SysFaccessat, trace.SysFaccessat2:
		return o.Ret == -13 && o.Mode&1 != 0 // EACCES, X_OK
	}
	return false
}

// rejectedBy says whether fname (abs) is a file one of hs refused to an
// execute check: found there again (the next search of the name), it is
// no file made where the chain missed, nor a find elsewhere.
func rejectedBy(hs []*heldChain, fname, abs string) bool {
	for _, h := range hs {
		if r := h.p.rejected; r != "" && (r == fname || r == abs) {
			return true
		}
	}
	return false
}

// foundRejected: the name a chain just found (its winner, fname or abs)
// was checked for execute permission and refused: no find, the search
// goes on (dash and bash stat each PATH entry's name, then skip a file
// that is not executable). The chain held under the name pends again,
// and the refused check is its next attempt, as strace shows one search.
func (e *Engine) foundRejected(im *image, fname, abs string) {
	ls := im.live
	b := path.Base(fname)
	hs := ls.held[b]
	if len(hs) == 0 || ls.lprobes[b] != nil {
		return
	}
	h := hs[len(hs)-1]
	if h.dropped || (h.found != fname && h.found != abs) {
		return
	}
	h.dropped = true // out of held and heldIn as they are pruned
	ls.heldGone++
	if ls.lprobes == nil {
		ls.lprobes = map[string]*openProbe{}
	}
	ls.lprobes[b] = h.p
	h.p.rejected = h.found
	ls.nameMask |= nameBit(b)
	ls.lookGen++
}

// dirsMade: name, found, shows each directory above it there too. A chain
// that missed one of them where it now is was a check before making it
// (git init looks for .git/hooks, finds its template's, makes the
// directory and copies into it), as if the directory had been looked up
// there; a chain still pending that missed it there ends, as a chain does
// that finds its name where it missed.
func (e *Engine) dirsMade(ls *liveState, name string) {
	// Every successful open of an image with a chain pending comes
	// here: path.Dir cleans once, and each level above is a slice.
	for d := trace.NameDir(name); d != "/" && d != "."; {
		parent, b := splitClean(d)
		if len(ls.held[b]) > 0 {
			e.dropHeld(ls, b, parent)
		}
		if p := ls.lprobes[b]; p != nil && e.failedIn(p, parent) {
			delete(ls.lprobes, b)
			ls.lookGen++
		}
		d = parent
	}
}

// splitClean is path.Dir(d) and path.Base(d) of a path path.Clean
// leaves as it is, without cleaning again.
func splitClean(d string) (dir, base string) {
	i := strings.LastIndexByte(d, '/')
	switch {
	case i > 0:
		return d[:i], d[i+1:]
	case i == 0:
		return "/", d[1:]
	}
	return ".", d
}

// endLookups makes the findings an ending image's lookups leave: chains
// never found (missed in more than one directory), files stat-ed again,
// paths missed again.
func (e *Engine) endLookups(im *image) {
	ls := im.live
	for _, b := range sortedNames(ls.lprobes) {
		p := ls.lprobes[b]
		if p.failed >= 2 && p.multi {
			e.otherListName(ls, b, p, "")
			e.chainFinding(im, trace.KindFailedStatProbes, b, p, p.attempts, nil)
		}
	}
	ls.lprobes = nil
	ls.lookGen++
	e.releaseHeld(im, time.Time{})
	delete(e.holding, im)
	// Every chain is reported: the findings below count what the
	// live waste did, exactly.
	e.uncountLive(im)
	for _, f := range ls.statOrder {
		if f.fo.Count < 2 || f.ignored {
			continue
		}
		fo := &f.fo
		e.emitFile(im, trace.Finding{Kind: trace.KindDuplicateStat, WastedNs: fo.ExtraNs, CallSites: fo.CallSites,
			FileDetail: trace.FileDetail{Path: fo.Path, Paths: fo.Paths, PathsCapped: fo.PathsCapped, Dev: fo.Dev, Ino: fo.Ino,
				Count: fo.Count, Calls: fo.Calls, Kinds: fo.Kinds, CallsOmitted: fo.CallsOmitted}})
	}
	ls.stats, ls.statOrder = nil, nil
	for _, m := range ls.missOrder {
		// A call restarted after a signal, or cut by its process's
		// death, is no failure the program saw, and an io_uring
		// request cancelled before it ran tried nothing: counted,
		// never a miss.
		if m.fd.Count < 2 || trace.Restarted(m.fd.Errno) || trace.Canceled(m.fd.Errno) || e.ignore.Match(m.fd.Path) {
			continue
		}
		// The repeats that are attempts of chains reported: counted,
		// their time left to the chains.
		chained, _, ns := m.avoidable()
		m.fd.Chained = chained
		e.emitFile(im, trace.Finding{Kind: trace.KindRepeatedMiss, WastedNs: ns,
			CallSites: m.sites, FileDetail: m.fd})
	}
	ls.misses, ls.missOrder = nil, nil
}

// emitFile delivers a finding of a file or miss kind and counts its waste.
func (e *Engine) emitFile(im *image, f trace.Finding) {
	if !e.emit(im, f) {
		return
	}
	im.waste.LookupNs += f.WastedNs
	im.waste.Lookups += f.Avoidable()
	e.totals.LookupWaste += uint64(f.Avoidable())
	im.noteWorst(f.WastedNs, f.Brief)
}

func sortedHeld(held map[string][]*heldChain) []string {
	names := make([]string, 0, len(held))
	for b := range held {
		names = append(names, b)
	}
	slices.Sort(names)
	return names
}

// releaseHeld makes findings of im's held chains that found their name by
// before (all of them for a zero before); it says whether none is left.
func (e *Engine) releaseHeld(im *image, before time.Time) bool {
	ls := im.live
	if ls == nil {
		return true
	}
	ls.lookGen++
	if before.IsZero() {
		ls.heldIn = nil // all released: nothing more to find
	}
	var touched map[heldDir]struct{}
	for _, b := range sortedHeld(ls.held) {
		hs := ls.held[b]
		kept := hs[:0]
		for _, h := range hs {
			switch {
			case h.dropped:
				ls.heldGone--
				continue
			case !before.IsZero() && h.at.After(before):
				kept = append(kept, h)
				continue
			}
			h.dropped = true // out of heldIn below
			if ls.heldIn != nil {
				if touched == nil {
					touched = map[heldDir]struct{}{}
				}
				for _, d := range e.heldDirs(h) {
					touched[heldDir{b, d}] = struct{}{}
				}
			}
			found := h.found
			e.chainFinding(im, trace.KindFailedStatProbes, b, h.p, h.attempts, &found)
		}
		clear(hs[len(kept):])
		if len(kept) == 0 {
			delete(ls.held, b)
		} else {
			ls.held[b] = kept
		}
	}
	for k := range touched {
		pruneDropped(ls.heldIn, k)
	}
	return len(ls.held) == 0
}

// lastMiss is a thread's last failed lookup or open: what the kernel's
// counted repeats of it (trace.Repeats) add to.
type lastMiss struct {
	key         missKey
	fname, base string
	tried       string // fname as the probes take it (triedName)
	sc          trace.Syscall
	flags       uint64
	ns          uint64 // its latency: the repeats' when none was timed
	// openChain: the basename of the open chain it is a miss of (an
	// open's, or a directory check's: dirChecked); "" for none.
	openChain string
	// inRun: it is a miss of a chain's that noteVariants counted;
	// stale: the thread's open or lookup sent since was no variant of
	// it (noteVariants).
	inRun, stale bool
	// other: the thread's last failed call of the other kind (a lookup
	// if this is an open, an open if a lookup), whose run the kernel
	// goes on counting beside this one's (a run of each kind: a loop
	// that stats one missing name and opens another). nil: none.
	other *lastMiss
}

const lastMissBytes = 128 // its 128 bytes: a 128-byte size class

// rememberMiss makes o the thread's last failed lookup or open. The
// last one of the other kind, if it was that, is kept (lastMiss.other),
// for the repeats the kernel counts of it.
func (e *Engine) rememberMiss(im *image, tid uint32, o *trace.OpenRecord, base string, ns uint64, openChain string, inRun bool) {
	ls := im.live
	lm := ls.lastMiss[tid]
	var other *lastMiss
	if lm != nil {
		other = lm.other
		if lm.sc.IsLookup() != o.Syscall.IsLookup() {
			if other == nil {
				e.charge(im, lastMissBytes)
				other = &lastMiss{}
			}
			*other = *lm
			other.other = nil
		}
	}
	if lm == nil {
		if len(ls.lastMiss) >= maxThreads {
			return // its repeats, if any, are counted as past the caps
		}
		e.charge(im, lastMissBytes)
		if ls.lastMiss == nil {
			ls.lastMiss = map[uint32]*lastMiss{}
		}
		lm = &lastMiss{}
		ls.lastMiss[tid] = lm
	}
	*lm = lastMiss{key: missKey{-o.Ret, missPath(o, base)}, fname: o.Fname, tried: triedName(o, base), base: base,
		sc: o.Syscall, flags: o.Flags, ns: ns, openChain: openChain, inRun: inRun, other: other}
}

// missRepeats adds the repeats of t's last failed lookup or open that the
// kernel counted: to the image's totals, its repeated_miss, its list of
// failed opens and its lookup or open chain, as the events would have,
// without their detail (no calls, no stacks).
func (e *Engine) missRepeats(t *trace.Task, r trace.Repeats, now time.Time) {
	n := int(r.N)
	lookup := r.Syscall.IsLookup()
	im := e.image(t.Image(), t, now)
	if lookup {
		e.totals.Lookups += uint64(n)
		e.totals.FailedLookups += uint64(n)
		im.p.Totals.Lookups += n
		im.p.Totals.FailedLookups += n
	} else {
		e.totals.Opens += uint64(n)
		e.totals.FailedOpens += uint64(n)
		im.p.Totals.Opens += n
		im.p.Totals.FailedOpens += n
	}
	ls := im.live
	if ls == nil {
		return
	}
	lm := ls.lastMiss[t.Tid]
	if lm != nil && lm.sc.IsLookup() != lookup {
		lm = lm.other
	}
	if lm == nil || lm.sc.IsLookup() != lookup {
		// Its miss was past the caps (or the image's state was
		// evicted since): counted, never silent.
		e.totals.FilesCapped += uint64(n)
		return
	}
	ns := lm.ns * uint64(n)
	if r.Timed > 0 {
		ns = uint64(float64(r.TimedNs) / float64(r.Timed) * float64(n))
	}
	var ref missRef
	if m := ls.misses[lm.key]; m != nil {
		ref.m = m
		n0, ns0 := m.live()
		m.fd.Count += n
		m.wasted += ns
		e.countLive(im, nil, m, n0, ns0)
		m.fd.CallsOmitted += n
		m.fd.Kinds = addCallKind(m.fd.Kinds, lm.sc, lm.flags, n)
		e.addSite(im, &m.sites, 0, n)
	} else {
		e.totals.FilesCapped += uint64(n)
	}
	if lookup {
		e.probeFailedN(im, &ls.lprobes, lm.tried, lm.base, lm.key.errno, ns, 0, lm.sc, n, ref)
		return
	}
	if e.pol.Lists {
		if fo := ls.failed[failKey{lm.key.errno, lm.fname, lm.base}]; fo != nil {
			fo.Count += n
			fo.CallsOmitted += n
			e.addSite(im, &fo.CallSites, 0, n)
		}
	}
	e.probeFailedN(im, &ls.probes, lm.tried, lm.base, lm.key.errno, ns, 0, lm.sc, n, ref)
}

// statTally adds lookups the kernel counted without sending them: all of
// them repeats of a file the image looked up before (duplicate_stat).
func (e *Engine) statTally(t *trace.Task, r *trace.TallyRecord, now time.Time) {
	n := int(r.Opens)
	e.totals.Lookups += r.Opens
	im := e.image(t.Image(), t, now)
	im.p.Totals.Lookups += n
	ls := im.live
	if ls == nil {
		return
	}
	k := statKey(r.Dev, r.Ino, r.Gen, r.FileType)
	f := ls.stats[k]
	if f == nil { // the lookups sent before were lost, or past the caps
		e.totals.FilesCapped += r.Opens
		return
	}
	n0, ns0 := f.live()
	fo := &f.fo
	fo.Count += n
	fo.ExtraNs += r.Ns
	e.countLive(im, f, nil, n0, ns0)
	fo.CallsOmitted += n
	e.addKind(fo, r.Syscall, r.Flags, n)
	// Counted in the kernel: no stack of their own.
	e.addSite(im, &fo.CallSites, 0, n)
}
