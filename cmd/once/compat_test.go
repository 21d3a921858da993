package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// A 32-bit program's syscalls are invisible to syscall tracepoints: every
// output format must say so, not show a program that opened nothing.
func TestCompatInEveryFormat(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := testprog.Open32(t, target, 2)

	// Text, on stderr.
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--", prog)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("once run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "WARNING: 1 32-bit program image ran") ||
		!strings.Contains(stderr.String(), "; 1 32-bit image unseen") {
		t.Errorf("text report lacks the 32-bit warning and count:\n%s", stderr.String())
	}

	// JSON report.
	out := filepath.Join(dir, "r.json")
	if msg, err := exec.Command(bin, "run", "--processes", "all", "--format", "json", "-o", out, "--", prog).CombinedOutput(); err != nil {
		t.Fatalf("once run: %v\n%s", err, msg)
	}
	data, _ := os.ReadFile(out)
	var doc struct {
		CompatImages *uint64 `json:"compat_images"`
		Processes    []struct {
			Exe    string `json:"exe"`
			Compat bool   `json:"compat"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, data)
	}
	if doc.CompatImages == nil || *doc.CompatImages != 1 {
		t.Errorf("compat_images = %v, want 1", doc.CompatImages)
	}
	flagged := 0
	for _, p := range doc.Processes {
		if p.Compat {
			flagged++
			if p.Exe != prog {
				t.Errorf("process %s flagged compat", p.Exe)
			}
		}
	}
	if flagged != 1 {
		t.Errorf("%d processes flagged compat, want 1:\n%s", flagged, data)
	}

	// once check: an incomplete trace is a violation, whatever it asserts.
	stderr.Reset()
	cmd = exec.Command(bin, "check", "--max-opens", "1", "--", prog)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != checkViolated ||
		!strings.Contains(stderr.String(), "1 32-bit program image ran") {
		t.Errorf("once check: %v, want exit %d and the 32-bit violation:\n%s", err, checkViolated, stderr.String())
	}

	// once watch: the JSON summary counts the images of the comm it watches.
	w := startWatch(t, "--format", "json", "--comm", "open32", "--interval", "100ms")
	for range 3 {
		runOK(t, prog)
	}
	w.stop(t, syscall.SIGTERM)
	var last map[string]any
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] == "summary" {
			last = m
		}
	}
	if last == nil || last["compat_images"] != float64(3) {
		t.Errorf("last watch summary %v: compat_images want 3", last)
	}
}
