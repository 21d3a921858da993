package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestParts: with every strategy, reflaunch also times what execvpe and
// spawnp are made of, in the same rounds: one failed execve, a fork and
// a CLONE_VM child alone (each _exit at once, reaped); and the page
// tables fork copies. These are the numbers that say why spawnp is
// faster with the same failed execve.
func TestParts(t *testing.T) {
	rep := runJSON(t, "-n", "30", "-k", "3")
	p := rep.Parts
	if p == nil {
		t.Fatalf("no parts in %+v", rep)
	}
	for name, v := range map[string]int64{"failed execve": p.FailedExecveNS, "fork": p.ForkNS, "clone(CLONE_VM)": p.CloneVMNS, "page tables": p.PageTablesBytes,
		"fork, failed execve": p.ForkFailNS, "clone(CLONE_VM), failed execve": p.CloneVMFailNS} {
		if v <= 0 || v > 1e9 {
			t.Errorf("%s: %d, want a plausible positive value", name, v)
		}
	}
	// A single strategy has nothing to explain.
	if rep := runJSON(t, "-n", "3", "-k", "3", "-strategy", "spawnp"); rep.Parts != nil {
		t.Errorf("parts %+v for one strategy", rep.Parts)
	}
	// With k=1 nothing fails: no failed execve to time, the rest still.
	if rep := runJSON(t, "-n", "3", "-k", "1"); rep.Parts == nil || rep.Parts.FailedExecveNS != 0 || rep.Parts.ForkFailNS != 0 || rep.Parts.ForkNS <= 0 {
		t.Errorf("k=1: parts %+v, want no failed execve and a fork time", rep.Parts)
	}
}

// TestTextUnits: the text table gives times in one unit with its name,
// never a raw count of nanoseconds.
func TestTextUnits(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-n", "20", "-k", "3"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	// Nanoseconds of a launch run to six digits; µs have a decimal.
	if regexp.MustCompile(`(^|[^\d.])\d{6,}([^\d.]|$)`).MatchString(out) {
		t.Errorf("a raw number of six digits or more:\n%s", out)
	}
	for _, want := range []string{"(µs)", "one failed execve", "fork", "CLONE_VM"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}
