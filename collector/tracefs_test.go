package collector_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// tracefs gives every event file one inode number (eventfs): there a
// file is told apart by its path in the file system, so that two events'
// id files are two files, and one opened twice is a duplicate. In every
// way the kernel side decides.
func TestTracefsFilesApart(t *testing.T) {
	testprog.RequireRoot(t)
	const dir = "/sys/kernel/tracing/events/syscalls/"
	enter, exit := dir+"sys_enter_open/id", dir+"sys_exit_open/id"
	if _, err := os.Stat(enter); err != nil {
		t.Fatalf("tracefs: %v", err)
	}
	if a, b := idOf(t, enter), idOf(t, exit); a != b {
		t.Logf("tracefs gives %s and %s inode numbers of their own (%v, %v)", enter, exit, a, b)
	}
	opener := testprog.Build(t, testprog.Opener)
	modes := []struct {
		name    string
		opts    collector.Options
		noCasts bool
	}{
		{"every open sent", collector.Options{}, false},
		{"repeats tallied", collector.Options{SendOpensPerKind: 1}, false},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, false},
		{"first opens unsent without BTF casts", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, true},
		{"repeats tallied without BTF casts", collector.Options{SendOpensPerKind: 1}, true},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.noCasts {
				collector.WithoutBTFCasts(t)
			}
			for _, c := range []struct {
				name string
				args []string
				want map[string]int // duplicates: path -> opens
			}{
				{"two events' id files", []string{"openat:" + enter, "openat:" + exit}, map[string]int{}},
				{"one id file twice", []string{"openat:" + enter, "openat:" + exit, "openat:" + enter}, map[string]int{enter: 2}},
				{"one id file through another spelling", []string{"openat:" + enter, "dirfd:" + dir + ":sys_enter_open/id", "openat:" + exit}, map[string]int{enter: 2}},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := traceCmd(t, exec.Command(opener, c.args...), m.opts)
					if r.ExitCode != 0 {
						t.Fatalf("opener exited %d", r.ExitCode)
					}
					got := map[string]int{}
					for _, f := range findings(r, trace.KindDuplicateOpen) {
						if strings.HasPrefix(f.Path, "/sys/kernel/tracing/") {
							got[f.Path] = f.Count
							if len(f.Paths) != 1 {
								t.Errorf("duplicate %s spelled %q", f.Path, f.Paths)
							}
						}
					}
					if len(got) != len(c.want) {
						t.Fatalf("duplicates %v, want %v", got, c.want)
					}
					for p, n := range c.want {
						if got[p] != n {
							t.Errorf("duplicates %v, want %v", got, c.want)
						}
					}
				})
			}
		})
	}
}

// Many event files of one image, as a tracer that attaches a hundred
// tracepoints reads them: each is a file of the image's table of files
// (once watch's first opens unsent), not one of a few slots all of them
// share for their one inode number, past which repeats go unseen.
func TestTracefsManyFiles(t *testing.T) {
	testprog.RequireRoot(t)
	ids, err := filepath.Glob("/sys/kernel/tracing/events/syscalls/sys_*/id")
	if err != nil || len(ids) < 100 {
		t.Fatalf("tracefs: %d syscall events (%v)", len(ids), err)
	}
	ids = ids[:100]
	opener := testprog.Build(t, testprog.Opener)
	args := make([]string, 0, len(ids)+1)
	for _, id := range ids {
		args = append(args, "openat:"+id)
	}
	args = append(args, "openat:"+ids[len(ids)-1])
	r := traceCmd(t, exec.Command(opener, args...), collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true})
	if r.ExitCode != 0 {
		t.Fatalf("opener exited %d", r.ExitCode)
	}
	var dups []string
	for _, f := range findings(r, trace.KindDuplicateOpen) {
		dups = append(dups, fmt.Sprintf("%s x%d", f.Path, f.Count))
	}
	if want := ids[len(ids)-1] + " x2"; len(dups) != 1 || dups[0] != want {
		t.Errorf("duplicates %q, want %q", dups, want)
	}
	if c := r.Counters; c.FilesUntracked != 0 {
		t.Errorf("%d opens of files the image's table had no room for", c.FilesUntracked)
	}
}

// TestImageTableHoldsManyFiles: an image that opens 9,000 files, then
// each again (a copy of a tree of 4,500 files makes as many), has every
// one in its table of files (once watch's first opens unsent): no open
// untracked, and each file a duplicate of two opens. One big table held
// about 5,000.
func TestImageTableHoldsManyFiles(t *testing.T) {
	testprog.RequireRoot(t)
	const n = 9000
	dir := t.TempDir()
	args := []string{"chdir:" + dir}
	for i := range n {
		name := fmt.Sprintf("f%05d", i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "openat:"+name)
	}
	args = append(args, args[1:]...)
	opener := testprog.Build(t, testprog.Opener)
	r := traceCmd(t, exec.Command(opener, args...), collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true})
	if r.ExitCode != 0 {
		t.Fatalf("opener exited %d", r.ExitCode)
	}
	if c := r.Counters; c.FilesUntracked != 0 || c.DroppedEvents != 0 {
		t.Errorf("%d opens of files the image's table had no room for, %d events lost; want 0", c.FilesUntracked, c.DroppedEvents)
	}
	dups, twice := 0, 0
	for _, f := range findings(r, trace.KindDuplicateOpen) {
		if filepath.Dir(f.Path) == dir {
			dups++
			if f.Count == 2 {
				twice++
			}
		}
	}
	if dups != n || twice != n {
		t.Errorf("%d duplicates in %s, %d of them of 2 opens; want %d and %d", dups, dir, twice, n, n)
	}
}
