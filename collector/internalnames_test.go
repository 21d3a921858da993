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

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestInternalNames: files on kernel-internal mounts are named as the
// kernel names them (issue 20.6), not "/": a pipe reopened through
// /proc/self/fd/N is "pipe:[INO]" (what readlink of the fd gives, printed
// by the program), a program executed from a memfd has the exe
// "/memfd:oncetest (deleted)", /proc/self/ns/net is "net:[INO]", and each
// such name is counted; a file
// deleted while open, opened again, is "PATH (deleted)", as d_path names
// it. strace -f agrees on the opens.
func TestInternalNames(t *testing.T) {
	strace.Require(t)
	row := reltest.Record(t, "run: a memfd fexecve'd, a pipe and a namespace file reopened through /proc/self/fd, a deleted file reopened")
	row.Inputs = "4 files no mount reaches, 1 deleted"
	prog := testprog.Build(t, testprog.Internalnames)
	exe, _ := filepath.EvalSymlinks(testprog.NeedTool(t, "true"))

	dir := t.TempDir()
	doomed := filepath.Join(dir, "doomed")
	names := func(out []byte) (ns, pipe, memfd, deleted string) {
		for _, l := range strings.Split(string(out), "\n") {
			if s, ok := strings.CutPrefix(l, "ns "); ok {
				ns = s
			}
			if s, ok := strings.CutPrefix(l, "deleted "); ok {
				deleted = s
			}
			if s, ok := strings.CutPrefix(l, "pipe "); ok {
				pipe = s
			}
			if s, ok := strings.CutPrefix(l, "memfd "); ok {
				memfd = s
			}
		}
		if !strings.HasPrefix(ns, "net:[") || !strings.HasPrefix(pipe, "pipe:[") || memfd != "/memfd:oncetest (deleted)" || deleted != doomed+" (deleted)" {
			t.Fatalf("the program printed %q", out)
		}
		return ns, pipe, memfd, deleted
	}
	mkDoomed := func() {
		if err := os.WriteFile(doomed, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// strace: the program's successful opens, of the pipe through /proc
	// and of EXE.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := filepath.Join(t.TempDir(), "trace")
	var out bytes.Buffer
	mkDoomed()
	sc := strace.Command(ctx, tr, prog, exe, doomed)
	sc.Stdout = &out
	if err := sc.Run(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out.Bytes())
	}
	names(out.Bytes())
	calls, err := strace.ParseFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	straceProc := 0
	for _, c := range calls {
		if c.IsOpen() && c.Succeeded() && strings.HasPrefix(c.Path, "/proc/self/fd/") {
			straceProc++
		}
	}
	// The pipe's two, the deleted file's one.
	if straceProc != 3 {
		t.Fatalf("strace saw %d opens through /proc/self/fd, want 3", straceProc)
	}

	out.Reset()
	mkDoomed()
	cmd := exec.Command(prog, exe, doomed)
	cmd.Stdout = &out
	r := traceCmd(t, cmd, collector.Options{})
	ns, pipe, memfd, deleted := names(out.Bytes())

	var first, image *trace.Process
	for _, p := range r.Processes {
		switch p.Exe {
		case prog:
			first = p
		case memfd:
			image = p
		}
	}
	if first == nil || image == nil {
		for _, p := range r.Processes {
			t.Logf("process %d exe %q argv %q", p.Pid, p.Exe, p.Argv)
		}
		t.Fatalf("no image of %s and one of %q", prog, memfd)
	}
	if image.Pid != first.Pid || image.Argv[0] != exe {
		t.Errorf("memfd image %+v", image)
	}
	var pipes []*trace.FileOpens
	for _, p := range r.Processes {
		for _, group := range [][]*trace.FileOpens{p.Opens, p.PathOpens, p.SpecialOpens} {
			for _, fo := range group {
				if fo.Path == "/" || strings.HasPrefix(fo.Path, "pipe:") {
					pipes = append(pipes, fo)
				}
			}
		}
	}
	if len(pipes) != 1 || len(first.SpecialOpens) != 1 || first.SpecialOpens[0] != pipes[0] {
		t.Fatalf("pipe opens %+v, special opens %+v", pipes, first.SpecialOpens)
	}
	fo := pipes[0]
	if fo.Path != pipe || fo.Count != straceProc-1 || fo.FileType != trace.FileFIFO || len(fo.Paths) != 1 {
		t.Errorf("pipe %q x%d type %o paths %q, want %q x%d (strace), a FIFO", fo.Path, fo.Count, fo.FileType, fo.Paths, pipe, straceProc-1)
	}
	if want := "pipe:[" + itoa(fo.Ino) + "]"; pipe != want {
		t.Errorf("pipe named %q, inode %d", pipe, fo.Ino)
	}
	for _, c := range fo.Calls {
		if c.Path != pipe {
			t.Errorf("call %+v", c)
		}
	}
	// The deleted file: one file, opened by its name and then again.
	var gone *trace.FileOpens
	for _, f := range first.Opens {
		if f.Path == doomed {
			gone = f
		}
	}
	if gone == nil || gone.Count != 2 || len(gone.Paths) != 2 || gone.Paths[1] != deleted {
		t.Errorf("deleted file %+v, want %s opened 2 times, the second as %q", gone, doomed, deleted)
	}
	// The namespace file: nsfs's name, and a regular file.
	var nsf *trace.FileOpens
	for _, f := range first.Opens {
		if strings.HasPrefix(f.Path, "net:") {
			nsf = f
		}
	}
	if nsf == nil || nsf.Path != ns || nsf.Count != 1 || nsf.Path != "net:["+itoa(nsf.Ino)+"]" {
		t.Errorf("namespace file %+v, want %q", nsf, ns)
	}
	// The fexecve names the file it ran, as the image's exe does.
	var ran bool
	for _, e := range first.Execs {
		ran = ran || e.Path == memfd && e.Errno == 0
	}
	if !ran {
		t.Errorf("execs %+v, none of %q", first.Execs, memfd)
	}
	// The namespace's open, the pipe's two, the fexecve's file and the
	// memfd image's exe; a deleted file's name is no internal one.
	row.Seen, row.Lost = fmt.Sprintf("paths_internal %d, path_unresolved %d", r.Counters.PathsInternal, r.Counters.PathUnresolved), r.Counters.Lost()
	if c := r.Counters; c.PathsInternal != 5 || c.PathUnresolved != 0 {
		t.Errorf("paths_internal %d, path_unresolved %d, want 5 and 0", c.PathsInternal, c.PathUnresolved)
	}
	if n := len(r.Findings); n != 1 || r.Findings[0].Path != doomed || r.Findings[0].Count != 2 {
		t.Errorf("findings %+v, want the deleted file's duplicate", r.Findings)
	}
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
