package otlp

import (
	"context"
	"crypto/tls"
	"fmt"
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
// variables the exporters read; what they don't give (compression, a
// signal's own endpoint, the timeout) the variables still set.
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
	// OTEL_EXPORTER_OTLP_ENDPOINT of the environment implies.
	if u.Scheme == "https" && tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if u.Scheme == "http" {
		tlsCfg = nil
	}
	if c.protocol() == ProtocolGRPC {
		lo := []otlploggrpc.Option{otlploggrpc.WithEndpointURL(u.String()), otlploggrpc.WithTimeout(exportTimeout),
			otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
		mo := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(u.String()), otlpmetricgrpc.WithTimeout(exportTimeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
		if tlsCfg != nil {
			lo = append(lo, otlploggrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
			mo = append(mo, otlpmetricgrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
		}
		if c.Headers != nil {
			lo, mo = append(lo, otlploggrpc.WithHeaders(c.Headers)), append(mo, otlpmetricgrpc.WithHeaders(c.Headers))
		}
		le, err := otlploggrpc.New(ctx, lo...)
		if err != nil {
			return nil, nil, fmt.Errorf("OTLP logs exporter: %w", err)
		}
		me, err := otlpmetricgrpc.New(ctx, mo...)
		if err != nil {
			return nil, nil, fmt.Errorf("OTLP metrics exporter: %w", err)
		}
		return le, me, nil
	}
	// The endpoint is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: each
	// signal's path is appended to it.
	signal := func(p string) string {
		v := *u
		v.Path = path.Join("/", u.Path, p)
		return v.String()
	}
	lo := []otlploghttp.Option{otlploghttp.WithEndpointURL(signal("v1/logs")), otlploghttp.WithTimeout(exportTimeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
	mo := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(signal("v1/metrics")), otlpmetrichttp.WithTimeout(exportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: sdkRetry.first, MaxInterval: sdkRetry.max, MaxElapsedTime: sdkRetry.elapsed})}
	if tlsCfg != nil {
		lo, mo = append(lo, otlploghttp.WithTLSClientConfig(tlsCfg)), append(mo, otlpmetrichttp.WithTLSClientConfig(tlsCfg))
	}
	if c.Headers != nil {
		lo, mo = append(lo, otlploghttp.WithHeaders(c.Headers)), append(mo, otlpmetrichttp.WithHeaders(c.Headers))
	}
	le, err := otlploghttp.New(ctx, lo...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP logs exporter: %w", err)
	}
	me, err := otlpmetrichttp.New(ctx, mo...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP metrics exporter: %w", err)
	}
	return le, me, nil
}
