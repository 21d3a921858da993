package detect

import (
	"syscall"
	"time"

	"github.com/oncetool/once/trace"
)

// seq builds synthetic event sequences for the detectors.
type seq struct{ evs []trace.Event }

func task(pid, tid uint32, start, execID uint64, comm string) trace.Task {
	return trace.Task{Pid: pid, Tid: tid, PPid: 1, Start: start, ExecID: execID, Comm: comm}
}

func (s *seq) open(t trace.Task, fname, path string, dev, ino uint64, ret int32) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventOpen, Task: t, Open: trace.OpenRecord{
		Syscall: trace.SysOpenat, Fname: fname, Path: path, Dev: dev, Ino: ino, Ret: ret, Dirfd: -100,
		EnterNs: 100, ExitNs: 1100,
	}})
	return s
}

// created is an open that made the file fname (O_CREAT, and it was not
// there).
func (s *seq) created(t trace.Task, fname string, dev, ino uint64, ret int32) *seq {
	s.open(t, fname, fname, dev, ino, ret)
	s.evs[len(s.evs)-1].Open.Created = true
	return s
}

// lookup is a stat-family call (sc) of fname: ret 0 with the file's
// identity, or -errno. seenBefore: the kernel counted the image's first
// lookup of the file without sending it.
func (s *seq) lookup(t trace.Task, sc trace.Syscall, fname string, dev, ino uint64, ret int32, seenBefore bool) *seq {
	ev := trace.Event{Kind: trace.EventOpen, Task: t, Open: trace.OpenRecord{
		Syscall: sc, Fname: fname, Dev: dev, Ino: ino, Ret: ret, Dirfd: -100, EnterNs: 100, ExitNs: 1100,
	}}
	if seenBefore {
		ev.Open.Status |= trace.StSeenBefore
	}
	s.evs = append(s.evs, ev)
	return s
}

// made is a directory made by mkdir (sc) of fname, relative to base when
// base is set.
func (s *seq) made(t trace.Task, sc trace.Syscall, fname, base string) *seq {
	ev := trace.Event{Kind: trace.EventMade, Task: t, Open: trace.OpenRecord{
		Syscall: sc, Fname: fname, Path: base, Dirfd: -100, EnterNs: 100, ExitNs: 1100,
	}}
	if base != "" {
		ev.Open.Status |= trace.StPathIsBase
	}
	s.evs = append(s.evs, ev)
	return s
}

// unsentLookups is n successful lookups the kernel counted, not sent.
func (s *seq) unsentLookups(t trace.Task, n uint32) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventUnsent, Task: t, Proc: trace.ProcRecord{LookupsUnsent: n}})
	return s
}

// failRel is a failed open of a relative name, tried in base.
func (s *seq) failRel(t trace.Task, fname, base string, ret int32) *seq {
	s.open(t, fname, base, 0, 0, ret)
	s.evs[len(s.evs)-1].Open.Status |= trace.StPathIsBase
	return s
}

func (s *seq) exec(t trace.Task, filename string, ret int32, argv ...string) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventExec, Task: t, Exec: trace.ExecRecord{
		Syscall: trace.SysExecve, Filename: filename, Ret: ret, Argv: argv, EnterNs: 0, ExitNs: 2000,
	}})
	return s
}

func (s *seq) image(t trace.Task, exe string) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventImage, Task: t, Proc: trace.ProcRecord{Exe: exe}})
	return s
}

func (s *seq) fork(child trace.Task, parent uint32, parentStart uint64) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventFork, Task: child,
		Proc: trace.ProcRecord{ParentPid: parent, ParentStart: parentStart}})
	return s
}

func (s *seq) exit(t trace.Task, code int32) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventExit, Task: t, Proc: trace.ProcRecord{ExitCode: code}})
	return s
}

func (s *seq) tally(t trace.Task, sc trace.Syscall, flags, dev, ino, opens, ns uint64) *seq {
	s.evs = append(s.evs, trace.Event{Kind: trace.EventTally, Task: t, Tally: trace.TallyRecord{
		Syscall: sc, Flags: flags, Dev: dev, Ino: ino, Opens: opens, Ns: ns}})
	return s
}

// with changes the last event.
func (s *seq) with(f func(ev *trace.Event)) *seq {
	f(&s.evs[len(s.evs)-1])
	return s
}

// ftype sets an open's file type.
func ftype(t uint16) func(ev *trace.Event) {
	return func(ev *trace.Event) { ev.Open.FileType = t }
}

var t0 = time.Unix(1000, 0)

func feed(e *Engine, s *seq, now time.Time) {
	for i := range s.evs {
		e.Handle(&s.evs[i], now)
	}
}

// run feeds s to an exact engine, with once's pid spawner.
func (s *seq) run(spawner int, ignore ...string) *trace.Result {
	return s.runPolicy(KeepAll(trace.FilesAll), spawner, ignore...)
}

func (s *seq) runPolicy(p Policy, spawner int, ignore ...string) *trace.Result {
	ig, err := NewIgnore(ignore)
	if err != nil {
		panic(err)
	}
	e := New(Options{Policy: p, Ignore: ig, Spawner: spawner})
	feed(e, s, t0)
	return e.Result()
}

// bounded feeds s to a watch engine and returns every finding, once every
// image has ended.
func (s *seq) bounded(ignore ...string) []trace.Finding {
	ig, err := NewIgnore(ignore)
	if err != nil {
		panic(err)
	}
	e := New(Options{Policy: Bounded(0, 0), Ignore: ig})
	feed(e, s, t0)
	e.Finish(t0)
	return e.Drain()
}

func count(fs []trace.Finding, kind trace.FindingKind) int {
	n := 0
	for _, f := range fs {
		if f.Kind == kind {
			n++
		}
	}
	return n
}

const (
	enoent  = -int32(syscall.ENOENT)
	enoexec = -int32(syscall.ENOEXEC)
)

// searches feeds s to a new engine under pol and gives its search findings
// (failed open and stat probes), each as show says, by kind and subject.
func searches(pol Policy, s *seq, show func(trace.Finding) string) map[string]string {
	e := New(Options{Policy: pol})
	feed(e, s, t0)
	e.Finish(t0)
	got := map[string]string{}
	for _, f := range e.Drain() {
		if f.Kind == trace.KindFailedOpenProbes || f.Kind == trace.KindFailedStatProbes {
			got[string(f.Kind)+" "+f.Subject()] = show(f)
		}
	}
	return got
}
