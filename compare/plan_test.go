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

// TestPlanPlaceholdersBothSides: a side that names none of its workload's
// placeholders gets them appended, whichever side it is, so the README's
// `--baseline 'cp -r {src} {dst}' -- cp -r` copies on both sides.
func TestPlanPlaceholdersBothSides(t *testing.T) {
	tests := []struct {
		name       string
		a, b       []string
		wantA      []string
		wantB      []string
		launchDirs int
	}{
		{"baseline names them, after does not", []string{"cp", "-r", "{src}", "{dst}"}, []string{"cp", "-r"},
			[]string{"cp", "-r", "SRC", "DST"}, []string{"cp", "-r", "SRC", "DST"}, 0},
		{"after names them, baseline does not", []string{"cp", "-r"}, []string{"cp", "-r", "{src}", "{dst}"},
			[]string{"cp", "-r", "SRC", "DST"}, []string{"cp", "-r", "SRC", "DST"}, 0},
		{"one named is enough", []string{"cp", "-r", "{src}", "{dst}"}, []string{"sh", "-c", "cp -r {src} x"},
			[]string{"cp", "-r", "SRC", "DST"}, []string{"sh", "-c", "cp -r SRC x"}, 0},
		{"{dst} alone makes the workload", []string{"sh", "-c", "cp -r /etc/hostname {dst}"}, []string{"cp", "-r"},
			[]string{"sh", "-c", "cp -r /etc/hostname DST"}, []string{"cp", "-r", "SRC", "DST"}, 0},
		{"launch: the after side gets {target}", []string{"env", "{target}"}, []string{"env"},
			[]string{"env", "oncetarget"}, []string{"env", "oncetarget"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := NewPlan(Spec{Baseline: tc.a, Command: tc.b, Files: 2, Size: 1, PathDirs: tc.launchDirs, Runs: 1, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			r := strings.NewReplacer("SRC", filepath.Join(dir, "src"), "DST", filepath.Join(dir, "dst"))
			sub := func(v []string) []string {
				out := make([]string, len(v))
				for i, s := range v {
					out[i] = r.Replace(s)
				}
				return out
			}
			if !slices.Equal(p.A, sub(tc.wantA)) || !slices.Equal(p.B, sub(tc.wantB)) {
				t.Errorf("commands %q / %q; want %q / %q", p.A, p.B, sub(tc.wantA), sub(tc.wantB))
			}
			if len(p.Reproduce) != 1 || strings.Contains(p.Reproduce[0], dir) {
				t.Errorf("reproduce %q names the temporary directory", p.Reproduce)
			}
		})
	}
}

// TestSubstitute: one pass, so a value holding a placeholder stays as it is.
func TestSubstitute(t *testing.T) {
	vars := map[string]string{"src": "/tmp/{dst}/src", "dst": "/tmp/{dst}/dst"}
	for _, tc := range []struct{ in, want []string }{
		{[]string{"cp", "{src}", "{dst}"}, []string{"cp", "/tmp/{dst}/src", "/tmp/{dst}/dst"}},
		{[]string{"{src}{dst}", "{other}"}, []string{"/tmp/{dst}/src/tmp/{dst}/dst", "{other}"}},
	} {
		for range 20 { // the map's order must not matter
			if got := Substitute(tc.in, vars); !slices.Equal(got, tc.want) {
				t.Fatalf("Substitute(%q) = %q, want %q", tc.in, got, tc.want)
			}
		}
	}
}

// TestPlanReproduceFlags: the reproduce line repeats the flags that change
// what is measured, so that it measures the same again: without
// --ignore-failure a failing side stops it, without --user it runs as
// another user.
func TestPlanReproduceFlags(t *testing.T) {
	ref := func(name string) (string, error) { return "/bin/" + name, nil }
	flags := []string{"--no-trace", "--ignore-failure", "--user", "nobody"}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"cp", Spec{Command: []string{"cp", "-r"}, Ref: "cp", RefBinary: ref, Files: 3, Size: 10, Runs: 2, Flags: flags},
			"--runs 2 --warmup 0 --no-trace --ignore-failure --user nobody -- cp -r {src} {dst}"},
		{"launch", Spec{Command: []string{"env"}, Ref: "launch", PathDirs: 3, Runs: 2, Flags: flags},
			"--runs 2 --warmup 0 --no-trace --ignore-failure --user nobody -- env {target}"},
		{"plain", Spec{Baseline: []string{"true"}, Command: []string{"false"}, Runs: 2, Flags: flags},
			"--runs 2 --warmup 0 --no-trace --ignore-failure --user nobody -- false"},
		{"no flags", Spec{Baseline: []string{"true"}, Command: []string{"false"}, Runs: 2},
			"--runs 2 --warmup 0 -- false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Dir = t.TempDir()
			p, err := NewPlan(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(p.Reproduce[0], tc.want) {
				t.Errorf("reproduce %q, want it to end %q", p.Reproduce[0], tc.want)
			}
		})
	}
}

// TestWorkloadOf: which workload a comparison generates, and so which of
// --files, --size (WorkloadFiles) and --path-dirs (WorkloadLaunch) shape
// it; once compare refuses the others.
func TestWorkloadOf(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		a, b []string
		want string
	}{
		{"cp", nil, []string{"cp", "-r"}, WorkloadFiles},
		{"mv", nil, []string{"mv"}, WorkloadFiles},
		{"launch", nil, []string{"env"}, WorkloadLaunch},
		{"", []string{"cp", "-r", "{src}", "{dst}"}, []string{"rsync", "-a"}, WorkloadFiles},
		{"", []string{"true"}, []string{"ls", "{dst}"}, WorkloadFiles},
		{"", []string{"sh", "-c", "{target}"}, []string{"env", "{target}"}, WorkloadLaunch},
		{"", []string{"{src}"}, []string{"{target}"}, WorkloadFiles},
		{"", []string{"true"}, []string{"false"}, ""},
	} {
		if got := WorkloadOf(tc.ref, tc.a, tc.b); got != tc.want {
			t.Errorf("--ref %q %q vs %q: %q, want %q", tc.ref, tc.a, tc.b, got, tc.want)
		}
	}
}
