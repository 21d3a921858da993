package deploy

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/trace"
)

// exportedSeries is every metric once watch --metrics exports, with its
// label names: read from the exporter itself, fed one of each event.
func exportedSeries(t *testing.T) map[string]map[string]bool {
	t.Helper()
	e := metrics.New(10)
	w := metrics.Who{Comm: "cat", Namespace: "ns", Pod: "p", Container: "c"}
	e.Open(w, false)
	e.Open(w, true)
	e.Exec(w, false)
	e.Exec(w, true)
	e.DuplicateOpen(w)
	e.ExecProbes(w, 1, 1000)
	e.SetCounters(&trace.Counters{DroppedEvents: 1})
	e.SetProcesses(1)
	e.SetProgress(progress{})
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for name, f := range fams {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		out[name] = labels
	}
	return out
}

// progress is a reader's heartbeat, for the metrics it exports.
type progress struct{}

func (progress) LastProgress() time.Time { return time.Now() }
func (progress) EventsRead() uint64      { return 0 }
func (progress) Stalls() uint64          { return 0 }

var (
	metricName = regexp.MustCompile(`\bonce_[a-z_]+`)
	byClause   = regexp.MustCompile(`by \(([^)]*)\)`)
	matchers   = regexp.MustCompile(`\{([^}]*)\}`)
	matcher    = regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	legendVar  = regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`)
)

// TestDashboard: every query of the Grafana dashboard names metrics and
// labels once exports (or the instance label Prometheus adds), and
// every legend a label its query keeps.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	series := exportedSeries(t)
	check := func(where, expr string) (kept []string) {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q names no once metric", where, expr)
		}
		known := map[string]bool{"instance": true, "job": true}
		for _, n := range names {
			labels, ok := series[n]
			if !ok {
				t.Errorf("%s: %s is not a metric once exports", where, n)
			}
			for l := range labels {
				known[l] = true
			}
		}
		var used []string
		for _, m := range matchers.FindAllStringSubmatch(expr, -1) {
			for _, mm := range matcher.FindAllStringSubmatch(m[1], -1) {
				used = append(used, mm[1])
			}
		}
		for _, b := range byClause.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(b[1], ",") {
				l = strings.TrimSpace(l)
				used = append(used, l)
				kept = append(kept, l)
			}
		}
		for _, l := range used {
			if !known[l] {
				t.Errorf("%s: label %q is not one of %v's", where, l, names)
			}
		}
		return kept
	}
	targets := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			targets++
			kept := check(p.Title, tg.Expr)
			for _, v := range legendVar.FindAllStringSubmatch(tg.Legend, -1) {
				if !strings.Contains(strings.Join(kept, ","), v[1]) {
					t.Errorf("%s: legend %q uses %s, which the query sums away", p.Title, tg.Legend, v[1])
				}
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			check("variable "+v.Name, v.Definition)
		}
	}
	if d.UID == "" || targets < 8 {
		t.Errorf("dashboard uid %q with %d queries: want a uid and the 8 panels' queries", d.UID, targets)
	}
}
