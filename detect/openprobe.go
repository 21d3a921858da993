package detect

import (
	"path"
	"slices"
	"strings"

	"github.com/oncetool/once/trace"
)

// openProbe is the failed opens of one basename in one image, not yet
// ended by an open of it that worked.
type openProbe struct {
	attempts []trace.Attempt // kept, up to Policy.MaxAttempts
	omitted  int
	failed   int
	wasted   uint64
	// firstDir is a hash of the directory of the first failure (a hash:
	// the directory can be 4 KiB a name); multi says a later one failed
	// elsewhere (a search, not a retry): exact whatever the attempts kept.
	firstDir uint64
	multi    bool
	// up says every failure so far was in the parent directory of the
	// one before (a walk up the tree: a package scope's, a project
	// root's, git's discovery), upDir the hash of the parent of the last
	// one's: where the walk goes next.
	up    bool
	upDir uint64
	sites []trace.CallSite
	// claims: the miss records of the failures, which the chain claims
	// should it be reported (see miss).
	claims []missClaim
	// alsoFound: another directory the image found the name in (a
	// lookup chain's; trace.ChainDetail.AlsoFound).
	alsoFound string
	// dirChecks: failed lookups of the directory of a miss right after
	// it (trace.ChainDetail.DirChecks); their time is in wasted.
	dirChecks int
	// cacheOpened: the thread that made the last miss opened ld.so's
	// cache since (ldCacheOpened); via: the cache the winner was found
	// through (trace.ChainDetail.ViaCache).
	cacheOpened bool
	via         string
	// rejected: a file of the name a lookup of the chain found and an
	// execute check refused (foundRejected): finding it again (bash stats
	// it again and checks it readable, to run it should nothing better be
	// found) ends no search.
	rejected string
	// variants, variantMisses: trace.ChainDetail's (noteVariant).
	variants      []string
	variantMisses int
}

// claim notes n failures of ref's record, taking ns, as the chain's.
func (p *openProbe) claim(ref missRef, n int, ns uint64) {
	if ref.m == nil {
		return
	}
	for i := range p.claims {
		if c := &p.claims[i]; c.m == ref.m {
			c.n += n
			c.ns += ns
			c.first = c.first || ref.first
			return
		}
	}
	if len(p.claims) < maxClaims {
		p.claims = append(p.claims, missClaim{ref, n, ns})
	}
}

// minOpenProbes is the fewest failed opens of one basename that make a
// probe chain finding. One miss before a hit is everywhere (glibc tries
// C.UTF-8 before C.utf8 for each locale category) and stays listed under
// failed opens; a search through a list of directories misses more.
const minOpenProbes = 2

// probeErrno says whether a failed open is a miss of a search
// (trace.IsMiss: the kernel decides by the same list).
func probeErrno(errno int32) bool { return trace.IsMiss(errno) }

// absName is fname made absolute against base, the directory the kernel
// says it was tried in (StPathIsBase): a relative name's, or an absolute
// one's that openat2's RESOLVE_IN_ROOT resolved below base as below "/"
// (trace.ResolveInRoot); fname as is when there is none.
func absName(fname, base string) string {
	if base == "" {
		return fname
	}
	return path.Join(base, fname)
}

// triedName is the name a failed open o tried below base, for absName:
// under RESOLVE_IN_ROOT, base is the root, where ".." stays (openat2(2)),
// so "../etc/x" and "/../etc/x" are base/etc/x, not what a lexical join
// makes of them.
func triedName(o *trace.OpenRecord, base string) string {
	if base != "" && o.Resolve&trace.ResolveInRoot != 0 {
		return path.Clean("/" + o.Fname)
	}
	return o.Fname
}

// probeFailed adds a miss of fname to the chain of its basename in probes
// (an image's open probes, or its lookup probes).
func (e *Engine) probeFailed(im *image, probes *map[string]*openProbe, fname, base string, errno int32, ns uint64,
	stack trace.StackID, sc trace.Syscall, ref missRef) {
	e.probeFailedN(im, probes, fname, base, errno, ns, stack, sc, 1, ref)
}

// probeFailedN adds n misses of fname that took ns in all. Past the first
// (n > 1: repeats the kernel counted) they are counted, not kept.
func (e *Engine) probeFailedN(im *image, probes *map[string]*openProbe, fname, base string, errno int32, ns uint64,
	stack trace.StackID, sc trace.Syscall, n int, ref missRef) {
	if !probeErrno(errno) || fname == "" {
		return
	}
	b := path.Base(fname)
	if b == "." || b == ".." {
		// "dir/." checks that dir exists (gcc, for each directory it
		// may add to a search list): no name is searched, and the
		// checks of different directories are no chain.
		return
	}
	if pycCache(fname, b) {
		return
	}
	p := (*probes)[b]
	if p == nil {
		if e.pol.MaxProbeNames > 0 && len(*probes) >= e.pol.MaxProbeNames {
			e.drop(im)
			return
		}
		// A name pending is charged like any detail: the traced program
		// chooses it, and a basename that fails may be 4 KB long (a
		// component past NAME_MAX fails with ENAMETOOLONG, a miss), so
		// 65,536 of them would be 256 MiB past any budget. Once one is
		// refused no new name is taken in this image: a name refused
		// now and taken later, when another image gave its bytes back,
		// would make a chain that lacks its first misses.
		ls := im.live
		if ls != nil && ls.probesCut {
			e.drop(im)
			return
		}
		if !e.keep(im, 96+int64(len(b))) { // the drop counted
			if ls != nil {
				ls.probesCut = true
			}
			return
		}
		if *probes == nil {
			*probes = map[string]*openProbe{}
		}
		// A copy: the name is a slice of the whole path as passed,
		// which the key would otherwise keep.
		b = strings.Clone(b)
		p = &openProbe{}
		(*probes)[b] = p
		if ls := im.live; ls != nil && probes == &ls.lprobes {
			ls.nameMask |= nameBit(b)
			p.alsoFound = e.foundBefore(ls, b, trace.NameDir(absName(fname, base)))
		} else if ls != nil && probes == &ls.probes {
			// A miss past a find, where that chain did not look:
			// should the chain find the name nowhere, the program
			// opens the name in every place (vim's runtimepath:
			// pack/ and plugin/ in each entry, its after/ entries
			// after the one that held them), unless it tried that
			// chain's places side by side (otherName).
			if h := ls.openWon[b]; h != nil && e.foundBeforeIn([]*heldChain{h}, trace.NameDir(absName(fname, base))) {
				p.alsoFound = trace.NameDir(h.found)
			}
		}
	}
	if im.live != nil {
		im.live.lookGen++ // a chain that may end at a lookup that found nothing before
	}
	p.cacheOpened = false // missed after the cache: not found through it
	a := trace.Attempt{Path: absName(fname, base), Errno: errno, Syscall: sc, Ns: ns, Stack: stack}
	p.claim(ref, n, ns)
	first := p.failed == 0
	p.failed += n
	e.addSite(im, &p.sites, stack, n)
	p.wasted += ns
	d := trace.NameDir(a.Path)
	dir := e.hash(d)
	if first {
		p.firstDir = dir
	} else if dir != p.firstDir {
		p.multi = true
	}
	// A step up: a failure in the parent of the last one's directory.
	// A walk begins below the root, which is no step up from itself.
	step := !first && p.up && dir == p.upDir
	p.up = n == 1 && (step || first && d != "/")
	p.upDir = e.hash(path.Dir(d))
	if n > 1 {
		p.omitted += n
	} else if (e.pol.MaxAttempts <= 0 || len(p.attempts) < e.pol.MaxAttempts) && e.keepDetail(im, attemptBytes+int64(len(fname)+len(base))) {
		p.attempts = append(p.attempts, a)
	} else {
		p.omitted++
	}
	if p.up && d == "/" && p.failed >= 2 {
		// A walk up the parent directories that reached the root
		// without finding the name is over, found nowhere: a later
		// find of the name (node's node_modules/bar/package.json after
		// its package scope's walk for package.json) is another
		// lookup's, which must not end this one as a search that found
		// it there.
		e.walkEnded(im, probes, b, p)
	}
}

// pycCache says whether fname, of basename b, is the cached bytecode of
// one Python source, DIR/__pycache__/NAME.TAG.pyc for DIR/NAME.py (PEP
// 3147): missing (PYTHONDONTWRITEBYTECODE, a directory the program cannot
// write), the source is read instead. Each is its own source's, of its
// own package's directory: the misses of one basename in several
// (__init__.cpython-311.pyc of each package) are no search of a name
// through a list, and no order of those directories saves one.
func pycCache(fname, b string) bool {
	return strings.HasSuffix(b, ".pyc") && path.Base(path.Dir(fname)) == "__pycache__"
}

// walkEnded reports and ends the chain p of b in probes: a walk up the
// parent directories that reached the root and found nothing.
func (e *Engine) walkEnded(im *image, probes *map[string]*openProbe, b string, p *openProbe) {
	delete(*probes, b)
	b = strings.Clone(b) // the target: not a slice of the whole path
	kind := trace.KindFailedOpenProbes
	if ls := im.live; ls != nil && probes == &ls.lprobes {
		kind = trace.KindFailedStatProbes
		ls.lookGen++
	}
	e.chainFinding(im, kind, b, p, p.attempts, nil)
}

// openProbeWon closes an open probe chain when a file of the same basename
// opens.
func (e *Engine) openProbeWon(im *image, o *trace.OpenRecord, ann *Annotation) {
	ls := im.live
	if len(ls.probes) == 0 {
		return // nothing to close: the common case, without hashing the name
	}
	b := path.Base(o.Fname)
	p := ls.probes[b]
	if p == nil {
		return
	}
	// A file that appears where the name was missing is being made, not
	// found by a search: git looks for .git/config in two places, then
	// creates it in one of them.
	made := e.failedIn(p, trace.NameDir(o.Fname)) || o.Path != "" && e.failedIn(p, trace.NameDir(o.Path))
	if o.Created && !made {
		return // made elsewhere: not found, the search goes on
	}
	delete(ls.probes, b)
	if made {
		return
	}
	// Where it was found, absolute as the misses are: a name relative to
	// a dirfd or the cwd is where the kernel resolved it.
	found := o.Fname
	if !strings.HasPrefix(found, "/") && o.Path != "" {
		found = o.Path
	}
	e.foundViaCache(im, p, trace.NameDir(found))
	if p.failed < minOpenProbes {
		return
	}
	// Begun past a find and found: another search (the same list
	// searched again; include_next's search past the file that
	// includes it, which a compiler's -I advice serves better), or
	// another name of the same basename (sys/types.h, then
	// linux/types.h). Only a chain that finds the name nowhere past a
	// find is taken for the rest of a look in every place.
	p.alsoFound = ""
	attempts := append(p.attempts, trace.Attempt{Path: found, Syscall: o.Syscall, Ns: o.Ns(), Stack: e.stack})
	p.sites = e.attemptSites(im, p.sites, e.stack, true)
	f := e.chainFinding(im, trace.KindFailedOpenProbes, b, p, attempts, &found)
	if f != nil && ls.openWon[b] == nil && e.keep(im, openWonBytes+int64(len(b)+len(found))) {
		if ls.openWon == nil {
			ls.openWon = map[string]*heldChain{}
		}
		ls.openWon[strings.Clone(b)] = &heldChain{p: p, found: strings.Clone(found)}
	}
	if f != nil && ann != nil {
		ann.ProbeFailed, ann.ProbeFound = f.Failed, found
	}
}

// otherName clears p.alsoFound when p, begun past the find of the
// earlier chain of b (liveState.openWon), tried its places side by side
// with that chain's, each in a sibling, a subdirectory or the parent of
// the other's place, from the first: the same list searched for another
// name of the same basename (a compiler's sys/types.h, then
// linux/types.h; limits.h, then linux/limits.h), not a look past the
// find. p found the name nowhere.
func (e *Engine) otherName(ls *liveState, b string, p *openProbe) {
	h := ls.openWon[b]
	if p.alsoFound == "" || h == nil {
		return
	}
	was, now, ok := sideBySide(h, p, "")
	if !ok {
		return
	}
	for i := range was {
		w, d := was[i], now[i]
		if path.Dir(w) != path.Dir(d) && path.Dir(d) != w && d != path.Dir(w) {
			return
		}
	}
	p.alsoFound = ""
}

// sideBySide is the directories of held chain h's places (and of where
// it found the name) and of p's (and of found, "" for none), step by
// step as far as both go, to be compared place by place; false when
// there are fewer than two steps, or a chain left out attempts (omitted)
// that those steps would need.
func sideBySide(h *heldChain, p *openProbe, found string) (was, now []string, ok bool) {
	dirs := func(as []trace.Attempt, found string) []string {
		var ds []string
		for _, a := range as {
			ds = append(ds, trace.NameDir(a.Path))
		}
		if found != "" {
			ds = append(ds, trace.NameDir(found))
		}
		return ds
	}
	was, now = dirs(h.p.attempts, h.found), dirs(p.attempts, found)
	n := min(len(was), len(now))
	if n < 2 || h.p.omitted > 0 && len(h.p.attempts) < n || p.omitted > 0 && len(p.attempts) < n {
		return nil, nil, false
	}
	return was[:n], now[:n], true
}

// openWonBytes: an entry of liveState.openWon, but for its name and
// where it found it.
const openWonBytes = 96

// endOpenProbes closes the chains an ending image leaves open: searches
// that never found, when they tried more than one directory.
func (e *Engine) endOpenProbes(im *image) {
	ls := im.live
	if len(ls.probes) == 0 {
		return
	}
	for _, b := range sortedNames(ls.probes) {
		p := ls.probes[b]
		if p.failed >= minOpenProbes && p.multi {
			e.otherName(ls, b, p)
			e.chainFinding(im, trace.KindFailedOpenProbes, b, p, p.attempts, nil)
		}
	}
	ls.probes = nil
}

// sortedNames is the basenames of probes, sorted: findings come out in
// an order that does not depend on a map's.
func sortedNames(probes map[string]*openProbe) []string {
	names := make([]string, 0, len(probes))
	for b := range probes {
		names = append(names, b)
	}
	slices.Sort(names)
	return names
}

// failedIn says whether p's name failed in dir: the first failure's, or
// one of those kept.
func (e *Engine) failedIn(p *openProbe, dir string) bool {
	if e.hash(dir) == p.firstDir {
		return true
	}
	for _, a := range p.attempts {
		if trace.NameDir(a.Path) == dir {
			return true
		}
	}
	return false
}

// chainFinding delivers the open or lookup probe chain p of target.
func (e *Engine) chainFinding(im *image, kind trace.FindingKind, target string, p *openProbe, attempts []trace.Attempt, found *string) *trace.Finding {
	f := trace.Finding{Kind: kind, WastedNs: p.wasted, CallSites: p.sites,
		ChainDetail: trace.ChainDetail{Target: target, Attempts: attempts, AttemptsOmitted: p.omitted, Failed: p.failed, Found: found,
			AlsoFound: p.alsoFound, DirChecks: p.dirChecks, ViaCache: p.via,
			Variants: p.variants, VariantMisses: p.variantMisses}}
	if !e.emit(im, f) {
		return nil
	}
	for _, c := range p.claims {
		n0, ns0 := c.m.live()
		c.m.claimed += c.n
		c.m.claimedNs += c.ns
		c.m.firstClaimed = c.m.firstClaimed || c.first
		if im.live != nil {
			e.countLive(im, nil, c.m, n0, ns0)
		}
	}
	w := &im.waste
	if kind == trace.KindFailedOpenProbes {
		w.OpenProbes += f.Failed
		w.OpenNs += f.WastedNs
		e.totals.OpenProbes += uint64(f.Failed)
	} else {
		w.Lookups += f.Failed
		w.LookupNs += f.WastedNs
		e.totals.LookupWaste += uint64(f.Failed)
	}
	im.noteWorst(f.WastedNs, f.Brief)
	return &e.pending[len(e.pending)-1]
}

// ldCacheName is the basename of ld.so's cache of library paths
// (ldconfig's /etc/ld.so.cache).
const ldCacheName = "ld.so.cache"

// ldCacheOpened notes a successful open of ld.so's cache by thread tid:
// the open chain the thread's last miss is of, should its next attempt
// find the name, found it through the cache (ld.so tries the entries of
// LD_LIBRARY_PATH and RUNPATH, then its cache). name is where the cache
// is.
func (e *Engine) ldCacheOpened(im *image, tid uint32, name string) {
	ls := im.live
	if ls.ldCache == "" && e.keep(im, int64(len(name))) {
		ls.ldCache = strings.Clone(name)
	}
	lm := ls.lastMiss[tid]
	if lm == nil || lm.openChain == "" {
		return
	}
	if p := ls.probes[lm.openChain]; p != nil && p.failed > 0 {
		p.cacheOpened = true
	}
}

// foundViaCache sets p.via when p, found in dir, was found through ld.so's
// cache: its thread opened the cache after its last miss; or the image
// did for an earlier chain (ld.so maps it once and reads it for every
// library after), p missed only where that chain (those chains) missed,
// and found the name elsewhere. The first keeps where its chain missed.
func (e *Engine) foundViaCache(im *image, p *openProbe, dir string) {
	ls := im.live
	if ls.ldCache == "" || p.failed == 0 {
		return
	}
	if p.cacheOpened {
		p.via = ls.ldCache
		for _, d := range e.probeDirs(p) {
			if _, ok := ls.cacheDirs[d]; ok || !e.keep(im, cacheDirBytes) {
				continue
			}
			if ls.cacheDirs == nil {
				ls.cacheDirs = map[uint64]struct{}{}
			}
			ls.cacheDirs[d] = struct{}{}
		}
		return
	}
	if len(ls.cacheDirs) == 0 || p.omitted > 0 {
		return
	}
	if _, ok := ls.cacheDirs[e.hash(dir)]; ok {
		return // found in an entry: a search of the entries
	}
	for _, d := range e.probeDirs(p) {
		if _, ok := ls.cacheDirs[d]; !ok {
			return
		}
	}
	p.via = ls.ldCache
}

const cacheDirBytes = 48 // a directory's hash in liveState.cacheDirs

// probeDirs are the directories (hashed) p failed in: the first
// failure's and those of the attempts kept.
func (e *Engine) probeDirs(p *openProbe) []uint64 {
	dirs := []uint64{p.firstDir}
	for _, a := range p.attempts {
		if d := e.hash(trace.NameDir(a.Path)); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// stem is a basename up to its first dot ("__init__" of
// "__init__.abi3.so", "x" of "x.h.gch"), "" when it starts with one.
func stem(b string) string {
	if i := strings.IndexByte(b, '.'); i >= 0 {
		return b[:i]
	}
	return b
}

// variantOf says whether the thread's last miss lm and a call of fname
// (tried in base) are two names of one stem in one directory: a
// loader trying the suffixes it accepts for one name. One of the two
// must have a suffix.
func variantOf(lm *lastMiss, fname, base string) bool {
	if lm == nil || !probeErrno(lm.key.errno) {
		return false
	}
	b, lb := path.Base(fname), path.Base(lm.fname)
	if b == lb || !strings.Contains(b+lb, ".") {
		return false
	}
	if s := stem(b); s == "" || s != stem(lb) {
		return false
	}
	return trace.NameDir(absName(fname, base)) == trace.NameDir(absName(lm.fname, lm.base))
}

// noteVariants marks the chains of thread tid's last miss and of a call
// of fname right after it (sc; missed: it failed too, its chain holds it)
// as variants of each other, when they are (variantOf). It says whether
// the call was a variant miss.
func (e *Engine) noteVariants(im *image, tid uint32, fname, base string, sc trace.Syscall, missed bool) bool {
	ls := im.live
	lm := ls.lastMiss[tid]
	if lm == nil || lm.stale {
		return false
	}
	if !variantOf(lm, fname, base) {
		// Something else came between: names tried later are not
		// tried in a row with it.
		lm.stale = !missed
		return false
	}
	b, lb := path.Base(fname), path.Base(lm.fname)
	chainOf := func(name string, sc trace.Syscall) *openProbe {
		if sc.IsLookup() {
			return ls.lprobes[name]
		}
		return ls.probes[name]
	}
	if p := chainOf(lb, lm.sc); p != nil {
		if !lm.inRun {
			p.variantMisses++
		}
		e.addVariant(im, p, b)
	}
	lm.inRun = true
	if !missed {
		return false
	}
	if p := chainOf(b, sc); p != nil {
		p.variantMisses++
		e.addVariant(im, p, lb)
	}
	return true
}

// addVariant adds name to p's variants, up to trace.MaxVariants.
func (e *Engine) addVariant(im *image, p *openProbe, name string) {
	if len(p.variants) >= trace.MaxVariants || slices.Contains(p.variants, name) || !e.keepDetail(im, 16+int64(len(name))) {
		return
	}
	p.variants = append(p.variants, strings.Clone(name))
}
