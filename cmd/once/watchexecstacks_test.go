package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// TestWatchStacksAfterExec: under once watch --stacks, an image that
// opens a file twice right after an exec whose old image opened that file
// too (the thread's recent opens, kept across the exec, named it) has
// both its calls' stacks, as a fresh process has. stackprog opens the
// file (once with O_RDONLY|O_CLOEXEC) and execs opener, which opens it
// twice with those flags. Before the kernel emptied the thread's recent
// opens at the exec, the new image's first open was sent as a repeat, its
// snapshot kept and never sent (watch sends one open per kind: the second
// was tallied), and the duplicate had no call site (stack_id 0 for both,
// stacks_first_lost 1).
func TestWatchStacksAfterExec(t *testing.T) {
	testprog.RequireRoot(t)
	sp := namedCopy(t, testprog.Build(t, testprog.Stackprog), "oncewexecsp")
	op := namedCopy(t, testprog.Build(t, testprog.Opener), "oncewexecop")
	f := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "w.jsonl")
	w := startWatch(t, "--stacks", "--format", "json", "-o", out, "--comm", "oncewexecsp", "--comm", "oncewexecop")
	cmd := exec.Command(sp, f, op, "openat:"+f, "openat:"+f)
	cmd.Stdin = strings.NewReader("x")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", sp, err, b)
	}
	waitFor(10*time.Second, func() bool {
		data, _ := os.ReadFile(out)
		return strings.Contains(string(data), `"comm":"oncewexecop"`)
	})
	w.stop(t, syscall.SIGTERM)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	var firstLost float64 = -1
	for _, m := range jsonLines(t, data) {
		switch m["type"] {
		case "summary":
			firstLost, _ = m["stacks_first_lost"].(float64)
		case "finding":
			if m["kind"] != "duplicate_open" || m["comm"] != "oncewexecop" || m["path"] != f {
				continue
			}
			found = true
			if m["count"] != float64(2) {
				t.Errorf("duplicate of %s in the new image: count %v, want 2", f, m["count"])
			}
			sites, _ := m["call_sites"].([]any)
			n := 0.0
			for _, s := range sites {
				cs, _ := s.(map[string]any)
				if id, _ := cs["stack_id"].(float64); id == 0 {
					t.Errorf("duplicate of %s in the new image: a call site without a stack: %v", f, sites)
				}
				c, _ := cs["count"].(float64)
				n += c
			}
			if n != 2 {
				t.Errorf("duplicate of %s in the new image: call sites %v, want 2 calls", f, sites)
			}
		}
	}
	if !found {
		t.Fatalf("no duplicate of %s by oncewexecop:\n%s", f, data)
	}
	if firstLost != 0 {
		t.Errorf("stacks_first_lost %v, want 0", firstLost)
	}
}
