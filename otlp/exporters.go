package otlp

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"path"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/credentials"
)

// exportTimeout bounds one export attempt (the specification's default
// OTEL_EXPORTER_OTLP_TIMEOUT): a collector that takes the connection and
// never answers costs that long, not a stuck sender.
const exportTimeout = 10 * time.Second

// sdkRetry is the exporters' own retry, for the answers that ask for one
// (429, 503, gRPC Unavailable): short, since the queue retries the batch
// again after it, with its own backoff.
var sdkRetry = struct {
	first, max, elapsed time.Duration
}{500 * time.Millisecond, 5 * time.Second, 30 * time.Second}

// exporters makes the log and metric exporters of c. What the flags give
// is passed as options, which win over the OTEL_EXPORTER_OTLP_*
// variables the exporters read; so do the endpoint (--otlp, over any
// signal's own _ENDPOINT variable) and the timeout (exportTimeout, over
// _TIMEOUT), always given. What they don't give (compression, the
// headers and an https endpoint's certificates without their flags) the
// variables still set. Each signal has its protocol: the flag's, else its
// own variable's or the shared one's.
func (c *Config) exporters(ctx context.Context) (sdklog.Exporter, sdkmetric.Exporter, error) {
	u, err := c.endpoint()
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	// The URL, not the host alone: its scheme sets the exporters'
	// security (http:// plain text, https:// TLS) over whatever an
	// OTEL_EXPORTER_OTLP_ENDPOINT of the environment implies. Without
	// TLS flags an https endpoint's certificates are the variables'
	// (OTEL_EXPORTER_OTLP_CERTIFICATE and the client's), else the
	// system's.
	le, err := c.logExporter(ctx, u, tlsCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP logs exporter: %w", err)
	}
	me, err := c.metricExporter(ctx, u, tlsCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP metrics exporter: %w", err)
	}
	return le, me, nil
}

// signalURL is the endpoint u, a base URL as OTEL_EXPORTER_OTLP_ENDPOINT,
// with a signal's path (v1/logs) appended: OTLP/HTTP's.
func signalURL(u *url.URL, p string) string {
	v := *u
	v.Path = path.Join("/", u.Path, p)
	return v.String()
}

func (c *Config) logExporter(ctx context.Context, u *url.URL, tlsCfg *tls.Config) (sdklog.Exporter, error) {
	if c.protocolOf("LOGS") == ProtocolGRPC {
		o := []otlploggrpc.Option{otlploggrpc.WithEndpointURL(u.String()), otlploggrpc.WithTimeout(exportTimeout),
			otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
		if tlsCfg != nil {
			o = append(o, otlploggrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
		}
		if c.Headers != nil {
			o = append(o, otlploggrpc.WithHeaders(c.Headers))
		}
		return otlploggrpc.New(ctx, o...)
	}
	o := []otlploghttp.Option{otlploghttp.WithEndpointURL(signalURL(u, "v1/logs")), otlploghttp.WithTimeout(exportTimeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
	if tlsCfg != nil {
		o = append(o, otlploghttp.WithTLSClientConfig(tlsCfg))
	}
	if c.Headers != nil {
		o = append(o, otlploghttp.WithHeaders(c.Headers))
	}
	return otlploghttp.New(ctx, o...)
}

func (c *Config) metricExporter(ctx context.Context, u *url.URL, tlsCfg *tls.Config) (sdkmetric.Exporter, error) {
	if c.protocolOf("METRICS") == ProtocolGRPC {
		o := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(u.String()), otlpmetricgrpc.WithTimeout(exportTimeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
		if tlsCfg != nil {
			o = append(o, otlpmetricgrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
		}
		if c.Headers != nil {
			o = append(o, otlpmetricgrpc.WithHeaders(c.Headers))
		}
		return otlpmetricgrpc.New(ctx, o...)
	}
	o := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(signalURL(u, "v1/metrics")), otlpmetrichttp.WithTimeout(exportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
	if tlsCfg != nil {
		o = append(o, otlpmetrichttp.WithTLSClientConfig(tlsCfg))
	}
	if c.Headers != nil {
		o = append(o, otlpmetrichttp.WithHeaders(c.Headers))
	}
	return otlpmetrichttp.New(ctx, o...)
}
