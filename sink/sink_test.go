package sink

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/output"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

func open(ret int32) *trace.Event {
	return &trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: 7, Tid: 7, Comm: "cat"},
		Open: trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "/etc/hostname", Path: "/etc/hostname", Ret: ret, Dirfd: -100}}
}

// TestEvents: which events make a line, in each format.
func TestEvents(t *testing.T) {
	tally := &trace.Event{Kind: trace.EventTally, Task: trace.Task{Pid: 7, Comm: "cat"}, Tally: trace.TallyRecord{Opens: 3}}
	// The stack of a call seen before: no call of its own.
	kept := open(3)
	kept.Kind = trace.EventKeptStack
	for _, tc := range []struct {
		name              string
		format            string
		callsOnly, failed bool
		evs               []*trace.Event
		want              int // lines
	}{
		{"text, every call (and the header)", "text", true, false, []*trace.Event{open(3), open(-2), tally, kept}, 3},
		{"json, every call", "json", true, false, []*trace.Event{open(3), open(-2), tally, kept}, 2},
		// watch: no call, no line, not even the header.
		{"text, no call", "text", true, false, []*trace.Event{tally, kept}, 0},
		// run: every event goes to the printer, which prints a tally's.
		{"text, every event", "text", false, false, []*trace.Event{tally}, 1},
		{"failed only", "json", true, true, []*trace.Event{open(3), open(-2)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := NewEvents(output.NewRecordWriter(&buf, 4<<10), tc.format, true, 0)
			e.CallsOnly, e.Failed = tc.callsOnly, tc.failed
			for _, ev := range tc.evs {
				e.Event(ev, detect.Annotation{})
			}
			if buf.Len() != 0 {
				t.Errorf("lines written before a flush: %q", buf.String())
			}
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(buf.String(), "\n"); n != tc.want {
				t.Errorf("%d lines, want %d:\n%s", n, tc.want, buf.String())
			}
		})
	}
}

// TestTicks: the table and the JSON summary at every tick or at the
// final one only; the loss warning only when the loss grew.
func TestTicks(t *testing.T) {
	snap := func(lost uint64) *detect.Snapshot {
		return &detect.Snapshot{Time: time.Unix(1000, 0), Counters: trace.Counters{DroppedEvents: lost}}
	}
	for _, tc := range []struct {
		name  string
		sink  func(w *output.RecordWriter) ticker
		lost  []uint64 // one tick each, the last final
		count string   // the substring counted
		n     int
	}{
		{"table every tick", func(w *output.RecordWriter) ticker {
			return &Table{W: w}
		}, []uint64{0, 0, 0}, "once watch ", 3},
		{"table final only", func(w *output.RecordWriter) ticker {
			return &Table{W: w, FinalOnly: true}
		}, []uint64{0, 0, 0}, "once watch ", 1},
		{"summary every tick", func(w *output.RecordWriter) ticker {
			return &JSONLines{JL: newJL(w), W: w}
		}, []uint64{0, 0, 0}, `"type":"summary"`, 3},
		{"summary final only", func(w *output.RecordWriter) ticker {
			return &JSONLines{JL: newJL(w), W: w, FinalOnly: true}
		}, []uint64{0, 0, 0}, `"type":"summary"`, 1},
		{"loss warned as it grows", func(w *output.RecordWriter) ticker {
			return &flushing{&LossWarning{W: w}, w}
		}, []uint64{0, 2, 2, 5}, "WARNING", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := output.NewRecordWriter(&buf, 1<<16)
			k := tc.sink(w)
			for i, l := range tc.lost {
				if err := k.Tick(snap(l), i == len(tc.lost)-1); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(buf.String(), tc.count); n != tc.n {
				t.Errorf("%d of %q, want %d:\n%s", n, tc.count, tc.n, buf.String())
			}
		})
	}
}

// TestLossWarningMappingRecords: the mapping records --stacks lost are
// warned of apart from the events, each time their number grew, so that
// a run that loses only those says so before its report.
func TestLossWarningMappingRecords(t *testing.T) {
	var buf bytes.Buffer
	l := &LossWarning{W: &buf}
	for _, c := range []trace.Counters{
		{},
		{StacksMapsLost: 7},
		{StacksMapsLost: 7},
		{StacksMapsLost: 9, DroppedEvents: 1},
	} {
		if err := l.Tick(&detect.Snapshot{Counters: c}, false); err != nil {
			t.Fatal(err)
		}
	}
	want := "once: WARNING: 7 mapping records lost so far; stacks through the mappings they recorded may end at an unknown mapping\n" +
		LossMessage(&trace.Counters{StacksMapsLost: 9, DroppedEvents: 1}) + "\n" +
		"once: WARNING: 9 mapping records lost so far; stacks through the mappings they recorded may end at an unknown mapping\n"
	if got := buf.String(); got != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", got, want)
	}
}

// ticker is the part of a Sink a tick uses.
type ticker interface {
	Tick(*detect.Snapshot, bool) error
	Flush() error
}

type flushing struct {
	*LossWarning
	w *output.RecordWriter
}

func (f *flushing) Flush() error { return f.w.Flush() }

func newJL(w *output.RecordWriter) *report.JSONLines { return report.NewJSONLines(w) }

// The loss warning names every loss counter, and says what gives more
// room only where the ring buffers' room ran out.
func TestLossMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    trace.Counters
		want string
	}{
		{"ring full", trace.Counters{DroppedEvents: 5},
			"once: WARNING: 5 events lost so far (dropped 5, map-full 0, missed-enter 0, decode 0, untracked-children 0, tally-evicted 0, counts-lost 0); " +
				"counts are lower bounds; the ring buffers were full: a larger --ring-size, or more --rings, gives the kernel side more room"},
		{"counts lost at an exit", trace.Counters{CountsLost: 64},
			"once: WARNING: 64 events lost so far (dropped 0, map-full 0, missed-enter 0, decode 0, untracked-children 0, tally-evicted 0, counts-lost 64); " +
				"counts are lower bounds; the ring buffers were full: a larger --ring-size, or more --rings, gives the kernel side more room"},
		{"no ring at fault", trace.Counters{EnterMapFull: 2, TrackedFull: 1},
			"once: WARNING: 3 events lost so far (dropped 0, map-full 2, missed-enter 0, decode 0, untracked-children 1, tally-evicted 0, counts-lost 0); " +
				"counts are lower bounds"},
	} {
		if got := LossMessage(&tc.c); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestEventsLossLine: run's --events-o file ends with the loss warning
// when events were lost (read alone, it must say it lacks calls); not
// when none was, nor when the lines share stderr with the warnings.
func TestEventsLossLine(t *testing.T) {
	const warn = "once: WARNING: 5 events lost so far"
	for _, tc := range []struct {
		name     string
		lossLine bool
		dropped  uint64
		want     bool
	}{
		{"a file, events lost", true, 5, true},
		{"a file, none lost", true, 0, false},
		{"stderr, events lost", false, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := NewEvents(output.NewRecordWriter(&buf, 4<<10), "text", true, 0)
			e.LossLine = tc.lossLine
			e.Event(open(3), detect.Annotation{})
			if err := e.Close(&trace.Result{Counters: trace.Counters{DroppedEvents: tc.dropped}}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if got := strings.HasPrefix(lines[len(lines)-1], warn); got != tc.want {
				t.Errorf("last line %q: the warning %v, want %v", lines[len(lines)-1], got, tc.want)
			}
		})
	}
}

// TestEventsStillRunningLine: run's --events-o text file says when
// processes outlived --linger (their later calls are not in it), as the
// report does, whether or not events were lost; not on stderr, where the
// report says it.
func TestEventsStillRunningLine(t *testing.T) {
	const warn = "once: WARNING: 2 processes still running past --linger: their later calls are not in these lines"
	for _, tc := range []struct {
		name     string
		lossLine bool
		running  int
		want     bool
	}{
		{"a file, 2 running", true, 2, true},
		{"a file, none running", true, 0, false},
		{"stderr, 2 running", false, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := NewEvents(output.NewRecordWriter(&buf, 4<<10), "text", true, 0)
			e.LossLine = tc.lossLine
			e.Event(open(3), detect.Annotation{})
			res := &trace.Result{}
			for i := range tc.running {
				res.Processes = append(res.Processes, &trace.Process{Pid: uint32(100 + i)})
			}
			if err := e.Close(res); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if got := lines[len(lines)-1] == warn; got != tc.want {
				t.Errorf("last line %q: the warning %v, want %v", lines[len(lines)-1], got, tc.want)
			}
		})
	}
}

// TestEventsEndLine: run's --events JSON lines end with an end line that
// carries the run's counters, events_lost among them; watch's (no
// EndLine) do not.
func TestEventsEndLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		endLine bool
		dropped uint64
		running int // process images alive past --linger
	}{
		{"run, events lost", true, 5, 0},
		{"run, none lost", true, 0, 0},
		{"run, none lost, 2 still running", true, 0, 2},
		{"watch", false, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := NewEvents(output.NewRecordWriter(&buf, 4<<10), "json", true, 0)
			e.EndLine = tc.endLine
			e.Event(open(3), detect.Annotation{})
			res := &trace.Result{Counters: trace.Counters{DroppedEvents: tc.dropped}}
			for i := range tc.running {
				res.Processes = append(res.Processes, &trace.Process{Pid: uint32(100 + i)})
			}
			if err := e.Close(res); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			var last struct {
				Type          string  `json:"type"`
				DroppedEvents *uint64 `json:"dropped_events"`
				EventsLost    *uint64 `json:"events_lost"`
				StillRunning  *int    `json:"still_running"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
				t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
			}
			if !tc.endLine {
				if last.Type != "open" || len(lines) != 1 {
					t.Errorf("lines %q, want the open line alone", lines)
				}
				return
			}
			if last.Type != "end" || last.EventsLost == nil || *last.EventsLost != tc.dropped ||
				last.DroppedEvents == nil || *last.DroppedEvents != tc.dropped {
				t.Errorf("last line %q: want an end line with events_lost and dropped_events %d", lines[len(lines)-1], tc.dropped)
			}
			// A process still running past --linger makes calls the
			// lines do not hold, events_lost or not: the line says so.
			if last.StillRunning == nil || *last.StillRunning != tc.running {
				t.Errorf("last line %q: want still_running %d", lines[len(lines)-1], tc.running)
			}
		})
	}
}
