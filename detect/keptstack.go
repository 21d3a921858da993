package detect

import (
	"slices"

	"github.com/oncetool/once/trace"
)

// With --stacks the kernel keeps the snapshot of an image's first open of
// a file instead of sending it (the open comes marked trace.StStackKept),
// and sends it only after an open that repeats the file, as an
// EventKeptStack: most files are opened once. The first call's stack
// thus comes after its call: until then it counts under call site 0, and
// its file remembers which call it is.
//
// Where the kernel counts first opens instead of sending them, with stacks
// it keeps the first open's call with its snapshot: the repeat comes
// marked StSeenBefore, and the first call after it, an EventKeptStack
// with OpenRecord.FirstCall. Its call and call site are then added; a
// first call lost (its kept slot reused before the repeat) is counted
// under call site 0 and in CallsOmitted, so that the counts stay whole.

// keepPending notes that call (its index in f's Calls, -1 if not kept
// there) of an open marked StStackKept waits for its stack.
func (f *file) keepPending(call int) {
	f.kept = append(f.kept, int32(call))
}

// keptStack gives the first call of the file an EventKeptStack names the
// stack it brings (e.stack; 0 when the kernel lost it).
func (e *Engine) keptStack(t *trace.Task, o *trace.OpenRecord) {
	im := e.images[t.Image()]
	if im == nil || im.live == nil {
		return
	}
	f := im.live.files[fileKey{dev: o.Dev, ino: o.Ino, gen: o.Gen}]
	if f != nil && f.firstKept && len(f.kept) == 0 {
		f.firstKept = false
		if o.FirstCall {
			e.firstCall(im, f, t, o)
		} else {
			// The call lost, not always its stack.
			e.firstLost(im, f, e.stack)
		}
		return
	}
	if f == nil || len(f.kept) == 0 {
		// Its open was lost (counted), or capped with its file.
		return
	}
	at := f.kept[0]
	f.kept = f.kept[1:]
	if len(f.kept) == 0 {
		f.kept = nil
	}
	if e.stack == 0 {
		e.totals.StacksFirstLost++
		return
	}
	fo := &f.fo
	if at >= 0 && int(at) < len(fo.Calls) {
		fo.Calls[at].Stack = e.stack
	}
	unsite(&fo.CallSites)
	e.addFirstSite(im, &fo.CallSites, e.stack)
}

// unsite takes one call off call site 0 of sites (dropping the site when
// none is left), for it to be counted under its stack.
func unsite(sites *[]trace.CallSite) {
	s := *sites
	for i := range s {
		if s[i].Stack != 0 {
			continue
		}
		if s[i].Count--; s[i].Count <= 0 {
			*sites = append(s[:i], s[i+1:]...)
		}
		return
	}
}

// firstCall adds f's first call, kept in the kernel and brought by o
// with its stack (e.stack, 0 when it could not be unwound), before the
// calls that repeated it.
func (e *Engine) firstCall(im *image, f *file, t *trace.Task, o *trace.OpenRecord) {
	fo := &f.fo
	if e.stack == 0 {
		// Its snapshot's slot reused before the repeat, or not unwound.
		e.totals.StacksFirstLost++
	}
	e.addFirstSite(im, &fo.CallSites, e.stack)
	// Its kind is known now: counted first, as the call came first.
	addFirstKind(fo, o.Syscall, o.Flags)
	if (e.pol.MaxCalls > 0 && len(fo.Calls) >= e.pol.MaxCalls) || !e.keepDetail(im, callBytes+int64(len(o.Fname))) {
		fo.CallsOmitted++
		return
	}
	c := e.call(t, o)
	c.Stack = e.stack
	if fo.Calls == nil {
		fo.Calls = f.call0[:0]
	}
	fo.Calls = slices.Insert(fo.Calls, 0, c)
	for i := range f.kept {
		if f.kept[i] >= 0 {
			f.kept[i]++
		}
	}
}

// firstLost counts f's first call, kept in the kernel and lost before the
// repeat came: not listed, under its call site if its stack came (stack),
// else under the site with no stack.
func (e *Engine) firstLost(im *image, f *file, stack trace.StackID) {
	if stack == 0 {
		e.totals.StacksFirstLost++
	}
	f.fo.CallsOmitted++
	e.addSite(im, &f.fo.CallSites, stack, 1)
}

// keptLost counts, as f's image ends, the calls of a duplicate whose
// kept stack (or first call) never came.
func (e *Engine) keptLost(im *image, f *file) {
	if len(f.kept) > 0 && f.fo.Count >= 2 {
		e.totals.StacksFirstLost += uint64(len(f.kept))
	}
	f.kept = nil
	if f.firstKept {
		f.firstKept = false
		e.firstLost(im, f, 0)
	}
}

// addFirstKind counts a file's first open, brought after its repeats
// were counted, under its (syscall, flags): a kind of its own goes first,
// the kinds being in first-use order.
func addFirstKind(fo *trace.FileOpens, sc trace.Syscall, flags uint64) {
	for i := range fo.Kinds {
		if fo.Kinds[i].Syscall == sc && fo.Kinds[i].Flags == flags {
			fo.Kinds[i].Count++
			return
		}
	}
	fo.Kinds = slices.Insert(fo.Kinds, 0, trace.CallKind{Syscall: sc, Flags: flags, Count: 1})
}
