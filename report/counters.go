package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/oncetool/once/trace"
)

// Every output shows the counters of trace.Shown, in its order and under
// its names: this file is where the text and JSON forms come from.

// groupList is "label value, label value" for one group.
func groupList(c *trace.Counters, g trace.CounterGroup) string {
	var parts []string
	for _, s := range trace.Group(g) {
		parts = append(parts, s.Label+" "+strconv.FormatUint(s.Value(c), 10))
	}
	return strings.Join(parts, ", ")
}

// countersLine is everything after the totals in a report's last line:
// the events lost ("no events lost" when none was, and the mapping
// records --stacks lost beside them), then the truncated,
// unreadable, note and stack counters that are not zero. JSON and the
// metrics keep every counter, zero or not.
func countersLine(c *trace.Counters) string {
	parts := []string{"no events lost"}
	if c.Lost() > 0 {
		parts[0] = fmt.Sprintf("%s (%s)", plural(c.Lost(), "event lost", "events lost"), nonZeroList(c, trace.CounterLost))
	}
	if c.StacksMapsLost > 0 {
		// Beside the events: the stack counters below come last, and
		// --format folded and pprof write nothing else of the run.
		parts[0] += ", " + mappingRecords(c) + " lost"
	}
	for _, g := range []struct {
		group trace.CounterGroup
		head  string
	}{{trace.CounterTruncated, "truncated: "}, {trace.CounterUnreadable, "unreadable: "}} {
		if l := nonZeroList(c, g.group); l != "" {
			parts = append(parts, g.head+l)
		}
	}
	var notes []string
	for _, s := range trace.Group(trace.CounterNote) {
		if v := s.Value(c); v > 0 {
			notes = append(notes, noteCount(s, v))
		}
	}
	if len(notes) > 0 {
		parts = append(parts, strings.Join(notes, ", "))
	}
	if l := nonZeroList(c, trace.CounterStacks); c.Stacks && l != "" {
		parts = append(parts, "stacks: "+l)
	}
	return strings.Join(parts, "; ")
}

// noteOne is the label of a note (trace.CounterNote) counted once, where
// its Label is the plural: "1 internal path", not "1 internal paths".
var noteOne = map[string]string{
	"path_unresolved":  "unresolved path",
	"paths_internal":   "internal path",
	"opens_tallied":    "repeat open counted in the kernel",
	"lookups_tallied":  "repeat lookup counted in the kernel",
	"opens_untimed":    "open without its time",
	"compat_images":    "32-bit image unseen",
	"seccomp_refused":  "call seccomp refused, unnamed and uncounted",
	"ptrace_skipped":   "call a ptrace stop skipped, unnamed and uncounted",
	"opens_unsent":     "first open counted in the kernel",
	"lookups_unsent":   "lookup counted in the kernel",
	"files_capped":     "open or miss past the per-image cap",
	"evicted":          "image evicted",
	"detail_dropped":   "detail past the byte budgets",
	"uring_setups":     "io_uring ring set up",
	"unnamed_dropped":  "event of a container not yet named",
	"output_dropped":   "record not written (output full or closed)",
	"otlp_dropped":     "finding or metric export not delivered (OTLP)",
	"reader_stalls":    "reader stall",
	"reports_deferred": "count report deferred (ring full)",
}

// noteCount is a note's count and label, in agreement: "1 reader stall",
// "2 reader stalls".
func noteCount(s trace.CounterSpec, v uint64) string {
	one, ok := noteOne[s.JSON]
	if !ok {
		one = s.Label
	}
	return plural(v, one, s.Label)
}

// nonZeroList is groupList of the counters of g that are not zero.
func nonZeroList(c *trace.Counters, g trace.CounterGroup) string {
	var parts []string
	for _, s := range trace.Group(g) {
		if v := s.Value(c); v > 0 {
			parts = append(parts, s.Label+" "+strconv.FormatUint(v, 10))
		}
	}
	return strings.Join(parts, ", ")
}

// notesLine lists the notes that are not zero ("" when none is): the
// watch header, which has no room for the rest.
func notesLine(c *trace.Counters) string {
	var notes []string
	for _, g := range []trace.CounterGroup{trace.CounterTruncated, trace.CounterUnreadable, trace.CounterNote, trace.CounterStacks} {
		for _, s := range trace.Group(g) {
			if v := s.Value(c); v > 0 {
				if g == trace.CounterNote {
					notes = append(notes, noteCount(s, v))
					continue
				}
				label := s.Label
				switch g {
				case trace.CounterTruncated:
					label += " truncated"
				case trace.CounterUnreadable:
					label += " unreadable"
				case trace.CounterStacks:
					label = "stacks " + label
				}
				notes = append(notes, strconv.FormatUint(v, 10)+" "+label)
			}
		}
	}
	return strings.Join(notes, ", ")
}

// appendCounters appends, to the body of a JSON object being written by
// hand, every counter as `"key":value` and then "events_lost".
func appendCounters(b []byte, c *trace.Counters) []byte {
	for _, s := range trace.Shown {
		b = strconv.AppendUint(appendKey(b, s.JSON), s.Value(c), 10)
	}
	b = strconv.AppendUint(appendKey(b, "events_lost"), c.Lost(), 10)
	if len(c.DroppedByRing) > 0 {
		b = append(appendKey(b, "dropped_events_by_ring"), '[')
		for i, v := range c.DroppedByRing {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, v, 10)
		}
		b = append(b, ']')
	}
	return b
}

// spliceCounters marshals head and tail (structs) and returns one JSON
// object: head's fields, the counters, tail's fields.
func spliceCounters(head any, c *trace.Counters, tail any) ([]byte, error) {
	h, err := marshalRaw(head)
	if err != nil {
		return nil, err
	}
	t, err := marshalRaw(tail)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), h[:len(h)-1]...) // without its '}'
	b = appendCounters(b, c)
	if len(t) > 2 {
		b = append(b, ',')
		b = append(b, t[1:]...)
	} else {
		b = append(b, '}')
	}
	return b, nil
}

// marshalRaw is json.Marshal without HTML escaping: '<', '>' and '&' stay
// literal (this is not embedded in HTML, and the raw form greps better).
func marshalRaw(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
