package report

import (
	"strings"
	"testing"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// An exec's --events line shows the name as passed and, when it reads
// otherwise, the file tried, as an open's shows the file opened.
func TestEventsExecResolved(t *testing.T) {
	for _, c := range []struct {
		name string
		r    trace.ExecRecord
		want string
	}{
		{"absolute", trace.ExecRecord{Filename: "/bin/ls", Argv: []string{"ls"}}, "/bin/ls [ls]"},
		{"relative to a dirfd", trace.ExecRecord{Syscall: trace.SysExecveat, Filename: "tgt", Path: "/d1", Status: trace.StPathIsBase, Ret: -2, Argv: []string{"tgt"}}, "tgt -> /d1/tgt [tgt]"},
		{"AT_EMPTY_PATH", trace.ExecRecord{Syscall: trace.SysExecveat, Path: "/memfd:x (deleted)", Argv: []string{"x"}}, `"" -> /memfd:x (deleted) [x]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			p := NewEventPrinter(&b)
			p.Print(&trace.Event{Kind: trace.EventExec, Task: trace.Task{Pid: 1, Comm: "x"}, Exec: c.r}, detect.Annotation{})
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+c.want) {
				t.Errorf("line %q, want it to end in %q", last, c.want)
			}
		})
	}
}
