package report

import (
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// A name from a perf map is the traced process's text: shown escaped,
// whole (no Go-style shortening of a path in it).
func TestScriptFrameName(t *testing.T) {
	f := trace.Frame{Addr: 0x7f0000001000, Func: "JS:~a\x1b[2J\n /x/y.js:1:1"}
	got := frameName(&f)
	if strings.ContainsAny(got, "\x1b\n") {
		t.Errorf("frameName %q: not escaped", got)
	}
	f.Func = "Lcom/acme/Foo;.bar(I)V"
	if got := frameName(&f); got != f.Func {
		t.Errorf("frameName %q, want the whole name %q", got, f.Func)
	}
}
