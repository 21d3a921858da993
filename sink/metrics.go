package sink

import (
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// Metrics feeds the Prometheus exporter: each event's calls by process,
// each finding by kind, every counter and the process table's size at
// each tick.
type Metrics struct {
	session.NopSink
	Exp *metrics.Exporter
	// Eng names the image of a process's unsent opens, reported at its
	// exit (the event's comm may be another image's by then).
	Eng *detect.Engine
	// BytesDropped, when set, is the bytes of the records the output
	// could not take.
	BytesDropped func() uint64
}

// missRepeats counts a thread's failed calls the kernel counted as
// repeats of its last one sent, as lookups or opens by their call.
func missRepeats(e *metrics.Exporter, who metrics.Who, r trace.Repeats) {
	switch {
	case r.N == 0:
	case r.Syscall.IsLookup():
		e.LookupsFailed(who, uint64(r.N))
	default:
		e.OpensFailed(who, uint64(r.N))
	}
}

// Event counts ev's calls, under the name of the image that made them
// (trace.Process.Comm), as its findings are: not the calling thread's
// (pthread_setname_np gives each of a browser's or a JVM's threads its
// own), nor one the process gave itself later.
func (m *Metrics) Event(ev *trace.Event, ann detect.Annotation) {
	comm := ev.Task.Comm
	if ann.Proc != nil {
		comm = ann.Proc.Comm
	}
	who := whoOf(comm, ann.Proc)
	e := m.Exp
	switch ev.Kind {
	case trace.EventOpen:
		missRepeats(e, who, ev.Open.MissRepeats)
		missRepeats(e, who, ev.Open.LookupMissRepeats)
		if ev.Open.Unsent > 0 {
			e.Opens(who, uint64(ev.Open.Unsent), 0)
		}
		if ev.Open.LookupsUnsent > 0 {
			e.Lookups(who, uint64(ev.Open.LookupsUnsent))
		}
		if ev.Open.Syscall.IsLookup() {
			e.Lookup(who, ev.Open.Ret < 0)
			break
		}
		e.Open(who, ev.Open.Ret < 0)
		if ann.Extra > 0 {
			e.DuplicateOpen(who)
		}
	case trace.EventExec:
		e.Exec(who, ev.Exec.Ret < 0)
	case trace.EventUnsent:
		if comm, ok := m.Eng.Comm(ev.Task.Image()); ok {
			who.Comm = comm
		}
		e.Opens(who, uint64(ev.Proc.Unsent), 0)
		if ev.Proc.LookupsUnsent > 0 {
			e.Lookups(who, uint64(ev.Proc.LookupsUnsent))
		}
		missRepeats(e, who, ev.Proc.MissRepeats)
		missRepeats(e, who, ev.Proc.LookupMissRepeats)
	case trace.EventTally:
		if ev.Tally.Syscall.IsLookup() {
			e.Lookups(who, ev.Tally.Opens)
			break
		}
		e.Opens(who, ev.Tally.Opens, ann.Extra)
	}
}

// Finding counts f by kind.
func (m *Metrics) Finding(f *trace.Finding, _ time.Time) error {
	who := whoOf(f.Comm, f.Proc)
	m.Exp.Finding(who, f.Kind, f.Avoidable(), f.WastedNs)
	if f.Info().ExecSearch {
		m.Exp.ExecProbes(who, f.Failed, f.WastedNs)
	}
	return nil
}

// Tick sets every counter and the process table's size.
func (m *Metrics) Tick(snap *detect.Snapshot, _ bool) error {
	m.Exp.SetCounters(&snap.Counters)
	m.Exp.SetProcesses(snap.Processes)
	if m.BytesDropped != nil {
		m.Exp.SetOutputBytesDropped(m.BytesDropped())
	}
	return nil
}

// whoOf is the metric labels of a process: its comm and its container's
// namespace, pod and name when it ran in one.
func whoOf(comm string, p *trace.Process) metrics.Who {
	w := metrics.Who{Comm: comm}
	if p != nil && p.Container != nil {
		c := p.Container
		w.Namespace, w.Pod, w.Container = c.Namespace, c.Pod, c.Name
		if w.Container == "" {
			// An unnamed container (runc run without a runtime that
			// names it) is known by its short ID, as docker ps shows.
			w.Container = c.ShortID()
		}
	}
	return w
}
