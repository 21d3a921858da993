package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestFilesAllFindsTheDefaultFindings: once run of a scaled-down W4 (make
// bench's build-like tree: 300 jobs, two at a time, each opening 300
// distinct files, every 100th one of them twice more) with the listing's
// budget made tiny: --files all finds exactly the default report's
// findings and loses no event, the listing cut and counted. The default
// report lists the processes with findings, and counts every one.
func TestFilesAllFindsTheDefaultFindings(t *testing.T) {
	testprog.RequireRoot(t)
	testprog.NeedTool(t, "gcc")
	const jobs, files = 300, 300
	dir := t.TempDir()
	buildtree := filepath.Join(dir, "buildtree")
	if out, err := exec.Command("gcc", "-O2", "-o", buildtree, "../../bench/w4/buildtree.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < files; i++ {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type doc struct {
		Lost            int64             `json:"events_lost"`
		FilesCapped     int64             `json:"files_capped"`
		DetailDropped   int64             `json:"detail_dropped"`
		ProcessesListed string            `json:"processes_listed"`
		Processes       []json.RawMessage `json:"processes"`
		Programs        []struct {
			Comm      string `json:"comm"`
			Processes int    `json:"processes"`
			Findings  int    `json:"findings"`
		} `json:"programs"`
		Totals struct {
			Processes int `json:"processes"`
		} `json:"totals"`
		Findings []struct {
			Kind  string `json:"kind"`
			Comm  string `json:"comm"`
			Path  string `json:"path"`
			Count int    `json:"count"`
		} `json:"findings"`
	}
	run := func(env []string, args ...string) (doc, []string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "r.json")
		argv := append([]string{"run", "--format", "json", "-o", out}, args...)
		argv = append(argv, "--", buildtree, in, strconv.Itoa(jobs), strconv.Itoa(files), "2")
		if code, _, stderr := runOnce(t, env, argv...); code != 0 {
			t.Fatalf("once %v: exit %d\n%s", argv, code, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var d doc
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, f := range d.Findings {
			keys = append(keys, fmt.Sprintf("%s %s %s %d", f.Kind, f.Comm, f.Path, f.Count))
		}
		slices.Sort(keys)
		t.Logf("once %v: %d bytes, %d findings, %d of %d processes listed, files_capped %d, detail_dropped %d, lost %d",
			args, len(data), len(keys), len(d.Processes), d.Totals.Processes, d.FilesCapped, d.DetailDropped, d.Lost)
		return d, keys
	}
	def, want := run(nil)
	if len(want) != jobs/100 || def.Lost != 0 {
		t.Fatalf("default report: %d findings, %d events lost: want %d, 0", len(want), def.Lost, jobs/100)
	}
	if def.ProcessesListed != "findings" || len(def.Processes) != len(want) || def.Totals.Processes < 2*jobs {
		t.Errorf("default report lists %d processes (%q) of %d: want the %d with findings, and every one counted",
			len(def.Processes), def.ProcessesListed, def.Totals.Processes, len(want))
	}
	sum := 0
	for _, p := range def.Programs {
		sum += p.Processes
	}
	if sum != def.Totals.Processes {
		t.Errorf("programs sum %d processes, totals %d", sum, def.Totals.Processes)
	}
	// About a dozen processes' lists fit.
	all, got := run([]string{"ONCE_LIST_BYTES=2097152"}, "--files", "all", "--processes", "all")
	if !slices.Equal(got, want) {
		t.Errorf("--files all past the listing's budget: findings\n%v\nwant the default's\n%v", got, want)
	}
	if all.Lost != 0 || all.FilesCapped != 0 {
		t.Errorf("--files all: %d events lost, files_capped %d: want 0 and 0", all.Lost, all.FilesCapped)
	}
	if all.DetailDropped == 0 {
		t.Errorf("--files all past the listing's budget: detail_dropped 0, want the files cut counted")
	}
	if len(all.Processes) != all.Totals.Processes {
		t.Errorf("--processes all: %d entries for %d processes", len(all.Processes), all.Totals.Processes)
	}
}
