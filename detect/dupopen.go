package detect

import (
	"path"
	"strings"
	"time"

	"github.com/oncetool/once/trace"
)

// file is one file (dev+ino) an image opened: the exact counts, and the
// calls and spellings kept within the policy's caps.
type file struct {
	fo      trace.FileOpens
	kind    fileKind
	ignored bool // one of its names matches --ignore
	// kept: the calls (indexes in fo.Calls, -1 for one not kept there)
	// whose stack the kernel kept, to come later (keptstack.go).
	kept []int32
	// firstKept: the image's first open of it was not sent but kept in
	// the kernel with its stack, to come later (keptstack.go).
	firstKept bool
	// The first call, kind and path of fo's lists, in the file itself:
	// most files are opened once, and these were three allocations of
	// their own for each (fo's slices point here until they grow).
	call0 [1]trace.OpenCall
	kind0 [1]trace.CallKind
	path0 [1]string
}

// fileKind is which of an image's lists a file's opens go to.
type fileKind uint8

const (
	kindFile    fileKind = iota // a file's use: its repeats are duplicates
	kindPath                    // O_PATH opens: no file's use
	kindSpecial                 // a device, FIFO or socket (trace.FileApart)
)

// apart: its opens are listed apart, never duplicates.
func (f *file) apart() bool { return f.kind != kindFile }

// openKind is the list an open of a file of type ftype with flags goes to.
func openKind(flags uint64, ftype uint16) fileKind {
	switch {
	case flags&trace.OPath != 0:
		return kindPath
	case trace.FileApart(ftype):
		return kindSpecial
	}
	return kindFile
}

// table is the image's files of kind k, made when asked to.
func (ls *liveState) table(k fileKind, alloc bool) map[fileKey]*file {
	switch k {
	case kindPath:
		if ls.opath == nil && alloc {
			ls.opath = map[fileKey]*file{}
		}
		return ls.opath
	case kindSpecial:
		if ls.special == nil && alloc {
			ls.special = map[fileKey]*file{}
		}
		return ls.special
	}
	return ls.files
}

// nfiles is how many files the image's tables hold.
func (ls *liveState) nfiles() int { return len(ls.files) + len(ls.opath) + len(ls.special) }

// add enters f, of kind k, in the image's tables, and reports whether its
// file was in none of them before (under another kind).
func (ls *liveState) add(k fileKind, key fileKey, f *file) bool {
	first := true
	for _, other := range []fileKind{kindFile, kindPath, kindSpecial} {
		if other != k && ls.table(other, false)[key] != nil {
			first = false
		}
	}
	ls.table(k, true)[key] = f
	ls.order = append(ls.order, f)
	return first
}

func (e *Engine) open(t *trace.Task, o *trace.OpenRecord, now time.Time, ann *Annotation) {
	e.totals.Opens++
	im := e.image(t.Image(), t, now)
	im.p.Totals.Opens++
	ls := im.live
	if ls != nil {
		e.thread(im, t.Tid)
	}
	if o.Ret < 0 {
		e.totals.FailedOpens++
		im.p.Totals.FailedOpens++
		if ls != nil {
			e.failedOpen(im, t.Tid, o, e.call(t, o))
		}
		return
	}
	if ls == nil || o.Status.Has(trace.StPathUnresolved) {
		return // counted; no identity to group it by
	}
	kind := openKind(o.Flags, o.FileType)
	if kind != kindPath && len(ls.probes)+len(ls.lprobes) > 0 {
		if len(ls.lastMiss) > 0 {
			// Where it was found: absolute, as the misses are.
			name := o.Fname
			if !strings.HasPrefix(name, "/") && o.Path != "" {
				name = o.Path
			}
			e.noteVariants(im, t.Tid, name, "", o.Syscall, false)
		}
		if len(ls.probes) > 0 && path.Base(o.Fname) == ldCacheName {
			name := o.Fname
			if o.Path != "" {
				name = o.Path
			}
			e.ldCacheOpened(im, t.Tid, name)
		}
	}
	if kind != kindPath {
		e.openProbeWon(im, o, ann)
		e.lookupProbeWon(im, o.Fname, o.Path, o.Ns(), o.Syscall, o.Created, ann)
	}
	k := fileKey{dev: o.Dev, ino: o.Ino, gen: o.Gen}
	f := ls.table(kind, false)[k]
	if f == nil {
		if e.pol.MaxFiles > 0 && ls.nfiles() >= e.pol.MaxFiles ||
			!e.keep(im, fileBytes+int64(len(o.Path))) {
			e.totals.FilesCapped++
			return
		}
		f = &file{fo: trace.FileOpens{Dev: o.Dev, Ino: o.Ino, Gen: o.Gen, FileType: o.FileType, Path: o.Path,
			PathTruncated: o.Status.Has(trace.StPathTruncated)}, kind: kind}
		f.ignored = e.ignore.Match(o.Path)
		// Not counted under another kind, nor when the first open,
		// not sent, was counted as a file already (unsent).
		if ls.add(kind, k, f) && !o.Status.Has(trace.StSeenBefore) {
			im.p.Totals.Files++
		}
		if o.Status.Has(trace.StSeenBefore) {
			// The image's first open of it was counted, not sent: this
			// one is its second. With stacks the kernel kept that
			// call, to send it after this one.
			f.fo.Count = 1
			f.firstKept = e.stacks
		}
	}
	e.addOpens(im, f, 1, o.Ns(), ann)
	fo := &f.fo
	if fo.Kinds == nil {
		fo.Kinds = f.kind0[:0]
	}
	e.addKind(fo, o.Syscall, o.Flags, 1)
	e.addSite(im, &fo.CallSites, e.stack, 1)
	at := -1
	if (e.pol.MaxCalls <= 0 || len(fo.Calls) < e.pol.MaxCalls) && e.keepDetail(im, callBytes+int64(len(o.Fname))) {
		at = len(fo.Calls)
		if fo.Calls == nil {
			fo.Calls = f.call0[:0]
		}
		fo.Calls = append(fo.Calls, e.call(t, o))
	} else {
		fo.CallsOmitted++
	}
	if e.stacks && o.Status.Has(trace.StStackKept) {
		f.keepPending(at)
	}
	if !contains(fo.Paths, o.Path) {
		if (e.pol.MaxPaths <= 0 || len(fo.Paths) < e.pol.MaxPaths) && e.keepDetail(im, pathBytes+int64(len(o.Path))) {
			if fo.Paths == nil {
				fo.Paths = f.path0[:0]
			}
			fo.Paths = append(fo.Paths, o.Path)
		} else {
			fo.PathsCapped = true
		}
		if !f.ignored && e.ignore.Match(o.Path) {
			e.ignoreFile(im, f)
		}
	}
}

// addOpens counts n more successful opens of f, taking ns, and what they
// waste when they repeat it.
func (e *Engine) addOpens(im *image, f *file, n int, ns uint64, ann *Annotation) {
	fo := &f.fo
	before := fo.Count
	fo.Count += n
	extra := n
	if before == 0 {
		extra--
	}
	if extra <= 0 {
		return
	}
	fo.ExtraNs += ns
	if f.apart() {
		return
	}
	if before < 2 && fo.Count >= 2 {
		im.p.Totals.DupFiles++
		im.waste.DupFiles++
	}
	if f.ignored {
		return
	}
	w := &im.waste
	w.ExtraOpens += extra
	w.DupNs += ns
	e.totals.DuplicateOpens += uint64(extra)
	im.noteWorstFile(f)
	if ann != nil {
		ann.Dup = fo.Count
		ann.Extra += uint64(extra)
	}
}

// ignoreFile takes back what f wasted: a name of it matches --ignore.
func (e *Engine) ignoreFile(im *image, f *file) {
	f.ignored = true
	if f.apart() || f.fo.Count < 2 {
		return
	}
	w := &im.waste
	w.ExtraOpens -= f.fo.Count - 1
	w.DupNs -= f.fo.ExtraNs
	e.totals.DuplicateOpens -= uint64(f.fo.Count - 1)
}

// tally adds opens the kernel counted without sending them: all of them
// repeats of a file the image opened before.
func (e *Engine) tally(t *trace.Task, r *trace.TallyRecord, now time.Time, ann *Annotation) {
	if r.Syscall.IsLookup() {
		e.statTally(t, r, now)
		return
	}
	e.totals.Opens += r.Opens
	im := e.image(t.Image(), t, now)
	im.p.Totals.Opens += int(r.Opens)
	ls := im.live
	if ls == nil {
		return
	}
	k := fileKey{dev: r.Dev, ino: r.Ino, gen: r.Gen}
	// A tally does not say the file's type: a device's opens counted in
	// the kernel are found where its first one sent went.
	kind := kindFile
	if r.Flags&trace.OPath != 0 {
		kind = kindPath
	} else if ls.special[k] != nil {
		kind = kindSpecial
	}
	f := ls.table(kind, false)[k]
	if f == nil { // the opens sent before were lost (counted)
		if e.pol.MaxFiles > 0 && ls.nfiles() >= e.pol.MaxFiles || !e.keep(im, fileBytes) {
			e.totals.FilesCapped += r.Opens
			return
		}
		f = &file{fo: trace.FileOpens{Dev: r.Dev, Ino: r.Ino, Gen: r.Gen}, kind: kind}
		if ls.add(kind, k, f) {
			im.p.Totals.Files++
		}
	}
	e.addOpens(im, f, int(r.Opens), r.Ns, ann)
	f.fo.CallsOmitted += int(r.Opens)
	e.addKind(&f.fo, r.Syscall, r.Flags, int(r.Opens))
	// Counted in the kernel: no stack of their own.
	e.addSite(im, &f.fo.CallSites, 0, int(r.Opens))
}

// unsent counts n opens of t's image that the kernel counted without
// sending: first opens of files, none of them a duplicate.
func (e *Engine) unsent(t *trace.Task, n uint64, now time.Time) {
	e.totals.Opens += n
	e.totals.OpensUnsent += n
	im := e.image(t.Image(), t, now)
	im.p.Totals.Opens += int(n)
	im.p.Totals.Files += int(n)
}

// Unattributed counts opens first opens and lookups successful lookups
// that the kernel counted without sending, of a process the engine holds
// no image of (a thread's counts held at the end of a watch, of a process
// that sent nothing): in the totals only. None of them is a duplicate or
// a miss: no finding is missing them.
func (e *Engine) Unattributed(opens, lookups uint64) {
	e.totals.Opens += opens
	e.totals.OpensUnsent += opens
	e.totals.Lookups += lookups
}

// addKind counts n opens under (syscall, flags).
func (e *Engine) addKind(fo *trace.FileOpens, sc trace.Syscall, flags uint64, n int) {
	for i := range fo.Kinds {
		if fo.Kinds[i].Syscall == sc && fo.Kinds[i].Flags == flags {
			fo.Kinds[i].Count += n
			return
		}
	}
	fo.Kinds = append(fo.Kinds, trace.CallKind{Syscall: sc, Flags: flags, Count: n})
}

func (e *Engine) call(t *trace.Task, o *trace.OpenRecord) trace.OpenCall {
	return trace.OpenCall{
		Syscall: o.Syscall, Tid: t.Tid, Fname: o.Fname, Dirfd: o.Dirfd,
		Flags: o.Flags, Mode: o.Mode, Resolve: o.Resolve, Ret: o.Ret,
		EnterNs: o.EnterNs, Ns: o.Ns(), Path: o.Path,
		FnameTruncated:  o.Status.Has(trace.StFnameTruncated),
		FnameUnreadable: o.Status.Has(trace.StFnameUnreadable),
		PathTruncated:   o.Status.Has(trace.StPathTruncated),
		Untimed:         o.Status.Has(trace.StUntimed),
		Stack:           e.stack,
	}
}

// failedOpen keeps a failed open in its image's list and, when it looks
// like one step of a search, in the open probe detector; it is thread
// tid's last failure, which the kernel's counted repeats add to.
func (e *Engine) failedOpen(im *image, tid uint32, o *trace.OpenRecord, c trace.OpenCall) {
	errno := -o.Ret
	base := ""
	if o.Status.Has(trace.StPathIsBase) {
		base = o.Path
	}
	if e.pol.Lists {
		ls := im.live
		if ls.failed == nil {
			ls.failed = map[failKey]*trace.FailedOpen{}
		}
		k := failKey{errno, o.Fname, base}
		fo := ls.failed[k]
		if fo == nil && e.keep(im, failedBytes+int64(len(o.Fname)+len(base))) {
			fo = &trace.FailedOpen{Fname: o.Fname, Base: base, Errno: errno}
			ls.failed[k] = fo
			im.p.FailedOpens = append(im.p.FailedOpens, fo)
		}
		if fo != nil {
			fo.Count++
			e.addSite(im, &fo.CallSites, c.Stack, 1)
			if (e.pol.MaxCalls <= 0 || len(fo.Calls) < e.pol.MaxCalls) && e.keepDetail(im, callBytes) {
				fo.Calls = append(fo.Calls, c)
			} else {
				fo.CallsOmitted++
			}
		}
	}
	ref := e.missed(im, o, c, base)
	e.probeFailed(im, &im.live.probes, triedName(o, base), base, errno, c.Ns, c.Stack, o.Syscall, ref)
	run := e.noteVariants(im, tid, o.Fname, base, o.Syscall, true)
	chain := ""
	if probeErrno(errno) {
		chain = path.Base(o.Fname)
	}
	e.rememberMiss(im, tid, o, base, c.Ns, chain, run)
}

// endFiles turns an ended image's repeated files into findings and keeps,
// in its Process, the files its report lists.
func (e *Engine) endFiles(im *image) {
	ls := im.live
	for _, f := range ls.order {
		if f.kept != nil || f.firstKept {
			e.keptLost(im, f)
		}
		if !f.apart() && f.fo.Count >= 2 && !f.ignored {
			e.emitDup(im, f)
		}
	}
	if !e.pol.Lists {
		return
	}
	all := e.pol.Files == trace.FilesAll
	// The run's listing of every file: packed (packed.go).
	packing := all && !e.pol.Bounded && packListing
	if packing {
		im.packedAt = e.packed.n
	}
	for _, f := range ls.order {
		if f.fo.Count < 2 && (e.pol.KeepFile == nil || !e.pol.KeepFile(f.fo.Dev, f.fo.Ino)) {
			// Listed only for --files all: the listing's budget
			// may cut it, and counts it.
			n := fileOpensBytes(&f.fo)
			if !all || !e.listOnly(im, n) {
				continue
			}
			if packing && packable(&f.fo) {
				e.pack(&f.fo, f.kind)
				im.packedN++
				im.packedBytes += n
				continue
			}
		}
		if packing {
			e.packed.add(packedFile{full: true, kind: f.kind})
			im.packedN++
		}
		switch f.kind {
		case kindPath:
			im.p.PathOpens = append(im.p.PathOpens, &f.fo)
		case kindSpecial:
			im.p.SpecialOpens = append(im.p.SpecialOpens, &f.fo)
		default:
			im.p.Opens = append(im.p.Opens, &f.fo)
		}
	}
	kept := im.p.FailedOpens[:0]
	for _, fo := range im.p.FailedOpens {
		if fo.Count >= 2 {
			kept = append(kept, fo)
		} else if n := failedOpenBytes(fo); !all || !e.listOnly(im, n) {
			continue
		} else if packing && packableFailed(fo) {
			e.packFailed(fo)
			im.packedN++
			im.packedBytes += n
			continue
		} else {
			kept = append(kept, fo)
		}
		if packing {
			e.packed.add(packedFile{full: true, failed: true})
			im.packedN++
		}
	}
	clear(im.p.FailedOpens[len(kept):])
	im.p.FailedOpens = kept
}

func (e *Engine) emitDup(im *image, f *file) {
	fo := &f.fo
	paths := fo.Paths
	if fo.Path == "" && len(paths) > 0 {
		fo.Path = paths[0]
	}
	e.emit(im, trace.Finding{
		Kind: trace.KindDuplicateOpen, WastedNs: fo.ExtraNs, CallSites: fo.CallSites,
		FileDetail: trace.FileDetail{Path: fo.Path, Paths: paths, PathsCapped: fo.PathsCapped, Dev: fo.Dev, Ino: fo.Ino, Gen: fo.Gen,
			Count: fo.Count, Calls: fo.Calls, Kinds: fo.Kinds, CallsOmitted: fo.CallsOmitted},
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
