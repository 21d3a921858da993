package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// jsonFileConfig is the jsonfile exporter's configuration: the file it
// appends one OTLP JSON line per export request to.
type jsonFileConfig struct {
	Path string `mapstructure:"path"`
}

func (c *jsonFileConfig) Validate() error {
	if c.Path == "" {
		return errors.New("jsonfile: path is required")
	}
	return nil
}

var jsonFileType = component.MustNewType("jsonfile")

func newJSONFileFactory() exporter.Factory {
	return exporter.NewFactory(jsonFileType,
		func() component.Config { return &jsonFileConfig{} },
		exporter.WithLogs(func(_ context.Context, _ exporter.Settings, cfg component.Config) (exporter.Logs, error) {
			return openJSONFile(cfg.(*jsonFileConfig).Path)
		}, component.StabilityLevelDevelopment),
		exporter.WithMetrics(func(_ context.Context, _ exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
			return openJSONFile(cfg.(*jsonFileConfig).Path)
		}, component.StabilityLevelDevelopment))
}

// jsonFile writes each request as one line: the logs and the metrics of a
// pipeline share the file, each line a whole OTLP JSON export request
// (resourceLogs or resourceMetrics), written and synced before the
// receiver answers, so that what the file holds is what was acknowledged.
type jsonFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// files shares one jsonFile per path between the pipelines.
var (
	filesMu sync.Mutex
	files   = map[string]*jsonFile{}
)

func openJSONFile(path string) (*jsonFile, error) {
	filesMu.Lock()
	defer filesMu.Unlock()
	if j := files[path]; j != nil {
		return j, nil
	}
	j := &jsonFile{path: path}
	files[path] = j
	return j, nil
}

func (j *jsonFile) Start(context.Context, component.Host) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		return nil
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	j.f = f
	return nil
}

func (j *jsonFile) Shutdown(context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

func (j *jsonFile) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (j *jsonFile) write(b []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("jsonfile: not started")
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return j.f.Sync()
}

func (j *jsonFile) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	if err != nil {
		return err
	}
	return j.write(withMetadata(ctx, b))
}

func (j *jsonFile) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	if err != nil {
		return err
	}
	return j.write(withMetadata(ctx, b))
}

// withMetadata adds the request's headers (the receiver's
// include_metadata) to the line as "metadata": what --otlp-header sent.
func withMetadata(ctx context.Context, line []byte) []byte {
	info := client.FromContext(ctx)
	md := map[string][]string{}
	for k := range info.Metadata.Keys() {
		md[k] = info.Metadata.Get(k)
	}
	if len(md) == 0 || len(line) <= 2 || line[0] != '{' {
		return line
	}
	m, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return line
	}
	// {"metadata":{...},<the request's fields>}
	out := append(m[:len(m)-1], ',')
	return append(out, line[1:]...)
}
