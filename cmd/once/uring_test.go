package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestWatchUringEvents: once watch --events shows the opens a process
// makes through io_uring, which are no syscalls, as lines of its own.
func TestWatchUringEvents(t *testing.T) {
	prog := namedCopy(t, testprog.Build(t, testprog.Uringopen), "oncewatchuring")
	dir := t.TempDir()
	f := filepath.Join(dir, "target")
	os.WriteFile(f, []byte("x"), 0o644)
	w := startWatch(t, "--format", "json", "--events", "--comm", "oncewatchuring")
	cmd := exec.Command(prog, f, "missing")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	w.stop(t, os.Interrupt)
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 77 {
		testprog.Skipf(t, "no io_uring here: %s", out)
	}
	if err != nil {
		t.Fatalf("uringopen: %v\n%s", err, out)
	}
	got := map[string]int{}
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] != "open" || m["comm"] != "oncewatchuring" {
			continue
		}
		switch {
		case m["path"] == f && m["ret"].(float64) >= 0:
			got[m["syscall"].(string)]++
		case m["fname"] == "missing" && m["error"] == "ENOENT":
			got[m["syscall"].(string)+" ENOENT"]++
		default:
			t.Errorf("open line %v", m)
		}
	}
	want := map[string]int{"io_uring_openat": 1, "io_uring_openat2": 1, "io_uring_openat ENOENT": 1}
	if len(got) != len(want) {
		t.Errorf("open lines %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("open lines %v, want %v", got, want)
			break
		}
	}
}
