package report

import (
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// TestRunNotes: the header line says what the JSON's interrupted and
// still_running say, so that a text or Markdown reader knows the report
// ends before the run did.
func TestRunNotes(t *testing.T) {
	img := func(pid uint32, exec uint64, exited bool) *trace.Process {
		return &trace.Process{Key: trace.ImageKey{Pid: pid, Start: uint64(pid), ExecID: exec}, Pid: pid, Exited: exited}
	}
	cases := []struct {
		name        string
		r           trace.Result
		want, never string
	}{
		{"ended", trace.Result{Processes: []*trace.Process{img(1, 1, true)}}, "(exit 0, 0ns)", "still running"},
		// An image replaced by an exec is not running: its pid's later one is.
		{"exec'd", trace.Result{Processes: []*trace.Process{img(1, 1, false), img(1, 2, true)}}, "(exit 0, 0ns)", "still running"},
		{"one left", trace.Result{Processes: []*trace.Process{img(1, 1, true), img(2, 1, false)}},
			"1 process still running past --linger: its later calls are not in the report", "interrupted"},
		{"two left", trace.Result{Processes: []*trace.Process{img(2, 1, false), img(3, 1, false)}},
			"2 processes still running past --linger: their later calls are not in the report", ""},
		{"SIGTERM", trace.Result{ExitCode: 143, Interrupted: "SIGTERM", Processes: []*trace.Process{img(1, 1, true)}},
			"exit 143, 0ns, interrupted: once passed its SIGTERM on", "still running"},
		// A signal death reads as one, an exit(139) as an exit.
		{"SIGSEGV", trace.Result{ExitCode: 139, ExitSignal: "SIGSEGV", Processes: []*trace.Process{img(1, 1, true)}},
			"(killed by SIGSEGV, exit 139, 0ns)", ""},
		{"exit 139", trace.Result{ExitCode: 139, Processes: []*trace.Process{img(1, 1, true)}},
			"(exit 139, 0ns)", "killed"},
	}
	for _, c := range cases {
		var text, md strings.Builder
		if err := Text(&text, &c.r); err != nil {
			t.Fatal(err)
		}
		if err := Markdown(&md, &c.r); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
			if !strings.Contains(out, c.want) || (c.never != "" && strings.Contains(out, c.never)) {
				t.Errorf("%s, %s: want %q (and not %q) in:\n%s", c.name, name, c.want, c.never, out)
			}
		}
	}
}
