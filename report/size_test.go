package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/oncetool/once/trace"
)

// manyProcesses is a build of n compiles, each opening 300 files once,
// one of which (the first) opens a header three times.
func manyProcesses(n int) *trace.Result {
	r := &trace.Result{Command: []string{"make"}, Files: trace.FilesDuplicates}
	for i := 0; i < n; i++ {
		p := &trace.Process{Key: trace.ImageKey{Pid: uint32(1000 + i), Start: uint64(i + 1), ExecID: 1}, Pid: uint32(1000 + i),
			PPid: 999, Comm: "cc1", ParentComm: "make", Exe: "/usr/libexec/gcc/cc1", Argv: []string{"cc1", fmt.Sprintf("f%d.c", i)},
			Exited: true, Threads: 1, Totals: trace.ProcessTotals{Opens: 300, Files: 300}}
		r.Processes = append(r.Processes, p)
		r.Opens += 300
	}
	first := r.Processes[0]
	first.Totals.Opens += 2
	first.Totals.DupFiles = 1
	fo := &trace.FileOpens{Path: "/usr/include/stdio.h", Paths: []string{"/usr/include/stdio.h"}, Dev: 1, Ino: 2, Count: 3}
	first.Opens = []*trace.FileOpens{fo}
	r.Findings = []trace.Finding{{Kind: trace.KindDuplicateOpen, Key: first.Key, Pid: first.Pid, Comm: first.Comm, Proc: first,
		WastedNs: 2000, FileDetail: trace.FileDetail{Path: fo.Path, Paths: fo.Paths, Dev: 1, Ino: 2, Count: 3}}}
	r.Waste = trace.TotalsOf(r.Findings)
	return r
}

// TestReportSizePerProcess: the default JSON report's processes without
// findings cost it nothing each (a row per program sums them), while
// totals.processes still counts them; --processes all lists every one.
func TestReportSizePerProcess(t *testing.T) {
	size := func(n int, listed string) (int, map[string]any) {
		r := manyProcesses(n)
		r.ProcessesListed = listed
		var buf bytes.Buffer
		if err := JSON(&buf, r); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return buf.Len(), doc
	}
	for _, tc := range []struct {
		listed     string
		maxPerProc float64
		entries    int
	}{{"", 0.01, 1}, {trace.ProcessesFindings, 0.01, 1}, {trace.ProcessesAll, 1e9, 2000}} {
		small, _ := size(20, tc.listed)
		large, doc := size(2000, tc.listed)
		per := float64(large-small) / 1980
		t.Logf("--processes %q: %d bytes for 20 processes, %d for 2,000: %.1f bytes each", tc.listed, small, large, per)
		if per > tc.maxPerProc {
			t.Errorf("--processes %q: %.1f bytes per process without findings, want ~0", tc.listed, per)
		}
		if n := doc["totals"].(map[string]any)["processes"]; n != float64(2000) {
			t.Errorf("--processes %q: totals.processes %v, want 2000 (every process counted)", tc.listed, n)
		}
		if n := len(doc["processes"].([]any)); n != tc.entries {
			t.Errorf("--processes %q: %d entries in processes, want %d", tc.listed, n, tc.entries)
		}
		progs := doc["programs"].([]any)
		if len(progs) != 1 || progs[0].(map[string]any)["processes"] != float64(2000) ||
			progs[0].(map[string]any)["opens"] != float64(2000*300+2) || progs[0].(map[string]any)["findings"] != float64(1) {
			t.Errorf("--processes %q: programs %v, want cc1 with 2,000 processes, 600,002 opens, 1 finding", tc.listed, progs)
		}
	}
}

// TestTextProcessTable: --details's process table of a large tree has a
// row per program by default and a row per process with --processes all.
func TestTextProcessTable(t *testing.T) {
	for _, tc := range []struct {
		listed  string
		byProg  bool
		lastPid bool
	}{{"", true, false}, {trace.ProcessesAll, false, true}} {
		r := manyProcesses(40)
		r.ProcessesListed = tc.listed
		var buf bytes.Buffer
		if err := TextDetails(&buf, r); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if got := bytes.Contains(buf.Bytes(), []byte("by program")); got != tc.byProg {
			t.Errorf("--processes %q: a row per program %v, want %v:\n%s", tc.listed, got, tc.byProg, out)
		}
		if got := bytes.Contains(buf.Bytes(), []byte(" 1039 ")); got != tc.lastPid {
			t.Errorf("--processes %q: the last process's row %v, want %v:\n%s", tc.listed, got, tc.lastPid, out)
		}
	}
}
