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

// TestMakeReportFits: once run of `make -s -j2` on a nine-file C project
// whose headers sit behind four -I directories (hundreds of findings over
// dozens of processes) gives a default text report of at most 80 lines
// that opens with the verdict; the JSON of the same run keeps every
// finding, more than the text's table shows.
func TestMakeReportFits(t *testing.T) {
	testprog.RequireRoot(t)
	testprog.NeedTool(t, "make")
	testprog.NeedTool(t, "gcc") // make's cc
	bin := buildOnce(t)
	dir := testprog.CProject(t)
	text := filepath.Join(t.TempDir(), "report.txt")
	jsonOut := filepath.Join(t.TempDir(), "report.json")
	for _, args := range [][]string{
		{"run", "-o", text, "--", "make", "-s", "-j2"},
		{"run", "--format", "json", "-o", jsonOut, "--", "make", "-s", "-j2", "-B"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("once %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
	}
	data, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	report := string(data)
	if n := strings.Count(report, "\n"); n > 80 {
		t.Errorf("default report of make -s -j2 is %d lines, want at most 80:\n%s", n, report)
	}
	if !strings.HasPrefix(report, "wasted: ") || !strings.Contains(strings.SplitN(report, "\n", 2)[0], "% of ") {
		t.Errorf("report does not open with the total waste and its share:\n%s", report)
	}
	var doc struct {
		Findings []json.RawMessage `json:"findings"`
	}
	data, err = os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// The compiles' include searches alone make a finding per header and
	// cc1; the text shows the top groups only.
	if rows := strings.Count(report, "\n    → "); len(doc.Findings) <= rows || len(doc.Findings) < 100 {
		t.Errorf("JSON has %d findings, the text %d rows: want the JSON to keep them all (hundreds)", len(doc.Findings), rows)
	}
}
