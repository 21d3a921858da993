package otlp

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// TestQueriesReadEmittedAttributes: every record attribute the ClickHouse
// queries of deploy/ read (LogAttributes['...']) is one a finding's record
// carries: a renamed attribute breaks its query here, not in a fleet.
func TestQueriesReadEmittedAttributes(t *testing.T) {
	emitted := map[string]bool{}
	fs := testFindings()
	for i := range fs {
		r := record(&fs[i], time.Now(), stacks{}, 1)
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			emitted[string(kv.Key)] = true
			return true
		})
	}
	// Moved to the resource by the node agent (deploy/otelcol/agent.yaml).
	for _, k := range []string{"container.id", "container.name", "k8s.pod.name", "k8s.pod.uid", "k8s.namespace.name"} {
		if !emitted[k] {
			t.Errorf("the agent's groupbyattrs moves %s, which no record carries", k)
		}
	}
	names, err := filepath.Glob("../deploy/clickhouse/*.sql")
	if err != nil || len(names) < 3 {
		t.Fatalf("queries: %v %v", names, err)
	}
	re := regexp.MustCompile(`LogAttributes\['([^']+)'\]`)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if !emitted[m[1]] {
				t.Errorf("%s reads LogAttributes['%s'], which no record carries", filepath.Base(n), m[1])
			}
		}
	}
}
