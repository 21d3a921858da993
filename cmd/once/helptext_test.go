package main

import (
	"bytes"
	"os"
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

// TestDemoSelfCommand: the demo names once so that the line runs where it
// is printed: ./bin/once from the directory above bin, the absolute path
// from the demo's tree, which the section's first line changes into.
func TestDemoSelfCommand(t *testing.T) {
	for _, c := range []struct{ wd, exe, want string }{
		{"/src/once", "/src/once/bin/once", "./bin/once"},
		{"/tmp/once-demo-1", "/src/once/bin/once", "/src/once/bin/once"},
		{"/src/once/bin/x", "/src/once/bin/once", "/src/once/bin/once"},
		{"", "/src/once/bin/once", "/src/once/bin/once"},
	} {
		if got := runnableArgvFrom(c.wd, []string{c.exe})[0]; got != c.want {
			t.Errorf("runnableArgvFrom(%q, %q) = %q, want %q", c.wd, c.exe, got, c.want)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	if got := selfCommandFrom(t.TempDir()); got[len(got)-1] != exe {
		t.Errorf("selfCommandFrom(a tree) = %q, want the absolute %q", got, exe)
	}
}
