package otlp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/otelcoltest"
	"github.com/oncetool/once/trace"
	"golang.org/x/sys/unix"
)

// pki is a CA and, signed by it, a server certificate for 127.0.0.1 and a
// client certificate, as PEM files.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "once test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	var p pki
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// TestSinkTLS: an https:// endpoint is TLS, checked against --otlp-ca,
// with the client certificate the collector asks for, over HTTP and gRPC;
// the flag's endpoint wins over OTEL_EXPORTER_OTLP_ENDPOINT's, its scheme
// included.
func TestSinkTLS(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.node.name=node-7")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	p := newPKI(t)
	c := otelcoltest.StartTLS(t, otelcoltest.TLS{Cert: p.serverCert, Key: p.serverKey, ClientCA: p.ca})
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		ep := c.HTTP
		if protocol == ProtocolGRPC {
			ep = c.GRPC
		}
		s := newSink(t, ep, protocol, func(cfg *Config) {
			cfg.CA, cfg.ClientCert, cfg.ClientKey = p.ca, p.clientCert, p.clientKey
			cfg.FlushTimeout = 3 * time.Second
		})
		fs := testFindings()
		for i := range fs {
			_ = s.Finding(&fs[i], time.Now())
		}
		_ = s.Tick(&detect.Snapshot{Counters: trace.Counters{}}, true)
		if err := s.Close(nil); err != nil {
			t.Fatal(err)
		}
		if s.Sent() != uint64(len(fs)) || s.Dropped() != 0 {
			t.Errorf("%s over TLS: sent %d, dropped %d; want %d sent", protocol, s.Sent(), s.Dropped(), len(fs))
		}
	}
	if got := len(c.Logs(t)); got != 2*len(testFindings()) {
		t.Errorf("the collector got %d records over TLS, want %d", got, 2*len(testFindings()))
	}

	// Without the client certificate the collector refuses: nothing
	// gets through, and all of it is counted.
	s := newSink(t, c.HTTP, ProtocolHTTP, func(cfg *Config) {
		cfg.CA = p.ca
		cfg.FlushTimeout = time.Second
	})
	fs := testFindings()
	for i := range fs {
		_ = s.Finding(&fs[i], time.Now())
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	if s.Sent() != 0 || s.Dropped() < uint64(len(fs)) {
		t.Errorf("without the client certificate: sent %d, dropped %d; want none sent, %d dropped", s.Sent(), s.Dropped(), len(fs))
	}

	// Without TLS flags, an https endpoint's certificates are the
	// environment's, which the exporters read.
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", p.ca)
	t.Setenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", p.clientCert)
	t.Setenv("OTEL_EXPORTER_OTLP_CLIENT_KEY", p.clientKey)
	s = newSink(t, c.HTTP, ProtocolHTTP, func(cfg *Config) { cfg.FlushTimeout = 3 * time.Second })
	for i := range fs {
		_ = s.Finding(&fs[i], time.Now())
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	if s.Sent() != uint64(len(fs)) || s.Dropped() != 0 {
		t.Errorf("with the environment's certificates: sent %d, dropped %d; want %d sent", s.Sent(), s.Dropped(), len(fs))
	}

	// TLS flags with a plain-text endpoint: refused, not ignored.
	if err := (&Config{Endpoint: "http://127.0.0.1:1", CA: p.ca}).Check(); err == nil || !strings.Contains(err.Error(), "https://") {
		t.Errorf("--otlp-ca with http://: %v, want an error saying https://", err)
	}
}

// TestConfigCheckEnvTLS: for an https endpoint without TLS flags, the
// certificate files the variables name must be there (the SDK would print
// a line and go on with the system's roots, every handshake then failing);
// with a TLS flag, or over http, they are not read.
func TestConfigCheckEnvTLS(t *testing.T) {
	p := newPKI(t)
	vars := []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY"}
	for _, tc := range []struct {
		cfg  Config
		env  map[string]string
		want string
	}{
		{Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": p.ca}, ""},
		{Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem"},
		{Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE": p.clientKey}, "no PEM certificate"},
		{Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": p.clientCert, "OTEL_EXPORTER_OTLP_CLIENT_KEY": p.clientKey}, ""},
		{Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": p.clientCert}, "go together"},
		{Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": p.clientCert, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": p.serverKey}, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE"},
		{Config{Endpoint: "https://x:1", CA: p.ca}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, ""},
		{Config{Endpoint: "http://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, ""},
	} {
		for _, k := range vars {
			t.Setenv(k, "")
		}
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		err := tc.cfg.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.cfg.Endpoint, tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: error %v, want one saying %q", tc.cfg.Endpoint, tc.env, err, tc.want)
		}
	}
}

// TestConfigCheckPEMFiles: a certificate or key file, a flag's or a
// variable's, that is no regular file is refused, never read: a FIFO
// with no writer held once in its open(2) forever (SIGTERM caught, only
// SIGKILL ended it), the exporters reading the variables' files over
// http:// or beside a TLS flag too; /dev/zero never ends. A regular
// file past any PEM's size is refused before it is read whole.
func TestConfigCheckPEMFiles(t *testing.T) {
	p := newPKI(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.pem")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.pem")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 64<<20); err != nil {
		t.Fatal(err)
	}
	vars := []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY"}
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want string
	}{
		{"--otlp-ca a FIFO", Config{Endpoint: "https://x:1", CA: fifo}, nil, "OTLP CA: " + fifo + ": it is a FIFO, not a regular file"},
		{"--otlp-ca /dev/zero", Config{Endpoint: "https://x:1", CA: "/dev/zero"}, nil, "OTLP CA: /dev/zero: it is a character device, not a regular file"},
		{"--otlp-ca huge", Config{Endpoint: "https://x:1", CA: huge}, nil, "larger than a PEM file"},
		{"--otlp-client-cert a FIFO", Config{Endpoint: "https://x:1", ClientCert: fifo, ClientKey: p.clientKey}, nil, "it is a FIFO"},
		{"--otlp-client-key a FIFO", Config{Endpoint: "https://x:1", ClientCert: p.clientCert, ClientKey: fifo}, nil, "it is a FIFO"},
		{"variable a FIFO, https", Config{Endpoint: "https://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": fifo}, "OTEL_EXPORTER_OTLP_CERTIFICATE: " + fifo + ": it is a FIFO"},
		{"variable a FIFO, http", Config{Endpoint: "http://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": fifo}, "OTEL_EXPORTER_OTLP_CERTIFICATE: " + fifo + ": it is a FIFO"},
		{"variable a FIFO beside --otlp-ca", Config{Endpoint: "https://x:1", CA: p.ca}, map[string]string{"OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE": fifo}, "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE"},
		{"client key variable /dev/zero, http", Config{Endpoint: "http://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": p.clientCert, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": "/dev/zero"}, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY: /dev/zero: it is a character device"},
		{"variable huge, http", Config{Endpoint: "http://x:1"}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": huge}, "larger than a PEM file"},
		// Good files still pass.
		{"good files", Config{Endpoint: "https://x:1", CA: p.ca, ClientCert: p.clientCert, ClientKey: p.clientKey}, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": p.ca}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range vars {
				t.Setenv(k, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			done := make(chan error, 1)
			go func() { done <- tc.cfg.Check() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				// Unblock the open so that the goroutine ends.
				if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatalf("Check hung on a file")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
