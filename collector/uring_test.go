package collector_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// uringExit is what uringopen exits with when io_uring is not available.
const uringExit = 77

// TestUringOpens: opens through io_uring are opens of the process that
// submitted them. uringopen opens a file with IORING_OP_OPENAT (inline)
// and IORING_OP_OPENAT2 (IOSQE_ASYNC: in an io-wq worker), into its fd
// table, its ring's fixed-file table, or through an SQPOLL thread, and
// fails to open a missing name; it makes no open syscall. Exactly those
// three opens must be seen, the file's two as one file opened twice. With
// "syscall" it then opens the file with openat(2): a third open of it,
// which the kernel must know repeats the others (where it sends only the
// opens that repeat, the io_uring ones are in the image's table too).
func TestUringOpens(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Uringopen)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"", "fixed", "sqpoll", "syscall", "syscall-first"} {
		for _, o := range []struct {
			name    string
			opts    collector.Options
			noCasts bool // as before Linux 6.2: every field read with CO-RE
		}{
			{"every open sent", collector.Options{}, false},
			{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, false},
			// once run --stacks: a first open's call kept with its stack.
			{"first calls kept", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true, StackSize: 4096}, false},
			{"without BTF casts", collector.Options{}, true},
			// once watch --comm uringopen: a SQPOLL ring's requests are
			// submitted by its thread, "iou-sqp-PID", the process's.
			{"comm filter", collector.Options{Filter: collector.Filter{Comms: []string{"uringopen"}}}, false},
		} {
			t.Run(strings.TrimSpace(mode+" "+o.name), func(t *testing.T) {
				if o.noCasts {
					collector.WithoutBTFCasts(t)
				}
				args := []string{file, "missing"} // relative: tried in dir
				if mode != "" {
					args = append(args, mode)
				}
				r := runUringopen(t, bin, dir, args, o.opts, nil)
				checkUringOpens(t, r, mode, dir, file, &st, o.opts.FirstOpensUnsent)
			})
		}
	}
}

// runUringopen runs the uringopen helper bin with args in dir under a
// tracer of opts (tracked), each event to onEvent if not nil, and returns
// once run's result; it skips where io_uring is not there.
func runUringopen(t *testing.T, bin, dir string, args []string, opts collector.Options, onEvent func(*trace.Event, detect.Annotation)) *trace.Result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	opts.Tracked = true
	tr, err := collector.Open(opts)
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	if !tr.UringOpensSeen() {
		t.Fatalf("io_uring hooks not attached: %+v", tr.Hooks())
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := runCommand(ctx, tr, cmd, runOpts{linger: time.Second, onEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == uringExit {
		testprog.Skipf(t, "no io_uring here: %s", stderr.String())
	}
	if r.ExitCode != 0 {
		t.Fatalf("uringopen exited %d: %s", r.ExitCode, stderr.String())
	}
	return r
}

func checkUringOpens(t *testing.T, r *trace.Result, mode, dir, file string, st *syscall.Stat_t, firstUnsent bool) {
	t.Helper()
	var p *trace.Process
	for _, q := range r.Processes {
		// Under a comm filter the exec that made it entered under the
		// launcher's comm: it is followed by the comm it gave.
		if q.Comm == "uringopen" && (q.Argv != nil || len(q.Opens) > 0) {
			p = q
		}
	}
	if p == nil {
		t.Fatal("no uringopen image")
	}
	opens, want := 2, "io_uring_openat io_uring_openat2"
	switch mode {
	case "syscall":
		opens, want = 3, want+" openat"
	case "syscall-first":
		// The first open, counted in the kernel, is listed only where
		// every open is sent.
		opens = 3
		if !firstUnsent {
			want = "openat " + want
		}
	}
	var got []string
	for _, fo := range p.Opens {
		if fo.Path != file {
			t.Errorf("an open of %s (%v)", fo.Path, fo.Kinds)
			continue
		}
		if fo.Count != opens || fo.Dev != st.Dev || fo.Ino != st.Ino {
			t.Errorf("%s: count %d dev %d ino %d, want %d opens of %d:%d", file, fo.Count, fo.Dev, fo.Ino, opens, st.Dev, st.Ino)
		}
		for _, c := range fo.Calls {
			got = append(got, c.Syscall.String())
			if c.Fname != file || c.Path != file {
				t.Errorf("call %+v: want fname and path %s", c, file)
			}
			if c.Ns == 0 && !c.Untimed || c.EnterNs == 0 {
				t.Errorf("call %+v: no submission or completion time", c)
			}
			// The thread that submitted it, not the worker that ran
			// it; with SQPOLL, the ring's own thread submits.
			if c.Tid != p.Pid && mode != "sqpoll" || c.Tid == p.Pid && mode == "sqpoll" {
				t.Errorf("call %+v: tid %d, process %d", c, c.Tid, p.Pid)
			}
		}
	}
	if strings.Join(got, " ") != want {
		t.Errorf("successful opens %q, want %s of %s", got, want, file)
	}
	if len(p.FailedOpens) != 1 {
		t.Fatalf("failed opens %+v, want 1", p.FailedOpens)
	}
	f := p.FailedOpens[0]
	if f.Fname != "missing" || f.Errno != int32(syscall.ENOENT) || f.Count != 1 || f.Base != dir ||
		f.Calls[0].Syscall != trace.SysIoUringOpenat {
		t.Errorf("failed open %+v (calls %+v), want one io_uring_openat of missing in %s, ENOENT", f, f.Calls, dir)
	}
	dups := findings(r, trace.KindDuplicateOpen)
	if len(dups) != 1 || dups[0].Path != file || dups[0].Count != opens {
		t.Errorf("duplicate_open findings %+v, want one of %s x%d", dups, file, opens)
	}
	if r.Counters.UringSetups != 1 {
		t.Errorf("UringSetups = %d, want 1", r.Counters.UringSetups)
	}
	if r.Counters.Lost() != 0 {
		t.Errorf("events lost: %+v", r.Counters)
	}
}

// TestUringOpensUnseenByStrace documents why the oracle tests have no
// io_uring case: strace -f sees none of uringopen's opens, only its ring's
// syscalls.
func TestUringOpensUnseenByStrace(t *testing.T) {
	stracePath := strace.Require(t)
	bin := testprog.Build(t, testprog.Uringopen)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "strace.out")
	cmd := strace.Command(context.Background(), out, bin, file, "missing")
	cmd.Path = stracePath
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == uringExit {
			testprog.Skipf(t, "no io_uring here: %s", b)
		}
		t.Fatalf("strace uringopen: %v\n%s", err, b)
	}
	calls, err := strace.ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.IsOpen() {
			t.Errorf("strace saw %s(%q): uringopen makes no open syscall", c.Syscall, c.Path)
		}
	}
}

// TestUringStatx: a lookup through io_uring (IORING_OP_STATX) is a lookup
// of the process that submitted it, as a statx syscall's would be:
// counted (its failures too), sent as an event of its own syscall, its
// identity read from the buffer it filled, a relative name's directory
// with it. uringopen's "statx" mode (a static program: no loader's
// lookups) looks up FILE, MISSING twice, an fd by AT_EMPTY_PATH (an
// fstat: no lookup) and FILE's basename from its directory, and makes no
// stat or access syscall of any name: exactly four lookups, two failed.
func TestUringStatx(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Uringopen)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		name    string
		opts    collector.Options
		noCasts bool
	}{
		{"every call sent", collector.Options{}, false},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, false},
		{"without BTF casts", collector.Options{}, true},
	} {
		t.Run(o.name, func(t *testing.T) {
			if o.noCasts {
				collector.WithoutBTFCasts(t)
			}
			var got []trace.OpenRecord
			r := runUringopen(t, bin, dir, []string{file, "missing", "statx"}, o.opts, func(ev *trace.Event, _ detect.Annotation) {
				if ev.Kind == trace.EventOpen && ev.Open.Syscall == trace.SysIoUringStatx {
					got = append(got, ev.Open)
				}
			})
			type call struct {
				fname, path string
				ret         int32
				base        bool
				dev, ino    uint64
			}
			want := []call{
				{file, "", 0, false, st.Dev, st.Ino},
				{"missing", dir, -int32(syscall.ENOENT), true, 0, 0},
				{"missing", dir, -int32(syscall.ENOENT), true, 0, 0},
				{"file", dir, 0, true, st.Dev, st.Ino},
			}
			if len(got) != len(want) {
				t.Fatalf("%d io_uring_statx events, want %d: %+v", len(got), len(want), got)
			}
			for i, g := range got {
				c := call{g.Fname, g.Path, g.Ret, g.Status.Has(trace.StPathIsBase), g.Dev, g.Ino}
				if c != want[i] {
					t.Errorf("lookup %d: %+v, want %+v", i, c, want[i])
				}
				if g.Flags != 0 || g.Mode != 0x7ff || g.Dirfd != -100 || g.EnterNs == 0 || g.ExitNs < g.EnterNs {
					t.Errorf("lookup %d: flags %#x mask %#x dirfd %d times %d..%d, want 0, STATX_BASIC_STATS, AT_FDCWD, timed",
						i, g.Flags, g.Mode, g.Dirfd, g.EnterNs, g.ExitNs)
				}
			}
			if r.Lookups != 4 || r.FailedLookups != 2 {
				t.Errorf("%d lookups (%d failed), want 4 (2)", r.Lookups, r.FailedLookups)
			}
			if r.Opens != 3 || r.FailedOpens != 1 {
				t.Errorf("%d opens (%d failed), want 3 (1)", r.Opens, r.FailedOpens)
			}
			if dups := findings(r, trace.KindDuplicateStat); len(dups) != 1 || dups[0].Path != file || dups[0].Count != 2 {
				t.Errorf("duplicate_stat findings %+v, want one of %s x2", dups, file)
			}
			if r.Counters.Lost() != 0 {
				t.Errorf("events lost: %+v", r.Counters)
			}
		})
	}
}

// TestUringPrepFailures: a request that fails in its prep (a name longer
// than PATH_MAX, a name the kernel could not read, an SQE flag that does
// not exist) never reaches
// io_uring_submit_req; its completion comes all the same. Each was dropped
// unseen, in no count: an open, a lookup, failed, lost. io_uring_req_failed
// sends their submission: each one is there, its name cut or unreadable,
// and counted so.
func TestUringPrepFailures(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Uringopen)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	type call struct {
		sc          trace.Syscall
		ret         int32
		cut, unread bool
	}
	var got []call
	r := runUringopen(t, bin, dir, []string{file, "missing", "prepfail"}, collector.Options{}, func(ev *trace.Event, _ detect.Annotation) {
		if ev.Kind == trace.EventOpen && ev.Open.Ret < 0 &&
			(ev.Open.Syscall == trace.SysIoUringOpenat || ev.Open.Syscall == trace.SysIoUringStatx) && ev.Open.Fname != "missing" {
			got = append(got, call{ev.Open.Syscall, ev.Open.Ret, ev.Open.Status.Has(trace.StFnameTruncated), ev.Open.Status.Has(trace.StFnameUnreadable)})
			if ev.Open.Status.Has(trace.StFnameTruncated) && (len(ev.Open.Fname) != 4095 || !strings.HasPrefix(ev.Open.Fname, "/nnn")) {
				t.Errorf("cut name %.20q... of %d bytes, want the name's first 4095", ev.Open.Fname, len(ev.Open.Fname))
			}
			// Nothing was looked up: no directory tried (the
			// completion's is a request's never prepared: /dev/null).
			if ev.Open.Path != "" || ev.Open.Status.Has(trace.StPathIsBase) {
				t.Errorf("%q: path %q (base %v), want none", ev.Open.Fname, ev.Open.Path, ev.Open.Status.Has(trace.StPathIsBase))
			}
		}
	})
	want := []call{
		{trace.SysIoUringOpenat, -int32(syscall.ENAMETOOLONG), true, false},
		{trace.SysIoUringOpenat, -int32(syscall.EFAULT), false, true},
		{trace.SysIoUringStatx, -int32(syscall.ENAMETOOLONG), true, false},
		{trace.SysIoUringOpenat, -int32(syscall.EINVAL), false, false},
	}
	if len(got) != len(want) {
		t.Fatalf("requests failed in prep: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if r.Opens != 6 || r.FailedOpens != 4 || r.Lookups != 1 || r.FailedLookups != 1 {
		t.Errorf("%d opens (%d failed), %d lookups (%d failed), want 6 (4), 1 (1)", r.Opens, r.FailedOpens, r.Lookups, r.FailedLookups)
	}
	if r.Counters.FnameTruncated != 2 || r.Counters.FnameUnreadable != 1 {
		t.Errorf("fname_truncated %d, fname_unreadable %d, want 2 and 1", r.Counters.FnameTruncated, r.Counters.FnameUnreadable)
	}
	if r.Counters.Lost() != 0 {
		t.Errorf("events lost: %+v", r.Counters)
	}
}

// TestUringSearchEnds: a search whose misses are io_uring's and whose
// find is an open(2) the kernel would count (a repeat of one of the
// thread's recent kinds, past those sent): the find must still reach
// user space and end the search, as with every call sent. Under once run
// (no table of failed basenames) an io_uring miss did not move the
// process's probe generation: the find was counted, and the search
// reported as finding the name nowhere.
func TestUringSearchEnds(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Uringopen)
	dir := t.TempDir()
	for _, sub := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := tempFile(t, filepath.Join(dir, "b"), "x")
	args := []string{file, filepath.Join(dir, "a", "x"), "search", filepath.Join(dir, "c", "x")}
	want := fmt.Sprintf("failed_open_probes x 2 found %q variants []", file)
	for _, m := range sendModes {
		t.Run(m.name, func(t *testing.T) {
			r := runUringopen(t, bin, dir, args, m.opts, nil)
			if got := chainLines(r); !slices.Contains(got, want) {
				t.Errorf("findings %q, want %q", got, want)
			}
			if r.Counters.Lost() != 0 {
				t.Errorf("lost: %+v", r.Counters)
			}
		})
	}
}
