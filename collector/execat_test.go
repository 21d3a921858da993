package collector_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// An exec attempt is named as an open is: a relative name by the
// directory it was tried in (a dirfd's or the cwd's) joined with it, an
// AT_EMPTY_PATH exec by its descriptor's file. A search through
// descriptors of its directories is then a chain of different files, not
// one name tried four times. Exec events are always sent, whatever the
// mode; each is checked.
func TestExecAttemptsResolved(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	exitonly := testprog.Build(t, testprog.Exitonly)
	modes := []struct {
		name    string
		opts    collector.Options
		noCasts bool
	}{
		{"every open sent", collector.Options{}, false},
		{"repeats tallied", collector.Options{SendOpensPerKind: 1}, false},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, false},
		{"first opens unsent without BTF casts", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, true},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.noCasts {
				collector.WithoutBTFCasts(t)
			}
			dirs := pathDirs(t, 4, map[string]string{"tgt": ""})
			root := filepath.Dir(dirs[0])
			cases := []struct {
				name    string
				args    []string
				dir     string
				tries   []string // the failed attempts' paths
				found   string
				syscall trace.Syscall
			}{
				{"execveat through dirfds", []string{
					"execveat:" + dirs[0] + ":tgt", "execveat:" + dirs[1] + ":tgt",
					"execveat:" + dirs[2] + ":tgt", "execveat:" + dirs[3] + ":tgt",
				}, "", []string{dirs[0] + "/tgt", dirs[1] + "/tgt", dirs[2] + "/tgt"}, dirs[3] + "/tgt", trace.SysExecveat},
				{"relative execve against the cwd", []string{
					"coldexecfail:p0/tgt", "chdir:p2", "coldexecfail:./tgt", "exec:../p3/tgt",
				}, root, []string{dirs[0] + "/tgt", dirs[2] + "/tgt"}, dirs[3] + "/tgt", trace.SysExecve},
				// The names in pages the entry can't read: a failure's
				// exit reads them again, a success's are the kernel's.
				{"relative execve, names unreadable at the entry", []string{
					"coldexecfail:p0/tgt", "coldexec:p3/tgt",
				}, root, []string{dirs[0] + "/tgt"}, dirs[3] + "/tgt", trace.SysExecve},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cmd := exec.Command(opener, c.args...)
					cmd.Dir = c.dir
					r := traceCmd(t, cmd, m.opts)
					if r.ExitCode != 0 {
						t.Fatalf("opener exited %d", r.ExitCode)
					}
					fs := findings(r, trace.KindFailedExecProbes)
					if len(fs) != 1 {
						t.Fatalf("%d exec probe findings, want 1: %+v", len(fs), fs)
					}
					f := fs[0]
					if f.Found == nil || *f.Found != c.found {
						t.Errorf("found %v, want %q", f.Found, c.found)
					}
					if len(f.Attempts) != len(c.tries)+1 {
						t.Fatalf("attempts %+v, want %d", f.Attempts, len(c.tries)+1)
					}
					for i, want := range c.tries {
						if a := f.Attempts[i]; a.Path != want || a.Errno != int32(unix.ENOENT) {
							t.Errorf("attempt %d: %+v, want %s ENOENT", i, a, want)
						}
					}
					if a := f.Attempts[len(c.tries)]; a.Path != c.found || a.Errno != 0 {
						t.Errorf("the winner %+v, want %s", a, c.found)
					}
					// The filename as passed stays in the image's list.
					var passed int
					for _, p := range r.Processes {
						for _, e := range p.Execs {
							if e.Syscall == c.syscall && filepath.Base(e.Path) == "tgt" && e.Filename != e.Path {
								passed++
							}
						}
					}
					if passed != len(c.tries)+1 {
						t.Errorf("%d execs kept their filename as passed, want %d", passed, len(c.tries)+1)
					}
				})
			}
			// The name as passed, wherever it was read: where the
			// entry can't (a cold page: fexecve in a child just
			// forked), the kernel's copy is "/dev/fd/N" or
			// "/dev/fd/N/NAME", not what the program passed.
			for _, c := range []struct{ name, arg, filename string }{
				{"AT_EMPTY_PATH", "execveat-empty:" + exitonly, ""},
				{"AT_EMPTY_PATH, the name unreadable at the entry", "coldexecveat-empty:" + exitonly, ""},
				{"a dirfd, the name unreadable at the entry",
					"coldexecveat:" + filepath.Dir(exitonly) + ":" + filepath.Base(exitonly), filepath.Base(exitonly)},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := traceCmd(t, exec.Command(opener, c.arg), m.opts)
					var found bool
					for _, p := range r.Processes {
						for _, e := range p.Execs {
							if e.Syscall == trace.SysExecveat {
								found = true
								if e.Filename != c.filename || e.Path != exitonly || e.Errno != 0 {
									t.Errorf("execveat attempt %+v, want %q at %s", e, c.filename, exitonly)
								}
							}
						}
					}
					if !found {
						t.Fatal("no execveat seen")
					}
					if c := r.Counters; c.FnameUnreadable != 0 || c.Lost() != 0 {
						t.Errorf("counters %+v, want no unreadable name and no loss", c)
					}
				})
			}
		})
	}
}

// The execveat search as strace -f sees it: the same calls (dirfd, name
// as passed, result), and once names each by the directory its dirfd is.
func TestExecAttemptsAgreeWithStrace(t *testing.T) {
	testprog.RequireRoot(t)
	strace.Require(t)
	opener := testprog.Build(t, testprog.Opener)
	dirs := pathDirs(t, 4, map[string]string{"tgt": ""})
	var args []string
	for _, d := range dirs {
		args = append(args, "execveat:"+d+":tgt")
	}
	out := filepath.Join(t.TempDir(), "strace.out")
	cmd := strace.Command(context.Background(), out, append([]string{opener}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v: %s", err, b)
	}
	calls, err := strace.ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range calls {
		if c.Syscall == "execveat" {
			want = append(want, fmt.Sprintf("%d %q %s", c.Dirfd, c.Path, c.Errno))
		}
	}
	if len(want) != len(dirs) {
		t.Fatalf("strace saw %d execveat calls, want %d: %q", len(want), len(dirs), want)
	}
	r := traceCmd(t, exec.Command(opener, args...), collector.Options{})
	var got, paths []string
	for _, p := range r.Processes {
		for _, e := range p.Execs {
			if e.Syscall != trace.SysExecveat {
				continue
			}
			name := ""
			if e.Errno != 0 {
				name = unix.ErrnoName(syscall.Errno(e.Errno))
			}
			got = append(got, fmt.Sprintf("%d %q %s", e.Dirfd, e.Filename, name))
			paths = append(paths, e.Path)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("once saw execveat calls\n%q\nstrace\n%q", got, want)
	}
	var wantPaths []string
	for _, d := range dirs {
		wantPaths = append(wantPaths, d+"/tgt")
	}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("attempts named %q, want %q", paths, wantPaths)
	}
}
