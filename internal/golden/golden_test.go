package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "x\ny\n", "x\ny\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n",
			"--- f\n+++ g\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"context is three lines", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- f\n+++ g\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"distant changes are two hunks", "a\n1\n2\n3\n4\n5\n6\n7\nz\n", "A\n1\n2\n3\n4\n5\n6\n7\nZ\n",
			"--- f\n+++ g\n@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-z\n+Z\n"},
		{"near changes are one hunk", "a\n1\n2\n3\n4\n5\nz\n", "A\n1\n2\n3\n4\n5\nZ\n",
			"--- f\n+++ g\n@@ -1,7 +1,7 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n-z\n+Z\n"},
		{"added to an empty file", "", "x\n", "--- f\n+++ g\n@@ -0,0 +1,1 @@\n+x\n"},
		{"removed at the end", "a\nb\n", "a\n", "--- f\n+++ g\n@@ -1,2 +1,1 @@\n a\n-b\n"},
		{"newline at the end lost", "a\n", "a",
			"--- f\n+++ g\n@@ -1,1 +1,1 @@\n-a\n+a\n\\ No newline at end of file\n"},
		{"a line inserted keeps the rest", "a\nc\n", "a\nb\nc\n", "--- f\n+++ g\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff("f", "g", tc.a, tc.b); got != tc.want {
				t.Errorf("Diff:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestDiffApplies: applying the diff's hunks to a gives b, for inputs the
// line matcher handles and for those past its size bound.
func TestDiffApplies(t *testing.T) {
	lines := func(n, every int, tag string) string {
		var sb strings.Builder
		for i := range n {
			if every > 0 && i%every == 0 {
				fmt.Fprintf(&sb, "%s%d\n", tag, i)
			} else {
				fmt.Fprintf(&sb, "%d\n", i)
			}
		}
		return sb.String()
	}
	for _, tc := range []struct{ name, a, b string }{
		{"sparse edits", lines(200, 17, "x"), lines(200, 23, "y")},
		{"past the bound", lines(2100, 3, "x"), lines(2100, 5, "y")},
		{"disjoint", "a\nb\n", "c\nd\ne\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apply(t, tc.a, Diff("a", "b", tc.a, tc.b)); got != tc.b {
				t.Errorf("applying the diff gives\n%q\nwant\n%q", got, tc.b)
			}
		})
	}
}

// apply applies a unified diff (without "No newline" markers) to a.
func apply(t *testing.T, a, diff string) string {
	t.Helper()
	src := splitLines(a)
	var out []string
	next := 0 // next line of src not yet copied
	dl := splitLines(diff)[2:]
	for i := 0; i < len(dl); i++ {
		var as, ac, bs, bc int
		if _, err := fmt.Sscanf(dl[i], "@@ -%d,%d +%d,%d @@", &as, &ac, &bs, &bc); err != nil {
			t.Fatalf("line %q: %v", dl[i], err)
		}
		start := as - 1
		if ac == 0 {
			start = as
		}
		out = append(out, src[next:start]...)
		next = start
		for i+1 < len(dl) && !strings.HasPrefix(dl[i+1], "@@") {
			i++
			l := dl[i]
			switch l[0] {
			case ' ':
				if src[next] != l[1:] {
					t.Fatalf("context %q, file has %q", l[1:], src[next])
				}
				out = append(out, l[1:])
				next++
			case '-':
				next++
			case '+':
				out = append(out, l[1:])
			}
		}
	}
	return strings.Join(append(out, src[next:]...), "")
}

func TestUpdateFlag(t *testing.T) {
	tests := []struct {
		set     string
		path    string
		selects bool
	}{
		{"false", "testdata/a.golden", false},
		{"true", "testdata/a.golden", true},
		{"screen.*", "testdata/screen.pid.80x24.golden", true},
		{"screen.*", "testdata/watch.golden", false},
		{"watch.golden", "testdata/watch.golden", true},
	}
	for _, tc := range tests {
		var u updateFlag
		if err := u.Set(tc.set); err != nil {
			t.Fatal(err)
		}
		if got := u.selects(tc.path); got != tc.selects {
			t.Errorf("-update=%s selects %s: %v, want %v", tc.set, tc.path, got, tc.selects)
		}
	}
	var u updateFlag
	if err := u.Set("[bad"); err == nil {
		t.Error("a bad pattern was accepted")
	}
}

// fakeT records what Compare reports; Fatal ends only its goroutine.
type fakeT struct {
	testing.TB
	errors, logs []string
	fatal        bool
}

func (f *fakeT) Helper()      {}
func (f *fakeT) Name() string { return "TestX/sub" }
func (f *fakeT) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}
func (f *fakeT) Logf(format string, a ...any)   { f.logs = append(f.logs, fmt.Sprintf(format, a...)) }
func (f *fakeT) Fatal(a ...any)                 { f.fatal = true; runtime.Goexit() }
func (f *fakeT) Fatalf(format string, a ...any) { f.Errorf(format, a...); f.Fatal() }

func run(fn func(*fakeT)) *fakeT {
	f := &fakeT{}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f
}

func TestCompareUpdate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		got     string
		rewrite bool
		errs    int
		file    string
	}{
		{"equal", "a\nb\n", false, 0, "a\nb\n"},
		{"differs, kept", "a\nc\n", false, 1, "a\nb\n"},
		{"equal, not rewritten", "a\nb\n", true, 0, "a\nb\n"},
		{"differs, rewritten", "a\nc\n", true, 0, "a\nc\n"},
	}
	for _, tc := range tests {
		f := run(func(f *fakeT) { CompareUpdate(f, path, []byte(tc.got), tc.rewrite) })
		if len(f.errors) != tc.errs || f.fatal {
			t.Errorf("%s: errors %q (fatal %v), want %d", tc.name, f.errors, f.fatal, tc.errs)
		}
		if tc.errs > 0 && !strings.Contains(f.errors[0], "-b\n+c\n") {
			t.Errorf("%s: the error has no diff: %q", tc.name, f.errors[0])
		}
		if tc.errs > 0 && !strings.Contains(f.errors[0], "-run '^TestX$' -update=x.golden") {
			t.Errorf("%s: the error does not say how to rewrite: %q", tc.name, f.errors[0])
		}
		if b, _ := os.ReadFile(path); string(b) != tc.file {
			t.Errorf("%s: file %q, want %q", tc.name, b, tc.file)
		}
	}
	missing := filepath.Join(dir, "sub", "new.golden")
	if f := run(func(f *fakeT) { CompareUpdate(f, missing, []byte("n\n"), false) }); !f.fatal {
		t.Error("a missing golden did not fail the test")
	}
	if f := run(func(f *fakeT) { CompareUpdate(f, missing, []byte("n\n"), true) }); f.fatal || len(f.errors) > 0 {
		t.Errorf("creating a golden failed: %q", f.errors)
	}
	if b, _ := os.ReadFile(missing); string(b) != "n\n" {
		t.Errorf("created golden %q", b)
	}
}
