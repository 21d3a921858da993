package collector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// The kernel and the engine must agree on what a miss of a search is: a
// search whose misses only the engine counts (ENAMETOOLONG: a directory
// whose name is too long) would lose its winner where the kernel sends
// first opens only to end a pending search (once watch).
func TestMissErrnosAgree(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	long := strings.Repeat("d", 300) // a component past NAME_MAX
	ok := filepath.Join(dir, "ok")
	if err := os.Mkdir(ok, 0o755); err != nil {
		t.Fatal(err)
	}
	tempFile(t, ok, "x.h")
	argv := []string{opener,
		"fail:" + filepath.Join(dir, long, "x.h"),
		"fail:" + filepath.Join(dir, long+"e", "x.h"),
		"openat:" + filepath.Join(ok, "x.h"),
	}
	for _, m := range []struct {
		name string
		opts collector.Options
	}{
		{"every open sent", collector.Options{}},
		{"repeats tallied", collector.Options{SendOpensPerKind: 1}},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}},
	} {
		t.Run(m.name, func(t *testing.T) {
			r := traceCmd(t, exec.Command(argv[0], argv[1:]...), m.opts)
			if r.ExitCode != 0 {
				t.Fatalf("opener exited %d", r.ExitCode)
			}
			var got []string
			for _, f := range r.Findings {
				if f.Kind != trace.KindFailedOpenProbes || f.Target != "x.h" {
					continue
				}
				found := "[none]"
				if f.Found != nil {
					found = *f.Found
				}
				got = append(got, found)
				if f.Failed != 2 {
					t.Errorf("failed %d, want 2", f.Failed)
				}
			}
			if want := filepath.Join(ok, "x.h"); len(got) != 1 || got[0] != want {
				t.Errorf("failed_open_probes x.h found %q, want one found %q", got, want)
			}
		})
	}
}
