package metrics

import (
	"strings"

	"github.com/oncetool/once/trace"
)

// shownCounter is the metric of one trace.Shown counter outside the lost
// group.
type shownCounter struct {
	trace.CounterSpec
	name, help string
}

// contractName is the metric of a trace.Shown counter exported under a
// name of its own before every counter was: dashboards read those names,
// so they stay. Every other counter is once_<its JSON key>_total.
var contractName = map[string]string{
	"events_received": "once_events_processed_total",
	"evicted":         "once_processes_evicted_total",
	"output_dropped":  "once_output_records_dropped_total",
}

// groupHelp says what a counter of each group counts, before its label.
var groupHelp = map[trace.CounterGroup]string{
	trace.CounterTruncated:  "Strings cut at their bound",
	trace.CounterUnreadable: "Strings the kernel side could not read",
	trace.CounterNote:       "Present and counted, with less detail than the rest",
	trace.CounterVolume:     "Volume",
	trace.CounterStacks:     "Call stacks of --stacks",
}

// ownHelp is the help of a note that is no detail of what was traced
// but once's own output or work: "present and counted" is not what a
// record never delivered is.
var ownHelp = map[string]string{
	"output_dropped": "Records once could not write to its output (full or failing)",
	"otlp_dropped":   "Records once did not deliver to the OTLP collector",
	"evicted":        "Process images evicted past once watch's budgets (their detail is gone, their counts kept)",
	"uring_setups":   "io_uring rings set up by traced processes",
	"reader_stalls":  "Times once's ring reader fell behind",
}

// shownCounters is the metric of every trace.Shown counter but the lost
// ones (once_events_lost_total by kind) and reader_stalls (SetProgress's
// once_reader_stalls_total, read at each scrape). Unlabelled: each is one
// series, whatever the traced processes do.
func shownCounters() []shownCounter {
	var out []shownCounter
	for _, s := range trace.Shown {
		if s.Group == trace.CounterLost || s.JSON == "reader_stalls" {
			continue
		}
		name := contractName[s.JSON]
		if name == "" {
			name = "once_" + s.JSON + "_total"
		}
		help := groupHelp[s.Group] + ": " + s.Label + " (" + s.JSON + " in the JSON report)."
		if h, ok := ownHelp[s.JSON]; ok {
			help = h + " (" + s.JSON + " in the JSON report)."
		}
		out = append(out, shownCounter{s, name, strings.ToUpper(help[:1]) + help[1:]})
	}
	return out
}
