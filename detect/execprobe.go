package detect

import (
	"path"
	"syscall"
	"time"

	"github.com/oncetool/once/trace"
)

// execChain is a run of failed execs in one image that is still open: a
// PATH search (execvp tries each directory in turn), possibly handed to
// /bin/sh when the file it found was not a binary (ENOEXEC).
type execChain struct {
	attempts []trace.Attempt // kept, up to Policy.MaxAttempts
	omitted  int
	failed   int
	wasted   uint64
	target   string // the basename the chain looked for first
	cur      string // the basename it looks for now (sh, after a fallback)
	// enoexec is the file an attempt of the chain failed on with
	// ENOEXEC: an exec of /bin/sh with it as argv[1] may follow.
	enoexec  string
	fallback bool // it did: the chain is a shell fallback
	sites    []trace.CallSite
}

func (c *execChain) open() bool { return c.failed > 0 }

func (e *Engine) exec(t *trace.Task, r *trace.ExecRecord, now time.Time, ann *Annotation) {
	e.totals.Execs++
	a := trace.ExecAttempt{
		Syscall: r.Syscall, Tid: r.CallerTid(t), Filename: r.Filename, Path: r.Resolved(), Argv: r.Argv,
		ArgvTruncated:      r.Status.Has(trace.StArgvTruncated),
		FilenameTruncated:  r.Status.Has(trace.StFnameTruncated),
		FilenameUnreadable: r.Status.Has(trace.StFnameUnreadable),
		ArgvUnreadable:     r.Status.Has(trace.StArgvUnreadable),
		Dirfd:              r.Dirfd, AtFlags: r.AtFlags, EnterNs: r.EnterNs, Ns: r.ExitNs - r.EnterNs,
		Stack: e.stack,
	}
	key := t.Image()
	var next *image
	if r.Ret == 0 {
		// The attempt belongs to the image that made it: the one the
		// exec replaced. self_exec_id goes up by one per exec.
		key.ExecID--
		next = e.image(t.Image(), t, now)
		next.p.Argv, next.p.ArgvTruncated = r.Argv, a.ArgvTruncated
		execNamed(next, t.Comm)
		if !e.keepDetail(next, execSize(&trace.ExecAttempt{Argv: r.Argv})-execBytes) {
			next.p.Argv, next.p.ArgvTruncated = nil, true
		}
	} else {
		a.Errno = -r.Ret
		e.totals.FailedExecs++
	}
	e.replacing = next != nil
	im := e.image(key, t, now)
	e.replacing = false
	if next != nil {
		e.last = next
	}
	im.p.Totals.Execs++
	if a.Errno != 0 {
		im.p.Totals.FailedExecs++
	}
	if ls := im.live; ls != nil {
		e.thread(im, a.Tid)
		if e.pol.Lists {
			if (len(im.p.Execs) < e.pol.MaxExecs || e.pol.MaxExecs <= 0) && e.keepDetail(im, execSize(&a)) {
				im.p.Execs = append(im.p.Execs, a)
			} else {
				im.p.ExecsOmitted++
			}
		}
		// once's launcher copy execs the command: that exec is the
		// command's first (strace -f shows it too), not a probe of the
		// command's.
		if !im.launcher {
			if a.Errno == 0 {
				// An exec that works ends a lookup chain too: a
				// shell stats a command's candidates, then runs it.
				e.lookupProbeWon(im, r.Filename, r.Resolved(), a.Ns, r.Syscall, false, ann)
			}
			e.chainStep(im, &a, ann)
		}
	}
	if next != nil {
		if pr := e.procs[t.Proc()]; pr != nil && pr.launcher && pr.cur == next {
			pr.launcher = false
			if !pr.exited {
				e.running++
			}
		}
		e.endReplaced(next, now)
		if im != next && im.live != nil {
			// The image that made the exec, first seen at it (once
			// watch gets no fork records): made after next, it is
			// not next's prev, and no exit will name it.
			im.replaced, im.lastSeen = true, now
			e.end(im, now)
		}
	}
}

// shellRetry reports whether a is execvp's retry of file through the
// shell: argv[1] is the file that failed with ENOEXEC.
func shellRetry(a *trace.ExecAttempt, file string) bool {
	return file != "" && len(a.Argv) >= 2 && trace.SameArg(a.Argv[1], file)
}

// atEmptyPath is AT_EMPTY_PATH: an execveat of the dirfd's own file
// (fexecve), which names nothing to look for.
const atEmptyPath = 0x1000

// searchMiss says whether a failed exec may begin a search: a miss
// (trace.IsMiss: the name is not there, execvp tries the next
// directory), or ENOEXEC (the file is no binary: execvp runs it through
// /bin/sh). An fexecve names no file to look for.
func searchMiss(a *trace.ExecAttempt) bool {
	return (trace.IsMiss(a.Errno) || a.Errno == int32(syscall.ENOEXEC)) && !fexecve(a)
}

func fexecve(a *trace.ExecAttempt) bool { return a.AtFlags&atEmptyPath != 0 && a.Filename == "" }

// chainStep runs the exec probe detector on one more attempt of im.
func (e *Engine) chainStep(im *image, a *trace.ExecAttempt, ann *Annotation) {
	c := &im.live.chain
	// The resolved name's: an AT_EMPTY_PATH exec passes none.
	base := path.Base(a.Path)
	retry := shellRetry(a, c.enoexec)
	if c.open() && !retry && (base != c.cur || fexecve(a)) {
		// Another name: the search for the last one found nothing.
		e.closeChain(im, nil, nil)
	}
	if a.Errno == 0 {
		if c.open() {
			if retry {
				c.fallback = true
			}
			e.closeChain(im, a, ann)
		}
		return
	}
	if !c.open() {
		if !searchMiss(a) {
			// A failure that says nothing of where its name is
			// (E2BIG: the arguments; EFAULT: no name read;
			// ETXTBSY: the file is there), or an fexecve's, is no
			// search: alone it was told to put its directory
			// before itself. One that ends a search is its last
			// attempt.
			return
		}
		*c = execChain{target: base, cur: base}
	}
	if retry {
		c.fallback, c.cur = true, base
	}
	c.enoexec = ""
	if a.Errno == int32(syscall.ENOEXEC) {
		c.enoexec = a.Filename
	}
	c.failed++
	c.wasted += a.Ns
	e.addSite(im, &c.sites, a.Stack, 1)
	at := trace.Attempt{Path: a.Path, Errno: a.Errno, Ns: a.Ns, Fallback: retry || c.fallback && c.target != base, Stack: a.Stack}
	if (e.pol.MaxAttempts > 0 && len(c.attempts) >= e.pol.MaxAttempts) || !e.keepDetail(im, attemptBytes+int64(len(at.Path))) {
		c.omitted++
		return
	}
	c.attempts = append(c.attempts, at)
}

// closeChain ends im's open chain, found by winner (nil: none succeeded).
func (e *Engine) closeChain(im *image, winner *trace.ExecAttempt, ann *Annotation) {
	c := &im.live.chain
	if !c.open() {
		*c = execChain{}
		return
	}
	f := trace.Finding{Kind: trace.KindFailedExecProbes, WastedNs: c.wasted, CallSites: c.sites,
		ChainDetail: trace.ChainDetail{Target: c.target, Attempts: c.attempts, AttemptsOmitted: c.omitted, Failed: c.failed}}
	if c.fallback {
		f.Kind = trace.KindExecShellFallback
	}
	if winner != nil {
		found := winner.Path
		f.Found = &found
		// The winner is always kept, whatever the cap: it is what the
		// chain found.
		f.Attempts = append(f.Attempts, trace.Attempt{Path: winner.Path, Ns: winner.Ns, Fallback: c.fallback, Stack: winner.Stack})
		f.CallSites = e.attemptSites(im, f.CallSites, winner.Stack, true)
	}
	*c = execChain{}
	if !e.emit(im, f) {
		return
	}
	w := &im.waste
	w.ExecProbes += f.Failed
	w.ExecNs += f.WastedNs
	w.Launches++
	e.totals.ExecProbes += uint64(f.Failed)
	e.totals.ExecProbeNs += f.WastedNs
	im.noteWorst(f.WastedNs, f.Brief)
	if ann != nil {
		ann.ProbeFailed = f.Failed
		if f.Found != nil {
			ann.ProbeFound = *f.Found
		}
	}
}

func (e *Engine) thread(im *image, tid uint32) {
	if !e.pol.Lists {
		return
	}
	ls := im.live
	if ls.tids == nil {
		ls.tids = map[uint32]struct{}{}
	}
	if _, ok := ls.tids[tid]; ok {
		return
	}
	if len(ls.tids) < maxThreads {
		ls.tids[tid] = struct{}{}
	} else {
		ls.tidsCapped = true
	}
}
