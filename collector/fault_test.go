package collector_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"

	"github.com/oncetool/once/detect"
)

// traceEvents is traceCmd that also keeps a copy of every exec record, whose
// status bits say whether the entry read of the strings faulted.
func traceEvents(t *testing.T, cmd *exec.Cmd) (*trace.Result, []trace.ExecRecord) {
	t.Helper()
	testprog.RequireRoot(t)
	tr, err := collector.Open(collector.Options{Tracked: true})
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var execs []trace.ExecRecord
	res, err := runCommand(ctx, tr, cmd, runOpts{
		linger: 2 * time.Second,
		onEvent: func(ev *trace.Event, _ detect.Annotation) {
			if ev.Kind == trace.EventExec {
				e := ev.Exec
				e.Argv = slices.Clone(e.Argv)
				execs = append(execs, e)
			}
		},
	})
	if err != nil {
		t.Fatalf("trace %q: %v (stderr: %s)", cmd.Args, err, stderr.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("%q exited %d (stderr: %s)", cmd.Args, res.ExitCode, stderr.String())
	}
	return res, execs
}

// TestColdFilenames: a name whose page is not mapped when the syscall
// starts must still be reported exactly. The opener's cold actions put the
// strings in a file mapping the process never touched and fail unless
// /proc/self/pagemap confirms that, so the kernel's own copy is the first
// access: a non-faulting read at syscall entry fails and the tracer must
// read again later (opens: at exit; execs: at a failed exit, or at
// sched_prepare_exec, or from the kernel's copies at sched_process_exec).
func TestColdFilenames(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)

	t.Run("open", func(t *testing.T) {
		f := tempFile(t, t.TempDir(), "cold-target")
		r, _ := traceEvents(t, exec.Command(opener, "coldopen:"+f, "coldopen:"+f))
		per := opensOf(r, idOf(t, f))
		if len(per) != 1 || per[0].Count != 2 {
			t.Fatalf("per-image counts %v, want one image with 2", counts(per))
		}
		for i, c := range per[0].Calls {
			if c.Fname != f || c.FnameUnreadable || c.FnameTruncated || c.Syscall != trace.SysOpenat {
				t.Errorf("call %d: %s fname %q (unreadable %v, truncated %v), want openat of %q",
					i, c.Syscall, c.Fname, c.FnameUnreadable, c.FnameTruncated, f)
			}
		}
		if per[0].Path != f {
			t.Errorf("resolved path %q, want %q", per[0].Path, f)
		}
		if c := r.Counters; c.FnameUnreadable != 0 || c.Lost() != 0 {
			t.Errorf("counters %+v, want no unreadable name and no loss", c)
		}
	})

	// glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH): no name, no
	// lookup. Where the empty name's page is not mapped at the entry (a
	// string of a forked child's binary, untouched since the fork: bash
	// subshells), the entry cannot tell it from a name.
	t.Run("fstat", func(t *testing.T) {
		f := tempFile(t, t.TempDir(), "cold-fstat")
		r, _ := traceEvents(t, exec.Command(opener, "coldfstat:newfstatat:"+f, "coldfstat:statx:"+f))
		if r.Lookups != 0 || r.FailedLookups != 0 {
			t.Errorf("%d lookups (%d failed), want 0: an fstat names no file", r.Lookups, r.FailedLookups)
		}
		if per := opensOf(r, idOf(t, f)); len(per) != 1 || per[0].Count != 2 {
			t.Errorf("per-image opens of %s %v, want one image with 2", f, counts(per))
		}
		if c := r.Counters; c.FnameUnreadable != 0 || c.Lost() != 0 {
			t.Errorf("counters %+v, want no unreadable name and no loss", c)
		}
	})

	t.Run("exec", func(t *testing.T) {
		target := testprog.Build(t, testprog.Exitonly)
		missing := filepath.Join(t.TempDir(), "missing", "x")
		args := []string{"alpha", "beta gamma", ""}
		r, recs := traceEvents(t, exec.Command(opener,
			"coldexecfail:"+missing, "coldexec:"+target+":alpha:beta gamma:"))
		wantArgv := append([]string{target}, args...)

		// The opener image made both attempts, in order.
		var attempts []trace.ExecAttempt
		var img *trace.Process
		for _, p := range r.Processes {
			for _, e := range p.Execs {
				if e.Filename != opener {
					attempts = append(attempts, e)
				}
			}
			if p.Exe == target {
				if img != nil {
					t.Errorf("two images of %s", target)
				}
				img = p
			}
		}
		if len(attempts) != 2 {
			t.Fatalf("%d cold exec attempts, want 2: %+v", len(attempts), attempts)
		}
		if a := attempts[0]; a.Filename != missing || a.Errno != int32(unix.ENOENT) ||
			!slices.Equal(a.Argv, []string{missing}) || a.ArgvTruncated || a.FilenameTruncated {
			t.Errorf("failed attempt %+v, want %q with argv [%q] and ENOENT", a, missing, missing)
		}
		if a := attempts[1]; a.Filename != target || a.Errno != 0 ||
			!slices.Equal(a.Argv, wantArgv) || a.ArgvTruncated || a.FilenameTruncated {
			t.Errorf("successful attempt %+v, want %q with argv %q", a, target, wantArgv)
		}
		if img == nil {
			t.Fatalf("no image of %s", target)
		}
		if !slices.Equal(img.Argv, wantArgv) {
			t.Errorf("new image argv %q, want %q", img.Argv, wantArgv)
		}
		if r.Execs != 3 || r.FailedExecs != 1 { // the opener itself, the miss, the target
			t.Errorf("execs %d (failed %d), want 3 (1)", r.Execs, r.FailedExecs)
		}
		if c := r.Counters; c.FnameUnreadable != 0 || c.ArgvUnreadable != 0 || c.Lost() != 0 {
			t.Errorf("counters %+v, want no unreadable filename or argv and no loss", c)
		}

		// The premise: both entry reads faulted and were redone; the
		// launcher's exec of the opener (ordinary memory) was not.
		var cold int
		for _, e := range recs {
			reread := e.Status&trace.StFnameReread != 0
			switch e.Filename {
			case missing, target:
				cold++
				if !reread {
					t.Errorf("exec of %q: status %#x, entry read did not fault; the test proves nothing", e.Filename, e.Status)
				}
				if e.Status&(trace.StFnameUnreadable|trace.StArgvUnreadable) != 0 {
					t.Errorf("exec of %q: status %#x still unreadable", e.Filename, e.Status)
				}
			case opener:
				if reread {
					t.Errorf("exec of the opener from ordinary memory: status %#x has the re-read bit", e.Status)
				}
			default:
				t.Errorf("unexpected exec record %+v", e)
			}
		}
		if cold != 2 {
			t.Errorf("%d exec records of the cold attempts, want 2", cold)
		}
	})
}

// TestColdScriptExec: a script exec'd with its strings in cold pages, by a
// relative name, through a chain of interpreters (a.sh's is b.sh, b.sh's
// /bin/sh). strace shows execve("sub/a.sh", ["sub/a.sh", "alpha"]). The
// kernel's copies, which the new image has, are the interpreter's:
// binfmt_script drops argv[0] and puts each interpreter and script name
// first (["/bin/sh", ".../b.sh", "sub/a.sh", "alpha"]), and the file it
// runs is /bin/sh. Read at sched_prepare_exec (Linux 6.10+), the strings
// are the caller's and the path the directory the name was looked up in;
// without that hook (prepare_exec_missing) argv is marked unreadable, never
// the interpreter's.
func TestColdScriptExec(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "sub", "b.sh")
	if err := os.WriteFile(b, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "a.sh"), []byte("#!"+b+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat("/sys/kernel/tracing/events/sched/sched_prepare_exec")
	hooked := statErr == nil
	for _, tc := range []struct {
		name    string
		prepare bool
	}{
		{"prepare_exec", hooked},
		{"prepare_exec_missing", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.prepare {
				collector.WithoutHook(t, "raw_tp:sched_prepare_exec")
			}
			cmd := exec.Command(opener, "coldexec:sub/a.sh:alpha")
			cmd.Dir = dir
			r, recs := traceEvents(t, cmd)
			var got []trace.ExecRecord
			for _, e := range recs {
				if e.Filename != opener {
					got = append(got, e)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d exec records besides the opener's, want 1: %+v", len(got), got)
			}
			e := got[0]
			if e.Status&trace.StFnameReread == 0 {
				t.Errorf("status %#x: the entry read did not fault; the test proves nothing", e.Status)
			}
			if e.Ret != 0 || e.Filename != "sub/a.sh" || e.Path != dir || e.Status&trace.StPathIsBase == 0 ||
				e.Status&trace.StFnameUnreadable != 0 {
				t.Errorf("exec %q ret %d path %q status %#x, want sub/a.sh tried in %s (path_is_base)",
					e.Filename, e.Ret, e.Path, e.Status, dir)
			}
			wantArgv, wantUnreadable := []string{"sub/a.sh", "alpha"}, uint64(0)
			if !tc.prepare {
				wantArgv, wantUnreadable = nil, 1
			}
			if !slices.Equal(e.Argv, wantArgv) || (e.Status&trace.StArgvUnreadable != 0) != (wantUnreadable != 0) ||
				e.Status&trace.StArgvTruncated != 0 {
				t.Errorf("argv %q (status %#x), want %q (unreadable: %v)", e.Argv, e.Status, wantArgv, wantUnreadable != 0)
			}
			if c := r.Counters; c.ArgvUnreadable != wantUnreadable || c.FnameUnreadable != 0 || c.Lost() != 0 {
				t.Errorf("counters %+v, want %d unreadable argv, no unreadable name, no loss", c, wantUnreadable)
			}
			if r.Execs != 2 || r.FailedExecs != 0 {
				t.Errorf("execs %d (failed %d), want 2 (0)", r.Execs, r.FailedExecs)
			}
		})
	}
}
