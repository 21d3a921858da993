package collector_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// traceCmd runs cmd under a tree-following tracer and returns the result.
// A run that saw no event at all fails the test: a tracer that matches
// nothing must never pass.
func traceCmd(t *testing.T, cmd *exec.Cmd, opts collector.Options) *trace.Result {
	t.Helper()
	testprog.RequireRoot(t)
	opts.Tracked = true
	if opts.Rings == 0 {
		opts.Rings = envRings(t)
	}
	tr, err := collector.Open(opts)
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	res, err := runCommand(ctx, tr, cmd, runOpts{linger: 2 * time.Second})
	if err != nil {
		t.Fatalf("trace %q: %v (stderr: %s)", cmd.Args, err, stderr.String())
	}
	return res
}

func traceArgv(t *testing.T, argv ...string) *trace.Result {
	t.Helper()
	return traceCmd(t, exec.Command(argv[0], argv[1:]...), collector.Options{})
}

type fileID struct{ dev, ino uint64 }

func idOf(t *testing.T, path string) fileID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileID{st.Dev, st.Ino}
}

// opensOf returns, per process image (in order), how often it opened the
// file id, leaving out images that never did.
func opensOf(r *trace.Result, id fileID) (per []*trace.FileOpens) {
	for _, p := range r.Processes {
		for _, fo := range p.Opens {
			if fo.Dev == id.dev && fo.Ino == id.ino {
				per = append(per, fo)
			}
		}
	}
	return per
}

func tempFile(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenCounts(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	f := tempFile(t, dir, "target")
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(f, filepath.Join(dir, "hardlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f, filepath.Join(dir, "symlink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		actions   []string
		count     int
		syscalls  []trace.Syscall
		spellings []string
	}{
		{"open(2)", []string{"repeat:3:open:" + f}, 3, []trace.Syscall{trace.SysOpen}, []string{f}},
		{"openat(2)", []string{"repeat:4:openat:" + f}, 4, []trace.Syscall{trace.SysOpenat}, []string{f}},
		{"openat2(2)", []string{"repeat:2:openat2:" + f}, 2, []trace.Syscall{trace.SysOpenat2}, []string{f}},
		{"creat(2)", []string{"repeat:2:creat:" + f}, 2, []trace.Syscall{trace.SysCreat}, []string{f}},
		{"all four", []string{"open:" + f, "openat:" + f, "openat2:" + f, "creat:" + f}, 4,
			[]trace.Syscall{trace.SysOpen, trace.SysOpenat, trace.SysOpenat2, trace.SysCreat}, []string{f}},
		{"hard link, symlink and ..", []string{"openat:" + f, "openat:" + filepath.Join(dir, "hardlink"),
			"openat:" + filepath.Join(dir, "symlink"), "openat:" + sub + "/../target"}, 4, nil,
			[]string{f, filepath.Join(dir, "hardlink")}},
		{"relative after chdir", []string{"chdir:" + dir, "openat:target", "open:./target"}, 2, nil, []string{f}},
		{"dirfd", []string{"dirfd:" + dir + ":target", "dirfd:" + sub + ":../target"}, 2, nil, []string{f}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := traceArgv(t, append([]string{opener}, tc.actions...)...)
			per := opensOf(r, idOf(t, f))
			if len(per) != 1 {
				t.Fatalf("target opened by %d images, want 1", len(per))
			}
			fo := per[0]
			if fo.Count != tc.count {
				t.Errorf("count = %d, want %d", fo.Count, tc.count)
			}
			if strings.Join(fo.Paths, "|") != strings.Join(tc.spellings, "|") {
				t.Errorf("paths = %q, want %q", fo.Paths, tc.spellings)
			}
			if tc.syscalls != nil {
				for i, c := range fo.Calls {
					if i < len(tc.syscalls) && c.Syscall != tc.syscalls[i] {
						t.Errorf("call %d via %s, want %s", i, c.Syscall, tc.syscalls[i])
					}
				}
			}
			dup := 0
			for _, fi := range r.Findings {
				if fi.Kind == trace.KindDuplicateOpen && fi.Ino == fo.Ino {
					dup++
					if fi.Count != tc.count || fi.Path != f {
						t.Errorf("finding count %d path %q, want %d %q", fi.Count, fi.Path, tc.count, f)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.count > 1]; dup != want {
				t.Errorf("%d duplicate_open findings for the target, want %d", dup, want)
			}
			if r.Counters.Lost() != 0 {
				t.Errorf("lost events: %+v", r.Counters)
			}
		})
	}
}

func TestOpenThreadsAndChildren(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	f := tempFile(t, t.TempDir(), "target")

	t.Run("two threads are one process", func(t *testing.T) {
		r := traceArgv(t, opener, "threads:2:openat:"+f)
		per := opensOf(r, idOf(t, f))
		if len(per) != 1 || per[0].Count != 2 {
			t.Fatalf("per-image counts %v, want one image with 2", counts(per))
		}
		tids := map[uint32]bool{}
		for _, c := range per[0].Calls {
			tids[c.Tid] = true
		}
		if len(tids) != 2 {
			t.Errorf("opens came from %d threads, want 2", len(tids))
		}
	})
	t.Run("parent then child are two processes", func(t *testing.T) {
		r := traceArgv(t, opener, "openat:"+f, "child:openat:"+f)
		per := opensOf(r, idOf(t, f))
		if len(per) != 2 || per[0].Count != 1 || per[1].Count != 1 {
			t.Fatalf("per-image counts %v, want [1 1]", counts(per))
		}
		for _, fi := range r.Findings {
			if fi.Kind == trace.KindDuplicateOpen && fi.Path == f {
				t.Errorf("opens from two processes reported as a duplicate: %+v", fi)
			}
		}
	})
}

func counts(per []*trace.FileOpens) []int {
	var n []int
	for _, fo := range per {
		n = append(n, fo.Count)
	}
	return n
}

func TestOddPaths(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()

	t.Run("longer than 255 bytes", func(t *testing.T) {
		deep := filepath.Join(dir, strings.Repeat("d", 200), strings.Repeat("e", 200))
		if err := os.MkdirAll(deep, 0o755); err != nil {
			t.Fatal(err)
		}
		f := tempFile(t, deep, strings.Repeat("f", 255))
		r := traceArgv(t, opener, "repeat:2:openat:"+f)
		per := opensOf(r, idOf(t, f))
		if len(per) != 1 || per[0].Count != 2 || per[0].Path != f {
			t.Fatalf("got %v path %q, want 2 opens of %q", counts(per), pathOf(per), f)
		}
		if r.Counters.PathTruncated != 0 || r.Counters.FnameTruncated != 0 {
			t.Errorf("truncation counted on a %d-byte path: %+v", len(f), r.Counters)
		}
	})
	t.Run("newline and escape in the name", func(t *testing.T) {
		f := tempFile(t, dir, "evil\n\x1b[31mred\x1b]0;title\a")
		r := traceArgv(t, opener, "openat:"+f, "open:"+f)
		per := opensOf(r, idOf(t, f))
		if len(per) != 1 || per[0].Count != 2 || per[0].Path != f {
			t.Fatalf("got %v path %q, want 2 opens of %q", counts(per), pathOf(per), f)
		}
		var out bytes.Buffer
		if err := report.Text(&out, r); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if strings.ContainsAny(text, "\x1b\a") {
			t.Errorf("text report contains raw control bytes")
		}
		if !strings.Contains(text, `evil\n\x1b[31mred`) {
			t.Errorf("text report lacks the escaped name:\n%s", text)
		}
	})
}

func pathOf(per []*trace.FileOpens) string {
	if len(per) == 0 {
		return ""
	}
	return per[0].Path
}

// pathDirs makes n empty directories and returns them; the last one gets
// the named files, each a copy of the tiny static exitonly program or
// the given script text.
func pathDirs(t *testing.T, n int, files map[string]string) []string {
	t.Helper()
	exitonly := testprog.Build(t, testprog.Exitonly)
	bin, err := os.ReadFile(exitonly)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var dirs []string
	for i := 0; i < n; i++ {
		d := filepath.Join(root, "p"+string(rune('0'+i)))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	for name, content := range files {
		data := []byte(content)
		if content == "" {
			data = bin
		}
		if err := os.WriteFile(filepath.Join(dirs[n-1], name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

func findings(r *trace.Result, kind trace.FindingKind) []trace.Finding {
	var out []trace.Finding
	for _, f := range r.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func TestExecProbes(t *testing.T) {
	dirs := pathDirs(t, 7, map[string]string{
		"oncetarget": "",
		"script":     "#!/bin/sh\nexit 0\n",
		"noshebang":  "exit 0\n",
		"badinterp":  "#!/nonexistent/interp\n",
	})
	path := "PATH=" + strings.Join(dirs, ":")
	last := dirs[6]

	t.Run("env with the target in the 7th PATH entry", func(t *testing.T) {
		r := traceArgv(t, "/usr/bin/env", path, "oncetarget")
		fs := findings(r, trace.KindFailedExecProbes)
		if len(fs) != 1 {
			t.Fatalf("%d exec probe findings, want 1: %+v", len(fs), fs)
		}
		f := fs[0]
		if f.Failed != 6 || f.Found == nil || *f.Found != last+"/oncetarget" || f.Comm != "env" || len(f.Attempts) != 7 {
			t.Errorf("finding %+v", f)
		}
		for i, a := range f.Attempts[:6] {
			if a.Path != dirs[i]+"/oncetarget" || a.Errno != int32(unix.ENOENT) {
				t.Errorf("attempt %d = %+v", i, a)
			}
		}
		if f.WastedNs == 0 {
			t.Errorf("no wasted time measured")
		}
		if r.Execs != 8 || r.FailedExecs != 6 { // env itself, 6 misses, the target
			t.Errorf("execs %d (failed %d), want 8 (6)", r.Execs, r.FailedExecs)
		}
	})
	t.Run("posix_spawnp from a forked child", func(t *testing.T) {
		spawnp := testprog.Build(t, testprog.Spawnp)
		cmd := exec.Command(spawnp, "-fork", "oncetarget")
		cmd.Env = append(os.Environ(), path)
		r := traceCmd(t, cmd, collector.Options{})
		fs := findings(r, trace.KindFailedExecProbes)
		if len(fs) != 1 {
			t.Fatalf("%d exec probe findings, want 1: %+v", len(fs), fs)
		}
		f := fs[0]
		root := r.Processes[0]
		if f.Failed != 6 || f.Pid == root.Pid || f.PPid == root.Pid || f.PPid == 0 {
			t.Errorf("finding pid %d ppid %d failed %d; root is %d", f.Pid, f.PPid, f.Failed, root.Pid)
		}
		var parent *trace.Process
		for _, p := range r.Processes {
			if p.Pid == f.PPid {
				parent = p
			}
		}
		if parent == nil || parent.PPid != root.Pid {
			t.Errorf("the prober's parent should be the forked child of %d: %+v", root.Pid, parent)
		}
	})
	t.Run("#! script", func(t *testing.T) {
		r := traceArgv(t, "/usr/bin/env", path, "script")
		fs := findings(r, trace.KindFailedExecProbes)
		if len(fs) != 1 || fs[0].Failed != 6 || *fs[0].Found != last+"/script" {
			t.Fatalf("findings %+v", r.Findings)
		}
		sh, _ := filepath.EvalSymlinks("/bin/sh")
		lastImg := r.Processes[len(r.Processes)-1]
		if lastImg.Exe != sh {
			t.Errorf("script image exe %q, want the interpreter %q", lastImg.Exe, sh)
		}
		if len(findings(r, trace.KindExecShellFallback)) != 0 {
			t.Errorf("a #! script is run by the kernel, not a shell fallback")
		}
	})
	t.Run("no #!: ENOEXEC then /bin/sh", func(t *testing.T) {
		// One chain, every attempt with its real result: the six
		// misses, the file found that is not a binary (ENOEXEC), and
		// the shell that ran it.
		r := traceArgv(t, "/usr/bin/env", path, "noshebang")
		fb := findings(r, trace.KindExecShellFallback)
		if len(fb) != 1 || fb[0].Failed != 7 || fb[0].Found == nil || *fb[0].Found != "/bin/sh" || len(fb[0].Attempts) != 8 {
			t.Fatalf("shell fallback findings %+v", fb)
		}
		a := fb[0].Attempts
		for i := 0; i < 6; i++ {
			if a[i].Errno != int32(unix.ENOENT) {
				t.Errorf("attempt %d: %+v, want ENOENT", i, a[i])
			}
		}
		if a[6].Path != last+"/noshebang" || a[6].Errno != int32(unix.ENOEXEC) || a[7].Path != "/bin/sh" || a[7].Errno != 0 || !a[7].Fallback {
			t.Errorf("attempts %+v", a[6:])
		}
		if fs := findings(r, trace.KindFailedExecProbes); len(fs) != 0 {
			t.Errorf("the search is part of the fallback's chain, not a finding of its own: %+v", fs)
		}
	})
	t.Run("missing interpreter", func(t *testing.T) {
		cmd := exec.Command("/usr/bin/env", path, "badinterp")
		r := traceCmd(t, cmd, collector.Options{})
		if r.ExitCode != 127 {
			t.Errorf("exit code %d, want 127", r.ExitCode)
		}
		fs := findings(r, trace.KindFailedExecProbes)
		if len(fs) != 1 || fs[0].Failed != 7 || fs[0].Found != nil {
			t.Fatalf("findings %+v", fs)
		}
		if a := fs[0].Attempts[6]; a.Path != last+"/badinterp" || a.Errno != int32(unix.ENOENT) {
			t.Errorf("last attempt %+v", a)
		}
	})
	t.Run("execveat with AT_EMPTY_PATH", func(t *testing.T) {
		opener := testprog.Build(t, testprog.Opener)
		target := testprog.Build(t, testprog.Exitonly)
		r := traceArgv(t, opener, "execveat-empty:"+target)
		var found bool
		for _, p := range r.Processes {
			for _, e := range p.Execs {
				if e.Syscall == trace.SysExecveat {
					found = true
					if e.Filename != "" || e.Errno != 0 || e.AtFlags&unix.AT_EMPTY_PATH == 0 {
						t.Errorf("execveat attempt %+v", e)
					}
				}
			}
		}
		if !found {
			t.Fatal("no execveat seen")
		}
		if last := r.Processes[len(r.Processes)-1]; last.Exe != target {
			t.Errorf("new image exe %q, want %q", last.Exe, target)
		}
	})
}

// TestLossIsCounted floods a one-page ring buffer: events must be lost,
// and every lost one must be counted. The file's path has components too
// long for an open to be sent as a repeat of the one before (48 bytes):
// each record carries its name and path, over half the page, so that the
// ring holds one and the reader can't keep up however fast it is.
func TestLossIsCounted(t *testing.T) {
	row := reltest.Record(t, "run: 20,000 opens into a one-page ring")
	row.Inputs = "20000 opens"
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	for range 6 {
		dir = filepath.Join(dir, strings.Repeat("d", 200))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := tempFile(t, dir, "target")
	const n = 20000
	cmd := exec.Command(opener, "repeat:20000:openat:"+f)
	r := traceCmd(t, cmd, collector.Options{RingBufferSize: os.Getpagesize()})
	seen := 0
	if per := opensOf(r, idOf(t, f)); len(per) == 1 {
		seen = per[0].Count
	}
	c := r.Counters
	row.Seen, row.Lost = seen, c.Lost()
	t.Logf("%d opens seen, %d dropped", seen, c.DroppedEvents)
	if c.DroppedEvents == 0 {
		t.Fatalf("no drops counted with a one-page ring buffer (saw %d of %d opens)", seen, n)
	}
	if seen >= n || uint64(seen)+c.DroppedEvents < n {
		t.Errorf("saw %d opens and %d drops: not all %d accounted for", seen, c.DroppedEvents, n)
	}
	if c.EventsSent != c.EventsReceived {
		t.Errorf("kernel sent %d records, collector received %d", c.EventsSent, c.EventsReceived)
	}
	var out bytes.Buffer
	if err := report.Text(&out, r); err != nil {
		t.Fatal(err)
	}
	// The last line names the drops: only counters not at zero are.
	if !strings.Contains(out.String(), "WARNING") || !strings.Contains(out.String(), fmt.Sprintf("events lost (dropped %d", c.DroppedEvents)) {
		t.Errorf("text report does not show the loss:\n%s", lastLines(out.String(), 3))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
