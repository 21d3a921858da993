package metrics

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// contractNames are the metrics of trace.Shown counters that were
// exported under their own names before every counter was: those names
// are a contract and stay.
var contractNames = map[string]string{
	"events_received": "once_events_processed_total",
	"evicted":         "once_processes_evicted_total",
	"output_dropped":  "once_output_records_dropped_total",
	"reader_stalls":   "once_reader_stalls_total",
}

// TestEveryShownCounterExported: each counter every output shows
// (trace.Shown) is a metric with its value: the lost ones as
// once_events_lost_total{kind}, the rest as once_<json key>_total (or
// the name they had before), so a counter added to the table is
// exported with nothing else to change.
func TestEveryShownCounterExported(t *testing.T) {
	// Every counter field a distinct value.
	var c trace.Counters
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Uint64 {
			f.SetUint(uint64(100 + i))
		}
	}
	e := New(0)
	e.SetProgress(&fakeProgress{last: time.Now(), stalls: c.ReaderStalls})
	e.SetCounters(&c)
	got, _ := scrape(t, e.Handler())
	for _, s := range trace.Shown {
		t.Run(s.JSON, func(t *testing.T) {
			name := "once_" + s.JSON + "_total"
			switch {
			case s.Group == trace.CounterLost:
				name = fmt.Sprintf(`once_events_lost_total{kind=%q}`, s.Metric)
			case contractNames[s.JSON] != "":
				name = contractNames[s.JSON]
			}
			g, ok := got[name]
			if !ok {
				t.Fatalf("%s (%s) not exported", name, s.JSON)
			}
			if want := float64(s.Value(&c)); g != want {
				t.Errorf("%s = %v, want %v", name, g, want)
			}
		})
	}
}

// TestOwnCountersHelp: a record once did not write or deliver is no
// detail of the trace "present and counted": its help says what it is.
func TestOwnCountersHelp(t *testing.T) {
	for _, c := range shownCounters() {
		if _, own := ownHelp[c.JSON]; own && (strings.HasPrefix(c.help, "Present") || !strings.Contains(c.help, c.JSON)) {
			t.Errorf("%s: help %q", c.name, c.help)
		}
	}
}
