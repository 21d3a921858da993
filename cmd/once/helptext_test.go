package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestWatchHelpText: watch's help says what its flags do: --failed keeps
// failed lookups too, --ignore takes ** as run's does, and --top's
// default is for the pipe and the summary, not the live screen.
func TestWatchHelpText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"watch", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	help := stdout.String()
	for _, w := range []string{
		"only failed calls: opens, lookups (stat, access) and execs",
		"out of findings (repeatable; ** matches any directories)",
		"rows in the table on a pipe and in the summary at the end; the live screen shows every row, scrolled, unless --top is given",
	} {
		if !strings.Contains(help, w) {
			t.Errorf("watch -h lacks %q:\n%s", w, help)
		}
	}
}
