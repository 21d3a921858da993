package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oncetool/once/detect"
)

// TestHeadlineMappingRecordsLost: under --stacks, mapping records lost
// (counted apart from the events) are in every headline that says how
// many events were lost, so that "lost 0" does not claim a whole trace
// while stacks through the lost mappings end at an unknown mapping; and
// the live screen warns of them where its headline is cut (80 columns).
func TestHeadlineMappingRecordsLost(t *testing.T) {
	const want = "6080000 mapping records"
	for _, events := range []uint64{0, 7} {
		s := sampleSnapshot(detect.GroupComm)
		s.Counters.DroppedEvents = events
		s.Counters.Stacks, s.Counters.StacksCaptured, s.Counters.StacksMapsLost = true, 40, 6_080_000

		var table bytes.Buffer
		if err := WatchTable(&table, s); err != nil {
			t.Fatal(err)
		}
		if head, _, _ := strings.Cut(table.String(), "\n"); !strings.Contains(head, want) {
			t.Errorf("%d events lost: the text table's header does not count the mapping records lost: %q", events, head)
		}
		for _, w := range []int{80, 200} {
			v := WatchView{Sort: s.Sort, Group: s.Group, Cursor: -1}
			f := WatchFrame(s, &v, nil, w, 24)
			if w == 200 && !strings.Contains(f.Lines[0], want) {
				t.Errorf("%d events lost: the screen's header does not count the mapping records lost: %q", events, f.Lines[0])
			}
			head, _, _ := strings.Cut(strings.Join(f.Lines, "\n"), "\n\n")
			if !strings.Contains(head, want) {
				t.Errorf("%d events lost, %d columns: no line of the screen's head counts the mapping records lost:\n%s", events, w, head)
			}
		}
		var sum bytes.Buffer
		if err := WatchSummary(&sum, s, 200); err != nil {
			t.Fatal(err)
		}
		if head, _, _ := strings.Cut(sum.String(), "\n"); !strings.Contains(head, want) {
			t.Errorf("%d events lost: the summary's first line does not count the mapping records lost: %q", events, head)
		}

		r := sampleResult()
		r.Counters.DroppedEvents = events
		r.Counters.Stacks, r.Counters.StacksMapsLost = true, 6_080_000
		if l := verdictLine(r); !strings.Contains(l, want) {
			t.Errorf("%d events lost: the report's first line does not count the mapping records lost: %q", events, l)
		}
		// The summary line, all that --format folded and pprof write
		// besides the stacks: beside the events lost, not only in the
		// list of stack counters further on.
		l := SummaryLine(r)
		_, lost, _ := strings.Cut(l, "findings; ")
		if lost, _, _ = strings.Cut(lost, ";"); !strings.HasSuffix(lost, ", "+want+" lost") {
			t.Errorf("%d events lost: the summary line does not count the mapping records lost beside the events: %q", events, l)
		}
	}
	// Without them the headlines say nothing of mapping records.
	s := sampleSnapshot(detect.GroupComm)
	s.Counters.Stacks = true
	v := WatchView{Sort: s.Sort, Group: s.Group, Cursor: -1}
	if f := WatchFrame(s, &v, nil, 200, 24); strings.Contains(strings.Join(f.Lines, "\n"), "mapping record") {
		t.Errorf("no mapping record lost, yet the screen names them:\n%s", strings.Join(f.Lines, "\n"))
	}
}
