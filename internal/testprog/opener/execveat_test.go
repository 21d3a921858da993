package main

import (
	"os"
	"path/filepath"
	"testing"
)

// execveat: goes on after a miss and fails on anything else; a bad spec
// is refused before anything runs. (No case may succeed: it would
// replace the test.)
func TestExecveatAction(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, spec       string
		parseErr, runErr bool
	}{
		{"ENOENT is a miss", "execveat:" + dir + ":missing", false, false},
		{"ENOTDIR is a miss", "execveat:" + dir + ":file/x", false, false},
		{"EACCES is a miss", "execveat:" + dir + ":file", false, false},
		{"a directory that can't be opened", "execveat:" + dir + "/nonexistent:x", false, true},
		{"no name", "execveat:" + dir, true, false},
		{"no directory", "execveat::x", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := parseAction(c.spec)
			if (err != nil) != c.parseErr {
				t.Fatalf("parse: %v, want an error: %v", err, c.parseErr)
			}
			if err != nil {
				return
			}
			if a.replacesProcess() {
				t.Error("a search step must be allowed before other actions")
			}
			if err := a.run(); (err != nil) != c.runErr {
				t.Errorf("run: %v, want an error: %v", err, c.runErr)
			}
		})
	}
}
