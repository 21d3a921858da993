package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// collectorConfig is the part of an OpenTelemetry Collector configuration
// the checks read.
type collectorConfig struct {
	Receivers  map[string]any `yaml:"receivers"`
	Processors map[string]any `yaml:"processors"`
	Exporters  map[string]any `yaml:"exporters"`
	Service    struct {
		Pipelines map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

// TestCollectorConfigs: the node agent's and the gateway's configurations
// parse, every pipeline names components they define, and each does its
// part: the agent takes OTLP, names pods and batches, out to the gateway;
// the gateway writes to ClickHouse.
func TestCollectorConfigs(t *testing.T) {
	for _, tc := range []struct {
		file      string
		processor []string // in the logs pipeline, in this order
		exporter  string
	}{
		{"agent.yaml", []string{"memory_limiter", "groupbyattrs/pod", "k8sattributes", "batch"}, "otlp/gateway"},
		{"gateway.yaml", []string{"memory_limiter", "batch"}, "clickhouse"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("otelcol", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var c collectorConfig
			if err := yaml.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if _, ok := c.Receivers["otlp"]; !ok {
				t.Error("no otlp receiver")
			}
			for name, p := range c.Service.Pipelines {
				for _, r := range p.Receivers {
					if _, ok := c.Receivers[r]; !ok {
						t.Errorf("pipeline %s: receiver %s not defined", name, r)
					}
				}
				for _, r := range p.Processors {
					if _, ok := c.Processors[r]; !ok {
						t.Errorf("pipeline %s: processor %s not defined", name, r)
					}
				}
				for _, r := range p.Exporters {
					if _, ok := c.Exporters[r]; !ok {
						t.Errorf("pipeline %s: exporter %s not defined", name, r)
					}
				}
			}
			logs := c.Service.Pipelines["logs"]
			if !slices.Equal(logs.Processors, tc.processor) || !slices.Contains(logs.Exporters, tc.exporter) {
				t.Errorf("logs pipeline %+v: want processors %v and exporter %s", logs, tc.processor, tc.exporter)
			}
			if _, ok := c.Service.Pipelines["metrics"]; !ok {
				t.Error("no metrics pipeline: the counters go nowhere")
			}
		})
	}
}

// TestDaemonSetOTLP: once's DaemonSet sends to the node agent on its node
// and names the node on every record.
func TestDaemonSetOTLP(t *testing.T) {
	b, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
						Env  []struct {
							Name      string `yaml:"name"`
							Value     string `yaml:"value"`
							ValueFrom *struct {
								FieldRef struct {
									FieldPath string `yaml:"fieldPath"`
								} `yaml:"fieldRef"`
							} `yaml:"valueFrom"`
						} `yaml:"env"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatal(err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if v, ok := flagValue(c.Args, "otlp"); !ok || v != "$(OTEL_EXPORTER_OTLP_ENDPOINT)" {
		t.Errorf("args: --otlp %q, want $(OTEL_EXPORTER_OTLP_ENDPOINT)", v)
	}
	env := map[string]string{}
	from := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			from[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if from["NODE_IP"] != "status.hostIP" || from["NODE_NAME"] != "spec.nodeName" {
		t.Errorf("downward API: NODE_IP from %q, NODE_NAME from %q", from["NODE_IP"], from["NODE_NAME"])
	}
	if !regexp.MustCompile(`^http://\$\(NODE_IP\):4318$`).MatchString(env["OTEL_EXPORTER_OTLP_ENDPOINT"]) {
		t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q: want the agent's port on this node", env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}
	if !strings.Contains(env["OTEL_RESOURCE_ATTRIBUTES"], "k8s.node.name=$(NODE_NAME)") {
		t.Errorf("OTEL_RESOURCE_ATTRIBUTES %q: want k8s.node.name=$(NODE_NAME)", env["OTEL_RESOURCE_ATTRIBUTES"])
	}
	// Kubernetes expands $(VAR) only for variables defined before.
	order := []string{}
	for _, e := range c.Env {
		order = append(order, e.Name)
	}
	if slices.Index(order, "NODE_IP") > slices.Index(order, "OTEL_EXPORTER_OTLP_ENDPOINT") ||
		slices.Index(order, "NODE_NAME") > slices.Index(order, "OTEL_RESOURCE_ATTRIBUTES") {
		t.Errorf("env order %v: a variable must come before the ones that use it", order)
	}
}
