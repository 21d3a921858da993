package detect

import (
	"strings"

	"github.com/oncetool/once/trace"
)

// Files an ended image's report lists only because --files all asked for
// them are most of what a large run keeps: millions of files opened once.
// Kept as FileOpens, each is a struct full of pointers and two or three
// strings, and the garbage collector walks all of them at every cycle
// while the run goes on; at 20,000 processes of 300 files each that work
// slowed the drain loop enough for the ring to overflow. A file of the
// common shape (one open, one spelling, its call kept) is kept here
// instead, packed without pointers, and made a FileOpens again only for
// the report (Result).

// packListing: endFiles packs (a test compares the lists without).
var packListing = true

// packedFile is a listed file of the common shape, or (full) the place of
// the next of its kind's list in the image's Process, to keep the order.
type packedFile struct {
	dev, ino             uint64
	flags, mode, resolve uint64
	enterNs, ns          uint64
	path, fname, cpath   strRef
	gen, tid             uint32
	dirfd, ret           int32
	stack, site          trace.StackID
	ftype                uint16
	sys                  trace.Syscall
	kind                 fileKind
	bits                 uint8
	full                 bool
	// failed: a FailedOpen (path its Base), not a FileOpens.
	failed bool
}

// packedFile.bits
const (
	packPathTruncated = 1 << iota
	packFnameTruncated
	packFnameUnreadable
	packCallPathTruncated
	packUntimed
	packSite // one call site, site
)

// packable: fo has the shape packedFile keeps exactly.
func packable(fo *trace.FileOpens) bool {
	if fo.Count != 1 || len(fo.Calls) != 1 || fo.CallsOmitted != 0 || fo.ExtraNs != 0 ||
		len(fo.Paths) != 1 || fo.Paths[0] != fo.Path || len(fo.CallSites) > 1 {
		return false
	}
	c := &fo.Calls[0]
	if len(fo.Kinds) != 1 || fo.Kinds[0] != (trace.CallKind{Syscall: c.Syscall, Flags: c.Flags, Count: 1}) {
		return false
	}
	return len(fo.CallSites) == 0 || fo.CallSites[0].Count == 1
}

// packableFailed: fo, a failed open listed, has the shape packedFile
// keeps exactly.
func packableFailed(fo *trace.FailedOpen) bool {
	if fo.Count != 1 || len(fo.Calls) != 1 || fo.CallsOmitted != 0 || len(fo.CallSites) > 1 {
		return false
	}
	c := &fo.Calls[0]
	if c.Fname != fo.Fname || c.Ret != -fo.Errno {
		return false
	}
	return len(fo.CallSites) == 0 || fo.CallSites[0].Count == 1
}

// packFailed keeps fo in the engine's packed files.
func (e *Engine) packFailed(fo *trace.FailedOpen) {
	e.packCall(&fo.Calls[0], fo.Base, fo.CallSites, packedFile{failed: true})
}

// pack keeps fo, of kind k, in the engine's packed files.
func (e *Engine) pack(fo *trace.FileOpens, k fileKind) {
	p := packedFile{dev: fo.Dev, ino: fo.Ino, gen: fo.Gen, ftype: fo.FileType, kind: k}
	if fo.PathTruncated {
		p.bits |= packPathTruncated
	}
	e.packCall(&fo.Calls[0], fo.Path, fo.CallSites, p)
}

// packCall completes p with its one call c, its path and its call sites,
// and keeps it.
func (e *Engine) packCall(c *trace.OpenCall, path string, sites []trace.CallSite, p packedFile) {
	p.flags, p.mode, p.resolve = c.Flags, c.Mode, c.Resolve
	p.enterNs, p.ns, p.tid, p.dirfd, p.ret = c.EnterNs, c.Ns, c.Tid, c.Dirfd, c.Ret
	p.stack, p.sys = c.Stack, c.Syscall
	p.path, p.fname = e.strs.add(path), e.strs.add(c.Fname)
	if c.Path == path {
		p.cpath = p.path
	} else {
		p.cpath = e.strs.add(c.Path)
	}
	for _, b := range []struct {
		on  bool
		bit uint8
	}{{c.FnameTruncated, packFnameTruncated}, {c.FnameUnreadable, packFnameUnreadable},
		{c.PathTruncated, packCallPathTruncated}, {c.Untimed, packUntimed}} {
		if b.on {
			p.bits |= b.bit
		}
	}
	if len(sites) == 1 {
		p.bits |= packSite
		p.site = sites[0].Stack
	}
	e.packed.add(p)
}

// unpack puts im's packed files back in its Process's lists, in the order
// endFiles listed them. Each image's files are made in a few allocations
// (its FileOpens, calls, kinds and spellings each one slice, its strings
// one string), not several for each file: millions of small objects made
// at the end would have the collector walk them again and again while
// the report waits.
func (e *Engine) unpack(im *image) {
	if im.packedN == 0 {
		return
	}
	p := im.p
	full := [3][]*trace.FileOpens{kindFile: p.Opens, kindPath: p.PathOpens, kindSpecial: p.SpecialOpens}
	var lists [3][]*trace.FileOpens
	fullFailed := p.FailedOpens
	var failedList []*trace.FailedOpen
	n, nf, sites, size := 0, 0, 0, 0
	for i := im.packedAt; i < im.packedAt+im.packedN; i++ {
		pf := e.packed.at(i)
		if pf.full {
			continue
		}
		if pf.failed {
			nf++
		} else {
			n++
		}
		if pf.bits&packSite != 0 {
			sites++
		}
		size += int(pf.path.len + pf.fname.len)
		if pf.cpath != pf.path {
			size += int(pf.cpath.len)
		}
	}
	var (
		fos   = make([]trace.FileOpens, n)
		calls = make([]trace.OpenCall, n)
		kinds = make([]trace.CallKind, n)
		paths = make([]string, n)
		css   = make([]trace.CallSite, sites)
		fails = make([]trace.FailedOpen, nf)
		b     strings.Builder
	)
	b.Grow(size)
	for i := im.packedAt; i < im.packedAt+im.packedN; i++ {
		pf := e.packed.at(i)
		if !pf.full {
			e.strs.write(&b, pf.path)
			e.strs.write(&b, pf.fname)
			if pf.cpath != pf.path {
				e.strs.write(&b, pf.cpath)
			}
		}
	}
	strs := b.String()
	j, k, l, off := 0, 0, 0, 0
	next := func(r strRef) string {
		s := strs[off : off+int(r.len)]
		off += int(r.len)
		return s
	}
	for i := im.packedAt; i < im.packedAt+im.packedN; i++ {
		pf := e.packed.at(i)
		switch {
		case pf.full && pf.failed:
			failedList = append(failedList, fullFailed[0])
			fullFailed = fullFailed[1:]
			continue
		case pf.full:
			lists[pf.kind] = append(lists[pf.kind], full[pf.kind][0])
			full[pf.kind] = full[pf.kind][1:]
			continue
		}
		path := next(pf.path)
		fname := next(pf.fname)
		cpath := path
		if pf.cpath != pf.path {
			cpath = next(pf.cpath)
		}
		call := trace.OpenCall{
			Syscall: pf.sys, Tid: pf.tid, Fname: fname, Dirfd: pf.dirfd, Flags: pf.flags, Mode: pf.mode,
			Resolve: pf.resolve, Ret: pf.ret, EnterNs: pf.enterNs, Ns: pf.ns, Path: cpath,
			FnameTruncated: pf.bits&packFnameTruncated != 0, FnameUnreadable: pf.bits&packFnameUnreadable != 0,
			PathTruncated: pf.bits&packCallPathTruncated != 0, Untimed: pf.bits&packUntimed != 0, Stack: pf.stack,
		}
		var site []trace.CallSite
		if pf.bits&packSite != 0 {
			css[k] = trace.CallSite{Stack: pf.site, Count: 1}
			site = css[k : k+1 : k+1]
			k++
		}
		if pf.failed {
			fo := &fails[l]
			*fo = trace.FailedOpen{Fname: fname, Base: path, Errno: -pf.ret, Count: 1,
				Calls: []trace.OpenCall{call}, CallSites: site}
			failedList = append(failedList, fo)
			l++
			continue
		}
		paths[j] = path
		calls[j] = call
		kinds[j] = trace.CallKind{Syscall: pf.sys, Flags: pf.flags, Count: 1}
		fo := &fos[j]
		*fo = trace.FileOpens{
			Dev: pf.dev, Ino: pf.ino, Gen: pf.gen, FileType: pf.ftype, PathTruncated: pf.bits&packPathTruncated != 0,
			Path: path, Paths: paths[j : j+1 : j+1], Count: 1,
			Calls: calls[j : j+1 : j+1], Kinds: kinds[j : j+1 : j+1], CallSites: site,
		}
		lists[pf.kind] = append(lists[pf.kind], fo)
		j++
	}
	p.Opens, p.PathOpens, p.SpecialOpens = lists[kindFile], lists[kindPath], lists[kindSpecial]
	p.FailedOpens = failedList
	im.packedN = 0
}

// packedChunk is how many packedFiles a chunk of packedFiles holds: the
// list grows a chunk at a time, never copied.
const packedChunk = 1 << 14

type packedFiles struct {
	chunks [][]packedFile
	n      int
}

func (l *packedFiles) add(p packedFile) {
	if l.n%packedChunk == 0 {
		l.chunks = append(l.chunks, make([]packedFile, 0, packedChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, p)
	l.n++
}

func (l *packedFiles) at(i int) *packedFile { return &l.chunks[i/packedChunk][i%packedChunk] }

// strRef is a string in a strArena.
type strRef struct{ chunk, off, len uint32 }

// strArenaChunk is the size of a strArena's chunks; a longer string gets
// a chunk of its own size.
const strArenaChunk = 1 << 20

// strArena holds strings in large byte slices, which the garbage
// collector does not look into.
type strArena struct{ chunks [][]byte }

func (a *strArena) add(s string) strRef {
	if s == "" {
		return strRef{}
	}
	n := len(a.chunks)
	if n == 0 || len(a.chunks[n-1])+len(s) > cap(a.chunks[n-1]) {
		a.chunks = append(a.chunks, make([]byte, 0, max(strArenaChunk, len(s))))
		n++
	}
	c := &a.chunks[n-1]
	r := strRef{chunk: uint32(n - 1), off: uint32(len(*c)), len: uint32(len(s))}
	*c = append(*c, s...)
	return r
}

// write writes r's bytes to b.
func (a *strArena) write(b *strings.Builder, r strRef) {
	if r.len > 0 {
		b.Write(a.chunks[r.chunk][r.off : r.off+r.len])
	}
}
