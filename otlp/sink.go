package otlp

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// scope is the instrumentation scope of once's records and metrics.
const scope = "github.com/oncetool/once"

// Sink sends findings and counters to an OTLP endpoint (a session.Sink
// and session.Counting: what it could not deliver is otlp_dropped).
type Sink struct {
	session.NopSink
	cfg    Config
	lp     *sdklog.LoggerProvider
	logger log.Logger
	q      *queue
	mp     *sdkmetric.MeterProvider
	mexp   *countingExporter

	mu     sync.Mutex
	sides  []*sideTotals // one, named "", but for compare's two
	closed bool
	// endBy, set by FlushFinal, is when the end of a watch's sending
	// (FlushFinal's records, Close's last metric export) is over: one
	// flush timeout for both.
	endBy time.Time
	// abort, closed by Abort, ends the sending at once.
	abort     chan struct{}
	abortOnce sync.Once
}

// sideTotals are the counters and the totals per kind the metrics report
// of one run: compare's before and after apart (once.side), never summed.
type sideTotals struct {
	side     string
	counters trace.Counters
	kinds    map[trace.FindingKind]*kindTotal
}

type kindTotal struct {
	findings, avoidable int64
	wastedNs            uint64
}

// sideOf is the totals of side, made on first use (s.mu held).
func (s *Sink) sideOf(side string) *sideTotals {
	for _, t := range s.sides {
		if t.side == side {
			return t
		}
	}
	t := &sideTotals{side: side, kinds: map[trace.FindingKind]*kindTotal{}}
	s.sides = append(s.sides, t)
	return t
}

var (
	_ session.Sink     = (*Sink)(nil)
	_ session.Counting = (*Sink)(nil)
)

// New starts a sink that sends to cfg's endpoint. It fails only on a bad
// configuration: a collector that can't be reached costs records, counted,
// not the trace.
func New(ctx context.Context, cfg Config) (*Sink, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, err
	}
	lexp, mexp, err := cfg.exporters(ctx)
	if err != nil {
		return nil, err
	}
	// The SDK tells its own errors to a global handler, which prints
	// each one: the sink counts and warns of its failed exports itself,
	// once a minute at most, where a collector down would print one
	// line per attempt.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	s := &Sink{cfg: cfg, abort: make(chan struct{})}
	s.q = newQueue(lexp, cfg.queueBytes(), orDefault(cfg.BatchDelay, time.Second), orDefault(cfg.RetryFirst, time.Second),
		orDefault(cfg.RetryFor, DefaultRetryFor), cfg.Warn)
	s.lp = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(s.q))
	s.logger = s.lp.Logger(scope, log.WithInstrumentationVersion(cfg.Version))
	s.mexp = &countingExporter{Exporter: mexp, warn: cfg.Warn}
	var ro []sdkmetric.PeriodicReaderOption
	if cfg.MetricInterval > 0 {
		ro = append(ro, sdkmetric.WithInterval(cfg.MetricInterval))
	}
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(s.mexp, ro...)))
	if err := s.instruments(); err != nil {
		s.shutdown(time.Second)
		return nil, err
	}
	return s, nil
}

// newResource is the node's resource: service.name once (what
// OTEL_SERVICE_NAME says wins), the host and its OS, and
// OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName("once")),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithHostID(), resource.WithOS(),
		resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("OTLP resource: %w", err)
	}
	// A detector that failed (no /etc/machine-id) leaves its attribute
	// out; the others are kept.
	return validResource(res), nil
}

// validResource is res with each string that is not valid UTF-8 (a host
// name, OTEL_SERVICE_NAME, a %-escape of OTEL_RESOURCE_ATTRIBUTES) escaped
// as report.Escape does: OTLP's protobuf strings must be UTF-8, and the
// resource is in every request, so one such byte would fail every export.
func validResource(res *resource.Resource) *resource.Resource {
	attrs := res.Attributes()
	changed := false
	for i, kv := range attrs {
		if kv.Value.Type() == attribute.STRING && !utf8.ValidString(kv.Value.AsString()) {
			attrs[i] = kv.Key.String(report.Escape(kv.Value.AsString()))
			changed = true
		}
	}
	if !changed {
		return res
	}
	return resource.NewWithAttributes(res.SchemaURL(), attrs...)
}

// instruments registers every metric: one observable counter per
// trace.Shown counter and the totals per kind, read from the sink's last
// counters at each collection.
func (s *Sink) instruments() error {
	m := s.mp.Meter(scope, metric.WithInstrumentationVersion(s.cfg.Version))
	var obs []metric.Observable
	shown := make([]metric.Int64ObservableCounter, len(trace.Shown))
	for i, sp := range trace.Shown {
		c, err := m.Int64ObservableCounter("once."+sp.JSON, metric.WithDescription(counterHelp(sp)), metric.WithUnit("{"+unitOf(sp)+"}"))
		if err != nil {
			return fmt.Errorf("OTLP metric once.%s: %w", sp.JSON, err)
		}
		shown[i] = c
		obs = append(obs, c)
	}
	findings, err := m.Int64ObservableCounter("once.findings", metric.WithDescription("Findings made, by kind (watch: each as it is made)."), metric.WithUnit("{finding}"))
	if err != nil {
		return err
	}
	avoidable, err := m.Int64ObservableCounter("once.avoidable_calls", metric.WithDescription("The findings' avoidable calls, by kind."), metric.WithUnit("{call}"))
	if err != nil {
		return err
	}
	wasted, err := m.Float64ObservableCounter("once.wasted", metric.WithDescription("Time the findings' avoidable calls cost, by kind."), metric.WithUnit("s"))
	if err != nil {
		return err
	}
	obs = append(obs, findings, avoidable, wasted)
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.sides) == 0 {
			s.sideOf("")
		}
		for _, st := range s.sides {
			var side []attribute.KeyValue
			if st.side != "" {
				side = []attribute.KeyValue{keySide.String(st.side)}
			}
			for i, sp := range trace.Shown {
				o.ObserveInt64(shown[i], int64(min(sp.Value(&st.counters), 1<<63-1)), metric.WithAttributes(side...))
			}
			// The kinds of the registry only, zero ones included:
			// bounded series, and a rate that starts at zero.
			for _, ki := range trace.Kinds {
				t := st.kinds[ki.Kind]
				if t == nil {
					t = &kindTotal{}
				}
				set := metric.WithAttributes(append([]attribute.KeyValue{keyKind.String(string(ki.Kind))}, side...)...)
				o.ObserveInt64(findings, t.findings, set)
				o.ObserveInt64(avoidable, t.avoidable, set)
				o.ObserveFloat64(wasted, float64(t.wastedNs)/1e9, set)
			}
		}
		return nil
	}, obs...)
	return err
}

func counterHelp(sp trace.CounterSpec) string {
	return sp.Label + " (" + sp.JSON + " in the JSON report)."
}

// unitOf is a counter's unit annotation: what it counts.
func unitOf(sp trace.CounterSpec) string {
	switch sp.Group {
	case trace.CounterLost, trace.CounterVolume:
		return "event"
	case trace.CounterStacks:
		return "stack"
	}
	return "item"
}

// Finding sends f's record (queued: never waits) and counts it by kind.
func (s *Sink) Finding(f *trace.Finding, now time.Time) error {
	s.send(f, now, s.cfg.Stacks, "")
	return nil
}

func (s *Sink) send(f *trace.Finding, now time.Time, src trace.StackSource, side string) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.count(s.sideOf(side), f)
	}
	s.mu.Unlock()
	if closed {
		return
	}
	r := record(f, now, src, s.cfg.WallOffset)
	if side != "" {
		r.AddAttributes(keySide.String(side))
	}
	s.logger.Emit(context.Background(), r)
}

// Result sends every finding of res, the stacks its call sites name from
// it, and keeps its counters for the metrics. side, when set, marks each
// record (compare's "before" and "after").
func (s *Sink) Result(res *trace.Result, side string) {
	now := time.Now()
	for i := range res.Findings {
		s.send(&res.Findings[i], now, res, side)
	}
	s.mu.Lock()
	s.sideOf(side).counters = res.Counters
	s.mu.Unlock()
}

// count adds f to its kind's totals (s.mu held). A kind this build does
// not register is not exported, as the Prometheus exporter does.
func (s *Sink) count(st *sideTotals, f *trace.Finding) {
	if !f.Kind.Known() {
		return
	}
	t := st.kinds[f.Kind]
	if t == nil {
		t = &kindTotal{}
		st.kinds[f.Kind] = t
	}
	t.findings++
	t.avoidable += int64(f.Avoidable())
	t.wastedNs += f.WastedNs
}

// Tick keeps the counters of the snapshot, which the next metric export
// reads.
func (s *Sink) Tick(snap *detect.Snapshot, _ bool) error {
	s.mu.Lock()
	s.sideOf("").counters = snap.Counters
	s.mu.Unlock()
	return nil
}

// Counters adds what the sink could not deliver.
func (s *Sink) Counters(c *trace.Counters) { c.OTLPDropped += s.Dropped() }

// Dropped is the records and metric exports not delivered so far.
func (s *Sink) Dropped() uint64 { return s.q.dropped.Load() + s.mexp.failed.Load() }

// Sent is the records delivered so far.
func (s *Sink) Sent() uint64 { return s.q.sent.Load() }

// Close sends what is left within FlushTimeout: with res (run, check,
// compare), every finding of the result and its counters first; then the
// queued records and a last metric export. What it could not deliver is
// added to res's otlp_dropped, whose report is written after.
func (s *Sink) Close(res *trace.Result) error {
	before := s.Dropped()
	if res != nil {
		s.Result(res, "")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	endBy := s.endBy
	s.mu.Unlock()
	d := orDefault(s.cfg.FlushTimeout, DefaultFlushTimeout)
	if !endBy.IsZero() {
		// After FlushFinal: what its flush timeout has left, at least
		// the share it kept for the metrics (the final tick between
		// them took some of it).
		d = max(time.Until(endBy), d/finalMetricsShare)
	}
	s.shutdown(d)
	if res != nil {
		res.Counters.OTLPDropped += s.Dropped() - before
	}
	if n := s.Dropped(); n > 0 && s.cfg.Warn != nil {
		s.cfg.Warn("once: OTLP: " + strconv.FormatUint(n, 10) + " findings or metric exports not delivered (otlp_dropped)")
	}
	return nil
}

// finalMetricsShare: of the flush timeout at a watch's end, FlushFinal's
// records get all but 1/finalMetricsShare, which is kept for Close's last
// metric export.
const finalMetricsShare = 5

// FlushFinal ends the log records before once watch's final counters are
// read: what is queued is sent within the flush timeout (but the part kept
// for the metrics), and what could not be is counted in otlp_dropped,
// which the final summary line, JSON summary and metric then show. The
// metrics' last export is Close's, within what is left of the flush
// timeout: the end takes one flush timeout in all, not one each.
func (s *Sink) FlushFinal() {
	d := orDefault(s.cfg.FlushTimeout, DefaultFlushTimeout)
	start := time.Now()
	s.mu.Lock()
	s.endBy = start.Add(d)
	s.mu.Unlock()
	ctx, cancel := s.bounded(time.Until(start.Add(d - d/finalMetricsShare)))
	defer cancel()
	_ = s.lp.Shutdown(ctx)
}

// bounded is a context that ends after d, or at Abort.
func (s *Sink) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-s.abort:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Abort ends the sending at once, the last included (Close's, FlushFinal's,
// under way or to come): what is not yet sent is dropped, counted in
// otlp_dropped. once run calls it on a signal while it sends its result
// (Ctrl-C, where the sending would wait up to its flush timeout).
func (s *Sink) Abort() {
	s.abortOnce.Do(func() {
		close(s.abort)
		if s.cfg.Warn != nil {
			s.cfg.Warn("once: OTLP: interrupted: what is not sent yet is dropped (otlp_dropped)")
		}
	})
}

// shutdown flushes and ends both providers, side by side, within d, or
// until Abort. What they could not deliver is counted (Dropped), not an
// error of the trace: their errors are not returned.
func (s *Sink) shutdown(d time.Duration) {
	ctx, cancel := s.bounded(d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = s.lp.Shutdown(ctx) }()
	go func() { defer wg.Done(); _ = s.mp.Shutdown(ctx) }()
	wg.Wait()
}

// countingExporter counts the metric exports that failed (after the
// exporter's retries): each is one record not delivered. The next export
// carries the same cumulative values, so the loss is that moment's only.
type countingExporter struct {
	sdkmetric.Exporter
	warn    func(string)
	failed  atomic.Uint64
	lastErr atomic.Int64
}

func (c *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := c.Exporter.Export(ctx, rm)
	if err != nil {
		c.failed.Add(1)
		now := time.Now().UnixNano()
		if last := c.lastErr.Load(); now-last >= int64(warnEvery) && c.lastErr.CompareAndSwap(last, now) && c.warn != nil {
			c.warn(fmt.Sprintf("once: OTLP: exporting metrics failed (counted in otlp_dropped): %v", err))
		}
	}
	return err
}
