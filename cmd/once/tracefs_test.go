package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestOnceUnderOnce: once run traced by once run. The inner once reads
// the id file of every tracepoint it attaches, each a file of its own,
// which tracefs gives one inode number: none is a duplicate of another.
func TestOnceUnderOnce(t *testing.T) {
	testprog.RequireRoot(t)
	if _, err := os.Stat("/sys/kernel/tracing/events/syscalls/sys_enter_openat/id"); err != nil {
		t.Fatalf("tracefs: %v", err)
	}
	bin := buildOnce(t)
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(bin, "run", "--processes", "all", "--files", "all", "--format", "json", "-o", out, "--", bin, "run", "-o", "/dev/null", "--", "true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []struct {
			Kind  string   `json:"kind"`
			Path  string   `json:"path"`
			Paths []string `json:"paths"`
			Count int      `json:"count"`
		} `json:"findings"`
		Processes []struct {
			Opens []struct {
				Path  string   `json:"path"`
				Paths []string `json:"paths"`
			} `json:"opens"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	ids := map[string]bool{}
	for _, p := range doc.Processes {
		for _, o := range p.Opens {
			for _, path := range append(o.Paths, o.Path) {
				if strings.HasSuffix(path, "/id") && strings.Contains(path, "/events/") {
					ids[path] = true
				}
			}
		}
	}
	if len(ids) < 2 {
		t.Fatalf("%d tracepoint id files opened by the inner once: the test proves nothing", len(ids))
	}
	for _, f := range doc.Findings {
		if f.Kind == "duplicate_open" && strings.Contains(f.Path, "/events/") {
			t.Errorf("duplicate_open of %s x%d, spelled %q: tracefs files told apart by inode number alone", f.Path, f.Count, f.Paths)
		}
	}
}
