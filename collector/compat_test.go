package collector_test

import (
	"testing"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// The kernel's syscall tracepoints skip compat syscalls: a 32-bit program's
// opens are invisible to them. strace -f shows them; once must say it
// could not, rather than report a process that opened nothing.
func TestCompatImagesAreFlagged(t *testing.T) {
	testprog.RequireRoot(t)
	target := tempFile(t, t.TempDir(), "target")
	prog := testprog.Open32(t, target, 2)

	// Run from a shell, so the exec is one a traced image makes.
	res := traceArgv(t, "sh", "-c", prog+"; exit 0")
	if res.Counters.CompatImages != 1 {
		t.Errorf("CompatImages = %d, want 1", res.Counters.CompatImages)
	}
	var p *trace.Process
	for _, q := range res.Processes {
		if q.Exe == prog {
			p = q
		}
	}
	if p == nil {
		t.Fatalf("no process with exe %s in %d processes", prog, len(res.Processes))
	}
	if !p.Compat {
		t.Errorf("%s: Compat = false, want true", prog)
	}
	// Its exec was a native execve whose exit, in the new image, is a
	// compat syscall's: completed at the image instead, once, as strace
	// shows it ("execve(...) = 0"). The image that made the call has it.
	var execs []trace.ExecAttempt
	for _, q := range res.Processes {
		execs = append(execs, q.Execs...)
	}
	if len(execs) != 1 || execs[0].Errno != 0 || execs[0].Filename != prog {
		t.Errorf("execs %+v, want one successful exec of %s", execs, prog)
	}
	if res.Counters.Lost() != 0 {
		t.Errorf("%d events lost, want 0 (counters %+v)", res.Counters.Lost(), res.Counters)
	}
	// Documents the blind spot: should the kernel ever report compat
	// syscalls to these tracepoints, this test says so.
	if n := len(opensOf(res, idOf(t, target))); n != 0 {
		t.Errorf("%d images opened %s, want 0 (compat syscalls are not traced)", n, target)
	}

	// A 64-bit program is not flagged.
	res = traceArgv(t, "true")
	if res.Counters.CompatImages != 0 {
		t.Errorf("true: CompatImages = %d, want 0", res.Counters.CompatImages)
	}
	for _, q := range res.Processes {
		if q.Compat {
			t.Errorf("true: process %d (%s) flagged Compat", q.Pid, q.Comm)
		}
	}
}
