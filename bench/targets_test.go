package main

import (
	"strings"
	"testing"
)

// TestTargetsFromResults judges the targets on the committed results: every
// row a target needs is there, so every target must come out measured, and
// the Markdown must carry the table.
func TestTargetsFromResults(t *testing.T) {
	r, err := loadResults("results/latest.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Targets) != 10 {
		t.Fatalf("%d targets, want 10", len(r.Targets))
	}
	for _, tg := range r.Targets {
		if tg.Met == nil {
			t.Errorf("%s: not measured (value %s)", tg.Target, tg.Value)
		}
	}
	md := r.markdown()
	if !strings.Contains(md, "## Targets") || !strings.Contains(md, "| once watch start-up (launch → watching) |") {
		t.Errorf("markdown lacks the targets table:\n%s", md)
	}
}
