package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

var (
	refsOnce sync.Once
	refsDir  string
	refsErr  error
)

// buildRefs builds once and the bundled references into one directory, as
// make does, so once finds them beside itself.
func buildRefs(t *testing.T) string {
	t.Helper()
	refsOnce.Do(func() {
		refsDir, refsErr = os.MkdirTemp("", "once-refs-")
		if refsErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", refsDir+"/", "../../cmd/...").CombinedOutput()
		if err != nil {
			refsErr = &buildError{string(out)}
		}
	})
	if refsErr != nil {
		t.Fatalf("build: %v", refsErr)
	}
	return refsDir
}

type buildError struct{ out string }

func (e *buildError) Error() string { return e.out }

func traceRef(t *testing.T, argv ...string) *trace.Result {
	t.Helper()
	testprog.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := traceExact(ctx, cmd, 0)
	if err != nil {
		t.Fatalf("trace %q: %v", argv, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%q exited %d: %s", argv, res.ExitCode, stderr.String())
	}
	return res
}

// opensUnder counts successful opens, per file, of files under dir.
func opensUnder(r *trace.Result, dir string) map[string]int {
	n := map[string]int{}
	for _, p := range r.Processes {
		for _, fo := range p.Opens {
			if strings.HasPrefix(fo.Path, dir+"/") || fo.Path == dir {
				n[fo.Path] += fo.Count
			}
		}
	}
	return n
}

func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte(n), 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefcpOpensEachSourceOnce asserts, through once, the invariant the
// reference copy exists for.
func TestRefcpOpensEachSourceOnce(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildRefs(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	src := filepath.Join(dir, "src")
	files := []string{"a", "b", "sub/c", "sub/deeper/d"}
	writeFiles(t, src, files...)

	r := traceRef(t, bin+"/refcp", "-r", src, filepath.Join(dir, "dst"))
	opens := opensUnder(r, src)
	for _, f := range files {
		if n := opens[filepath.Join(src, f)]; n != 1 {
			t.Errorf("refcp opened %s %d times, want 1", f, n)
		}
	}
	for _, f := range r.Findings {
		if f.Kind == trace.KindDuplicateOpen && strings.HasPrefix(f.Path, dir) {
			t.Errorf("duplicate open under the workload: %+v", f)
		}
	}

	// The acceptance check, through the CLI.
	one := filepath.Join(src, "a")
	var stderr bytes.Buffer
	cmd := exec.Command(bin+"/once", "check", "--opens", one+"=1", "--", bin+"/refcp", one, filepath.Join(dir, "single"))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("once check --opens SRC=1 -- refcp SRC DST: %v\n%s", err, stderr.String())
	}
}

func TestRefmvOpens(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildRefs(t)
	t.Run("same filesystem: zero opens", func(t *testing.T) {
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		src := filepath.Join(dir, "src")
		writeFiles(t, src, "a", "sub/b")
		r := traceRef(t, bin+"/refmv", src, filepath.Join(dir, "moved"))
		if opens := opensUnder(r, dir); len(opens) != 0 {
			t.Errorf("a same-filesystem move opened %v, want nothing", opens)
		}
		if _, err := os.Stat(filepath.Join(dir, "moved", "sub", "b")); err != nil {
			t.Error(err)
		}
	})
	t.Run("across devices: each source once", func(t *testing.T) {
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		shm, err := os.MkdirTemp("/dev/shm", "once-refmv-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(shm)
		var a, b unix.Stat_t
		if unix.Stat(dir, &a) != nil || unix.Stat(shm, &b) != nil || a.Dev == b.Dev {
			t.Fatalf("%s and %s are on one device: no cross-device move to test", dir, shm)
		}
		src := filepath.Join(dir, "src")
		files := []string{"a", "sub/b"}
		writeFiles(t, src, files...)
		r := traceRef(t, bin+"/refmv", src, filepath.Join(shm, "moved"))
		opens := opensUnder(r, src)
		for _, f := range files {
			if n := opens[filepath.Join(src, f)]; n != 1 {
				t.Errorf("refmv opened %s %d times, want 1", f, n)
			}
		}
		if _, err := os.Stat(src); !os.IsNotExist(err) {
			t.Errorf("source still there after the move: %v", err)
		}
	})
}

// TestReflaunchProbes: 6 failed probes per execvpe iteration with K=7, none
// for resolved and absolute, counted by once.
func TestReflaunchProbes(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildRefs(t)
	const n = 3
	for _, tc := range []struct {
		strategy string
		failed   int
	}{{"execvpe", 6}, {"spawnp", 6}, {"resolved", 0}, {"absolute", 0}} {
		t.Run(tc.strategy, func(t *testing.T) {
			r := traceRef(t, bin+"/reflaunch", "-n", "3", "-k", "7", "-strategy", tc.strategy)
			chains, failed := 0, 0
			for _, f := range r.Findings {
				if f.Kind != trace.KindFailedExecProbes {
					continue
				}
				chains++
				failed += f.Failed
				if f.Failed != tc.failed || f.Found == nil || !strings.HasSuffix(*f.Found, "/d7/oncetarget") {
					t.Errorf("chain %+v", f)
				}
			}
			wantChains := n
			if tc.failed == 0 {
				wantChains = 0
			}
			if chains != wantChains || failed != n*tc.failed || r.FailedExecs != n*tc.failed {
				t.Errorf("%d chains, %d failed probes (%d failed execs); want %d chains of %d", chains, failed, r.FailedExecs, wantChains, tc.failed)
			}
			// Every attempt's strings: the filename exact; argv exact or,
			// for a failed probe whose argv strings (a literal in the
			// launcher's text) the child never touched, flagged
			// unreadable and empty. Never another attempt's.
			attempts, ok := 0, 0
			for _, p := range r.Processes {
				for _, e := range p.Execs {
					if !strings.HasSuffix(e.Filename, "/oncetarget") {
						continue
					}
					attempts++
					dir := filepath.Base(filepath.Dir(e.Filename))
					if e.Errno == 0 {
						ok++
						if dir != "d7" || !slices.Equal(e.Argv, []string{"oncetarget"}) || e.ArgvUnreadable || e.FilenameUnreadable {
							t.Errorf("successful exec %+v, want d7/oncetarget with argv [oncetarget]", e)
						}
						continue
					}
					if dir == "d7" || e.FilenameUnreadable ||
						!(slices.Equal(e.Argv, []string{"oncetarget"}) || e.ArgvUnreadable && len(e.Argv) == 0) {
						t.Errorf("failed exec %+v, want d1..d6/oncetarget with argv [oncetarget] or flagged unreadable", e)
					}
				}
			}
			if attempts != n*(tc.failed+1) || ok != n {
				t.Errorf("%d exec attempts of the target (%d ok), want %d (%d)", attempts, ok, n*(tc.failed+1), n)
			}
		})
	}
}

func TestCompareAndDemoUsage(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "once-compare-*"))
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"compare", "--ref", "cp", "cp"}, "missing --"},
		{[]string{"compare", "--", "cp"}, "--baseline 'CMD_A' or --ref"},
		{[]string{"compare", "--ref", "rsync", "--", "cp"}, `unknown reference "rsync"`},
		{[]string{"compare", "--ref", "cp", "--baseline", "cp", "--", "cp"}, "exclude each other"},
		{[]string{"compare", "--ref", "cp", "--runs", "0", "--", "cp"}, "--runs 0 out of range"},
		{[]string{"compare", "--ref", "launch", "--path-dirs", "65", "--", "env"}, "--path-dirs 65 out of range"},
		{[]string{"compare", "--baseline", "'unterminated", "--", "true"}, "unterminated"},
		{[]string{"compare", "--ref", "cp", "--format", "yaml", "--", "cp"}, `unknown --format "yaml"`},
		{[]string{"compare", "--ref", "cp", "--plot", "x.png", "--", "cp"}, ".svg"},
		{[]string{"compare", "--ref", "cp", "--plot", "/proc/once-missing/x.svg", "--", "cp"}, "/proc/once-missing"},
		{[]string{"demo", "--plot", "x.png"}, ".svg"},
		{[]string{"demo", "--runs", "0"}, "--runs 1-100"},
		{[]string{"demo", "--cp", "/proc/once-missing"}, "--cp \"/proc/once-missing\""},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tc.args, code, exitUsage)
		}
		msg := stderr.String()
		if !strings.Contains(msg, tc.msg) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: stderr %q, want one line with %q", tc.args, msg, tc.msg)
		}
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "once-compare-*"))
	if len(after) != len(before) {
		t.Errorf("bad input left temp dirs behind: %v", after)
	}
}

// TestCompareRefCp runs a small real comparison: the counts must be exact.
func TestCompareRefCp(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildRefs(t)
	cmd := exec.Command(bin+"/once", "compare", "--ref", "cp", "--files", "20", "--runs", "2", "--format", "json", "--", "cp", "-r")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{`"failed_runs": 0`, `"role": "src"`, `"per_file": 1`, `"files": 20`} {
		if !strings.Contains(out, want) {
			t.Errorf("compare JSON lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Errorf("progress bar written to a pipe")
	}
}

// TestDemo runs once demo, small, as make demo does: each section must
// hold what it is there to show, with the counts of the copy it traced.
func TestDemo(t *testing.T) {
	testprog.RequireRoot(t)
	dir := buildRefs(t)
	cases := []struct {
		name, cp string
		// opens of each source, and findings of the 3-file copy traced
		opens, findings int
	}{
		{"dupcopy", filepath.Join(dir, "dupcopy"), 3, 3},
	}
	if _, err := os.Stat(uutilsCp); err == nil {
		// uutils opens each source twice and creates each copy twice.
		cases = append(cases, struct {
			name, cp        string
			opens, findings int
		}{"uutils", uutilsCp, 2, 6})
	} else if testprog.CI() {
		t.Errorf("uutils cp (%s) is not installed: .ci/run installs rust-coreutils", uutilsCp)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(dir, "once"), "demo", "--files", "20", "--runs", "1", "--plot", "", "--cp", tc.cp)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("once demo: %v\n%s", err, out)
			}
			s := string(out)
			// The copy's duplicate opens, one row each in the findings
			// table (its lookups make findings of other kinds too).
			sec1, _, _ := strings.Cut(s, "## 2.")
			if n := len(regexp.MustCompile(`(?m)^\s+duplicate_open\s`).FindAllString(sec1, -1)); n != tc.findings {
				t.Errorf("section 1 has %d duplicate_open rows, want %d:\n%s", n, tc.findings, sec1)
			}
			for _, want := range []string{
				"## 1. Duplicate opens",
				fmt.Sprintf("%d opens", tc.opens),
				"## 2. What they cost",
				"## 3. Failed exec probes",
				"failed_exec_probes  env              1  oncetarget  6 failed",
				"## 4. What they cost",
				"2000 launches per strategy",
				"## Summary, ready to paste into a pull request",
				fmt.Sprintf("Duplicate opens: %d -> 0 per run", 20*(tc.findings/3)*(tc.opens-1)),
				// The PATH story, from what the demo measured.
				"one failed execve, alone in this process", "in a forked child", "CLONE_VM", "times faster",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("demo output lacks %q:\n%s", want, s)
				}
			}
			checkDemoReproduce(t, s, cmd.Dir, tc.cp)
			checkDemoSites(t, sec1, tc.name)
			// Section 1's command runs in the demo's tree, in a subshell,
			// once named by its absolute path: ./bin/once would not run
			// there, and the lines after it run from where the user is.
			// It prints what the section shows, the processes' findings
			// and call sites too: --details.
			cd := regexp.MustCompile(`(?m)^\$ \(cd (/\S+) && (\S+) run --stacks --details -- `).FindStringSubmatch(sec1)
			if cd == nil || cd[2] != filepath.Join(dir, "once") {
				t.Errorf("section 1 lacks \"$ (cd TREE && %s run --stacks --details -- ...)\": %q\n%s", filepath.Join(dir, "once"), cd, sec1)
			}
			// Times with units or separators, never raw nanoseconds.
			if m := regexp.MustCompile(`(?m)(^|\s)\d{6,}(\s|$)`).FindString(s[strings.Index(s, "## 3."):]); m != "" {
				t.Errorf("a raw number %q in sections 3 and 4:\n%s", m, s)
			}
		})
	}
}

// checkDemoReproduce: the reproduce lines run from where the demo ran, as
// printed (their programs exist there), and compare the sides the demo
// showed in the order it showed them: the program before, the reference
// after.
func checkDemoReproduce(t *testing.T, out, dir, cp string) {
	t.Helper()
	exists := func(p string) bool {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		st, err := os.Stat(p)
		return err == nil && st.Mode()&0o111 != 0
	}
	m := regexp.MustCompile(`(?m)^  (?:sudo )?(\S+) compare --baseline '?(\S+) -r \{src\} \{dst\}'? .* -- (\S+) -r \{src\} \{dst\}$`).FindStringSubmatch(out)
	if m == nil {
		t.Errorf("no reproduce line comparing %s (before) with the reference (after):\n%s", cp, out)
	} else {
		if !exists(m[1]) || !exists(m[3]) {
			t.Errorf("reproduce line names %s and %s, which do not run from %s", m[1], m[3], dir)
		}
		if m[2] != cp || filepath.Base(m[3]) != "refcp" {
			t.Errorf("reproduce line compares %s with %s, want %s before refcp", m[2], m[3], cp)
		}
	}
	l := regexp.MustCompile(`Reproduce the launcher numbers with: (\S+) -n 2000 -k 7`).FindStringSubmatch(out)
	if l == nil || !exists(l[1]) {
		t.Errorf("launcher reproduce line %q does not run from %s", l, dir)
	}
}

// checkDemoSites: the call sites of section 1 read: dupcopy's sites start
// where they differ, past the wrapper they share; a program without
// symbols is said so once, not in module+offset lines.
func checkDemoSites(t *testing.T, sec1, name string) {
	t.Helper()
	switch name {
	case "dupcopy":
		if !strings.Contains(sec1, "each through refcopy.openat (sys.go:") {
			t.Errorf("dupcopy's shared wrapper is not said once:\n%s", sec1)
		}
		// The three opens of a source: each site from its own function.
		if regexp.MustCompile(`(?m)^\s+1  refcopy\.(probeData|probeHoles|\(\*copier\)\.copyEntry) .*\(sys\.go:\d+\)$`).MatchString(sec1) ||
			!regexp.MustCompile(`(?m)^\s+1  refcopy\.probeData ← .*\(refcopy\.go:\d+\)$`).MatchString(sec1) {
			t.Errorf("dupcopy's call sites do not start where they differ:\n%s", sec1)
		}
	case "uutils":
		if n := strings.Count(sec1, "coreutils+0x"); n > 0 {
			t.Errorf("%d module+offset frames in section 1:\n%s", n, sec1)
		}
		if !strings.Contains(sec1, "has no symbols") {
			t.Errorf("section 1 does not say why uutils' call sites are not named:\n%s", sec1)
		}
	}
}
