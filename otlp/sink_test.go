package otlp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/otelcoltest"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/trace"
)

// stacks is a fake stack table: stack 1 is two named frames.
type stacks struct{}

func (stacks) Stack(id trace.StackID) *trace.Stack {
	if id != 1 {
		return nil
	}
	return &trace.Stack{ID: 1, Frames: []trace.Frame{
		{Addr: 0x401000, Module: "/usr/bin/app", Func: "load_config", File: "/src/config.c", Line: 42},
		{Addr: 0x402000, Module: "/usr/bin/app", Func: "main", File: "/src/main.c", Line: 7},
	}}
}

// testFindings are findings of three shapes, from a process in a pod.
func testFindings() []trace.Finding {
	proc := &trace.Process{Pid: 4201, PPid: 4100, UID: 1000, Comm: "cc1", Exe: "/usr/lib/gcc/cc1",
		Container: &trace.Container{ID: strings.Repeat("ab", 32), Name: "build", Pod: "ci-runner-7", Namespace: "ci", Runtime: "containerd", PodUID: "4f1c"}}
	found := "/usr/bin/cc"
	return []trace.Finding{
		{Kind: trace.KindDuplicateOpen, Key: trace.ImageKey{Pid: 4201, ExecID: 2, Start: 1000}, Pid: 4201, PPid: 4100, Comm: "cc1", ParentComm: "make",
			Proc: proc, WastedNs: 4_100_000, CallSites: []trace.CallSite{{Stack: 1, Count: 13}},
			FileDetail: trace.FileDetail{Path: "/usr/include/stddef.h", Count: 13, Calls: []trace.OpenCall{{EnterNs: 5_000_000_000}, {EnterNs: 6_000_000_000}}}},
		{Kind: trace.KindFailedExecProbes, Key: trace.ImageKey{Pid: 4100, ExecID: 1}, Pid: 4100, PPid: 1, Comm: "make", Proc: proc, WastedNs: 48_000,
			ChainDetail: trace.ChainDetail{Target: "cc", Failed: 6, Found: &found, Attempts: []trace.Attempt{{Path: "/a/cc", Errno: 2}, {Path: found}}}},
		{Kind: trace.KindRepeatedMiss, Key: trace.ImageKey{Pid: 4300, ExecID: 1}, Pid: 4300, PPid: 4100, Comm: "ev\x1bil", LastComm: "w\x1bork", Proc: proc, WastedNs: 2_000_000_000,
			FileDetail: trace.FileDetail{Path: "/etc/app\xff.conf", Errno: 2, Count: 5}},
	}
}

func newSink(t *testing.T, endpoint, protocol string, tweak func(*Config)) *Sink {
	t.Helper()
	cfg := Config{Endpoint: endpoint, Protocol: protocol, Stacks: stacks{}, WallOffset: 1_700_000_000_000_000_000,
		Version: "test", BatchDelay: 100 * time.Millisecond, RetryFirst: 200 * time.Millisecond, MetricInterval: time.Hour,
		Warn: func(s string) { t.Log(s) }}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkDelivered holds what the collector received to the findings: each
// one's record exactly once, with its attributes, and the counters.
func checkDelivered(t *testing.T, c *otelcoltest.Collector, fs []trace.Finding, counters trace.Counters) {
	t.Helper()
	recs := c.Logs(t)
	bySubject := map[string][]otelcoltest.Record{}
	for _, r := range recs {
		s, _ := r.Attrs["once.subject"].(string)
		bySubject[s] = append(bySubject[s], r)
	}
	if len(recs) != len(fs) {
		t.Errorf("received %d records, want %d (one per finding)", len(recs), len(fs))
	}
	want := map[string]map[string]any{
		"/usr/include/stddef.h": {"once.kind": "duplicate_open", "once.comm": "cc1", "once.parent_comm": "make", "once.count": int64(13),
			"once.wasted_ns": int64(4_100_000), "process.pid": int64(4201), "process.parent_pid": int64(4100), "process.user.id": int64(1000),
			"process.executable.path": "/usr/lib/gcc/cc1", "process.executable.name": "cc1",
			"container.id": strings.Repeat("ab", 32), "container.name": "build", "k8s.pod.name": "ci-runner-7", "k8s.namespace.name": "ci"},
		"cc":                {"once.kind": "failed_exec_probes", "once.comm": "make", "once.failed": int64(6), "once.found": "/usr/bin/cc", "once.wasted_ns": int64(48_000)},
		`/etc/app\xff.conf`: {"once.kind": "repeated_miss", "once.comm": `ev\x1bil`, "once.last_comm": `w\x1bork`, "once.errno": int64(2), "error.type": "ENOENT", "once.count": int64(5), "once.failed": int64(5)},
	}
	// A figure a kind does not have is left out, not sent as 0.
	absent := map[string]string{"/usr/include/stddef.h": "once.failed", "cc": "once.count"}
	for subject, k := range absent {
		for _, r := range bySubject[subject] {
			if v, ok := r.Attrs[k]; ok {
				t.Errorf("%s: attribute %s = %#v, want none", subject, k, v)
			}
		}
	}
	sev := map[string]string{"/usr/include/stddef.h": "WARN", "cc": "INFO", `/etc/app\xff.conf`: "ERROR"}
	for subject, attrs := range want {
		got := bySubject[subject]
		if len(got) != 1 {
			t.Errorf("%s: %d records, want exactly 1", subject, len(got))
			continue
		}
		r := got[0]
		for k, v := range attrs {
			if r.Attrs[k] != v {
				t.Errorf("%s: attribute %s = %#v, want %#v", subject, k, r.Attrs[k], v)
			}
		}
		if s, _ := r.Attrs["once.suggestion"].(string); s == "" {
			t.Errorf("%s: no once.suggestion", subject)
		}
		if r.Severity != sev[subject] {
			t.Errorf("%s: severity %s, want %s", subject, r.Severity, sev[subject])
		}
		if r.EventName != "once.finding" || r.Body == "" || !strings.Contains(r.Body, subject) {
			t.Errorf("%s: event name %q, body %q", subject, r.EventName, r.Body)
		}
		if r.Resource["service.name"] != "once" || r.Resource["host.name"] == nil || r.Resource["os.type"] != "linux" {
			t.Errorf("%s: resource %v: want service.name once, host.name, os.type linux", subject, r.Resource)
		}
		if r.Resource["k8s.node.name"] != "node-7" {
			t.Errorf("%s: resource k8s.node.name = %v, want node-7 (OTEL_RESOURCE_ATTRIBUTES)", subject, r.Resource["k8s.node.name"])
		}
	}
	dup := bySubject["/usr/include/stddef.h"]
	if len(dup) == 1 {
		if st, _ := dup[0].Attrs["code.stacktrace"].(string); !strings.Contains(st, "load_config ← main") {
			t.Errorf("code.stacktrace = %q, want the call site's frames", st)
		}
		// The last call's time, by the wall clock.
		if got, want := dup[0].TimeUnixNano, int64(1_700_000_000_000_000_000+6_000_000_000); got != want {
			t.Errorf("time %d, want %d (the last call's)", got, want)
		}
	}

	last := map[string]float64{}
	kinds := map[string]float64{}
	for _, p := range c.Metrics(t) {
		last[p.Name] = p.Value
		if p.Name == "once.wasted" {
			k, _ := p.Attrs["once.kind"].(string)
			kinds[k] = p.Value
		}
	}
	for _, sp := range trace.Shown {
		v, ok := last["once."+sp.JSON]
		if !ok {
			t.Errorf("metric once.%s not received", sp.JSON)
			continue
		}
		if v != float64(sp.Value(&counters)) {
			t.Errorf("metric once.%s = %v, want %d", sp.JSON, v, sp.Value(&counters))
		}
	}
	if kinds["repeated_miss"] != 2 || kinds["duplicate_open"] != 0.0041 {
		t.Errorf("once.wasted by kind = %v, want repeated_miss 2s and duplicate_open 4.1ms", kinds)
	}
	if len(kinds) != len(trace.Kinds) {
		t.Errorf("once.wasted has %d kinds, want every registered one (%d)", len(kinds), len(trace.Kinds))
	}
}

// TestSinkDelivers: over HTTP and gRPC, watch's way (findings as they
// come, counters at ticks) and run's (the result at Close), each finding
// arrives once with its attributes, and the counters arrive.
func TestSinkDelivers(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.node.name=node-7")
	for _, tc := range []struct{ name, protocol, mode string }{
		{"http-watch", ProtocolHTTP, "watch"},
		{"grpc-watch", ProtocolGRPC, "watch"},
		{"http-run", ProtocolHTTP, "run"},
		{"grpc-run", ProtocolGRPC, "run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := otelcoltest.Start(t)
			ep := c.HTTP
			if tc.protocol == ProtocolGRPC {
				ep = c.GRPC
			}
			s := newSink(t, ep, tc.protocol, func(c *Config) { c.Headers = map[string]string{"X-Once-Test": tc.name} })
			fs := testFindings()
			counters := trace.Counters{DroppedEvents: 7, OutputDropped: 3, EventsReceived: 999, StacksCaptured: 13}
			if tc.mode == "watch" {
				for i := range fs {
					if err := s.Finding(&fs[i], time.Now()); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Tick(&detect.Snapshot{Counters: counters}, true); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(nil); err != nil {
					t.Fatal(err)
				}
			} else {
				res := &trace.Result{Findings: fs, Counters: counters, Stacks: []trace.Stack{*stacks{}.Stack(1)}}
				if err := s.Close(res); err != nil {
					t.Fatal(err)
				}
				if res.Counters.OTLPDropped != 0 {
					t.Errorf("otlp_dropped %d, want 0", res.Counters.OTLPDropped)
				}
			}
			if s.Sent() != uint64(len(fs)) || s.Dropped() != 0 {
				t.Errorf("sent %d, dropped %d; want %d sent, none dropped", s.Sent(), s.Dropped(), len(fs))
			}
			checkDelivered(t, c, testFindings(), counters)
			if h := c.Headers(t, "x-once-test"); len(h) == 0 || slices.ContainsFunc(h, func(v string) bool { return v != tc.name }) {
				t.Errorf("header x-once-test: the requests had %q, want %q on each", h, tc.name)
			}
			if t.Failed() {
				t.Logf("collector: %s", c.Output())
			}
		})
	}
}

// TestSinkCollectorLater: a collector that starts after once gets what
// the queue held, once each.
func TestSinkCollectorLater(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.node.name=node-7")
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			hp, gp := otelcoltest.Ports(t)
			port := hp
			if protocol == ProtocolGRPC {
				port = gp
			}
			s := newSink(t, fmt.Sprintf("http://127.0.0.1:%d", port), protocol, nil)
			fs := testFindings()
			for i := range fs {
				start := time.Now()
				_ = s.Finding(&fs[i], time.Now())
				if d := time.Since(start); d > 100*time.Millisecond {
					t.Errorf("Finding took %v with no collector: it must not wait", d)
				}
			}
			counters := trace.Counters{DroppedEvents: 7, OutputDropped: 3}
			_ = s.Tick(&detect.Snapshot{Counters: counters}, false)
			// A few sends fail first.
			time.Sleep(700 * time.Millisecond)
			c := otelcoltest.StartOn(t, hp, gp)
			if err := s.Close(nil); err != nil {
				t.Fatal(err)
			}
			if s.Dropped() != 0 || s.Sent() != uint64(len(fs)) {
				t.Errorf("sent %d, dropped %d; want all %d sent", s.Sent(), s.Dropped(), len(fs))
			}
			checkDelivered(t, c, testFindings(), counters)
		})
	}
}

// TestSinkBoundedWithoutCollector: with a collector that never comes (the
// port refuses) or never answers (it takes the connection and stays
// silent), a flood of findings costs no more memory than the queue's
// budget, never waits on the sender, and every record is counted dropped.
func TestSinkBoundedWithoutCollector(t *testing.T) {
	reltest.Record(t, "otlp collector never starts or never answers: queue bounded in bytes, drops counted")
	for _, tc := range []struct {
		name   string
		listen func(t *testing.T) string
	}{
		{"refused", func(t *testing.T) string {
			hp, _ := otelcoltest.Ports(t)
			return fmt.Sprintf("http://127.0.0.1:%d", hp)
		}},
		{"silent", func(t *testing.T) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { c.Close() })
				}
			}()
			return "http://" + l.Addr().String()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBounded(t, tc.listen(t)) })
	}
}

func checkBounded(t *testing.T, endpoint string) {
	const budget = 4 << 20
	s := newSink(t, endpoint, ProtocolHTTP, func(c *Config) {
		c.QueueBytes = budget
		c.FlushTimeout = 300 * time.Millisecond
	})
	fs := testFindings()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 100_000
	var slowest time.Duration
	start := time.Now()
	for i := range n {
		f := fs[i%len(fs)]
		f.Pid = uint32(i)
		t0 := time.Now()
		_ = s.Finding(&f, time.Now())
		slowest = max(slowest, time.Since(t0))
	}
	took := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d findings in %v: heap grew %d KiB (budget %d KiB), slowest Finding %v, dropped %d while queued",
		n, took, grew>>10, budget>>10, slowest, s.Dropped())
	// The queue's records, and its arrays' slack as they grew.
	if grew > 2*budget {
		t.Errorf("the heap grew %d KiB under a flood with no collector: more than twice the %d KiB budget", grew>>10, budget>>10)
	}
	// A Finding that waited on the sender would wait out an export
	// attempt (10 s) or a backoff: a GC pause or a busy machine costs
	// far less.
	if slowest > time.Second || took > exportTimeout {
		t.Errorf("the flood took %v, its slowest Finding %v: Finding must never wait on the sender", took, slowest)
	}
	if s.Dropped() == 0 {
		t.Errorf("nothing dropped while queued: the queue is not bounded")
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	var c trace.Counters
	s.Counters(&c)
	// Every record, and the last metric export.
	if c.OTLPDropped < n || s.Sent() != 0 {
		t.Errorf("otlp_dropped %d, sent %d: want every one of the %d records dropped, none sent", c.OTLPDropped, s.Sent(), n)
	}
}

// TestConfigCheck: a bad flag value is one line saying what is wrong.
func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Endpoint: "localhost:4318"}, "want http://HOST:PORT"},
		{Config{Endpoint: "ftp://x:1"}, "want http://HOST:PORT"},
		{Config{Endpoint: "http://"}, "no host"},
		{Config{Endpoint: "http://:4318"}, "no host"},
		{Config{Endpoint: "http://127.0.0.1:99999"}, "want 1 to 65535"},
		{Config{Endpoint: "http://x:1", Protocol: "http/json"}, "unknown OTLP protocol"},
		{Config{Endpoint: "https://x:1", CA: "/nonexistent"}, "OTLP CA"},
		{Config{Endpoint: "https://x:1", ClientCert: "/a"}, "go together"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"a b": "c"}}, "OTLP header name"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"a(b)": "c"}}, "OTLP header name"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"x-\x01": "c"}}, "OTLP header name"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"Authorization": "Bearer a\nX-Injected: 1"}}, "want printable ASCII"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"a": "b\tc"}}, "want printable ASCII"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"a": "\xc3\xa9"}}, "want printable ASCII"},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"Authorization": "Basic dTpw=="}, Protocol: ProtocolGRPC}, ""},
		{Config{Endpoint: "http://x:1", Headers: map[string]string{"x-empty": ""}}, ""},
		{Config{Endpoint: "https://collector:4317/base", Protocol: ProtocolGRPC}, ""},
		{Config{Endpoint: "http://user:s3cret@collector:4318"}, `"http://xxxxx@collector:4318": want no user`},
		{Config{Endpoint: "http://user:s3cret@[::1"}, "missing ']' in host"},
		{Config{Endpoint: "ftp://s3cret@x:1"}, "want http://HOST:PORT"},
	} {
		err := tc.cfg.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one saying %q", tc.cfg, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%+v: error of more than one line: %q", tc.cfg, err)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%+v: error %q repeats the endpoint's password", tc.cfg, err)
		}
	}
	if _, _, err := ParseHeader("novalue"); err == nil {
		t.Error("ParseHeader(novalue): no error")
	}
	if k, v, err := ParseHeader("Authorization=Bearer a=b"); err != nil || k != "Authorization" || v != "Bearer a=b" {
		t.Errorf("ParseHeader: %q %q %v", k, v, err)
	}
}

// TestSinkRunCountsUndelivered: run's Close with no collector waits its
// flush timeout, no more, and the result's otlp_dropped counts what the
// collector never got: every record and the metric export.
func TestSinkRunCountsUndelivered(t *testing.T) {
	hp, _ := otelcoltest.Ports(t)
	s := newSink(t, fmt.Sprintf("http://127.0.0.1:%d", hp), ProtocolHTTP, func(c *Config) { c.FlushTimeout = 500 * time.Millisecond })
	res := &trace.Result{Findings: testFindings(), Counters: trace.Counters{OutputDropped: 1}}
	start := time.Now()
	if err := s.Close(res); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with a flush timeout of 500ms", d)
	}
	if want := uint64(len(res.Findings) + 1); res.Counters.OTLPDropped != want {
		t.Errorf("the result's otlp_dropped %d, want %d (the records and the metric export)", res.Counters.OTLPDropped, want)
	}
}

// TestProtocolPerSignal: each signal's protocol is the flag's, else its
// own variable's, else the shared one's: the logs' variable does not set
// the metrics' protocol.
func TestProtocolPerSignal(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	c := &Config{Endpoint: "http://x:1"}
	if l, m := c.protocolOf("LOGS"), c.protocolOf("METRICS"); l != ProtocolGRPC || m != ProtocolHTTP {
		t.Errorf("logs' variable grpc: logs %q, metrics %q", l, m)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf")
	if l, m := c.protocolOf("LOGS"), c.protocolOf("METRICS"); l != ProtocolGRPC || m != ProtocolHTTP {
		t.Errorf("shared grpc, metrics' http: logs %q, metrics %q", l, m)
	}
	c.Protocol = ProtocolHTTP
	if l, m := c.protocolOf("LOGS"), c.protocolOf("METRICS"); l != ProtocolHTTP || m != ProtocolHTTP {
		t.Errorf("the flag's http: logs %q, metrics %q", l, m)
	}
}

// TestSinkRefusedNotRetried: a collector that refuses a batch (401, as
// one whose credentials are wrong) refuses it again: the batch is counted
// dropped at once, sent once, and the batches after it are not held up.
func TestSinkRefusedNotRetried(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/logs" {
			posts.Add(1)
		}
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	s := newSink(t, srv.URL, ProtocolHTTP, func(cfg *Config) {
		cfg.FlushTimeout = 3 * time.Second
		cfg.RetryFor = time.Hour
	})
	fs := testFindings()
	for i := range fs {
		_ = s.Finding(&fs[i], time.Now())
	}
	start := time.Now()
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	if d := s.q.dropped.Load(); d != uint64(len(fs)) {
		t.Errorf("dropped %d, want %d", d, len(fs))
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d posts of the logs, want 1: a refused batch is not sent again", n)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v: the refused batch was retried", took)
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("failed to send logs to http://x/v1/logs: 401 Unauthorized (body: no)"), true},
		{errors.New("failed to send logs to http://x/v1/logs: 400 Bad Request (body: x)"), true},
		{errors.New("failed to send logs to http://x/v1/logs: 429 Too Many Requests (body: x)"), false},
		{errors.New("Post \"http://x/v1/logs\": dial tcp: connection refused"), false},
		{status.Error(codes.Unauthenticated, "no"), true},
		{status.Error(codes.Unavailable, "down"), false},
	} {
		if got := permanent(c.err); got != c.want {
			t.Errorf("permanent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestSinkFlushFinal: with no collector, FlushFinal (once watch's, before
// its final counters) gives up what is queued within the flush timeout and
// counts it, so the final summary shows every record not delivered;
// Close after it adds only the metrics' last export.
func TestSinkFlushFinal(t *testing.T) {
	hp, _ := otelcoltest.Ports(t)
	s := newSink(t, fmt.Sprintf("http://127.0.0.1:%d", hp), ProtocolHTTP, func(cfg *Config) {
		cfg.FlushTimeout = 500 * time.Millisecond
	})
	fs := testFindings()
	for i := range fs {
		_ = s.Finding(&fs[i], time.Now())
	}
	s.FlushFinal()
	var c trace.Counters
	s.Counters(&c)
	if c.OTLPDropped != uint64(len(fs)) {
		t.Errorf("otlp_dropped %d after FlushFinal, want the %d records", c.OTLPDropped, len(fs))
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	if d := s.Dropped(); d != uint64(len(fs))+1 {
		t.Errorf("dropped %d after Close, want %d records and the metrics' export", d, len(fs)+1)
	}
}

// TestSinkCompareSides: compare's two results go as two sets of metrics,
// each with its once.side, never summed: the findings per kind and the
// counters of before and of after.
func TestSinkCompareSides(t *testing.T) {
	c := otelcoltest.Start(t)
	s := newSink(t, c.HTTP, ProtocolHTTP, nil)
	fs := testFindings()
	s.Result(&trace.Result{Findings: fs, Counters: trace.Counters{EventsSent: 13}}, "before")
	s.Result(&trace.Result{Findings: fs[:1], Counters: trace.Counters{EventsSent: 5}}, "after")
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, p := range c.Metrics(t) {
		side, _ := p.Attrs["once.side"].(string)
		switch p.Name {
		case "once.events_sent":
			got["events_sent "+side] = p.Value
		case "once.findings":
			k, _ := p.Attrs["once.kind"].(string)
			got[k+" "+side] = p.Value
		}
	}
	k0 := string(fs[0].Kind)
	want := map[string]float64{"events_sent before": 13, "events_sent after": 5, k0 + " before": 1, k0 + " after": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["events_sent "]; ok {
		t.Errorf("a series without once.side: %v", got)
	}
}

// TestSinkEndBounded: once watch's end, FlushFinal then Close, takes the
// flush timeout in all, not once for each: against a collector that never
// answers (or, over gRPC, one refusing connections, which the exporter
// retries until its deadline) the records queued and the metrics' last
// export share it, so that the end fits in the SIGTERM grace the docs
// promise (5 s of the DaemonSet's 10). What they could not send is
// counted all the same.
func TestSinkEndBounded(t *testing.T) {
	silent := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
			}
		}()
		return "http://" + l.Addr().String()
	}
	refused := func(t *testing.T) string {
		hp, _ := otelcoltest.Ports(t)
		return fmt.Sprintf("http://127.0.0.1:%d", hp)
	}
	for _, tc := range []struct {
		name, protocol string
		endpoint       func(*testing.T) string
	}{
		{"http silent", ProtocolHTTP, silent},
		{"grpc silent", ProtocolGRPC, silent},
		{"grpc refused", ProtocolGRPC, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const flush = time.Second
			s := newSink(t, tc.endpoint(t), tc.protocol, func(c *Config) { c.FlushTimeout = flush })
			fs := testFindings()
			for i := range fs {
				_ = s.Finding(&fs[i], time.Now())
			}
			start := time.Now()
			s.FlushFinal()
			if err := s.Close(nil); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > flush+flush/2 {
				t.Errorf("FlushFinal and Close took %v with a flush timeout of %v", took, flush)
			}
			if d := s.Dropped(); d != uint64(len(fs))+1 {
				t.Errorf("dropped %d, want %d records and the metrics' export", d, len(fs)+1)
			}
		})
	}
}

// TestSinkPartialSuccess: a collector that takes a batch but rejects some
// of its records (OTLP's partial success, an OK answer) is not sent the
// batch again, which would deliver the records it took twice and then
// count them all dropped: the rejected ones are dropped (counted), the
// rest sent, in one export, over HTTP and gRPC.
func TestSinkPartialSuccess(t *testing.T) {
	resp := &collogpb.ExportLogsServiceResponse{PartialSuccess: &collogpb.ExportLogsPartialSuccess{RejectedLogRecords: 1, ErrorMessage: "one too large"}}
	var posts atomic.Int64
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/logs" {
			return
		}
		posts.Add(1)
		b, err := proto.Marshal(resp)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	defer httpSrv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	collogpb.RegisterLogsServiceServer(gs, partialLogs{resp: resp, posts: &posts})
	go func() { _ = gs.Serve(l) }()
	defer gs.Stop()
	for _, tc := range []struct{ protocol, endpoint string }{
		{ProtocolHTTP, httpSrv.URL},
		{ProtocolGRPC, "http://" + l.Addr().String()},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			posts.Store(0)
			s := newSink(t, tc.endpoint, tc.protocol, func(cfg *Config) {
				cfg.FlushTimeout = 3 * time.Second
				cfg.RetryFor = time.Hour
			})
			fs := testFindings()
			for i := range fs {
				_ = s.Finding(&fs[i], time.Now())
			}
			s.FlushFinal()
			if n := posts.Load(); n != 1 {
				t.Errorf("%d exports of the batch, want 1: a partial success is not sent again", n)
			}
			if d, sent := s.q.dropped.Load(), s.Sent(); d != 1 || sent != uint64(len(fs)-1) {
				t.Errorf("dropped %d, sent %d; want 1 (the record rejected) and %d", d, sent, len(fs)-1)
			}
			_ = s.Close(nil)
		})
	}
	for _, c := range []struct {
		err  error
		n    uint64
		want bool
	}{
		{errors.New("OTLP partial success: x (3 logs rejected)"), 3, true},
		{errors.New("OTLP partial success: two\nlines (2 logs rejected)"), 2, true},
		{errors.Join(errors.New("OTLP partial success: empty message (1 logs rejected)")), 1, true},
		{errors.Join(errors.New("OTLP partial success: a (1 logs rejected)"), errors.New("context deadline exceeded")), 0, false},
		{errors.New("failed to send logs to http://x/v1/logs: 503 Service Unavailable"), 0, false},
		{nil, 0, false},
	} {
		if n, ok := partial(c.err); n != c.n || ok != c.want {
			t.Errorf("partial(%v) = %d, %v; want %d, %v", c.err, n, ok, c.n, c.want)
		}
	}
}

// partialLogs is an OTLP/gRPC logs service that answers every export
// with resp.
type partialLogs struct {
	collogpb.UnimplementedLogsServiceServer
	resp  *collogpb.ExportLogsServiceResponse
	posts *atomic.Int64
}

func (p partialLogs) Export(context.Context, *collogpb.ExportLogsServiceRequest) (*collogpb.ExportLogsServiceResponse, error) {
	p.posts.Add(1)
	return p.resp, nil
}

// TestSinkAbort: once run's last sending (Close with the result) against
// a collector that never answers waits its whole flush timeout, unless
// Abort (a Ctrl-C then) ends it: at once, what was not sent counted in
// the result's otlp_dropped.
func TestSinkAbort(t *testing.T) {
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { c.Close() })
				}
			}()
			const flush = 6 * time.Second
			var warned strings.Builder
			var mu sync.Mutex
			s := newSink(t, "http://"+l.Addr().String(), protocol, func(c *Config) {
				c.FlushTimeout = flush
				c.Warn = func(s string) { mu.Lock(); warned.WriteString(s + "\n"); mu.Unlock() }
			})
			res := &trace.Result{Findings: testFindings()}
			closed := make(chan time.Time, 1)
			go func() {
				_ = s.Close(res)
				closed <- time.Now()
			}()
			time.Sleep(300 * time.Millisecond)
			at := time.Now()
			s.Abort()
			select {
			case end := <-closed:
				if took := end.Sub(at); took > time.Second+time.Second/2 {
					t.Errorf("Close ended %v after Abort", took)
				}
			case <-time.After(flush):
				t.Fatalf("Close still sending %v after Abort", flush)
			}
			if d := res.Counters.OTLPDropped; d != uint64(len(res.Findings))+1 {
				t.Errorf("otlp_dropped %d, want the %d records and the metrics' export", d, len(res.Findings))
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(warned.String(), "interrupted") {
				t.Errorf("nothing says the sending was interrupted: %q", warned.String())
			}
		})
	}
}

// TestSinkResourceNotUTF8: a resource string that is not UTF-8 (a
// %-escape of OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) is in every
// request, where protobuf refuses it: escaped, every record and metric
// export is delivered, none dropped.
func TestSinkResourceNotUTF8(t *testing.T) {
	for _, tc := range []struct{ name, env, value string }{
		{"OTEL_RESOURCE_ATTRIBUTES", "k8s.node.name=node%FF%FE7", "k8s.node.name"},
		{"OTEL_SERVICE_NAME", "once\xff", "service.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.env)
			var logs, metrics, bad atomic.Int64
			var got atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				switch r.URL.Path {
				case "/v1/logs":
					var req collogpb.ExportLogsServiceRequest
					if err := proto.Unmarshal(b, &req); err != nil {
						bad.Add(1)
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					for _, rl := range req.ResourceLogs {
						for _, a := range rl.GetResource().GetAttributes() {
							if a.Key == tc.value {
								got.Store(a.GetValue().GetStringValue())
							}
						}
						for _, sl := range rl.ScopeLogs {
							logs.Add(int64(len(sl.LogRecords)))
						}
					}
				case "/v1/metrics":
					metrics.Add(1)
				}
			}))
			defer srv.Close()
			s := newSink(t, srv.URL, ProtocolHTTP, func(cfg *Config) {
				cfg.FlushTimeout = 3 * time.Second
			})
			fs := testFindings()
			for i := range fs {
				_ = s.Finding(&fs[i], time.Now())
			}
			_ = s.Close(nil)
			if n := logs.Load(); n != int64(len(fs)) || bad.Load() != 0 {
				t.Errorf("collector got %d records (%d requests it could not decode), want %d", n, bad.Load(), len(fs))
			}
			if metrics.Load() == 0 {
				t.Error("no metric export arrived")
			}
			if d := s.Dropped(); d != 0 {
				t.Errorf("otlp_dropped %d, want 0", d)
			}
			if v, _ := got.Load().(string); !utf8.ValidString(v) || !strings.Contains(v, `\xff`) {
				t.Errorf("resource %s = %q, want it valid UTF-8 with the byte escaped", tc.value, v)
			}
		})
	}
}

// TestConfigCheckResourceAttributes: an OTEL_RESOURCE_ATTRIBUTES entry that
// is no KEY=VALUE, which the SDK would leave out without a word, is a
// one-line error.
func TestConfigCheckResourceAttributes(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"k8s.node.name=node-7", ""},
		{"k8s.node.name=node-7,team=a%2Cb", ""},
		{"broken", `entry "broken"`},
		{"k8s.node.name=n,oops", `entry "oops"`},
		{"=v", `entry "=v"`},
		{"a=b,\x1b[2J", `entry "\x1b[2J"`},
	} {
		t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tc.env)
		err := (&Config{Endpoint: "http://x:1"}).Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one saying %s", tc.env, err, tc.want)
		case err != nil && strings.ContainsAny(err.Error(), "\n\x1b"):
			t.Errorf("%q: error not one inert line: %q", tc.env, err)
		}
	}
}

// TestConfigCheckEnv: an OTEL_* variable the exporters would leave out
// (printing it: a header's credential too) is a one-line error that shows
// no header value; headers the flags replace are not read.
func TestConfigCheckEnv(t *testing.T) {
	vars := []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "OTEL_METRIC_EXPORT_INTERVAL",
		"OTEL_METRIC_EXPORT_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
		"OTEL_EXPORTER_OTLP_ENDPOINT"}
	for _, tc := range []struct {
		env, value string
		flags      bool // --otlp-header given
		want       string
	}{
		{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret,x-team=a", false, ""},
		{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret,bad", false, "entry 2: want NAME=VALUE"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "Bearer s3cret", false, "entry 1: want NAME=VALUE"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "Bearer s3cret", true, ""},
		{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "a b=s3cret", false, "entry 1"},
		{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "Authorization=s3cret%zz", false, "header Authorization: its value is not %-escaped"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=s3%01cret", false, "byte 0x01"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", false, ""},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", false, "want gzip or none"},
		{"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "GZIP", false, "want gzip or none"},
		{"OTEL_METRIC_EXPORT_INTERVAL", "15000", false, ""},
		{"OTEL_METRIC_EXPORT_INTERVAL", "15s", false, "milliseconds"},
		{"OTEL_METRIC_EXPORT_INTERVAL", "0", false, "milliseconds"},
		// Past time.Duration's range the SDK printed a line of its own
		// and took 60s: no number of milliseconds it can use.
		{"OTEL_METRIC_EXPORT_INTERVAL", "9999999999999999", false, "milliseconds"},
		{"OTEL_METRIC_EXPORT_TIMEOUT", "30000", false, ""},
		{"OTEL_METRIC_EXPORT_TIMEOUT", "junk", false, "OTEL_METRIC_EXPORT_TIMEOUT \"junk\": want a number of milliseconds"},
		{"OTEL_METRIC_EXPORT_TIMEOUT", "0", false, "milliseconds"},
		// Read by the exporters, which print a line of their own for
		// a value they can't parse, although once's own timeout
		// replaces it.
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10000", false, ""},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s", false, "OTEL_EXPORTER_OTLP_TIMEOUT \"10s\": want a number of milliseconds"},
		{"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "x", false, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT"},
		// --otlp replaces it: any value, HOST:PORT as other tools
		// take it too.
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "10.0.0.1:4317", false, ""},
	} {
		for _, k := range vars {
			t.Setenv(k, "")
		}
		t.Setenv(tc.env, tc.value)
		cfg := Config{Endpoint: "http://x:1"}
		if tc.flags {
			cfg.Headers = map[string]string{"Authorization": "Bearer flag"}
		}
		err := cfg.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%q: %v", tc.env, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%q: error %v, want one saying %q", tc.env, tc.value, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s=%q: error %q shows the value, or is more than a line", tc.env, tc.value, err)
		}
	}
}
