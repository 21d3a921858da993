package detect

import (
	"testing"

	"github.com/oncetool/once/trace"
)

// A file used by more names than the policy keeps (hard links, a
// symlinked directory) must say that its spellings were cut: Paths alone
// reads as every name used.
func TestPathsCapIsMarked(t *testing.T) {
	p := KeepAll(trace.FilesAll)
	p.MaxPaths = 2
	for _, n := range []int{2, 3} {
		s := &seq{}
		for i := range n {
			name := "/t/l" + string(rune('0'+i))
			s.open(cp, name, name, 8, 42, 3)
			s.lookup(cp, trace.SysNewfstatat, name, 8, 43, 0, false)
		}
		r := s.runPolicy(p, 99)
		want := n > p.MaxPaths
		if len(r.Findings) != 2 {
			t.Fatalf("%d names: findings %+v", n, r.Findings)
		}
		for _, f := range r.Findings {
			if len(f.Paths) != min(n, p.MaxPaths) || f.PathsCapped != want {
				t.Errorf("%d names: %s paths %q, capped %v, want %v", n, f.Kind, f.Paths, f.PathsCapped, want)
			}
		}
		if fo := r.Processes[0].Opens[0]; fo.PathsCapped != want {
			t.Errorf("%d names: processes[].opens[] capped %v, want %v", n, fo.PathsCapped, want)
		}
	}
}
