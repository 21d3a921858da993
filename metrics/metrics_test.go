package metrics

import (
	"context"
	"errors"
	"fmt"
	"github.com/oncetool/once/trace"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs /metrics from h and returns every sample as
// `name{l1="v1",l2="v2"}` (labels sorted) → value, and the raw body.
func scrape(t *testing.T, h http.Handler) (map[string]float64, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	return parse(t, body), body
}

func parse(t *testing.T, body string) map[string]float64 {
	t.Helper()
	if !utf8.ValidString(body) {
		t.Fatalf("exposition is not valid UTF-8")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	out := make(map[string]float64)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				v = m.GetUntyped().GetValue()
			default:
				continue // summaries/histograms of the Go collector
			}
			k := sampleKey(name, m.GetLabel())
			if _, dup := out[k]; dup {
				t.Fatalf("duplicate sample %s", k)
			}
			out[k] = v
		}
	}
	return out
}

func sampleKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	ls := make([]string, 0, len(labels))
	for _, l := range labels {
		// As in Prometheus, a label with an empty value is no label:
		// processes outside containers have no namespace, pod or
		// container.
		if l.GetValue() != "" {
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
	}
	if len(ls) == 0 {
		return name
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// onceSamples keeps the once_ samples.
func onceSamples(all map[string]float64) map[string]float64 {
	out := make(map[string]float64)
	for k, v := range all {
		if strings.HasPrefix(k, "once_") {
			out[k] = v
		}
	}
	return out
}

// commSeries returns the seven per-comm samples of label l with the given
// values, for building expectations.
func commSeries(want map[string]float64, l string, openOK, openFailed, execOK, execFailed, dup, probes, wasted float64) {
	q := fmt.Sprintf("%q", l)
	want[`once_opens_total{comm=`+q+`,result="ok"}`] = openOK
	want[`once_opens_total{comm=`+q+`,result="failed"}`] = openFailed
	want[`once_execs_total{comm=`+q+`,result="ok"}`] = execOK
	want[`once_execs_total{comm=`+q+`,result="failed"}`] = execFailed
	want[`once_duplicate_opens_total{comm=`+q+`}`] = dup
	want[`once_exec_probes_failed_total{comm=`+q+`}`] = probes
	want[`once_exec_probe_wasted_seconds_total{comm=`+q+`}`] = wasted
	want[`once_lookups_total{comm=`+q+`,result="ok"}`] = 0
	want[`once_lookups_total{comm=`+q+`,result="failed"}`] = 0
}

// globalSeries adds the label-less and loss samples.
func globalSeries(want map[string]float64, processed, processes, evicted float64, loss map[string]float64) {
	// Every counter of trace.Shown is exported, at 0 until set; the
	// names below are the contract ones, set after.
	for _, c := range shownCounters() {
		want[c.name] = 0
	}
	want["once_events_processed_total"] = processed
	want["once_processes"] = processes
	want["once_processes_evicted_total"] = evicted
	want["once_opens_untimed_total"] = 0
	want["once_compat_images_total"] = 0
	want["once_files_capped_total"] = 0
	want["once_detail_dropped_total"] = 0
	want["once_comm_labels_folded_total"] = 0
	want["once_workload_labels_folded_total"] = 0
	want["once_label_sets_folded_total"] = 0
	want["once_output_records_dropped_total"] = 0
	want["once_output_bytes_dropped_total"] = 0
	for _, k := range lossKinds {
		want[`once_events_lost_total{kind="`+k+`"}`] = loss[k]
	}
}

func diff(t *testing.T, got, want map[string]float64) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			t.Errorf("missing %s (want %v)", k, w)
		case !wok:
			t.Errorf("unexpected %s = %v", k, g)
		case g != w:
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

func TestScrapeExactValues(t *testing.T) {
	e := New(0)
	all, _ := scrape(t, e.Handler())
	want := map[string]float64{}
	globalSeries(want, 0, 0, 0, nil)
	diff(t, onceSamples(all), want)
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := all[name]; !ok {
			t.Errorf("standard metric %s missing", name)
		}
	}

	for range 3 {
		e.Open(Who{Comm: "make"}, false)
	}
	e.Open(Who{Comm: "make"}, true)
	e.Open(Who{Comm: "cc1"}, true)
	e.Exec(Who{Comm: "make"}, false)
	e.Exec(Who{Comm: "sh"}, true)
	e.Exec(Who{Comm: "sh"}, true)
	e.DuplicateOpen(Who{Comm: "make"})
	e.DuplicateOpen(Who{Comm: "make"})
	e.DuplicateOpen(Who{Comm: "cc1"})
	e.ExecProbes(Who{Comm: "sh"}, 3, 1_500_000_000)
	e.ExecProbes(Who{Comm: "sh"}, 1, 250_000_000)
	e.ExecProbes(Who{Comm: "sh"}, -1, 0) // ignored
	e.SetLoss("ringbuf_full", 7)
	e.SetLoss("decode_error", 2)
	e.SetProcessed(1234)
	e.SetProcesses(42)
	e.SetProcesses(40)
	e.SetEvicted(5)
	e.SetOpensUntimed(9)
	e.SetCompatImages(2)
	e.Lookup(Who{Comm: "make"}, true)
	e.Lookup(Who{Comm: "make"}, false)
	e.Lookups(Who{Comm: "make"}, 5)
	e.Finding(Who{Comm: "sh"}, trace.KindFailedStatProbes, 6, 2_000_000_000)
	e.Finding(Who{Comm: "sh"}, trace.KindFailedStatProbes, 1, 500_000_000)
	e.Finding(Who{Comm: "sh"}, "not_a_kind", 9, 9) // not exported

	all, body := scrape(t, e.Handler())
	want = map[string]float64{}
	globalSeries(want, 1234, 40, 5, map[string]float64{"ringbuf_full": 7, "decode_error": 2})
	want["once_opens_untimed_total"] = 9
	want["once_compat_images_total"] = 2
	commSeries(want, "make", 3, 1, 1, 0, 2, 0, 0)
	commSeries(want, "cc1", 0, 1, 0, 0, 1, 0, 0)
	commSeries(want, "sh", 0, 0, 0, 2, 0, 4, 1.75)
	want[`once_lookups_total{comm="make",result="ok"}`] = 6
	want[`once_lookups_total{comm="make",result="failed"}`] = 1
	want[`once_findings_total{comm="sh",kind="failed_stat_probes"}`] = 2
	want[`once_avoidable_calls_total{comm="sh",kind="failed_stat_probes"}`] = 7
	want[`once_wasted_seconds_total{comm="sh",kind="failed_stat_probes"}`] = 2.5
	diff(t, onceSamples(all), want)
	for _, line := range []string{
		"# TYPE once_opens_total counter",
		"# TYPE once_processes gauge",
		"# TYPE once_events_lost_total counter",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("exposition lacks %q", line)
		}
	}
}

func TestCardinalityCap(t *testing.T) {
	e := New(3)
	counts := map[string]int{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
	for _, c := range []string{"a", "b", "c", "d", "e"} {
		for range counts[c] {
			e.Open(Who{Comm: c}, false)
			e.DuplicateOpen(Who{Comm: c})
		}
	}
	// An admitted comm keeps its series after the cap is reached.
	e.Exec(Who{Comm: "a"}, false)
	e.Exec(Who{Comm: "e"}, true)

	all, _ := scrape(t, e.Handler())
	want := map[string]float64{}
	globalSeries(want, 0, 0, 0, nil)
	commSeries(want, "a", 1, 0, 1, 0, 1, 0, 0)
	commSeries(want, "b", 2, 0, 0, 0, 2, 0, 0)
	commSeries(want, "c", 3, 0, 0, 0, 3, 0, 0)
	commSeries(want, "other", 4+5, 0, 0, 1, 4+5, 0, 0)
	want["once_comm_labels_folded_total"] = 2 // d and e
	diff(t, onceSamples(all), want)
}

// workloadSeries is commSeries for a process in a container.
func workloadSeries(want map[string]float64, comm, ns, pod, ctr string, openOK, dup float64) {
	l := fmt.Sprintf("comm=%q,container=%q,namespace=%q,pod=%q", comm, ctr, ns, pod)
	want[`once_opens_total{`+l+`,result="ok"}`] = openOK
	want[`once_opens_total{`+l+`,result="failed"}`] = 0
	want[`once_execs_total{`+l+`,result="ok"}`] = 0
	want[`once_execs_total{`+l+`,result="failed"}`] = 0
	want[`once_duplicate_opens_total{`+l+`}`] = dup
	want[`once_exec_probes_failed_total{`+l+`}`] = 0
	want[`once_exec_probe_wasted_seconds_total{`+l+`}`] = 0
	want[`once_lookups_total{`+l+`,result="ok"}`] = 0
	want[`once_lookups_total{`+l+`,result="failed"}`] = 0
}

func TestWorkloadLabels(t *testing.T) {
	e := New(2)
	web := Who{Comm: "nginx", Namespace: "prod", Pod: "web-7d9f", Container: "nginx"}
	e.Open(web, false)
	e.Open(web, false)
	e.DuplicateOpen(web)
	e.Open(Who{Comm: "nginx"}, false) // the same comm on the host
	e.Open(Who{Comm: "sh", Namespace: "prod", Pod: "job-1", Container: "other"}, false)
	// A third workload is over the cap of 2: all three labels fold.
	e.Open(Who{Comm: "sh", Namespace: "dev", Pod: "x", Container: "y"}, false)
	// A name with a newline and bytes that are not UTF-8 is escaped.
	e.Open(Who{Comm: "a", Namespace: "prod", Pod: "job-1", Container: "other"}, false)

	all, body := scrape(t, e.Handler())
	want := map[string]float64{}
	globalSeries(want, 0, 0, 0, nil)
	workloadSeries(want, "nginx", "prod", "web-7d9f", "nginx", 2, 1)
	commSeries(want, "nginx", 1, 0, 0, 0, 0, 0, 0)
	workloadSeries(want, "sh", "prod", "job-1", "other_", 1, 0)
	workloadSeries(want, "sh", "other", "other", "other", 1, 0)
	// Past the two comms, "a" is counted under comm="other".
	workloadSeries(want, "other", "prod", "job-1", "other_", 1, 0)
	want["once_comm_labels_folded_total"] = 1
	want["once_workload_labels_folded_total"] = 1 // dev/x/y
	diff(t, onceSamples(all), want)
	if !strings.Contains(body, `once_duplicate_opens_total{comm="nginx",container="nginx",namespace="prod",pod="web-7d9f"} 1`) {
		t.Errorf("exposition lacks the pod's series:\n%s", body)
	}
}

func TestLabelValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"web-7d9f", "web-7d9f"},
		{"other", "other_"},
		{"a\nb", `a\x0ab`},
		{"\xff", `\xff`},
		{strings.Repeat("n", 300), strings.Repeat("n", maxWorkloadLen)},
	} {
		got := labelValue(tc.in)
		if got != tc.want {
			t.Errorf("labelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if len(got) > maxWorkloadLen+1 || !utf8.ValidString(got) {
			t.Errorf("labelValue(%q) = %q: not a bounded valid label", tc.in, got)
		}
	}
}

func TestSeriesBounded(t *testing.T) {
	e := New(3)
	// 3 comms x 3 workloads admitted, but at most 4*3 pairings.
	for _, c := range []string{"a", "b", "c"} {
		for _, p := range []string{"p", "q", "r"} {
			e.Open(Who{Comm: c, Namespace: "n", Pod: p, Container: "c"}, false)
		}
		e.Open(Who{Comm: c}, false)
	}
	all, _ := scrape(t, e.Handler())
	series := 0
	for k := range onceSamples(all) {
		if strings.HasPrefix(k, `once_duplicate_opens_total{`) {
			series++
		}
	}
	if series > 4*3 {
		t.Errorf("%d series of once_duplicate_opens_total, want at most %d", series, 4*3)
	}
	total := 0.0
	for k, v := range onceSamples(all) {
		if strings.HasPrefix(k, `once_opens_total{`) {
			total += v
		}
	}
	if total != 12 {
		t.Errorf("once_opens_total sums to %v, want 12: folding must not lose counts", total)
	}
}

// TestFoldedCountsDistinct: the folded counters count each distinct
// value once, however many events it makes, past the values they
// remember exactly too (a hostile comm's every open once counted as one
// more comm there).
func TestFoldedCountsDistinct(t *testing.T) {
	for _, tc := range []struct {
		name  string
		comms int // distinct comms past the one admitted
	}{
		{"exact", 100},
		{"past the exact set", maxFolded + 500},
		{"far past it", 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(1)
			e.Open(Who{Comm: "admitted"}, false)
			for round := 0; round < 3; round++ {
				for i := 0; i < tc.comms; i++ {
					e.Open(Who{Comm: fmt.Sprintf("c%d", i)}, false)
				}
			}
			for i := 0; i < 1000; i++ {
				e.Open(Who{Comm: "c0"}, true)
				e.Open(Who{Comm: fmt.Sprintf("c%d", tc.comms-1)}, true)
			}
			all, _ := scrape(t, e.Handler())
			got, want := all["once_comm_labels_folded_total"], float64(tc.comms)
			tol := 0.0
			if tc.comms > maxFolded {
				tol = 0.01 * want
			}
			if got < want-tol || got > want+tol {
				t.Errorf("once_comm_labels_folded_total = %v, want %v (within %v)", got, want, tol)
			}
			if n := all[`once_opens_total{comm="other",result="ok"}`]; n != float64(3*tc.comms) {
				t.Errorf(`once_opens_total{comm="other",result="ok"} = %v, want %v`, n, 3*tc.comms)
			}
		})
	}
}

// TestWorkloadFoldsCounted: a workload past the cap, and a pairing of an
// admitted comm and workload past the cap on series, are counted as the
// comms are, each distinct one once.
func TestWorkloadFoldsCounted(t *testing.T) {
	e := New(2)
	for round := 0; round < 3; round++ {
		for i := 0; i < 20; i++ {
			e.Open(Who{Comm: "a", Namespace: "ns", Pod: fmt.Sprintf("p%d", i), Container: "c"}, false)
		}
	}
	all, _ := scrape(t, e.Handler())
	if got := all["once_workload_labels_folded_total"]; got != 18 {
		t.Errorf("once_workload_labels_folded_total = %v, want 18 (p2 to p19)", got)
	}
	if got := all["once_label_sets_folded_total"]; got != 0 {
		t.Errorf("once_label_sets_folded_total = %v, want 0", got)
	}

	// One comm and one workload admitted: past 4 pairings the fifth
	// is counted under "other" for all four labels.
	e = New(1)
	w1 := Who{Comm: "a", Namespace: "n", Pod: "p", Container: "c"}
	for round := 0; round < 3; round++ {
		e.Open(w1, false)
		e.Open(Who{Comm: "a", Namespace: "n", Pod: "q", Container: "c"}, false) // workload folded
		e.Open(Who{Comm: "a"}, false)
		e.Open(Who{Comm: "b", Namespace: "n", Pod: "p", Container: "c"}, false) // comm folded
		e.Open(Who{Comm: "b"}, false)                                           // the fifth pairing
	}
	all, _ = scrape(t, e.Handler())
	for k, want := range map[string]float64{
		"once_comm_labels_folded_total":     1,
		"once_workload_labels_folded_total": 1,
		"once_label_sets_folded_total":      1,
		`once_opens_total{comm="other",container="other",namespace="other",pod="other",result="ok"}`: 3,
	} {
		if got := all[k]; got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
}

func TestCommNamedOther(t *testing.T) {
	e := New(2)
	e.Open(Who{Comm: "other"}, false)  // its own series, "other_"
	e.Open(Who{Comm: "other_"}, false) // "other__"
	e.Open(Who{Comm: "x"}, false)      // over the cap: comm="other"
	e.Open(Who{Comm: "other"}, true)

	all, _ := scrape(t, e.Handler())
	want := map[string]float64{}
	globalSeries(want, 0, 0, 0, nil)
	commSeries(want, "other_", 1, 1, 0, 0, 0, 0, 0)
	commSeries(want, "other__", 1, 0, 0, 0, 0, 0, 0)
	commSeries(want, "other", 1, 0, 0, 0, 0, 0, 0)
	want["once_comm_labels_folded_total"] = 1 // x
	diff(t, onceSamples(all), want)
}

func TestInvalidUTF8Comm(t *testing.T) {
	e := New(0)
	e.Open(Who{Comm: "\xff\xfebad"}, false)
	e.Open(Who{Comm: "a\nb\"c"}, true)
	e.DuplicateOpen(Who{Comm: "\xc3"}) // a cut-off two-byte sequence

	all, body := scrape(t, e.Handler()) // parse checks the body is valid UTF-8
	want := map[string]float64{}
	globalSeries(want, 0, 0, 0, nil)
	commSeries(want, `\xff\xfebad`, 1, 0, 0, 0, 0, 0, 0)
	commSeries(want, `a\x0ab"c`, 0, 1, 0, 0, 0, 0, 0)
	commSeries(want, `\xc3`, 0, 0, 0, 0, 1, 0, 0)
	diff(t, onceSamples(all), want)
	// In the exposition the label's backslashes are themselves escaped.
	if !strings.Contains(body, `once_opens_total{comm="\\xff\\xfebad",container="",namespace="",pod="",result="ok"} 1`) {
		t.Errorf("exposition lacks the escaped comm:\n%s", body)
	}
}

func TestCommLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bash", "bash"},
		{"kworker/0:1H", "kworker/0:1H"},
		{"with space", "with space"},
		{"héllo", "héllo"},
		{"日本語", "日本語"},
		{"", "_"},
		{"_", "__"},
		{"__", "___"},
		{"other", "other_"},
		{"other_", "other__"},
		{"Other", "Other"},
		{"others", "others"},
		{"_other", "_other"},
		{"other\x00junk", "other_"},
		{"abc\x00def", "abc"},
		{"0123456789abcdefghij", "0123456789abcde"}, // cut to 15 bytes
		{`a\b`, `a\x5cb`},
		{"\x7f", `\x7f`},
		{"\t", `\x09`},
		{"a\u202eb", `a\xe2\x80\xaeb`}, // right-to-left override
		{"\u0085", `\xc2\x85`},         // C1 control
		{"\xff", `\xff`},
		{"\xff\xff\xff\xff\xff", `\xff\xff\xff\xff`},           // cut at 16 bytes, between escapes
		{"ab\xff\xff\xff\xff", `ab\xff\xff\xff`},               // 14 bytes; one more escape would not fit
		{"abcdefghijklm\xff", `abcdefghijklm`},                 // escape does not fit
		{"abcdefghijkl\xff", `abcdefghijkl\xff`},               // exactly 16
		{"abcdefghijklmn\u00e9", "abcdefghijklmn"},             // 15-byte cut splits é, whose lead byte then would not fit
		{"abcdefghijk\u00e9\u00e9", "abcdefghijk\u00e9\u00e9"}, // 15 bytes, valid
	} {
		got := commLabel(tc.in)
		if got != tc.want {
			t.Errorf("commLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) || len(got) > maxLabelLen || got == "" || got == otherComm {
			t.Errorf("commLabel(%q) = %q: invalid label", tc.in, got)
		}
	}
}

func FuzzCommLabel(f *testing.F) {
	for _, s := range []string{"", "other", "\xff\xfe", "a\\b", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := commLabel(s)
		if !utf8.ValidString(got) || len(got) > maxLabelLen || got == "" || got == otherComm {
			t.Fatalf("commLabel(%q) = %q: invalid label", s, got)
		}
	})
}

func TestCountersNeverDecrease(t *testing.T) {
	e := New(0)
	type step struct {
		total uint64
		want  float64
	}
	steps := []step{
		{10, 10},
		{15, 15},
		{4, 19}, // smaller: a reset; the 4 new events are added
		{4, 19},
		{6, 21},
		{0, 21},
		{1, 22},
	}
	for i, s := range steps {
		e.SetLoss("ringbuf_full", s.total)
		e.SetLoss("tracked_full", s.total)
		e.SetProcessed(s.total)
		e.SetEvicted(s.total)
		all, _ := scrape(t, e.Handler())
		for _, k := range []string{
			`once_events_lost_total{kind="ringbuf_full"}`,
			`once_events_lost_total{kind="tracked_full"}`,
			"once_events_processed_total",
			"once_processes_evicted_total",
		} {
			if got := all[k]; got != s.want {
				t.Errorf("step %d (total %d): %s = %v, want %v", i, s.total, k, got, s.want)
			}
		}
		if got := all[`once_events_lost_total{kind="missed_enter"}`]; got != 0 {
			t.Errorf("untouched kind moved: %v", got)
		}
	}
}

func TestLossKindValidation(t *testing.T) {
	e := New(0)
	e.SetLoss("future_kind", 3)
	e.SetLoss("Bad Kind\xff", 2)
	e.SetLoss("", 1)
	e.SetLoss("", 5)
	all, _ := scrape(t, e.Handler())
	if got := all[`once_events_lost_total{kind="future_kind"}`]; got != 3 {
		t.Errorf("future_kind = %v, want 3", got)
	}
	if got := all[`once_events_lost_total{kind="invalid"}`]; got != 2+5 {
		t.Errorf("invalid = %v, want 7", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := New(5)
	var wg sync.WaitGroup
	const workers, per = 8, 500
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				comm := fmt.Sprintf("c%d", (w+i)%10)
				e.Open(Who{Comm: comm}, i%2 == 0)
				e.SetProcessed(uint64(i))
				e.SetProcesses(i)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			scrape(t, e.Handler())
		}
	}()
	wg.Wait()
	all, _ := scrape(t, e.Handler())
	var sum float64
	named := 0
	for k, v := range all {
		if strings.HasPrefix(k, "once_opens_total{") {
			sum += v
			if !strings.Contains(k, `comm="other"`) && strings.Contains(k, `result="ok"`) {
				named++
			}
		}
	}
	if sum != workers*per {
		t.Errorf("opens sum = %v, want %d", sum, workers*per)
	}
	if named != 5 {
		t.Errorf("%d named comms, want 5", named)
	}
}

func TestNormalizeAddr(t *testing.T) {
	for _, tc := range []struct {
		in       string
		allowAll bool
		want     string // "" means an error
	}{
		{"9469", false, "127.0.0.1:9469"},
		{"0", false, "127.0.0.1:0"},
		{"65535", false, "127.0.0.1:65535"},
		{"65536", false, ""},
		{"127.0.0.1:9469", false, "127.0.0.1:9469"},
		{"localhost:9469", false, "localhost:9469"},
		{"metrics.example.com:9469", false, "metrics.example.com:9469"},
		{"[::1]:9469", false, "[::1]:9469"},
		{"[fe80::1%eth0]:9469", false, "[fe80::1%eth0]:9469"},
		{":9469", false, ""},
		{":9469", true, ":9469"},
		{"0.0.0.0:9469", false, "0.0.0.0:9469"}, // explicit: asked for
		{"[::]:9469", false, "[::]:9469"},
		{"", false, ""},
		{"", true, ""},
		{"garbage", false, ""},
		{"localhost", false, ""},
		{"localhost:", false, ""},
		{"localhost:http", false, ""},
		{"localhost:-1", false, ""},
		{"localhost:99999", false, ""},
		{"::1:9469", false, ""},
		{"[::1]", false, ""},
		{"a b:9469", false, ""},
		{"-bad:9469", false, ""},
		{"host/x:9469", false, ""},
		{"1.2.3.4:5:6", false, ""},
		{"http://localhost:9469", false, ""},
		{" 9469", false, ""},
		// Dotted numbers that are no IPv4 address are no host name
		// either (a name's last label is never all digits): refused
		// here, not left to fail a DNS lookup after tracing started.
		{"256.1.1.1:9469", false, ""},
		{"999.999.999.999:9469", false, ""},
		{"127.1:9469", false, ""},
		{"1.2.3:9469", false, ""},
		{"0:9469", false, ""},
		{"1.2.3.4.:9469", false, ""},
		{"node-1.example.com:9469", false, "node-1.example.com:9469"},
		{"1password.example:9469", false, "1password.example:9469"},
		{"localhost.:9469", false, "localhost.:9469"},
	} {
		got, err := NormalizeAddr(tc.in, tc.allowAll)
		if tc.want == "" {
			if err == nil {
				t.Errorf("NormalizeAddr(%q, %v) = %q, want an error", tc.in, tc.allowAll, got)
			} else if strings.Contains(err.Error(), "\n") {
				t.Errorf("NormalizeAddr(%q): multi-line error %q", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("NormalizeAddr(%q, %v) = %q, %v; want %q", tc.in, tc.allowAll, got, err, tc.want)
		}
	}
}

func TestServe(t *testing.T) {
	e := New(0)
	e.Open(Who{Comm: "make"}, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, errc, err := Serve(ctx, "127.0.0.1:0", false, e.Handler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ta, ok := addr.(*net.TCPAddr)
	if !ok || !ta.IP.IsLoopback() || ta.Port == 0 {
		t.Fatalf("listen address %v, want loopback with a real port", addr)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	all := parse(t, body)
	if got := all[`once_opens_total{comm="make",result="ok"}`]; got != 1 {
		t.Errorf("served once_opens_total = %v, want 1", got)
	}
	if _, ok := all["once_processes"]; !ok {
		t.Errorf("served metrics lack once_processes")
	}
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Errorf("GET /: %d, want 404", code)
	}

	cancel()
	select {
	case err, ok := <-errc:
		if ok {
			t.Fatalf("error after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after ctx was cancelled")
	}
	client.CloseIdleConnections()
	conn, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err == nil {
		conn.Close()
		t.Fatal("still listening after stop")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Logf("dial after stop: %v", err)
	}
}

func TestServeRejects(t *testing.T) {
	ctx := context.Background()
	h := New(0).Handler()
	for _, addr := range []string{":0", "garbage", "localhost:http"} {
		if a, errc, err := Serve(ctx, addr, false, h, nil); err == nil {
			t.Errorf("Serve(%q) listened on %v, want an error", addr, a)
			_ = errc
		}
	}
	if _, _, err := Serve(ctx, "127.0.0.1:0", false, nil, nil); err == nil {
		t.Error("Serve with a nil handler: want an error")
	}
}

func TestServeAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, _, err := Serve(context.Background(), ln.Addr().String(), false, New(0).Handler(), nil); err == nil {
		t.Fatal("Serve on a busy port: want an error")
	}
}

// fakeProgress is a reader's heartbeat a test sets.
type fakeProgress struct {
	last           time.Time
	events, stalls uint64
}

func (p *fakeProgress) LastProgress() time.Time { return p.last }
func (p *fakeProgress) EventsRead() uint64      { return p.events }
func (p *fakeProgress) Stalls() uint64          { return p.stalls }

// TestHealth: /healthz answers 200 while the check passes and 503 with
// its one-line reason when it fails; the reader's heartbeat is in the
// metrics, read at the scrape.
func TestHealth(t *testing.T) {
	e := New(0)
	p := &fakeProgress{last: time.Now().Add(-40 * time.Second), events: 7, stalls: 2}
	e.SetProgress(p)
	var failing error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _, err := Serve(ctx, "127.0.0.1:0", false, e.Handler(), Health(func(time.Time) error { return failing }))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct {
		name   string
		method string
		fail   error
		code   int
		body   string
	}{
		{"live", "GET", nil, 200, "ok\n"},
		{"live, HEAD", "HEAD", nil, 200, ""},
		{"stalled", "GET", errors.New("reader stalled: 40s\nsecond line"), 503, "reader stalled: 40s second line\n"},
		{"POST", "POST", nil, 405, "method not allowed\n"},
	} {
		failing = tc.fail
		req, _ := http.NewRequest(tc.method, "http://"+addr.String()+"/healthz", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || string(b) != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, b, tc.code, tc.body)
		}
	}
	resp, err := client.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	all := parse(t, string(b))
	if age := all["once_reader_progress_age_seconds"]; age < 40 || age > 60 {
		t.Errorf("once_reader_progress_age_seconds %v, want about 40", age)
	}
	for k, v := range map[string]float64{"once_reader_events_read_total": 7, "once_reader_stalls_total": 2,
		"once_reader_last_progress_timestamp_seconds": float64(p.last.UnixNano()) / 1e9} {
		if got := all[k]; got < v-0.01 || got > v+0.01 {
			t.Errorf("%s %v, want %v", k, got, v)
		}
	}
}

// TestRingDropped: with several rings the drops of each are their own
// series, cumulative like every counter; with one ring there is none.
func TestRingDropped(t *testing.T) {
	e := New(0)
	e.SetCounters(&trace.Counters{DroppedEvents: 3})
	all, _ := scrape(t, e.Handler())
	for k := range all {
		if strings.HasPrefix(k, "once_ring_dropped_total") {
			t.Errorf("one ring: %s exported", k)
		}
	}
	for i, s := range []struct {
		byRing []uint64
		want   []float64
	}{
		{[]uint64{1, 2}, []float64{1, 2}},
		{[]uint64{5, 2}, []float64{5, 2}},
		{[]uint64{1, 4}, []float64{6, 4}}, // ring 0 smaller: a reset
	} {
		var sum uint64
		for _, v := range s.byRing {
			sum += v
		}
		e.SetCounters(&trace.Counters{DroppedEvents: sum, DroppedByRing: s.byRing})
		all, _ := scrape(t, e.Handler())
		for r, want := range s.want {
			k := fmt.Sprintf(`once_ring_dropped_total{ring="%d"}`, r)
			if got, ok := all[k]; !ok || got != want {
				t.Errorf("step %d: %s = %v (present %v), want %v", i, k, got, ok, want)
			}
		}
	}
}

// TestDocNamesEveryLossKind: the package documentation lists every kind
// of once_events_lost_total exported at 0 ("counts_lost" was missing).
func TestDocNamesEveryLossKind(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "once_events_lost_total has one series per kind")
	if i < 0 {
		t.Fatal("doc.go lacks the paragraph on once_events_lost_total's kinds")
	}
	para := doc[i:]
	if j := strings.Index(para, "\n//\n"); j >= 0 {
		para = para[:j]
	}
	for _, k := range lossKinds {
		if !strings.Contains(para, `"`+k+`"`) {
			t.Errorf("doc.go's list of loss kinds lacks %q", k)
		}
	}
}
