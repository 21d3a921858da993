package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oncetool/once/trace"
)

// The protocols of --otlp-protocol, as OTEL_EXPORTER_OTLP_PROTOCOL names
// them; http/protobuf is the specification's default.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Defaults of Config.
const (
	// DefaultQueueBytes bounds the records waiting to be sent, the batch
	// being sent included.
	DefaultQueueBytes = 8 << 20
	// DefaultFlushTimeout is how long Close waits for the queue to be
	// delivered.
	DefaultFlushTimeout = 10 * time.Second
	// DefaultRetryFor is how long a batch is retried before it is given
	// up: long enough for a collector's restart or a node agent's
	// rollout, short enough that a collector gone for good costs
	// records, not a stalled queue.
	DefaultRetryFor = 5 * time.Minute
)

// Config is where and how the sink sends.
type Config struct {
	// Endpoint is the collector's base URL: http://host:port (plain
	// text) or https://host:port (TLS), as OTEL_EXPORTER_OTLP_ENDPOINT.
	// Over HTTP, /v1/logs and /v1/metrics are appended to its path.
	Endpoint string
	// Protocol is ProtocolHTTP or ProtocolGRPC; "" reads
	// OTEL_EXPORTER_OTLP_PROTOCOL, and defaults to ProtocolHTTP.
	Protocol string
	// Headers are sent with every export; when given they replace
	// OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// CA, ClientCert and ClientKey are PEM files: the CA the
	// collector's certificate is checked against (default: the
	// system's), and the client certificate and key it may ask for.
	// When one is given they replace OTEL_EXPORTER_OTLP_CERTIFICATE and
	// its client pair.
	CA, ClientCert, ClientKey string

	// Stacks, when set (--stacks), gives each record its call site's
	// first frames.
	Stacks trace.StackSource
	// WallOffset turns the kernel's CLOCK_MONOTONIC into ns since the
	// epoch (collector.WallOffset): the records' times are their
	// findings' last calls. 0: the time the finding was drained.
	WallOffset int64
	// Version is once's, the instrumentation scope's version.
	Version string
	// Warn, when set, is told of a failing export, once a minute at
	// most, and when exports work again.
	Warn func(string)

	// QueueBytes, FlushTimeout and RetryFor: 0 for the defaults.
	QueueBytes   int
	FlushTimeout time.Duration
	RetryFor     time.Duration
	// RetryFirst is the queue's first backoff (1s when 0), doubled at
	// each failure up to 30s.
	RetryFirst time.Duration
	// MetricInterval is how often watch's metrics are sent: 0 reads
	// OTEL_METRIC_EXPORT_INTERVAL, else 60s.
	MetricInterval time.Duration
	// BatchDelay is how long a record waits for others to fill a
	// batch (1s when 0).
	BatchDelay time.Duration
}

// protocolOf is the protocol of a signal (LOGS, METRICS): the flag's,
// else the environment's for that signal, else its shared one's.
func (c *Config) protocolOf(signal string) string {
	if c.Protocol != "" {
		return c.Protocol
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ProtocolHTTP
}

// Check validates c (the flags): the endpoint's URL and scheme, the
// protocol, the headers and the TLS files. Its errors are one line each.
func (c *Config) Check() error {
	if _, err := c.endpoint(); err != nil {
		return err
	}
	for _, signal := range []string{"LOGS", "METRICS"} {
		switch p := c.protocolOf(signal); p {
		case ProtocolHTTP, ProtocolGRPC:
		default:
			return fmt.Errorf("unknown OTLP protocol %q (want http/protobuf or grpc)", p)
		}
	}
	for k, v := range c.Headers {
		if !headerName(k) {
			return fmt.Errorf("OTLP header name %q: want a token, without spaces or ':'", k)
		}
		if i := badHeaderByte(v); i >= 0 {
			// Sent, every export would fail in the client (HTTP: a
			// control character; gRPC: any byte not printable ASCII),
			// each batch retried and then dropped: say it now. Not
			// the value itself, which may be a credential.
			return fmt.Errorf("OTLP header %s: its value has byte %#02x at %d: want printable ASCII, no control character", k, v[i], i)
		}
	}
	if err := checkEnv(c.Headers == nil); err != nil {
		return err
	}
	if err := checkEnvFiles(); err != nil {
		return err
	}
	if u, _ := c.endpoint(); u.Scheme == "https" && c.CA == "" && c.ClientCert == "" && c.ClientKey == "" {
		if err := checkEnvTLS(); err != nil {
			return err
		}
	}
	if v := os.Getenv("OTEL_RESOURCE_ATTRIBUTES"); v != "" {
		// The SDK leaves out, without a word, an entry that is no
		// KEY=VALUE (and keeps the rest): say it, as for the protocol.
		for _, p := range strings.Split(v, ",") {
			if k, _, ok := strings.Cut(p, "="); !ok || strings.TrimSpace(k) == "" {
				return fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: entry %q: want KEY=VALUE, entries separated by commas", p)
			}
		}
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return err
	}
	if u, _ := c.endpoint(); tlsCfg != nil && u.Scheme == "http" {
		// Given and not used would send in plain text what the user
		// meant to protect.
		return fmt.Errorf("OTLP endpoint %q: --otlp-ca and --otlp-client-cert are for https:// (TLS); http:// is plain text", c.shownEndpoint())
	}
	return nil
}

// checkEnv validates the OTEL_* variables the exporters read (their
// headers only when no --otlp-header replaces them). The SDK leaves a
// value it can't parse out, printing it: a malformed
// OTEL_EXPORTER_OTLP_HEADERS loses every header, the Authorization too
// (the collector then refuses every export), and its line on stderr
// shows the credential. Said here in one line, without a value.
func checkEnv(headers bool) error {
	for _, signal := range []string{"", "LOGS_", "METRICS_"} {
		if k := "OTEL_EXPORTER_OTLP_" + signal + "HEADERS"; headers && os.Getenv(k) != "" {
			for i, e := range strings.Split(os.Getenv(k), ",") {
				name, raw, ok := strings.Cut(e, "=")
				name = strings.TrimSpace(name)
				if !ok || !headerName(name) {
					return fmt.Errorf("%s: entry %d: want NAME=VALUE, entries separated by commas (a name a token)", k, i+1)
				}
				v, err := url.PathUnescape(raw)
				if err != nil {
					return fmt.Errorf("%s: header %s: its value is not %%-escaped right", k, name)
				}
				if j := badHeaderByte(strings.TrimSpace(v)); j >= 0 {
					return fmt.Errorf("%s: header %s: its value has byte %#02x at %d: want printable ASCII, no control character", k, name, v[j], j)
				}
			}
		}
		if k := "OTEL_EXPORTER_OTLP_" + signal + "COMPRESSION"; os.Getenv(k) != "" {
			if v := os.Getenv(k); v != "gzip" && v != "none" {
				return fmt.Errorf("%s %q: want gzip or none", k, v)
			}
		}
		// The timeout is once's own, but the exporters parse the
		// variable first, and print a line of their own for a value
		// that is no number (the specification's milliseconds): said
		// here. (Not the endpoint: --otlp replaces it, and a value
		// other tools take, HOST:PORT, is no URL to the exporters.)
		if k := "OTEL_EXPORTER_OTLP_" + signal + "TIMEOUT"; os.Getenv(k) != "" {
			if v := os.Getenv(k); !isInt(v) {
				return fmt.Errorf("%s %q: want a number of milliseconds", k, v)
			}
		}
	}
	// The metric reader's, read by the SDK, which prints a line of its
	// own and takes its default for a value it can't use: not a number
	// of milliseconds, not above 0, or past time.Duration's range.
	for _, k := range []string{"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_TIMEOUT"} {
		if v := os.Getenv(k); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 || n > math.MaxInt64/int64(time.Millisecond) {
				return fmt.Errorf("%s %q: want a number of milliseconds, above 0", k, v)
			}
		}
	}
	return nil
}

// isInt says whether s is a whole number, as the exporters parse their
// timeouts (strconv.Atoi).
func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// shownEndpoint is Endpoint for an error message: a user and password
// in it (refused, but typed) are not repeated on stderr.
func (c *Config) shownEndpoint() string {
	s := c.Endpoint
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		return s[:i+3] + "xxxxx@" + rest[at+1:]
	}
	return s
}

// checkEnvTLS validates the certificate files the variables name, which
// an https endpoint uses when no TLS flag is given: the SDK, on a file it
// can't read, prints a line and goes on with the system's roots (and no
// client certificate), and every export then fails its handshake.
func checkEnvTLS() error {
	for _, signal := range []string{"", "LOGS_", "METRICS_"} {
		pre := "OTEL_EXPORTER_OTLP_" + signal
		if f := os.Getenv(pre + "CERTIFICATE"); f != "" {
			pem, err := readPEM(f)
			if err != nil {
				return fmt.Errorf("%sCERTIFICATE: %w", pre, err)
			}
			if !x509.NewCertPool().AppendCertsFromPEM(pem) {
				return fmt.Errorf("%sCERTIFICATE %q: no PEM certificate in it", pre, f)
			}
		}
		cert, key := os.Getenv(pre+"CLIENT_CERTIFICATE"), os.Getenv(pre+"CLIENT_KEY")
		if cert == "" && key == "" {
			continue
		}
		if cert == "" || key == "" {
			return fmt.Errorf("%sCLIENT_CERTIFICATE and %sCLIENT_KEY go together", pre, pre)
		}
		if _, err := loadKeyPair(cert, key); err != nil {
			return fmt.Errorf("%sCLIENT_CERTIFICATE: %w", pre, err)
		}
	}
	return nil
}

// endpoint parses Endpoint.
func (c *Config) endpoint() (*url.URL, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		// url.Error repeats the URL, its password too.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("OTLP endpoint %q: %w", c.shownEndpoint(), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("OTLP endpoint %q: want http://HOST:PORT (plain text) or https://HOST:PORT (TLS)", c.shownEndpoint())
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: no host", c.shownEndpoint())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("OTLP endpoint %q: port %q: want 1 to 65535", c.shownEndpoint(), p)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("OTLP endpoint %q: want no user, query or fragment", c.shownEndpoint())
	}
	return u, nil
}

// tlsConfig is the TLS configuration the files give; nil when none is.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.CA == "" && c.ClientCert == "" && c.ClientKey == "" {
		return nil, nil
	}
	if (c.ClientCert == "") != (c.ClientKey == "") {
		return nil, errors.New("--otlp-client-cert and --otlp-client-key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		pem, err := readPEM(c.CA)
		if err != nil {
			return nil, fmt.Errorf("OTLP CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTLP CA %q: no PEM certificate in it", c.CA)
		}
		cfg.RootCAs = pool
	}
	if c.ClientCert != "" {
		pair, err := loadKeyPair(c.ClientCert, c.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("OTLP client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// headerName says whether k is an HTTP field name (RFC 9110's token),
// which gRPC metadata keys are too.
func headerName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// badHeaderByte is the index of v's first byte that cannot be sent over
// both transports, -1 if none: a value must be printable ASCII, as gRPC
// requires of a metadata value (HTTP takes more, but the same flags serve
// both).
func badHeaderByte(v string) int {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return i
		}
	}
	return -1
}

// ParseHeader splits a --otlp-header value, K=V.
func ParseHeader(s string) (k, v string, err error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("OTLP header %q: want KEY=VALUE", s)
	}
	return k, strings.TrimSpace(v), nil
}

func (c *Config) queueBytes() int {
	if c.QueueBytes > 0 {
		return c.QueueBytes
	}
	return DefaultQueueBytes
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// maxPEM bounds a certificate or key file: far past any chain a
// collector is checked against, far below what would hold memory.
const maxPEM = 1 << 20

// checkEnvFiles refuses a certificate or key file an OTEL_* variable
// names that the exporters could not read whole, which they read
// whatever the scheme and the TLS flags (os.ReadFile): one that is no
// regular file (a FIFO with no writer holds the open, and once with it,
// forever; /dev/zero never ends) or past maxPEM. One that is not there
// is left to the exporters (and to checkEnvTLS where it is used).
func checkEnvFiles() error {
	for _, signal := range []string{"", "LOGS_", "METRICS_"} {
		for _, v := range []string{"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
			k := "OTEL_EXPORTER_OTLP_" + signal + v
			f := os.Getenv(k)
			if f == "" {
				continue
			}
			st, err := os.Stat(f)
			if err != nil {
				continue
			}
			if err := pemFile(f, st); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	return nil
}

// pemFile says why the file at name, st its stat, is no PEM file to read.
func pemFile(name string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: it is %s, not a regular file; refusing to read it", name, fileKind(st.Mode()))
	}
	if st.Size() > maxPEM {
		return fmt.Errorf("%s: %d bytes, larger than a PEM file (at most %d)", name, st.Size(), maxPEM)
	}
	return nil
}

// fileKind is "a FIFO", "a directory": a file that is not regular.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// readPEM reads a certificate or key file: opened without blocking (a
// FIFO's open waits for a writer), a regular file of at most maxPEM
// bytes.
func readPEM(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := pemFile(name, st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPEM+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPEM {
		return nil, fmt.Errorf("%s: larger than a PEM file (at most %d bytes)", name, maxPEM)
	}
	return b, nil
}

// loadKeyPair is tls.LoadX509KeyPair, its files read by readPEM.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := readPEM(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := readPEM(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}
