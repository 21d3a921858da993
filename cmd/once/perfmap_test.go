package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestRunStacksNodePerfMap: node with --perf-basic-prof writes
// /tmp/perf-PID.map, naming its JIT code (--interpreted-frames-native-stack
// gives each interpreted function a copy of the interpreter's entry in
// JIT memory, so that its frames are its own). A script whose function
// readConfigTwice reads one file twice: the duplicate's call sites name
// that function as the map names it (its line there, word for word), and
// the text report's advice names it, not node's fs binding.
func TestRunStacksNodePerfMap(t *testing.T) {
	testprog.RequireRoot(t)
	testprog.NeedTool(t, "node")
	bin := buildOnce(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cfg.json")
	if err := os.WriteFile(cfg, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "dup.js")
	src := fmt.Sprintf(`const fs = require('fs');
function readConfigTwice(p) {
  const a = fs.readFileSync(p, 'utf8');
  const b = fs.readFileSync(p, 'utf8');
  return a.length + b.length;
}
console.log(readConfigTwice(%q));
`, cfg)
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The maps node writes name the script's directory: removed at the
	// end, whichever pid wrote them.
	t.Cleanup(func() {
		maps, _ := filepath.Glob("/tmp/perf-*.map")
		for _, m := range maps {
			if b, err := os.ReadFile(m); err == nil && bytes.Contains(b, []byte(dir)) {
				os.Remove(m)
			}
		}
	})
	run := func(out string, flags ...string) {
		args := append([]string{"run", "--stacks", "--stack-size", "16384", "-o", out}, flags...)
		cmd := exec.Command(bin, append(args, "--", "node", "--perf-basic-prof", "--interpreted-frames-native-stack", script)...)
		cmd.Dir = dir // node writes its isolate-*-v8.log there
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("once run: %v\n%s", err, b)
		}
	}
	report := filepath.Join(dir, "r.json")
	run(report, "--format", "json")
	var r struct {
		jsonStacks
		Findings []struct {
			Kind      string `json:"kind"`
			Path      string `json:"path"`
			Pid       int    `json:"pid"`
			CallSites []struct {
				StackID uint32 `json:"stack_id"`
				Count   int    `json:"count"`
			} `json:"call_sites"`
		} `json:"findings"`
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range r.Findings {
		if f.Kind != "duplicate_open" || f.Path != cfg {
			continue
		}
		found = true
		mapFile := fmt.Sprintf("/tmp/perf-%d.map", f.Pid)
		want := mapName(t, mapFile, "JS:~readConfigTwice ")
		if want == "" {
			t.Fatalf("%s names no readConfigTwice", mapFile)
		}
		n := 0
		for _, cs := range f.CallSites {
			if strings.Contains("\n"+strings.Join(r.funcs(cs.StackID), "\n")+"\n", "\n"+want+"\n") {
				n += cs.Count
			}
		}
		if n != 2 {
			t.Errorf("%d opens of %s from call sites through %q, want 2; the stacks: %v; counters: %s", n, cfg, want, r.Stacks, stackCounters(t, raw))
		}
	}
	if !found {
		t.Fatalf("no duplicate_open of %s in the report:\n%s", cfg, raw)
	}

	text := filepath.Join(dir, "r.txt")
	run(text, "--details")
	b, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	var advice, site string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for prev := ""; sc.Scan(); prev = sc.Text() {
		l := sc.Text()
		if strings.Contains(prev, cfg) && strings.HasPrefix(strings.TrimSpace(l), "→") && advice == "" {
			advice = l
		}
		if strings.Contains(prev, "call sites of "+cfg) && site == "" {
			site = l
		}
	}
	if !strings.Contains(advice, "every open is from JS:~readConfigTwice "+script) {
		t.Errorf("advice for %s does not name readConfigTwice: %q\n%s", cfg, advice, b)
	}
	if !strings.Contains(site, "JS:~readConfigTwice "+script) || strings.Contains(site, "node::fs::") {
		t.Errorf("call site of %s: %q, want it to start at readConfigTwice\n%s", cfg, site, b)
	}
}

// mapName is the name of the first line of the perf map file whose name
// starts with prefix, "" when none does.
func mapName(t *testing.T, file, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) == 3 && strings.HasPrefix(f[2], prefix) {
			return f[2]
		}
	}
	return ""
}
