package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/internal/testprog"
)

// readmeExamples are the once command lines of the README's sh blocks,
// without their "sudo ".
func readmeExamples(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "```sh":
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			line = strings.TrimPrefix(line, "sudo ")
			if strings.HasPrefix(line, "once ") || strings.HasPrefix(line, "bin/once ") {
				out = append(out, line)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d once examples in README.md; the parser or the README changed", len(out))
	}
	return out
}

// TestREADMEExamples runs every once command line of the README, as
// written, in a directory holding what they name (src/file, dst/, a
// Makefile, build.sh, app.py). Only what would make a test slow is
// changed: watch gets --duration, compare fewer runs and files. Each must
// exit as its section says: 0, or for check 0 or 1 (the verdict), never
// a usage or tracing error.
func TestREADMEExamples(t *testing.T) {
	testprog.RequireRoot(t)
	bin := filepath.Join(buildRefs(t), "once")
	dir := t.TempDir()
	for name, body := range map[string]string{
		"src/file": "data\n",
		"Makefile": "all:\n\t@cat src/file >/dev/null\n",
		"build.sh": "#!/bin/sh\ncat src/file src/file >/dev/null\n",
		"app.py":   "print(open('src/file').read(), end='')\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// bin/: what make builds, as the README's examples name it.
	if err := os.Symlink(filepath.Dir(bin), filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{"make", "python3", "cp"} {
		testprog.NeedTool(t, need)
	}
	for _, line := range readmeExamples(t) {
		t.Run(line, func(t *testing.T) {
			words, err := compare.SplitWords(line)
			if err != nil {
				t.Fatal(err)
			}
			sub := words[1]
			// The quick flags go last before "--": the last of a flag
			// given twice wins.
			rest := words[2:]
			at := len(rest)
			for i, w := range rest {
				if w == "--" {
					at = i
					break
				}
			}
			args := append([]string{sub}, rest[:at]...)
			args = append(args, readmeQuick(sub, line)...)
			args = append(args, rest[at:]...)
			if err := os.RemoveAll(filepath.Join(dir, "dst")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "dst"), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = dir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			code := cmd.ProcessState.ExitCode()
			ok := code == 0 || sub == "check" && code == 1
			if !ok {
				t.Errorf("%s: exit %d (%v)\n%s", line, code, err, out.String())
			}
			// A comparison reads in hyperfine's terms, and both of its
			// sides ran clean (a failing run would have exited 1).
			if sub == "compare" && ok && !regexp.MustCompile(`\n  after ran [0-9.]+ ± [0-9.]+ times (faster than|slower than|as fast as) before`).MatchString(out.String()) {
				t.Errorf("%s: no relative speed in hyperfine's words:\n%s", line, out.String())
			}
		})
	}
}

// readmeQuick is what an example of sub, line, gets so that the test
// ends soon.
func readmeQuick(sub, line string) []string {
	switch sub {
	case "watch":
		return []string{"--duration", "1s"}
	case "compare":
		// Two runs: one has no σ, and the line below wants hyperfine's ±.
		quick := []string{"--runs", "2", "--warmup", "0"}
		if !strings.Contains(line, "--ref launch") && !strings.Contains(line, "{target}") {
			// A few files, where there is a cp/mv workload: --files
			// elsewhere is a usage error.
			quick = append(quick, "--files", "20")
		}
		return quick
	}
	return nil
}

// TestREADMEStacksSample: the README's --stacks excerpt is what once run
// --stacks --details prints for the bundled dupcopy, line for line and in order (the temporary
// directory read as /tmp/sp), so it cannot go stale.
func TestREADMEStacksSample(t *testing.T) {
	testprog.RequireRoot(t)
	dir := buildRefs(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- stacks-sample: [^>]*-->\n```\n(.*?)```\n<!-- /stacks-sample -->").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no stacks-sample block")
	}
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "src", "a"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "once"), "run", "--stacks", "--details", "--", filepath.Join(dir, "dupcopy"), "-r", "src", "dst")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("once run --stacks: %v\n%s", err, out)
	}
	got := strings.ReplaceAll(string(out), work, "/tmp/sp")
	// In order: the first call's site first (strace -k: copyEntry opens
	// the file before probeData and probeHoles), as the suggestion keeps it.
	rest := got
	for _, line := range strings.Split(strings.TrimSuffix(string(m[1]), "\n"), "\n") {
		i := strings.Index(rest, line+"\n")
		if i < 0 {
			t.Errorf("README's stacks sample line %q is not in once's output, after the lines before it:\n%s", line, got)
			continue
		}
		rest = rest[i+len(line)+1:]
	}
}
