package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/refcopy/opencount"
	"github.com/oncetool/once/internal/strace"
)

// TestStraceOpensEachSourceThrice checks, with strace as the witness,
// that dupcopy wastes what it exists to waste and nothing else: every
// regular source opened three times, every directory once, every
// destination created once, and the copy intact.
func TestStraceOpensEachSourceThrice(t *testing.T) {
	strace.Require(t)
	bin := opencount.Build(t, ".")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	for _, d := range []string{"", "sub", "sub/deeper"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range []string{"a", "b", "sub/c", "sub/deeper/d"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte(strings.Repeat("x", 1000*i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	to := filepath.Join(dir, "copy")
	tr := opencount.MustRun(t, dir, bin, "-r", src, to)
	files, dirs, _ := opencount.Tree(t, src)
	if len(files) != 4 || len(dirs) != 3 {
		t.Fatalf("source tree: %d files, %d dirs; want 4 and 3", len(files), len(dirs))
	}
	for _, f := range files {
		tr.Check(t, tr.Expect(f, 3), tr.ExpectReadOnly(f), tr.Expect(to+strings.TrimPrefix(f, src), 1))
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(to + strings.TrimPrefix(f, src))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: copy differs (%v)", f, err)
		}
	}
	for _, d := range dirs {
		tr.Check(t, tr.Expect(d, 1))
	}
}
