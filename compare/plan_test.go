package compare

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNewPlan(t *testing.T) {
	ref := func(name string) (string, error) { return "/bin/" + name, nil }
	t.Run("cp against the reference", func(t *testing.T) {
		dir := t.TempDir()
		p, err := NewPlan(Spec{Command: []string{"cp", "-r"}, Ref: "cp", RefBinary: ref, Files: 3, Size: 10, Runs: 2, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
		if !slices.Equal(p.A, []string{"/bin/refcp", "-r", src, dst}) || !slices.Equal(p.B, []string{"cp", "-r", src, dst}) {
			t.Errorf("commands %q / %q", p.A, p.B)
		}
		if err := p.Options.Prepare(); err != nil {
			t.Fatal(err)
		}
		if n, _ := filepath.Glob(filepath.Join(src, "*", "*")); len(n) != 3 {
			t.Errorf("prepared source has %d files, want 3", len(n))
		}
		if p.Options.Roles[src] != "src" || !strings.Contains(p.Reproduce[0], "--ref cp --files 3 --size 10") {
			t.Errorf("roles %v reproduce %q", p.Options.Roles, p.Reproduce)
		}
	})
	t.Run("launch against the resolved path", func(t *testing.T) {
		dir := t.TempDir()
		p, err := NewPlan(Spec{Command: []string{"env"}, Ref: "launch", PathDirs: 3, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, "d3", "oncetarget")
		if !slices.Equal(p.A, []string{"env", target}) || !slices.Equal(p.B, []string{"env", "oncetarget"}) {
			t.Errorf("commands %q / %q", p.A, p.B)
		}
		if st, err := os.Stat(target); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("target: %v", err)
		}
	})
	t.Run("a plain baseline", func(t *testing.T) {
		p, err := NewPlan(Spec{Baseline: []string{"true", "a b"}, Command: []string{"false"}, Runs: 1, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if p.Workload != "running the command" || !strings.Contains(p.Reproduce[0], `--baseline 'true '\''a b'\'''`) {
			t.Errorf("workload %q reproduce %q", p.Workload, p.Reproduce)
		}
	})
}
