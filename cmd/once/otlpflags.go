package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/otlp"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// otlpFlags is --otlp and its companions, on watch, run, check and
// compare.
type otlpFlags struct {
	endpoint, protocol string
	headers            cliflag.Strings
	ca, cert, key      string
	cfg                otlp.Config // check's
}

func (o *otlpFlags) register(fs *flag.FlagSet) {
	cliflag.NonEmpty(fs, &o.endpoint, "otlp", "", "send every finding (a log record) and every counter (metrics) to the OpenTelemetry collector at `URL`: http://HOST:PORT plain text, https://HOST:PORT TLS (run, check, compare: once, at the end)")
	cliflag.NonEmpty(fs, &o.protocol, "otlp-protocol", "", "OTLP transport: `http/protobuf` (default, or OTEL_EXPORTER_OTLP_PROTOCOL) or grpc")
	fs.Var(&o.headers, "otlp-header", "send header `K=V` with every export (repeatable; replaces OTEL_EXPORTER_OTLP_HEADERS)")
	cliflag.NonEmpty(fs, &o.ca, "otlp-ca", "", "check the collector's certificate against the CA in `FILE` (PEM; default: the system's)")
	cliflag.NonEmpty(fs, &o.cert, "otlp-client-cert", "", "present the client certificate in `FILE` (PEM; with --otlp-client-key)")
	cliflag.NonEmpty(fs, &o.key, "otlp-client-key", "", "the client certificate's key, `FILE` (PEM)")
}

// check validates the flags before anything runs: a usage error (exit 2)
// in one line.
func (o *otlpFlags) check(cmd string) error {
	if o.endpoint == "" {
		if o.protocol != "" || len(o.headers) > 0 || o.ca != "" || o.cert != "" || o.key != "" {
			return usagef("%s: the --otlp-* flags need --otlp URL", cmd)
		}
		return nil
	}
	o.cfg = otlp.Config{Endpoint: o.endpoint, Protocol: o.protocol, CA: o.ca, ClientCert: o.cert, ClientKey: o.key,
		WallOffset: collector.WallOffset(), Version: version}
	for _, h := range o.headers {
		k, v, err := otlp.ParseHeader(h)
		if err != nil {
			return usagef("%s: --otlp-header: %v", cmd, err)
		}
		if o.cfg.Headers == nil {
			o.cfg.Headers = map[string]string{}
		}
		o.cfg.Headers[k] = v
	}
	if err := o.cfg.Check(); err != nil {
		return usagef("%s: --otlp: %s", cmd, report.Inert(err.Error()))
	}
	return nil
}

// sink is the OTLP sink of the checked flags, nil without --otlp; its
// warnings go to stderr. stacks names the call sites (watch --stacks);
// flush bounds the wait for the collector at the end (0: the default).
func (o *otlpFlags) sink(stacks trace.StackSource, stderr io.Writer, flush time.Duration) (*otlp.Sink, error) {
	if o.endpoint == "" {
		return nil, nil
	}
	cfg := o.cfg
	cfg.Stacks, cfg.FlushTimeout = stacks, flush
	cfg.Warn = func(s string) { fmt.Fprintln(stderr, report.Inert(s)) }
	s, err := otlp.New(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	return s, nil
}

// sendCompare sends compare's traced runs, each finding marked with its
// side, and the after side's counters (sent last); what was not delivered
// is told on stderr, compare's report having no counters.
func (o *otlpFlags) sendCompare(stderr io.Writer, sides ...compare.Side) error {
	s, err := o.sink(nil, stderr, 0)
	if s == nil || err != nil {
		return err
	}
	for _, side := range sides {
		if side.Trace != nil {
			s.Result(side.Trace, side.Label)
		}
	}
	return s.Close(nil)
}
