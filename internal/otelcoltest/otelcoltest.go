// Package otelcoltest runs a real OpenTelemetry Collector for tests: the
// one internal/otelcol builds from the official modules (the OTLP receiver,
// over HTTP and gRPC, and an exporter that writes what it received as OTLP
// JSON lines). The binary is built once and cached between runs, keyed by
// that module's sources and go.sum.
package otelcoltest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the collector's path, building it the first time (a
// minute or two on a cold module cache; cached after). Under CI=true a
// build that fails fails the test; elsewhere it skips it.
func Binary(t testing.TB) string {
	t.Helper()
	testprog.NeedTool(t, "go")
	buildOnce.Do(func() { buildPath, buildErr = build() })
	if buildErr != nil {
		testprog.Skipf(t, "building the test collector: %v", buildErr)
	}
	return buildPath
}

// moduleDir is internal/otelcol, beside this package.
func moduleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate the collector's sources (file %q)", file)
	}
	return filepath.Join(filepath.Dir(filepath.Dir(file)), "otelcol"), nil
}

// cacheDir is where built collectors are kept: $ONCE_TEST_CACHE, else the
// user's cache directory.
func cacheDir() (string, error) {
	if d := os.Getenv("ONCE_TEST_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "once-test"), nil
}

// build builds the collector into the cache, under a name that is the
// hash of the module's files: a change to any of them builds anew.
func build() (string, error) {
	src, err := moduleDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	names, err := filepath.Glob(filepath.Join(src, "*"))
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(n), len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp := out + ".tmp" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v\n%s", src, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	// The builds of older sources are of no more use.
	old, _ := filepath.Glob(filepath.Join(dir, "otelcol-*"))
	for _, o := range old {
		if o != out {
			os.Remove(o)
		}
	}
	return out, nil
}

// Collector is a running collector.
type Collector struct {
	// HTTP and GRPC are its OTLP endpoints: http://127.0.0.1:PORT.
	HTTP, GRPC string
	out        string
	cmd        *exec.Cmd
	log        lockedBuffer
	waited     chan struct{}
}

// Ports are two free TCP ports on 127.0.0.1, for a collector to be
// started later on the endpoints a sink was given first.
func Ports(t testing.TB) (httpPort, grpcPort int) {
	t.Helper()
	var ls []net.Listener
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Close()
	}
	return ls[0].Addr().(*net.TCPAddr).Port, ls[1].Addr().(*net.TCPAddr).Port
}

// Start starts a collector on free ports; t's cleanup stops it.
func Start(t testing.TB) *Collector {
	t.Helper()
	h, g := Ports(t)
	return StartOn(t, h, g)
}

// StartOn starts a collector whose OTLP receiver listens on 127.0.0.1 at
// httpPort and grpcPort, and waits until both accept connections.
func StartOn(t testing.TB, httpPort, grpcPort int) *Collector {
	t.Helper()
	return start(t, httpPort, grpcPort, TLS{})
}

// TLS is the receiver's TLS: its certificate and key, and the CA its
// clients' certificates must chain to ("": none asked for). PEM files.
type TLS struct {
	Cert, Key, ClientCA string
}

// StartTLS starts a collector on free ports whose receiver takes only
// TLS: its endpoints are https://127.0.0.1:PORT.
func StartTLS(t testing.TB, tls TLS) *Collector {
	t.Helper()
	h, g := Ports(t)
	return start(t, h, g, tls)
}

func start(t testing.TB, httpPort, grpcPort int, tls TLS) *Collector {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	scheme, tlsBlock := "http", ""
	if tls.Cert != "" {
		scheme = "https"
		tlsBlock = fmt.Sprintf("\n        tls:\n          cert_file: %s\n          key_file: %s", strconv.Quote(tls.Cert), strconv.Quote(tls.Key))
		if tls.ClientCA != "" {
			tlsBlock += fmt.Sprintf("\n          client_ca_file: %s", strconv.Quote(tls.ClientCA))
		}
	}
	c := &Collector{HTTP: fmt.Sprintf("%s://127.0.0.1:%d", scheme, httpPort), GRPC: fmt.Sprintf("%s://127.0.0.1:%d", scheme, grpcPort),
		out: filepath.Join(dir, "received.jsonl"), waited: make(chan struct{})}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
        include_metadata: true%s
      http:
        endpoint: 127.0.0.1:%d
        include_metadata: true%s
exporters:
  jsonfile:
    path: %s
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [jsonfile]
    metrics:
      receivers: [otlp]
      exporters: [jsonfile]
`, grpcPort, tlsBlock, httpPort, tlsBlock, strconv.Quote(c.out))
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, "--config", "file:"+path)
	c.cmd.Stdout, c.cmd.Stderr = &c.log, &c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting the collector: %v", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.waited) }()
	t.Cleanup(c.Stop)
	ok := testprog.WaitFor(30*time.Second, func() bool {
		select {
		case <-c.waited:
			return true
		default:
		}
		for _, p := range []int{httpPort, grpcPort} {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), 100*time.Millisecond)
			if err != nil {
				return false
			}
			conn.Close()
		}
		return true
	})
	select {
	case <-c.waited:
		t.Fatalf("the collector exited: %s", c.log.String())
	default:
	}
	if !ok {
		t.Fatalf("the collector did not listen within 30s: %s", c.log.String())
	}
	return c
}

// Stop stops the collector (SIGTERM, then SIGKILL after 5s).
func (c *Collector) Stop() {
	select {
	case <-c.waited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.waited:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.waited
	}
}

// lockedBuffer is the collector's output, written by exec's goroutines
// and read by the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Record is one log record received, flattened: its resource's and its
// own attributes as Go values (strings, int64, float64, bool).
type Record struct {
	Resource     map[string]any
	Scope        string
	Attrs        map[string]any
	Body         string
	Severity     string
	SeverityNum  int
	EventName    string
	TimeUnixNano int64
}

// Point is one metric data point received.
type Point struct {
	Resource map[string]any
	Name     string
	Unit     string
	Attrs    map[string]any
	Value    float64
	Sum      bool // a monotonic sum (a counter)
}

// Logs is every log record received so far.
func (c *Collector) Logs(t testing.TB) []Record {
	t.Helper()
	var out []Record
	c.lines(t, func(l *otlpLine) {
		for _, rl := range l.ResourceLogs {
			res := attrMap(rl.Resource.Attributes)
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					ts, _ := strconv.ParseInt(lr.TimeUnixNano, 10, 64)
					out = append(out, Record{Resource: res, Scope: sl.Scope.Name, Attrs: attrMap(lr.Attributes), Body: str(lr.Body),
						Severity: lr.SeverityText, SeverityNum: lr.SeverityNumber, EventName: lr.EventName, TimeUnixNano: ts})
				}
			}
		}
	})
	return out
}

// Metrics is every data point received so far, in order.
func (c *Collector) Metrics(t testing.TB) []Point {
	t.Helper()
	var out []Point
	c.lines(t, func(l *otlpLine) {
		for _, rm := range l.ResourceMetrics {
			res := attrMap(rm.Resource.Attributes)
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					add := func(dps []dataPoint, sum bool) {
						for _, dp := range dps {
							v := dp.AsDouble
							if dp.AsInt != "" {
								n, _ := strconv.ParseInt(dp.AsInt, 10, 64)
								v = float64(n)
							}
							out = append(out, Point{Resource: res, Name: m.Name, Unit: m.Unit, Attrs: attrMap(dp.Attributes), Value: v, Sum: sum})
						}
					}
					if m.Sum != nil {
						add(m.Sum.DataPoints, m.Sum.IsMonotonic)
					}
					if m.Gauge != nil {
						add(m.Gauge.DataPoints, false)
					}
				}
			}
		}
	})
	return out
}

// Headers is the values of header key (lower case) that came with the
// requests received so far.
func (c *Collector) Headers(t testing.TB, key string) []string {
	t.Helper()
	var out []string
	c.lines(t, func(l *otlpLine) { out = append(out, l.Metadata[key]...) })
	return out
}

// Output is what the collector printed, for a test's failure message.
func (c *Collector) Output() string { return c.log.String() }

func (c *Collector) lines(t testing.TB, fn func(*otlpLine)) {
	t.Helper()
	f, err := os.Open(c.out)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l otlpLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// The last line may be half written.
			continue
		}
		fn(&l)
	}
}

// The OTLP JSON encoding's shapes, the parts read.
type (
	otlpLine struct {
		Metadata     map[string][]string `json:"metadata"`
		ResourceLogs []struct {
			Resource  resourceJSON `json:"resource"`
			ScopeLogs []struct {
				Scope      scopeJSON `json:"scope"`
				LogRecords []struct {
					TimeUnixNano   string     `json:"timeUnixNano"`
					SeverityNumber int        `json:"severityNumber"`
					SeverityText   string     `json:"severityText"`
					EventName      string     `json:"eventName"`
					Body           anyValue   `json:"body"`
					Attributes     []keyValue `json:"attributes"`
				} `json:"logRecords"`
			} `json:"scopeLogs"`
		} `json:"resourceLogs"`
		ResourceMetrics []struct {
			Resource     resourceJSON `json:"resource"`
			ScopeMetrics []struct {
				Scope   scopeJSON `json:"scope"`
				Metrics []struct {
					Name string `json:"name"`
					Unit string `json:"unit"`
					Sum  *struct {
						DataPoints  []dataPoint `json:"dataPoints"`
						IsMonotonic bool        `json:"isMonotonic"`
					} `json:"sum"`
					Gauge *struct {
						DataPoints []dataPoint `json:"dataPoints"`
					} `json:"gauge"`
				} `json:"metrics"`
			} `json:"scopeMetrics"`
		} `json:"resourceMetrics"`
	}
	resourceJSON struct {
		Attributes []keyValue `json:"attributes"`
	}
	scopeJSON struct {
		Name string `json:"name"`
	}
	keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	anyValue struct {
		StringValue *string  `json:"stringValue"`
		IntValue    *string  `json:"intValue"`
		DoubleValue *float64 `json:"doubleValue"`
		BoolValue   *bool    `json:"boolValue"`
	}
	dataPoint struct {
		Attributes []keyValue `json:"attributes"`
		AsInt      string     `json:"asInt"`
		AsDouble   float64    `json:"asDouble"`
	}
)

func attrMap(kvs []keyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.value()
	}
	return m
}

func (v anyValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		n, _ := strconv.ParseInt(*v.IntValue, 10, 64)
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.BoolValue != nil:
		return *v.BoolValue
	}
	return nil
}

func str(v anyValue) string {
	if v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}
