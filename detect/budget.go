package detect

import "github.com/oncetool/once/trace"

// Every piece of detail the engine keeps (a file, a spelling, a call, an
// attempt, a failed open, an exec) is charged, in bytes, to its image and
// to the engine: any local user chooses the names, processes and failures
// once sees, so what they cost once is bounded in bytes, not only in
// entries. Past its image's budget or the engine's, a piece is not kept and
// is counted (Totals.DetailDropped, Process.DetailDropped); the counts it
// would have shown stay exact. Under Bounded, the engine's budget is kept
// by evicting images first, as MaxImages is.
//
// The sizes are estimates of what the Go heap holds for each piece: the
// struct, its slice slot, and the bytes of its strings.
const (
	imageBytes   = 1024 // an image: its Process, its state, its list element, its entries in three maps
	fileBytes    = 208  // a file: FileOpens, its map entry, its order slot
	callBytes    = 136  // an OpenCall in a file's or failed open's Calls
	pathBytes    = 16   // a spelling's slot in Paths
	attemptBytes = 56   // an Attempt of a chain
	failedBytes  = 144  // a FailedOpen, its map entry
	execBytes    = 200  // an ExecAttempt
	heldInBytes  = 48   // a found chain's slot under one of its directories (image.heldIn)
)

func execSize(a *trace.ExecAttempt) int64 {
	n := int64(execBytes + len(a.Filename))
	if a.Path != a.Filename {
		n += int64(len(a.Path))
	}
	for _, s := range a.Argv {
		n += int64(len(s)) + 16
	}
	return n
}

// keep charges n bytes to im for what detection tells apart (a file, a
// stat-ed file, a missed path, a probe chain, the state a heuristic
// needs), if they fit its image's budget (MaxImageBytes, less the detail
// keepDetail charged) and the engine's; under Bounded it evicts other
// images to make room in the engine's budget.
func (e *Engine) keep(im *image, n int64) bool {
	if e.pol.MaxImageBytes > 0 && im.bytes-im.detail+n > e.pol.MaxImageBytes {
		return e.drop(im)
	}
	return e.keepEngine(im, n)
}

// keepDetail is keep for a piece of an image's listing detail (a call, a
// spelling, an attempt, an exec attempt, a call site), which has a budget
// of its own, half of MaxImageBytes, beside detection's: the calls of a
// long-lived image that opens many files once each must not use up the
// room that tells its later files apart, or their repeats would go
// unfound.
func (e *Engine) keepDetail(im *image, n int64) bool {
	if e.pol.MaxImageBytes > 0 && im.detail+n > e.pol.MaxImageBytes/2 {
		return e.drop(im)
	}
	if !e.keepEngine(im, n) {
		return false
	}
	im.detail += n
	return true
}

// keepEngine charges n bytes to im and the engine, if they fit the
// engine's budget.
func (e *Engine) keepEngine(im *image, n int64) bool {
	for e.pol.MaxBytes > 0 && e.bytes+n > e.pol.MaxBytes {
		if !e.pol.Bounded || !e.evictFor(im) {
			return e.drop(im)
		}
	}
	im.bytes += n
	e.bytes += n
	return true
}

// charge charges n bytes to im whatever the budgets.
func (e *Engine) charge(im *image, n int64) {
	im.bytes += n
	e.bytes += n
}

func (e *Engine) drop(im *image) bool {
	im.p.DetailDropped++
	e.totals.DetailDropped++
	return false
}

// release gives back n bytes im had been charged (at its end: what it
// keeps after is its Process's, no detail of a live image's).
func (e *Engine) release(im *image, n int64) {
	im.bytes -= n
	e.bytes -= n
	im.detail = min(im.detail, im.bytes)
}

// evictFor evicts one image other than im, the oldest ended one first,
// else the least recently active.
func (e *Engine) evictFor(im *image) bool {
	var victim *image
	for el := e.ended.Front(); el != nil && victim == nil; el = el.Next() {
		if v := el.Value.(*image); v != im {
			victim = v
		}
	}
	for el := e.active.Back(); el != nil && victim == nil; el = el.Prev() {
		if v := el.Value.(*image); v != im {
			victim = v
		}
	}
	if victim == nil {
		return false
	}
	e.evicted(victim)
	e.end(victim, im.lastSeen)
	e.remove(victim)
	return true
}

// listFits reports whether n more bytes fit the listing's budget.
func (e *Engine) listFits(n int64) bool {
	return e.pol.MaxListBytes <= 0 || e.listBytes+n <= e.pol.MaxListBytes
}

// listOnly charges the listing's budget n bytes for a piece im's report
// lists only because --files all asked for it; past the budget less its
// last quarter, left for the findings and what every report lists, it is
// cut, and counted.
func (e *Engine) listOnly(im *image, n int64) bool {
	if e.pol.Bounded {
		return true // charged to im already, evicted as a whole
	}
	if m := e.pol.MaxListBytes; m > 0 && e.listBytes+n > m-m/4 {
		return e.drop(im)
	}
	e.listBytes += n
	im.listed += n
	return true
}

// retainedBytes is what an ended image still holds: its Process and the
// lists its report shows.
func retainedBytes(p *trace.Process) int64 {
	n := int64(imageBytes + len(p.Comm) + len(p.LastComm) + len(p.ParentComm) + len(p.Exe))
	for _, s := range p.Argv {
		n += int64(len(s)) + 16
	}
	for _, group := range [][]*trace.FileOpens{p.Opens, p.PathOpens, p.SpecialOpens} {
		for _, fo := range group {
			n += fileOpensBytes(fo)
		}
	}
	for _, fo := range p.FailedOpens {
		n += failedOpenBytes(fo)
	}
	for i := range p.Execs {
		n += execSize(&p.Execs[i])
	}
	return n
}

// fileOpensBytes is what a file listed holds.
func fileOpensBytes(fo *trace.FileOpens) int64 {
	n := fileBytes + int64(len(fo.Path))
	for _, s := range fo.Paths {
		n += pathBytes + int64(len(s))
	}
	for i := range fo.Calls {
		n += callBytes + int64(len(fo.Calls[i].Fname))
	}
	return n
}

// failedOpenBytes is what a failed open listed holds.
func failedOpenBytes(fo *trace.FailedOpen) int64 {
	n := failedBytes + int64(len(fo.Fname)+len(fo.Base))
	for i := range fo.Calls {
		n += callBytes + int64(len(fo.Calls[i].Fname))
	}
	return n
}

func findingBytes(f *trace.Finding) int64 {
	n := int64(256 + len(f.Path) + len(f.Target))
	for _, s := range f.Paths {
		n += pathBytes + int64(len(s))
	}
	n += int64(len(f.Calls)) * callBytes
	for _, a := range f.Attempts {
		n += attemptBytes + int64(len(a.Path))
	}
	return n + int64(len(f.CallSites))*siteBytes
}
