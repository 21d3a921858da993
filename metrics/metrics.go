package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oncetool/once/trace"
)

// DefaultMaxComms is the cap on distinct comm label values when New is
// given 0.
const DefaultMaxComms = 200

// lossKinds are the kinds of once_events_lost_total, exported at 0 from the
// start: the metric names of trace's lost counters.
var lossKinds = func() []string {
	var out []string
	for _, s := range trace.Group(trace.CounterLost) {
		out = append(out, s.Metric)
	}
	return out
}()

// Exporter holds once's Prometheus metrics. Its methods are safe for
// concurrent use.
type Exporter struct {
	reg     *prometheus.Registry
	handler http.Handler

	opens, execs       *prometheus.CounterVec
	dups, probesFailed *prometheus.CounterVec
	probeWasted        *prometheus.CounterVec
	lookups            *prometheus.CounterVec
	// findings and wasted: every finding by kind (trace.Kinds), its
	// avoidable calls and their time.
	findings, avoidable, wasted *prometheus.CounterVec
	lost                        *prometheus.CounterVec
	ringDropped                 *prometheus.CounterVec
	commsFolded                 prometheus.Counter
	workloadsFolded, setsFolded prometheus.Counter
	outBytes                    prometheus.Counter
	processes                   prometheus.Gauge

	maxComms int
	commMu   sync.Mutex
	comms    map[string]*commCounters // by label set: the admitted ones, and those folded into other
	admitted map[string]bool          // comm labels admitted under the cap
	pods     map[string]bool          // (namespace, pod, container) label sets admitted
	// foldedComms, foldedWorkloads, foldedSets: the distinct comm
	// labels, workloads and (comm, workload) label sets counted under
	// "other", each counted once however often it comes back.
	foldedComms, foldedWorkloads, foldedSets *distinct

	totalsMu    sync.Mutex
	lossTotals  map[string]*cumulative // by the kind passed to SetLoss
	shown       map[string]*cumulative // by the JSON key of a trace.Shown counter
	ringTotals  []*cumulative          // once_ring_dropped_total by ring
	outBytesCum cumulative
}

// commCounters are the series of one comm label value.
type commCounters struct {
	openOK, openFailed prometheus.Counter
	execOK, execFailed prometheus.Counter
	dup, probesFailed  prometheus.Counter
	probeWasted        prometheus.Counter
	lookupOK           prometheus.Counter
	lookupFailed       prometheus.Counter
	labels             [4]string // comm, namespace, pod, container as admitted
	// Per kind, made on first use (at most one per registered kind).
	kinds map[trace.FindingKind]*kindCounters
}

type kindCounters struct {
	findings, avoidable, wasted prometheus.Counter
}

// cumulative turns successive cumulative totals into increments of a
// counter that never goes backwards.
type cumulative struct {
	c    prometheus.Counter
	last uint64
}

func (c *cumulative) set(total uint64) {
	delta := total
	if total >= c.last {
		delta = total - c.last
	} // else: the source was reset and counted total since; add it whole.
	c.last = total
	if delta > 0 {
		c.c.Add(float64(delta))
	}
}

// New returns an Exporter with its own registry (not the global one).
// maxComms caps the distinct comm label values; events from further comms
// are counted under comm="other". 0 (or a negative value) means
// DefaultMaxComms.
func New(maxComms int) *Exporter {
	if maxComms <= 0 {
		maxComms = DefaultMaxComms
	}
	commResult := []string{"comm", "namespace", "pod", "container", "result"}
	comm := []string{"comm", "namespace", "pod", "container"}
	e := &Exporter{
		reg:      prometheus.NewRegistry(),
		maxComms: maxComms,
		comms:    make(map[string]*commCounters),
		admitted: make(map[string]bool),
		pods:     make(map[string]bool),
		opens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_opens_total",
			Help: "Open-family syscalls (open, openat, openat2, creat) and opens submitted through io_uring, by comm and result.",
		}, commResult),
		execs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_execs_total",
			Help: "execve/execveat syscalls, by comm and result.",
		}, commResult),
		dups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_duplicate_opens_total",
			Help: "Extra opens of a file the same process image had already opened.",
		}, comm),
		probesFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_exec_probes_failed_total",
			Help: "Failed exec attempts during PATH searches.",
		}, comm),
		probeWasted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_exec_probe_wasted_seconds_total",
			Help: "Time spent in failed exec attempts during PATH searches, in seconds.",
		}, comm),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_lookups_total",
			Help: "Lookups (stat, lstat, newfstatat, statx, access, faccessat, faccessat2 naming a file, and statx requests submitted through io_uring), by comm and result.",
		}, commResult),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_findings_total",
			Help: "Findings, by comm and kind.",
		}, append(comm, "kind")),
		avoidable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_avoidable_calls_total",
			Help: "The findings' avoidable calls (a duplicate's opens after the first, a chain's failed attempts...), by comm and kind.",
		}, append(comm, "kind")),
		wasted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_wasted_seconds_total",
			Help: "What the findings' avoidable calls cost, in seconds, by comm and kind.",
		}, append(comm, "kind")),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_events_lost_total",
			Help: "Events lost, by kind.",
		}, []string{"kind"}),
		ringDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "once_ring_dropped_total",
			Help: "With more than one ring buffer: records the kernel could not reserve, by ring (CPU c writes ring c mod the rings).",
		}, []string{"ring"}),
		commsFolded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "once_comm_labels_folded_total",
			Help: "Distinct comm values counted under comm=\"other\" because of the label cap.",
		}),
		workloadsFolded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "once_workload_labels_folded_total",
			Help: "Distinct (namespace, pod, container) values counted under namespace, pod and container \"other\" because of the label cap.",
		}),
		setsFolded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "once_label_sets_folded_total",
			Help: "Distinct (comm, namespace, pod, container) label sets, each label admitted, counted under \"other\" for all four because of the cap on their pairings.",
		}),
		outBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "once_output_bytes_dropped_total",
			Help: "Bytes of the records once_output_records_dropped_total counts.",
		}),
		processes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "once_processes",
			Help: "Processes in the process table.",
		}),
		lossTotals: make(map[string]*cumulative),
		shown:      make(map[string]*cumulative),
	}
	e.outBytesCum.c = e.outBytes
	e.foldedComms = newDistinct(e.commsFolded)
	e.foldedWorkloads = newDistinct(e.workloadsFolded)
	e.foldedSets = newDistinct(e.setsFolded)
	for _, k := range lossKinds {
		e.lossTotals[k] = &cumulative{c: e.lost.WithLabelValues(k)}
	}
	for _, s := range shownCounters() {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: s.name, Help: s.help})
		e.shown[s.JSON] = &cumulative{c: c}
		e.reg.MustRegister(c)
	}
	e.reg.MustRegister(
		e.opens, e.execs, e.dups, e.probesFailed, e.probeWasted, e.lookups, e.findings, e.avoidable, e.wasted,
		e.lost, e.ringDropped, e.processes, e.commsFolded, e.workloadsFolded, e.setsFolded, e.outBytes,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	e.handler = promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		// Serve what could be gathered rather than nothing if, say,
		// /proc is unreadable for the process collector.
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
	return e
}

// Handler returns the promhttp handler for e's registry.
func (e *Exporter) Handler() http.Handler { return e.handler }

// Who is the labels of a process: its comm and, in a container, the
// pod's namespace and name and the container's name ("" for none).
type Who struct {
	Comm, Namespace, Pod, Container string
}

// series returns the counters for w, admitting its labels if the caps
// allow: past maxComms distinct comms a new one is counted under
// comm="other", past maxComms distinct workloads (namespace, pod,
// container) a new one under "other" for all three.
func (e *Exporter) series(w Who) *commCounters {
	l := commLabel(w.Comm)
	ns, pod, ctr := labelValue(w.Namespace), labelValue(w.Pod), labelValue(w.Container)
	e.commMu.Lock()
	defer e.commMu.Unlock()
	if !e.admitted[l] {
		n := len(e.admitted)
		if n >= e.maxComms {
			e.foldedComms.add(l)
			l = otherComm
		} else {
			e.admitted[l] = true
		}
	}
	if wk := ns + "\x00" + pod + "\x00" + ctr; wk != "\x00\x00" && !e.pods[wk] {
		if len(e.pods) >= e.maxComms {
			e.foldedWorkloads.add(wk)
			ns, pod, ctr = otherComm, otherComm, otherComm
		} else {
			e.pods[wk] = true
		}
	}
	key := l + "\x00" + ns + "\x00" + pod + "\x00" + ctr
	if c := e.comms[key]; c != nil {
		return c
	}
	if len(e.comms) >= 4*e.maxComms {
		// Each comm and each workload admitted, but not every pairing
		// of them: the series stay bounded.
		e.foldedSets.add(key)
		l, ns, pod, ctr = otherComm, otherComm, otherComm, otherComm
		key = l + "\x00" + ns + "\x00" + pod + "\x00" + ctr
		if c := e.comms[key]; c != nil {
			return c
		}
	}
	c := &commCounters{
		openOK:       e.opens.WithLabelValues(l, ns, pod, ctr, "ok"),
		openFailed:   e.opens.WithLabelValues(l, ns, pod, ctr, "failed"),
		execOK:       e.execs.WithLabelValues(l, ns, pod, ctr, "ok"),
		execFailed:   e.execs.WithLabelValues(l, ns, pod, ctr, "failed"),
		dup:          e.dups.WithLabelValues(l, ns, pod, ctr),
		probesFailed: e.probesFailed.WithLabelValues(l, ns, pod, ctr),
		probeWasted:  e.probeWasted.WithLabelValues(l, ns, pod, ctr),
		lookupOK:     e.lookups.WithLabelValues(l, ns, pod, ctr, "ok"),
		lookupFailed: e.lookups.WithLabelValues(l, ns, pod, ctr, "failed"),
		labels:       [4]string{l, ns, pod, ctr},
	}
	e.comms[key] = c
	return c
}

// Open counts one open-family syscall by comm.
func (e *Exporter) Open(w Who, failed bool) {
	c := e.series(w)
	if failed {
		c.openFailed.Inc()
	} else {
		c.openOK.Inc()
	}
}

// Opens counts n successful open-family syscalls by comm, of which dups
// were extra opens of a file the same image already opened.
func (e *Exporter) Opens(w Who, n, dups uint64) {
	c := e.series(w)
	c.openOK.Add(float64(n))
	if dups > 0 {
		c.dup.Add(float64(dups))
	}
}

// Lookup counts one lookup (stat, access) by comm.
func (e *Exporter) Lookup(w Who, failed bool) {
	c := e.series(w)
	if failed {
		c.lookupFailed.Inc()
	} else {
		c.lookupOK.Inc()
	}
}

// Lookups counts n successful lookups by comm (counted in the kernel).
func (e *Exporter) Lookups(w Who, n uint64) {
	e.series(w).lookupOK.Add(float64(n))
}

// LookupsFailed counts n failed lookups by comm (repeats counted in the
// kernel).
func (e *Exporter) LookupsFailed(w Who, n uint64) {
	e.series(w).lookupFailed.Add(float64(n))
}

// OpensFailed counts n failed open-family syscalls by comm (repeats
// counted in the kernel).
func (e *Exporter) OpensFailed(w Who, n uint64) {
	e.series(w).openFailed.Add(float64(n))
}

// Finding counts one finding of kind by comm, its avoidable calls and
// their time in nanoseconds. A kind this build does not register is not
// exported: the label's values stay bounded.
func (e *Exporter) Finding(w Who, kind trace.FindingKind, avoidable int, wastedNs uint64) {
	if !kind.Known() {
		return
	}
	c := e.series(w)
	e.commMu.Lock()
	k := c.kinds[kind]
	if k == nil {
		if c.kinds == nil {
			c.kinds = map[trace.FindingKind]*kindCounters{}
		}
		lv := append(c.labels[:], string(kind))
		k = &kindCounters{e.findings.WithLabelValues(lv...), e.avoidable.WithLabelValues(lv...), e.wasted.WithLabelValues(lv...)}
		c.kinds[kind] = k
	}
	e.commMu.Unlock()
	k.findings.Inc()
	if avoidable > 0 {
		k.avoidable.Add(float64(avoidable))
	}
	if wastedNs > 0 {
		k.wasted.Add(float64(wastedNs) / 1e9)
	}
}

// Exec counts one execve/execveat by comm.
func (e *Exporter) Exec(w Who, failed bool) {
	c := e.series(w)
	if failed {
		c.execFailed.Inc()
	} else {
		c.execOK.Inc()
	}
}

// DuplicateOpen counts one extra open of a file the same process image
// already opened.
func (e *Exporter) DuplicateOpen(w Who) {
	e.series(w).dup.Inc()
}

// ExecProbes records a finished PATH search by comm: failed attempts and
// the time they took, in nanoseconds. Negative counts are ignored.
func (e *Exporter) ExecProbes(w Who, failed int, wastedNs uint64) {
	c := e.series(w)
	if failed > 0 {
		c.probesFailed.Add(float64(failed))
	}
	if wastedNs > 0 {
		c.probeWasted.Add(float64(wastedNs) / 1e9)
	}
}

// SetLoss records the cumulative loss counter of kind read from the kernel;
// kind is the Metric of one of trace's lost counters. once_events_lost_total{kind} never goes
// backwards: a smaller total than the previous one is taken as a reset of
// the source. A kind that is not a lower-case identifier ([a-z][a-z0-9_]*,
// at most 32 bytes) is exported as kind="invalid".
func (e *Exporter) SetLoss(kind string, total uint64) {
	e.totalsMu.Lock()
	defer e.totalsMu.Unlock()
	c := e.lossTotals[kind]
	if c == nil {
		label := kind
		if !validKind(kind) {
			label = "invalid"
		}
		c = &cumulative{c: e.lost.WithLabelValues(label)}
		e.lossTotals[kind] = c
	}
	c.set(total)
}

func validKind(k string) bool {
	if k == "" || len(k) > 32 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// SetProcessed records the cumulative count of events read from the ring
// buffer. Like SetLoss, it never makes the counter go backwards.
func (e *Exporter) SetProcessed(total uint64) { e.setShown("events_received", total) }

// SetCounters records every counter of trace.Shown: the lost ones as
// once_events_lost_total by kind, the others each as its own counter
// (shownCounters), except reader_stalls, which SetProgress exports from
// the reader's heartbeat.
func (e *Exporter) SetCounters(c *trace.Counters) {
	for _, s := range trace.Group(trace.CounterLost) {
		e.SetLoss(s.Metric, s.Value(c))
	}
	e.totalsMu.Lock()
	defer e.totalsMu.Unlock()
	for _, s := range trace.Shown {
		if m := e.shown[s.JSON]; m != nil {
			m.set(s.Value(c))
		}
	}
	// As many series as rings: no more than the CPUs.
	for i, v := range c.DroppedByRing {
		if i == len(e.ringTotals) {
			e.ringTotals = append(e.ringTotals, &cumulative{c: e.ringDropped.WithLabelValues(strconv.Itoa(i))})
		}
		e.ringTotals[i].set(v)
	}
}

// setShown records the cumulative total of the trace.Shown counter key.
// Like SetLoss, it never makes the counter go backwards.
func (e *Exporter) setShown(key string, total uint64) {
	e.totalsMu.Lock()
	defer e.totalsMu.Unlock()
	e.shown[key].set(total)
}

// SetOutputBytesDropped records the cumulative bytes of the records not
// written to the output. Like SetLoss, it never makes the counter go
// backwards.
func (e *Exporter) SetOutputBytesDropped(total uint64) {
	e.totalsMu.Lock()
	defer e.totalsMu.Unlock()
	e.outBytesCum.set(total)
}

// Progress is the reader's heartbeat (session.Liveness), read at each
// scrape: unlike the counters set at each interval, it moves while the
// reader is stuck.
type Progress interface {
	// LastProgress is when the reader last completed a poll.
	LastProgress() time.Time
	// EventsRead is the events it had read by then.
	EventsRead() uint64
	// Stalls is how many times it was seen stalled.
	Stalls() uint64
}

// SetProgress exports p: the time of the reader's last poll and how long
// ago that was, the events it read, its stalls. Call it once.
func (e *Exporter) SetProgress(p Progress) {
	e.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "once_reader_last_progress_timestamp_seconds",
			Help: "When the reader (the ring buffer's drain loop) last completed a poll, events or none, in seconds since the epoch.",
		}, func() float64 { return float64(p.LastProgress().UnixNano()) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "once_reader_progress_age_seconds",
			Help: "Seconds since the reader last completed a poll: past --stall-timeout it is stalled, and /healthz fails.",
		}, func() float64 { return time.Since(p.LastProgress()).Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "once_reader_events_read_total",
			Help: "Events the reader had read at its last poll (once_events_processed_total is brought up to date at each interval only).",
		}, func() float64 { return float64(p.EventsRead()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "once_reader_stalls_total",
			Help: "Times the reader was seen not to complete a poll within --stall-timeout.",
		}, func() float64 { return float64(p.Stalls()) }),
	)
}

// SetProcesses sets the process table size.
func (e *Exporter) SetProcesses(n int) {
	e.processes.Set(float64(n))
}

// SetEvicted records the cumulative count of processes evicted from the
// table under its cap. Like SetLoss, it never makes the counter go
// backwards.
func (e *Exporter) SetEvicted(total uint64) { e.setShown("evicted", total) }

// SetOpensUntimed records the cumulative count of opens seen without their
// latency. Like SetLoss, it never makes the counter go backwards.
func (e *Exporter) SetOpensUntimed(total uint64) { e.setShown("opens_untimed", total) }

// SetCompatImages records the cumulative count of 32-bit program images
// started. Like SetLoss, it never makes the counter go backwards.
func (e *Exporter) SetCompatImages(total uint64) { e.setShown("compat_images", total) }
