package main

import (
	"bytes"
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

// TestWatchCommExec: with --comm NAME the exec that gives a process that
// comm is NAME's (as execsnoop -n judges one), though it was entered under
// its caller's comm: the finding has the argv passed and the exec is
// counted; a failed exec of a caller the filter refuses is not seen.
func TestWatchCommExec(t *testing.T) {
	testprog.RequireRoot(t)
	catBin := namedCopy(t, "/bin/cat", "oncecxcat")
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "w.jsonl")
	w := startWatch(t, "--comm", "oncecxcat", "--format", "json", "-o", out, "--interval", "200ms")
	// env searches a PATH whose first entry lacks the program: its
	// failed execve is env's, whose comm the filter refuses.
	cmd := exec.Command("/usr/bin/env", "PATH="+filepath.Join(dir, "missing")+":"+filepath.Dir(catBin), "oncecxcat", f, f)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	var argv []string
	testprog.WaitFor(20*time.Second, func() bool {
		argv = nil
		for _, l := range wholeLines(t, out) {
			if l["type"] == "finding" && l["kind"] == "duplicate_open" && l["comm"] == "oncecxcat" {
				for _, a := range l["argv"].([]any) {
					argv = append(argv, a.(string))
				}
				return true
			}
		}
		return false
	})
	w.stop(t, os.Interrupt)
	if want := []string{"oncecxcat", f, f}; fmt.Sprint(argv) != fmt.Sprint(want) {
		t.Errorf("the finding's argv %q, want %q", argv, want)
	}
	var last map[string]any
	for _, l := range wholeLines(t, out) {
		if l["type"] == "summary" {
			last = l
		}
	}
	if last == nil {
		t.Fatal("no summary line")
	}
	if last["execs"] != float64(1) || last["failed_execs"] != float64(0) {
		t.Errorf("summary execs %v, failed_execs %v; want 1 and 0 (env's failed probe is env's)", last["execs"], last["failed_execs"])
	}
}

// wholeLines is the JSON lines of the file at path so far, the last one
// left out until its newline is written.
func wholeLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(raw, '\n'); i >= 0 {
		return jsonLines(t, raw[:i])
	}
	return nil
}
