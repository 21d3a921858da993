package main

import (
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// TestFoldedSummary: the line --format folded writes to stderr says what
// the other formats' header says of a run cut short (processes still
// running past --linger, a timeout), since folded stacks have no room for
// it; among the stacks it ends in words flame graph tools skip.
func TestFoldedSummary(t *testing.T) {
	running := []*trace.Process{{Key: trace.ImageKey{Pid: 7, ExecID: 1}, Comm: "sleep"}}
	for _, tc := range []struct {
		name        string
		r           trace.Result
		amongStacks bool
		has         string
	}{
		{"whole", trace.Result{Command: []string{"cp"}}, false, "no events lost"},
		{"still running", trace.Result{Command: []string{"sh"}, Processes: running}, false,
			"; 1 process still running past --linger: its later calls are not in the report"},
		{"still running, among stacks", trace.Result{Command: []string{"sh"}, Processes: running}, true,
			"; 1 process still running past --linger: its later calls are not in the report" + foldedSummaryEnd},
		{"timed out", trace.Result{Command: []string{"make"}, TimedOut: true, Timeout: 2e9}, false, "; timed out after 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := foldedSummary(&tc.r, tc.amongStacks)
			if !strings.HasPrefix(got, "once: ") || !strings.HasSuffix(got, tc.has) {
				t.Errorf("folded summary %q, want the summary line ending in %q", got, tc.has)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("folded summary %q is more than one line", got)
			}
		})
	}
}
