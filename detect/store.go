package detect

import (
	"time"
)

// The Bounded policy's side of the store: images on recency lists,
// evicted past the cap and expired after the grace period. KeepAll keeps
// every image (its state shrinks to its Process when it ends) and none of
// this runs.

// touch marks an image active at now.
func (e *Engine) touch(im *image, now time.Time) {
	im.lastSeen = now
	if e.pol.Bounded && !im.onEnded && e.active.Front() != im.elem {
		e.active.MoveToFront(im.elem)
	}
}

// admit makes room for one more image.
func (e *Engine) admit(now time.Time) {
	if !e.pol.Bounded {
		return
	}
	if len(e.images) >= e.pol.MaxImages {
		e.evict(now)
	}
	for e.pol.MaxBytes > 0 && e.bytes+imageBytes > e.pol.MaxBytes && len(e.images) > 0 {
		e.evict(now)
	}
}

// evict drops one image: the oldest ended one, else the least recently
// active (ended first, so that its findings are not lost).
func (e *Engine) evict(now time.Time) {
	var victim *image
	if el := e.ended.Front(); el != nil {
		victim = el.Value.(*image)
	} else if el := e.active.Back(); el != nil {
		victim = el.Value.(*image)
	}
	if victim == nil {
		return
	}
	e.evicted(victim)
	e.end(victim, now)
	e.remove(victim)
}

// evicted counts victim's eviction when it had not ended: what it does
// later is not detected. An ended image's findings were made at its end,
// and dropping it loses only its row of the live table.
func (e *Engine) evicted(victim *image) {
	if !victim.onEnded {
		e.totals.Evicted++
	}
}

// remove forgets an ended image.
func (e *Engine) remove(im *image) {
	key := im.p.Key
	delete(e.images, key)
	e.bytes -= im.bytes
	if e.last == im {
		e.last = nil
	}
	if im.onEnded {
		e.ended.Remove(im.elem)
	} else {
		e.active.Remove(im.elem)
	}
	pk := key.Proc()
	pr := e.procs[pk]
	if pr == nil {
		return
	}
	for cur := pr.cur; cur != nil; cur = cur.prev {
		if cur.prev == im {
			cur.prev = im.prev
			break
		}
	}
	if pr.cur == im {
		pr.cur = nil
		if !pr.exited && !pr.launcher {
			e.running--
		}
		delete(e.procs, pk)
		if e.byPid[key.Pid] == pr {
			delete(e.byPid, key.Pid)
		}
	}
}

// Expire drops the images that ended more than the grace period ago
// (Bounded only).
func (e *Engine) Expire(now time.Time) {
	if !e.pol.Bounded {
		return
	}
	for im := range e.holding {
		if e.releaseHeld(im, now.Add(-HeldFor)) {
			delete(e.holding, im)
		}
	}
	for el := e.ended.Front(); el != nil; {
		im := el.Value.(*image)
		if now.Sub(im.lastSeen) <= e.pol.Grace {
			break
		}
		el = el.Next()
		e.remove(im)
	}
}

// EndGone ends the live images quiet since before whose process gone
// says has exited (Bounded only): after events were lost, the exit of a
// process may have been among them, and its image would hold its files
// until evicted. The least recently active are asked first, at most max
// of them, each at most once per recheck; it looks at 4 x max images at
// most. It returns how many it ended.
func (e *Engine) EndGone(before, now time.Time, recheck time.Duration, max int, gone func(pid uint32, start uint64) bool) int {
	if !e.pol.Bounded {
		return 0
	}
	n := 0
	for el, steps := e.active.Back(), 4*max; el != nil && max > 0 && steps > 0; steps-- {
		im := el.Value.(*image)
		el = el.Prev()
		if !im.lastSeen.Before(before) {
			break
		}
		if now.Sub(im.asked) < recheck {
			continue
		}
		max--
		im.asked = now
		if !gone(im.p.Key.Pid, im.p.Key.Start) {
			continue
		}
		e.exitUnseen(im, now)
		n++
	}
	return n
}

// GoneUnseen marks, as a run ends, the processes not seen exiting that
// gone says have exited (trace.Process.ExitUnseen): after events were
// lost, their exit may have been among them, and they are not running.
// Their latest image is marked, the one StillRunning would count. It
// returns how many it marked.
func (e *Engine) GoneUnseen(gone func(pid uint32, start uint64) bool) int {
	n := 0
	for _, pr := range e.procs {
		if pr.exited || pr.launcher || pr.cur == nil || !gone(pr.key.Pid, pr.key.Start) {
			continue
		}
		pr.cur.p.ExitUnseen = true
		n++
	}
	return n
}

// exitUnseen ends im, whose process has exited without its exit seen.
func (e *Engine) exitUnseen(im *image, now time.Time) {
	pk := im.p.Key.Proc()
	pr := e.procs[pk]
	if pr != nil && pr.cur == im {
		e.endReplaced(im, now)
	}
	e.end(im, now)
	if !im.p.Exited && !im.replaced {
		im.p.ExitUnseen = true // the live table shows it ended
	}
	if pr != nil && pr.cur == im && !pr.exited {
		pr.exited = true
		if !pr.launcher {
			e.running--
		}
		if e.byPid[pk.Pid] == pr {
			delete(e.byPid, pk.Pid)
		}
	}
}
