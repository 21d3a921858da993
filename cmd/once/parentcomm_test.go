package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// TestWatchParentCommOfAnOlderShell: a command run from a shell that was
// there before once watch started (the engine never saw the shell: the
// watch selects the command's comm only) has a finding whose parent_comm
// is that shell's, read from /proc.
func TestWatchParentCommOfAnOlderShell(t *testing.T) {
	testprog.RequireRoot(t)
	shellBin := namedCopy(t, "/bin/sh", "oncepshell")
	catBin := namedCopy(t, "/bin/cat", "oncepcat")
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	shell := exec.Command(shellBin)
	in, err := shell.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); shell.Process.Kill(); shell.Wait() }()

	out := filepath.Join(t.TempDir(), "w.jsonl")
	w := startWatch(t, "--comm", "oncepcat", "--format", "json", "-o", out, "--interval", "200ms")
	fmt.Fprintf(in, "%s %s %s >/dev/null\n", catBin, f, f)
	var fs []finding
	testprog.WaitFor(20*time.Second, func() bool {
		fs = readFindings(t, out)
		return len(fs) > 0
	})
	w.stop(t, os.Interrupt)
	fs = readFindings(t, out)
	found := false
	for _, fd := range fs {
		if fd.Kind != "duplicate_open" || fd.Comm != "oncepcat" {
			continue
		}
		found = true
		if fd.ParentComm != "oncepshell" {
			t.Errorf("parent_comm %q, want the shell's, oncepshell: %s", fd.ParentComm, fd.Line)
		}
	}
	if !found {
		t.Fatalf("no duplicate_open finding of oncepcat in %v", fs)
	}
}
