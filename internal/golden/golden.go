// Package golden compares a test's output with a file kept under testdata
// (a golden file) and, when asked, rewrites that file.
//
// A mismatch fails the test with a unified diff of the file against the
// output, not the whole output. The -update flag rewrites only the golden
// files that a test compared and found different, so
//
//	go test ./report -run TestWatchGoldens -update
//
// rewrites the goldens of that test alone, and
//
//	go test ./report -update='watch.screen.*'
//
// only the files whose base name matches the pattern (path.Match syntax).
// Files that -update must never touch (a sample kept in README.md) go
// through CompareUpdate with a flag of their own.
//
// The package registers -update on the test binary's command line, so only
// tests import it.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateFlag is -update: off, every file ("-update"), or a glob on base
// names ("-update=GLOB").
type updateFlag struct {
	on      bool
	pattern string
}

func (u *updateFlag) String() string {
	if u == nil || !u.on {
		return "false"
	}
	if u.pattern == "" {
		return "true"
	}
	return u.pattern
}

// IsBoolFlag lets -update stand alone, without a value.
func (u *updateFlag) IsBoolFlag() bool { return true }

func (u *updateFlag) Set(s string) error {
	switch s {
	case "true":
		u.on, u.pattern = true, ""
	case "false", "":
		u.on, u.pattern = false, ""
	default:
		if _, err := filepath.Match(s, ""); err != nil {
			return fmt.Errorf("bad pattern %q: %w", s, err)
		}
		u.on, u.pattern = true, s
	}
	return nil
}

// selects reports whether -update asks to rewrite path.
func (u *updateFlag) selects(path string) bool {
	if !u.on {
		return false
	}
	if u.pattern == "" {
		return true
	}
	ok, _ := filepath.Match(u.pattern, filepath.Base(path))
	return ok
}

var update updateFlag

func init() {
	flag.Var(&update, "update", "rewrite the golden files that differ from the output of the tests run (-update=GLOB: only those whose base name matches)")
}

// Compare fails t with a unified diff when got differs from the file at
// path, unless -update selects path: then it rewrites the file and says so.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	CompareUpdate(t, path, got, update.selects(path))
}

// CompareUpdate is Compare with the decision to rewrite made by the caller,
// for files outside testdata that have a flag of their own.
func CompareUpdate(t testing.TB, path string, got []byte, rewrite bool) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil && !(rewrite && os.IsNotExist(err)) {
		t.Fatalf("golden: %v (create it: go test -run '^%s$' -update=%s)", err, topName(t), filepath.Base(path))
	}
	if err == nil && bytes.Equal(got, want) {
		return
	}
	if rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("golden: rewrote %s", path)
		return
	}
	t.Errorf("%s differs from the output (- file, + output); after checking, rewrite it: go test -run '^%s$' -update=%s\n%s",
		path, topName(t), filepath.Base(path), Diff(path, "output", string(want), string(got)))
}

// topName is the name of the top-level test, for a -run pattern.
func topName(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}
