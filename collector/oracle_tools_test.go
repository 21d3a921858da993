package collector_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestStraceOracleTools: the toolchain programs whose searches once
// reports, under strace -f and once in one run, agree call for call, and
// once finds the searches strace shows: cc1's include search and the
// PATH search gcc makes for as, ld.so's library search over
// LD_LIBRARY_PATH, make's include directories.
func TestStraceOracleTools(t *testing.T) {
	testprog.RequireRoot(t)
	stracePath := strace.Require(t)
	for _, tool := range []string{"gcc", "make"} {
		testprog.NeedTool(t, tool)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) []string
		// want: a probe finding of this kind, program and target.
		kind         trace.FindingKind
		comm, target string
	}{
		{"gcc: cc1's include search", func(t *testing.T, d string) []string {
			for _, sub := range []string{"i1", "i2", "i3"} {
				os.MkdirAll(filepath.Join(d, sub), 0o755)
			}
			os.WriteFile(filepath.Join(d, "i3", "deep.h"), []byte("#define DEEP 1\n"), 0o644)
			os.WriteFile(filepath.Join(d, "m.c"), []byte("#include <deep.h>\nint main(void) { return DEEP - 1; }\n"), 0o644)
			return []string{"gcc", "-I", "i1", "-I", "i2", "-I", "i3", "-o", "m", "m.c"}
		}, trace.KindFailedOpenProbes, "cc1", "deep.h"},
		{"gcc: as found by a PATH search", func(t *testing.T, d string) []string {
			os.WriteFile(filepath.Join(d, "m.c"), []byte("int main(void) { return 0; }\n"), 0o644)
			return []string{"env", "PATH=" + d + "/no1:" + d + "/no2:/usr/bin:/bin", "gcc", "-c", "-o", "m.o", "m.c"}
		}, trace.KindFailedExecProbes, "gcc", "as"},
		{"ld.so: a library search over LD_LIBRARY_PATH", func(t *testing.T, d string) []string {
			return []string{"env", "LD_LIBRARY_PATH=" + d + "/l1:" + d + "/l2", "/bin/true"}
		}, trace.KindFailedOpenProbes, "true", "libc.so.6"},
		{"make: include directories", func(t *testing.T, d string) []string {
			for _, sub := range []string{"mk1", "mk2", "mk3"} {
				os.MkdirAll(filepath.Join(d, sub), 0o755)
			}
			os.WriteFile(filepath.Join(d, "mk3", "rules.mk"), []byte("X := 1\n"), 0o644)
			os.WriteFile(filepath.Join(d, "Makefile"), []byte("include rules.mk\nall:\n\t@true\n"), 0o644)
			return []string{"make", "-s", "-I", "mk1", "-I", "mk2", "-I", "mk3"}
		}, trace.KindFailedOpenProbes, "make", "rules.mk"},
	}
	for _, tc := range tests {
		for _, rings := range ringModes {
			t.Run(tc.name+ringsName(rings), func(t *testing.T) {
				dir := t.TempDir()
				r, pids := straceOracle(t, stracePath, dir, tc.setup(t, dir), rings)
				found := false
				var seen []string
				for _, f := range r.Findings {
					if !pids[f.Pid] {
						continue
					}
					seen = append(seen, string(f.Kind)+" "+f.Comm+" "+f.Target)
					if f.Kind == tc.kind && f.Comm == tc.comm && f.Target == tc.target && f.Failed >= 2 {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s finding of %s for %s; findings: %s", tc.kind, tc.comm, tc.target, strings.Join(seen, "; "))
				}
			})
		}
	}
}
