package detect

import (
	"testing"
	"time"

	"github.com/oncetool/once/trace"
)

// TestHeldChainsUnderWatch: once watch holds a found lookup chain for
// heldFor, not until its image ends (a shell lives for hours): released by
// Expire past it, and dropped before it when the name is made where it
// was missing.
func TestHeldChainsUnderWatch(t *testing.T) {
	sh := task(50, 50, 950, 1, "bash")
	search := (&seq{}).
		lookup(sh, trace.SysNewfstatat, "/a/ls", 0, 0, -2, false).
		lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 1, 7, 0, false)
	check := (&seq{}).
		lookup(sh, trace.SysStatx, "/dst/f", 0, 0, -2, false).
		lookup(sh, trace.SysStatx, "/src/f", 1, 8, 0, false)
	made := (&seq{}).open(sh, "/dst/f", "/dst/f", 1, 9, 3)
	for _, tc := range []struct {
		name   string
		seqs   []*seq
		expire time.Duration // when Expire runs, after the events
		want   int           // findings drained, the image still live
	}{
		{"a search, within heldFor", []*seq{search}, heldFor / 2, 0},
		{"a search, past heldFor", []*seq{search}, 2 * heldFor, 1},
		{"a check, its name made at once", []*seq{check, made}, 2 * heldFor, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Policy: Bounded(0, 0)})
			for _, s := range tc.seqs {
				feed(e, s, t0)
			}
			e.Expire(t0.Add(tc.expire))
			if got := e.Drain(); len(got) != tc.want {
				t.Errorf("%d findings, want %d: %+v", len(got), tc.want, got)
			}
			e.Finish(t0.Add(tc.expire))
			if n := len(e.Drain()); tc.want == 0 && tc.name != "a check, its name made at once" && n != 1 {
				t.Errorf("at the image's end %d findings, want the held one", n)
			}
		})
	}
}
