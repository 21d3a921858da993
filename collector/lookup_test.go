package collector_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestLookupOracle: lookups (stat, statx, access) of real programs under
// strace -f and once in one run: once counts every lookup of each process
// and every failed one exactly as strace shows them, in each way the
// kernel side decides what to send, and finds the searches, repeated
// misses and repeated stats they make.
func TestLookupOracle(t *testing.T) {
	testprog.RequireRoot(t)
	stracePath := strace.Require(t)
	testprog.NeedTool(t, "bash")
	testprog.NeedTool(t, "python3")
	testprog.NeedTool(t, "gcc")
	testprog.NeedTool(t, "node")
	testprog.NeedTool(t, "git")
	type want struct {
		kind     trace.FindingKind
		comm     string
		subject  string
		amount   int    // Failed of a chain, Count of the others
		found    string // a chain's winner, "" for none
		findings int    // findings like it (0: 1)
	}
	tests := []struct {
		name  string
		argv  func(dir string) []string
		wants []want
		// counted: the kernel counts some repeats instead of sending
		// them, in the modes that let it (LookupsTallied).
		counted bool
		// absent: kinds no finding of the program's may be of.
		absent []trace.FindingKind
	}{
		{"node: require walks up the node_modules directories", func(d string) []string {
			mustWrite(t, filepath.Join(d, "node_modules", "deepmod.js"), "module.exports = 1\n")
			mustWrite(t, filepath.Join(d, "a", "b", "c", "main.js"), "require('deepmod')\n")
			return []string{"node", filepath.Join(d, "a", "b", "c", "main.js")}
		}, []want{
			{kind: trace.KindFailedStatProbes, comm: "node", subject: "node_modules", amount: 3, found: "/node_modules"},
		}, false, nil},
		{"gcc: the driver's program search", func(d string) []string {
			mustWrite(t, filepath.Join(d, "m.c"), "int main(void) { return 0; }\n")
			return []string{"env", "PATH=" + pathList(d, 3) + ":/usr/bin:/bin", "gcc", "-c", "-o", "m.o", "m.c"}
		}, nil, false, nil},
		// Linking, the driver checks which of its candidate library
		// directories exist, each as "dir/.": no chain of ".".
		// (The object made beforehand: a compile's temporary object
		// has a new name in every run.)
		{"gcc: link", func(d string) []string {
			mustWrite(t, filepath.Join(d, "m.c"), "int main(void) { return 0; }\n")
			cc := exec.Command("gcc", "-c", "-o", "m.o", "m.c")
			cc.Dir = d
			if out, err := cc.CombinedOutput(); err != nil {
				t.Fatalf("gcc -c: %v: %s", err, out)
			}
			return []string{"gcc", "-o", "m", "m.o"}
		}, nil, false, nil},
		// The include search: cc1 looks for a header in each -I
		// directory in turn (an open each), and first for its
		// precompiled form (a stat each, found in none). gcc drops a
		// -I directory that does not exist: the first two are there,
		// empty.
		{"gcc: the include search through -I directories", func(d string) []string {
			for _, dir := range []string{"i1", "i2"} {
				if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			mustWrite(t, filepath.Join(d, "i3", "h.h"), "#define X 0\n")
			mustWrite(t, filepath.Join(d, "m.c"), "#include <h.h>\nint main(void) { return X; }\n")
			return []string{"gcc", "-I", filepath.Join(d, "i1"), "-I", filepath.Join(d, "i2"), "-I", filepath.Join(d, "i3"),
				"-c", "-o", "m.o", "m.c"}
		}, []want{
			{kind: trace.KindFailedOpenProbes, comm: "cc1", subject: "h.h", amount: 2, found: "/i3/h.h"},
			{kind: trace.KindFailedStatProbes, comm: "cc1", subject: "h.h.gch", amount: 3},
		}, false, nil},
		{"python: imports", func(d string) []string {
			return []string{"env", "PYTHONPATH=" + pathList(d, 3), "python3", "-c", "import json, email.parser"}
		}, nil, false, nil},
		{"bash: a PATH search that finds, and a command not found", func(d string) []string {
			return []string{"env", "-i", "PATH=" + pathList(d, 6) + ":/usr/bin", "bash", "-c", "ls / >/dev/null; nosuchcmd_once; true"}
		}, []want{
			{kind: trace.KindFailedStatProbes, comm: "bash", subject: "ls", amount: 6, found: "/usr/bin/ls"},
			{kind: trace.KindFailedStatProbes, comm: "bash", subject: "nosuchcmd_once", amount: 7},
		}, false, nil},
		{"bash: a loop after hash -r searches every time", func(d string) []string {
			return []string{"env", "-i", "PATH=" + pathList(d, 3) + ":/usr/bin", "bash", "-c",
				"for i in 1 2 3 4; do hash -r; ls / >/dev/null; done"}
		}, []want{
			{kind: trace.KindFailedStatProbes, comm: "bash", subject: "ls", amount: 3, found: "/usr/bin/ls", findings: 4},
			{kind: trace.KindRepeatedMiss, comm: "bash", subject: "", amount: 4, findings: 3},
		}, false, nil},
		{"python: one path failing 100 times, one file stat-ed 50 times", func(d string) []string {
			return []string{"python3", "-S", "-c", fmt.Sprintf(`import os
for i in range(100):
    try:
        os.close(os.open(%q, os.O_RDONLY))
    except OSError:
        pass
for i in range(50):
    os.stat(%q)
`, filepath.Join(d, "missing.conf"), "/etc/hostname")}
		}, []want{
			{kind: trace.KindRepeatedMiss, comm: "python3", subject: "missing.conf", amount: 100},
			{kind: trace.KindDuplicateStat, comm: "python3", subject: "/etc/hostname", amount: 50},
		}, true, nil},
		{"python: a missing path stat-ed 300 times between stats of one file", func(d string) []string {
			return []string{"python3", "-S", "-c", fmt.Sprintf(`import os
for i in range(300):
    os.path.exists(%q)
    os.stat(%q)
`, filepath.Join(d, "missing.conf"), "/etc/hostname")}
		}, []want{
			{kind: trace.KindRepeatedMiss, comm: "python3", subject: "missing.conf", amount: 300},
			{kind: trace.KindDuplicateStat, comm: "python3", subject: "/etc/hostname", amount: 300},
		}, true, nil},
		{"python: two missing names alike but for their last byte, each stat-ed 100 times in a row", func(d string) []string {
			// The kernel counts a thread's repeated misses by comparing
			// the name word by word: the second run must not be taken
			// for the first's.
			return []string{"python3", "-S", "-c", fmt.Sprintf(`import os
for name in (%q, %q):
    for i in range(100):
        os.path.exists(name)
`, filepath.Join(d, "missing-0123456789-a"), filepath.Join(d, "missing-0123456789-b"))}
		}, []want{
			{kind: trace.KindRepeatedMiss, comm: "python3", subject: "missing-0123456789-a", amount: 100},
			{kind: trace.KindRepeatedMiss, comm: "python3", subject: "missing-0123456789-b", amount: 100},
		}, true, nil},
		{"python: a name missed in one directory, found in another, 200 times", func(d string) []string {
			mustWrite(t, filepath.Join(d, "b", "tool"), "")
			return []string{"python3", "-S", "-c", fmt.Sprintf(`import os
for i in range(200):
    os.path.exists(%q)
    os.stat(%q)
`, filepath.Join(d, "a", "tool"), filepath.Join(d, "b", "tool"))}
		}, []want{
			{kind: trace.KindFailedStatProbes, comm: "python3", subject: "tool", amount: 1, found: "/b/tool", findings: 200},
		}, false, nil},
		{"python: three tracefs files, one inode number, each stat-ed twice", func(d string) []string {
			return []string{"python3", "-S", "-c", `import os
for i in range(2):
    for e in ("sys_enter_openat", "sys_enter_close", "sys_enter_read"):
        os.stat("/sys/kernel/tracing/events/syscalls/%s/id" % e)
`}
		}, []want{
			{kind: trace.KindDuplicateStat, comm: "python3", subject: "sys_enter_openat/id", amount: 2},
			{kind: trace.KindDuplicateStat, comm: "python3", subject: "sys_enter_close/id", amount: 2},
			{kind: trace.KindDuplicateStat, comm: "python3", subject: "sys_enter_read/id", amount: 2},
		}, false, nil},
		// A copy into a directory that exists checks each destination
		// (missing), opens the source of that name, then makes the
		// destination: checks, not searches, also where the kernel
		// sends no first open (once watch), for which it must send the
		// make.
		{"cp: a copy into an existing directory checks each destination", func(d string) []string {
			for _, n := range []string{"f1", "f2", "f3"} {
				mustWrite(t, filepath.Join(d, "src", n), n)
			}
			if err := os.Mkdir(filepath.Join(d, "dst"), 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"cp", "-r", "src/.", "dst/"}
		}, nil, false, []trace.FindingKind{trace.KindFailedStatProbes}},
		// Its directories too, each checked, then made with mkdir (the
		// kernel sends a mkdir that may end a chain): an empty one too,
		// which nothing looked up inside shows made (.git/branches).
		{"git: init copies its templates, each checked first", func(d string) []string {
			for _, f := range []string{"description", "hooks/pre-commit.sample", "hooks/update.sample", "info/exclude"} {
				mustWrite(t, filepath.Join(d, "tmpl", f), f+"\n")
			}
			for _, dir := range []string{"branches", "empty/a", "empty/b"} {
				if err := os.MkdirAll(filepath.Join(d, "tmpl", dir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return []string{"git", "init", "-q", "--template=" + filepath.Join(d, "tmpl"), filepath.Join(d, "repo")}
		}, nil, false, []trace.FindingKind{trace.KindFailedStatProbes}},
	}
	modes := []struct {
		name string
		opts collector.Options
	}{
		{"every open sent", collector.Options{}},
		{"repeats tallied", collector.Options{SendOpensPerKind: 1}},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}},
		// Each CPU writing a ring of its own: the same findings.
		{"every open sent, 2 rings", collector.Options{Rings: 2}},
		{"first opens unsent, 2 rings", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true, Rings: 2}},
	}
	for _, tc := range tests {
		// The findings of the first mode, which sends every call: the
		// others, which count some calls in the kernel, must find the
		// same (detail aside), where the program made the same calls
		// (strace says; node, under load, sometimes reads its maps one
		// time fewer; then each run is held to its own strace only).
		var sentAll []string
		var sentAllCalls map[string]int
		for _, m := range modes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				dir := t.TempDir()
				argv := tc.argv(dir)
				out := filepath.Join(t.TempDir(), "strace.out")
				cmd := strace.Command(context.Background(), out, argv...)
				cmd.Path = stracePath
				cmd.Dir = dir
				r := traceCmd(t, cmd, m.opts)
				calls, err := strace.ParseFile(out)
				if err != nil {
					t.Fatal(err)
				}
				type counts struct{ lookups, failed int }
				straceN := map[uint32]*counts{}
				for _, c := range calls {
					if !c.IsLookup() || c.NoReturn {
						continue
					}
					n := straceN[uint32(c.Tgid)]
					if n == nil {
						n = &counts{}
						straceN[uint32(c.Tgid)] = n
					}
					n.lookups++
					if c.Failed() {
						n.failed++
					}
				}
				if len(straceN) == 0 {
					t.Fatal("strace saw no lookup: the oracle matched nothing")
				}
				onceN := map[uint32]*counts{}
				for _, p := range r.Processes {
					if _, ok := straceN[p.Pid]; !ok {
						continue
					}
					n := onceN[p.Pid]
					if n == nil {
						n = &counts{}
						onceN[p.Pid] = n
					}
					n.lookups += p.Totals.Lookups
					n.failed += p.Totals.FailedLookups
				}
				for pid, s := range straceN {
					o := onceN[pid]
					if o == nil || *o != *s {
						t.Errorf("pid %d: once counted %+v lookups, strace %+v", pid, o, *s)
					}
				}
				for _, w := range tc.wants {
					n := 0
					var seen []string
					for i := range r.Findings {
						f := &r.Findings[i]
						seen = append(seen, fmt.Sprintf("%s %s %s %d", f.Kind, f.Comm, f.Subject(), f.Amount()))
						if f.Kind != w.kind || f.Comm != w.comm || !strings.HasSuffix(f.Subject(), w.subject) || f.Amount() != w.amount {
							continue
						}
						if f.Info().Shape == trace.ShapeChain {
							found := ""
							if f.Found != nil {
								found = *f.Found
							}
							if !strings.HasSuffix(found, w.found) || (found == "") != (w.found == "") {
								continue
							}
						}
						n++
					}
					if want := max(w.findings, 1); n != want {
						t.Errorf("%d findings %s %s %q x%d found %q, want %d; findings:\n%s", n, w.kind, w.comm, w.subject, w.amount, w.found, want, strings.Join(seen, "\n"))
					}
				}
				for i := range r.Findings {
					// strace's own search for the program is one.
					if f := &r.Findings[i]; f.Comm != "strace" && slices.Contains(tc.absent, f.Kind) {
						t.Errorf("a %s finding: %s %s x%d", f.Kind, f.Comm, f.Subject(), f.Amount())
					}
					// "dir/." and "dir/.." name a directory: no search.
					if f := &r.Findings[i]; f.Info().Shape == trace.ShapeChain && (f.Subject() == "." || f.Subject() == "..") {
						t.Errorf("a %s chain of %q: %s x%d", f.Kind, f.Subject(), f.Comm, f.Amount())
					}
				}
				if r.Counters.Lost() != 0 {
					t.Errorf("events lost: %+v", r.Counters)
				}
				var got []string
				for i := range r.Findings {
					f := &r.Findings[i]
					// The test's temporary directories, whose parent
					// a program may look up too, named alike in every run.
					subject := strings.ReplaceAll(strings.ReplaceAll(f.Subject(), dir, "$D"), filepath.Dir(dir), "$T")
					subject = procPid.ReplaceAllString(subject, "/proc/N/")
					got = append(got, fmt.Sprintf("%s %s %s %d", f.Kind, f.Comm, subject, f.Amount()))
				}
				slices.Sort(got)
				made := callsMade(calls)
				if sentAll == nil {
					sentAll, sentAllCalls = got, made
				} else if !maps.Equal(made, sentAllCalls) {
					t.Logf("the program made other calls than with every call sent; findings not compared:\n%s", callsDiff(made, sentAllCalls))
				} else if !slices.Equal(got, sentAll) {
					t.Errorf("findings differ from those with every call sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sentAll, "\n"))
				}
				if counted := r.Counters.LookupsTallied > 0; tc.counted && m.opts.SendOpensPerKind > 0 && !counted {
					t.Errorf("no lookup repeat counted in the kernel: all were sent")
				} else if m.opts.SendOpensPerKind == 0 && counted {
					t.Errorf("%d lookups counted in the kernel with every call to be sent", r.Counters.LookupsTallied)
				}
				// An event stream (--events) shows every lookup: none
				// counted in the kernel in its stead.
				if m.opts.SendOpensPerKind == 0 && r.Counters.LookupsUnsent > 0 {
					t.Errorf("%d successful lookups counted, not sent, with every call to be sent", r.Counters.LookupsUnsent)
				}
			})
		}
	}
}

var procPid = regexp.MustCompile(`/proc/[0-9]+/`)

// callsMade is what the program did, as strace saw it, with the names of
// its files left out (temporary files take new ones in every run): for
// each call and result, how many paths were used how many times.
func callsMade(calls []strace.Call) map[string]int {
	per := map[string]int{}
	for _, c := range calls {
		if c.NoReturn || !c.HasPath || !(c.IsOpen() || c.IsExec() || c.IsLookup()) {
			continue
		}
		per[fmt.Sprintf("%s %v\x00%s", c.Syscall, c.Failed(), c.Path)]++
	}
	made := map[string]int{}
	for k, n := range per {
		call, _, _ := strings.Cut(k, "\x00")
		made[fmt.Sprintf("%s x%d", call, n)]++
	}
	return made
}

// pathList is n directories under d that do not exist, joined as PATH.
func pathList(d string, n int) string {
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(d, "no"+string(rune('a'+i)))
	}
	return strings.Join(dirs, ":")
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// callsDiff says how two callsMade differ: a line per call, with its
// count in a and in b.
func callsDiff(a, b map[string]int) string {
	var lines []string
	for k, n := range a {
		if b[k] != n {
			lines = append(lines, fmt.Sprintf("%s: %d, was %d", k, n, b[k]))
		}
	}
	for k, n := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: 0, was %d", k, n))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
