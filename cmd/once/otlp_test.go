package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/otelcoltest"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// TestRunOTLP: once run --otlp sends the run's findings and counters to a
// real collector at the end, over HTTP and gRPC, and the report counts
// none undelivered.
func TestRunOTLP(t *testing.T) {
	testprog.RequireRoot(t)
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			c := otelcoltest.Start(t)
			ep := c.HTTP
			if protocol == "grpc" {
				ep = c.GRPC
			}
			f := filepath.Join(t.TempDir(), "twice")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "report.json")
			code, _, stderr := runOnce(t, []string{"OTEL_RESOURCE_ATTRIBUTES=k8s.node.name=node-3", "OTEL_SERVICE_NAME=once-ci"}, "run", "--format", "json", "-o", out,
				"--otlp", ep, "--otlp-protocol", protocol, "--", "cat", f, f)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rep map[string]any
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if v, ok := rep["otlp_dropped"]; !ok || v != 0.0 {
				t.Errorf("report's otlp_dropped = %v, want 0", v)
			}
			var n int
			for _, r := range c.Logs(t) {
				if r.Attrs["once.kind"] == "duplicate_open" && r.Attrs["once.subject"] == f {
					n++
					if r.Attrs["once.comm"] != "cat" || r.Attrs["once.count"] != int64(2) || r.Resource["k8s.node.name"] != "node-3" ||
						r.Resource["service.name"] != "once-ci" {
						t.Errorf("record %v, resource %v", r.Attrs, r.Resource)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d records of cat's duplicate open of %s, want 1; stderr %s; collector %s", n, f, stderr, c.Output())
			}
			got := map[string]bool{}
			for _, p := range c.Metrics(t) {
				got[p.Name] = true
			}
			for _, m := range []string{"once.events_received", "once.otlp_dropped", "once.dropped_events", "once.wasted"} {
				if !got[m] {
					t.Errorf("metric %s not received", m)
				}
			}
		})
	}
}

// TestWatchOTLP: once watch --otlp sends a finding as it is made, while
// the watch runs.
func TestWatchOTLP(t *testing.T) {
	c := otelcoltest.Start(t)
	catBin := namedCopy(t, "/bin/cat", "onceotlpcat")
	f := filepath.Join(t.TempDir(), "twice")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, "--comm", "onceotlpcat", "--format", "json", "-o", filepath.Join(t.TempDir(), "w.jsonl"), "--interval", "200ms",
		"--otlp", c.GRPC, "--otlp-protocol", "grpc")
	run := func() {
		if out, err := exec.Command(catBin, f, f).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	run()
	seen := testprog.WaitFor(20*time.Second, func() bool {
		for _, r := range c.Logs(t) {
			if r.Attrs["once.subject"] == f && r.Attrs["once.comm"] == "onceotlpcat" {
				return true
			}
		}
		return false
	})
	w.stop(t, os.Interrupt)
	if !seen {
		t.Fatalf("no record of onceotlpcat's duplicate open reached the collector while watching; collector: %s", c.Output())
	}
}

// otlpLoad makes findings fast: each cat opens 400 files twice, 400
// duplicate_open findings a process, again and again.
const otlpLoad = `
cd "$1"
for i in $(seq 400); do : > "f$i"; done
set --
for i in $(seq 400); do set -- "$@" "f$i" "f$i"; done
while :; do "$CAT" "$@" >/dev/null; done
`

// TestWatchOTLPNoCollector: once watch --otlp with no collector ever
// listening, under a flood of findings: its RSS stays bounded (the queue
// holds 8 MiB; the records made would need far more), the watch goes on,
// and what it could not send is counted (otlp_dropped) and warned of.
func TestWatchOTLPNoCollector(t *testing.T) {
	row := reltest.Record(t, "watch --otlp: collector never starts, findings flood")
	hp, _ := otelcoltest.Ports(t)
	catBin := namedCopy(t, "/bin/cat", "onceotlpflood")
	out := filepath.Join(t.TempDir(), "w.jsonl")
	w := startWatch(t, "--comm", "onceotlpflood", "--format", "json", "-o", out, "--interval", "200ms",
		"--otlp", fmt.Sprintf("http://127.0.0.1:%d", hp))
	load := exec.Command("sh", "-c", otlpLoad, "sh", t.TempDir())
	load.Env = append(os.Environ(), "CAT="+catBin)
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	stopLoad := func() { load.Process.Kill(); load.Wait() }
	defer stopLoad()
	pid := w.cmd.Process.Pid
	var findings, dropped float64
	testprog.WaitFor(30*time.Second, func() bool {
		if s := lastSummary(t, out); s != nil {
			findings, _ = s["findings"].(float64)
			dropped, _ = s["otlp_dropped"].(float64)
		}
		return dropped > 20_000
	})
	hwm := vmKB(t, pid, "VmHWM")
	stopLoad()
	w.stop(t, os.Interrupt)
	row.Inputs = fmt.Sprintf("%.0f findings", findings)
	row.Lost = uint64(dropped)
	t.Logf("%.0f findings, %.0f records dropped, peak RSS %d MiB", findings, dropped, hwm>>10)
	if dropped <= 20_000 {
		t.Fatalf("otlp_dropped %v after %v findings with no collector: the drops are not counted", dropped, findings)
	}
	// Unbounded, the records dropped alone would hold over 50 MiB.
	if hwm > 120<<10 {
		t.Errorf("peak RSS %d MiB with no collector: the OTLP queue is not bounded", hwm>>10)
	}
	if !strings.Contains(w.stderr.buf.String(), "once: OTLP: exporting logs failed") {
		t.Errorf("no warning of the failing exports on stderr:\n%s", w.stderr.buf.String())
	}
}

// TestCompareOTLP: once compare --otlp sends both traced runs' findings,
// each marked with its side.
func TestCompareOTLP(t *testing.T) {
	testprog.RequireRoot(t)
	c := otelcoltest.Start(t)
	f := filepath.Join(t.TempDir(), "twice")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runOnce(t, nil, "compare", "--baseline", "cat "+f+" "+f, "--runs", "1", "--warmup", "0",
		"--otlp", c.HTTP, "--", "cat", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sides := map[string]int{}
	for _, r := range c.Logs(t) {
		if r.Attrs["once.kind"] == "duplicate_open" && r.Attrs["once.subject"] == f {
			side, _ := r.Attrs["once.side"].(string)
			sides[side]++
		}
	}
	if sides["before"] != 1 || sides["after"] != 0 {
		t.Errorf("records of the duplicate open of %s by side: %v, want one, before; stderr %s", f, sides, stderr)
	}
}
