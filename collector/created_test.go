package collector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestCreatedOpens: an open that made its file (the kernel's
// FMODE_CREATED, read at the exit) is no find of a search, and one of a
// file already there is, O_CREAT or not. Two searches of two misses
// each: one met by creat of a new file (a name made elsewhere: never
// found), one by creat of a file that exists (found). In every mode.
func TestCreatedOpens(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	there := tempFile(t, filepath.Join(dir, "c"), "there.conf")
	made := filepath.Join(dir, "c", "made.conf")
	argv := []string{opener,
		"fail:" + filepath.Join(dir, "a", "made.conf"),
		"fail:" + filepath.Join(dir, "b", "made.conf"),
		"creat:" + made,
		"fail:" + filepath.Join(dir, "a", "there.conf"),
		"fail:" + filepath.Join(dir, "b", "there.conf"),
		"creat:" + there,
	}
	for _, m := range []struct {
		name string
		opts collector.Options
	}{
		{"every open sent", collector.Options{}},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}},
	} {
		t.Run(m.name, func(t *testing.T) {
			os.Remove(made)
			r := traceCmd(t, exec.Command(argv[0], argv[1:]...), m.opts)
			if r.ExitCode != 0 {
				t.Fatalf("opener exited %d", r.ExitCode)
			}
			var got []string
			for _, f := range r.Findings {
				if f.Kind != trace.KindFailedOpenProbes {
					continue
				}
				found := "[none]"
				if f.Found != nil {
					found = *f.Found
				}
				got = append(got, f.Target+" "+found)
			}
			slices.Sort(got)
			want := []string{"made.conf [none]", "there.conf " + there}
			if !slices.Equal(got, want) {
				t.Errorf("failed_open_probes %q, want %q", got, want)
			}
		})
	}
}
