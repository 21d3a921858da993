package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
)

// specialScript writes twice to /dev/null and has cat open f twice: one
// duplicate (f), and a device opened again that is none (issue 21).
func specialScript(f string) string {
	return "echo a >/dev/null; echo b >/dev/null; cat " + f + " " + f
}

// TestRunSpecialOpens: once run lists a shell's repeated /dev/null apart
// (special_opens, file_type chr), with the opens strace -f sees, and finds
// only the file cat opened twice.
func TestRunSpecialOpens(t *testing.T) {
	testprog.RequireRoot(t)
	strace.Require(t)
	bin := buildOnce(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "-c", specialScript(f)}

	// What strace sees: the successful opens of /dev/null.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	trace := filepath.Join(dir, "trace")
	if out, err := strace.Command(ctx, trace, argv...).CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	calls, err := strace.ParseFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	straceNull := 0
	for _, c := range calls {
		if c.IsOpen() && c.Succeeded() && c.Path == "/dev/null" {
			straceNull++
		}
	}
	if straceNull != 2 {
		t.Fatalf("strace saw %d opens of /dev/null, want 2: %+v", straceNull, calls)
	}

	out := filepath.Join(dir, "report.json")
	cmd := exec.Command(bin, append([]string{"run", "--processes", "all", "--format", "json", "-o", out, "--"}, argv...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("once run: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		Path     string `json:"path"`
		FileType string `json:"file_type"`
		Count    int    `json:"count"`
	}
	var doc struct {
		Findings []struct {
			Kind  string `json:"kind"`
			Comm  string `json:"comm"`
			Path  string `json:"path"`
			Count int    `json:"count"`
		} `json:"findings"`
		Processes []struct {
			Comm         string `json:"comm"`
			Opens        []file `json:"opens"`
			SpecialOpens []file `json:"special_opens"`
			Totals       struct {
				DupFiles int `json:"duplicate_files"`
			} `json:"totals"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	dups := 0
	for _, fd := range doc.Findings {
		if fd.Kind != "duplicate_open" {
			continue
		}
		dups++
		if fd.Path != f || fd.Comm != "cat" || fd.Count != 2 {
			t.Errorf("duplicate_open %+v, want %s opened 2 times by cat", fd, f)
		}
	}
	if dups != 1 {
		t.Errorf("%d duplicate_open findings, want 1:\n%s", dups, data)
	}
	null, nullFiles := 0, 0
	for _, p := range doc.Processes {
		for _, fo := range p.SpecialOpens {
			if fo.Path == "/dev/null" {
				nullFiles++
				null += fo.Count
				if fo.FileType != "chr" || p.Comm != "sh" {
					t.Errorf("special open %+v by %s, want chr by sh", fo, p.Comm)
				}
			}
		}
		for _, fo := range p.Opens {
			if fo.Path == "/dev/null" {
				t.Errorf("/dev/null among %s's files: %+v", p.Comm, fo)
			}
		}
		if p.Comm == "sh" && p.Totals.DupFiles != 0 {
			t.Errorf("sh has %d duplicate files, want 0", p.Totals.DupFiles)
		}
	}
	if nullFiles != 1 || null != straceNull {
		t.Errorf("/dev/null listed %d times with %d opens, want once with strace's %d:\n%s", nullFiles, null, straceNull, data)
	}
}

// TestWatchSpecialOpens: once watch, whose kernel side counts first opens
// without sending them, finds no duplicate in a shell writing twice to
// /dev/null, and still finds the file the same shell reads twice.
func TestWatchSpecialOpens(t *testing.T) {
	sh := testprog.NeedTool(t, "sh")
	name := "oncespecialsh"
	shell := namedCopy(t, sh, name)
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, "--format", "json", "--comm", name)
	runOK(t, shell, "-c", "echo a >/dev/null; echo b >/dev/null; echo c >/dev/null; read x <"+f+"; read x <"+f)
	w.stop(t, os.Interrupt)
	dups := 0
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] != "finding" || m["kind"] != "duplicate_open" || m["comm"] != name {
			continue
		}
		if m["path"] == "/dev/null" {
			t.Errorf("/dev/null is a duplicate_open finding: %v", m)
			continue
		}
		dups++
		if m["path"] != f || m["count"].(float64) != 2 {
			t.Errorf("finding %v, want %s opened 2 times", m, f)
		}
	}
	if dups != 1 {
		t.Errorf("%d duplicate_open findings of %s, want 1:\n%s", dups, f, w.stdout.String())
	}
}
