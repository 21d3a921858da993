package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// soakLoad is the mixed load of the soak: fork churn, an open flood of
// one file, failing PATH searches and hostile names, each in a loop.
const soakLoad = `
cd "$1"
: > f
touch "$(printf 'e\033[31mvil\nname')"
(while :; do /bin/true; done) &
(while :; do cat f f f >/dev/null; done) &
(while :; do env PATH=/nonexistent/a:/nonexistent/b:/usr/bin true; done) &
(while :; do cat e*name e*name >/dev/null 2>&1; cat "$(printf 'no\033[2Jsuch')" 2>/dev/null; done) &
wait
`

// vmRSS is a process's resident set size now, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// TestWatchSoak runs once watch --format json -o FILE --metrics under a
// mixed load, RSS sampled every second, kills it with SIGKILL half way and
// starts it again on the same file. RSS must stay under the bound, flat
// once the detail budget is full (seen in runs of 2 minutes or more), and
// the file must parse whole, every line but the one the kill cut, if it
// cut one. ONCE_SOAK sets how long (make
// reliability: 10m); make test runs it for 20 s.
func TestWatchSoak(t *testing.T) {
	testprog.RequireRoot(t)
	d := 20 * time.Second
	if v := os.Getenv("ONCE_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 10*time.Second {
			t.Fatalf("ONCE_SOAK=%q: want a duration of at least 10s", v)
		}
	}
	row := reltest.Record(t, fmt.Sprintf("soak: watch --format json -o --metrics, %v of fork churn, open flood, failing execs, hostile names; kill -9 and restart half way", d))
	dir := t.TempDir()
	out := filepath.Join(dir, "soak.jsonl")
	load := exec.Command("/bin/sh", "-c", soakLoad, "soak", dir)
	load.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-load.Process.Pid, syscall.SIGKILL)
		load.Wait()
	}()

	var samples []int64 // RSS each second, MiB, both runs
	run := func(part time.Duration, sig os.Signal) {
		w := startWatch(t, "--format", "json", "-o", out, "--metrics", "127.0.0.1:0", "--interval", "1s", "--exclude-comm", "go")
		url := metricsURL(t, w)
		end := time.Now().Add(part)
		for time.Now().Before(end) {
			time.Sleep(time.Second)
			samples = append(samples, vmRSS(t, w.cmd.Process.Pid)>>20)
		}
		if body := scrape(t, url); !strings.Contains(body, "once_events_processed_total") {
			t.Errorf("metrics lack once_events_processed_total")
		}
		w.stop(t, sig)
	}
	run(d/2, syscall.SIGKILL)
	half := len(samples)
	// Where the first run's output ends: a kill -9 can cut the line it
	// was writing (the kernel ends a write to a file at a page boundary
	// when a fatal signal comes), and the restart puts a newline after
	// it. That one line, and no other, may not parse.
	var cut int64
	if st, err := os.Stat(out); err == nil {
		cut = st.Size()
	}
	run(d/2, os.Interrupt)

	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	bad, findings, summaries := 0, 0, 0
	var last map[string]any
	off := int64(0)
	for i, l := range lines {
		start := off
		off += int64(len(l)) + 1
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			if start < cut && cut <= start+int64(len(l)) && !strings.HasSuffix(string(raw[:cut]), "\n") {
				t.Logf("line %d, cut by the kill -9: %.80q", i+1, l)
				continue
			}
			bad++
			if bad < 3 {
				t.Errorf("line %d of %d does not parse: %v: %.200q", i+1, len(lines), err, l)
			}
			continue
		}
		switch v["type"] {
		case "finding":
			findings++
		case "summary":
			summaries++
			last = v
		}
	}
	if findings == 0 || summaries < 2 || last == nil {
		t.Fatalf("%d findings, %d summaries: the load was not seen", findings, summaries)
	}
	// Under the DaemonSet's 256 MiB limit throughout, and flat once the
	// detail budget is full: a long run's last third holds no more than
	// its middle third did, with room for the Go heap's own steps.
	const bound = 224
	peak := int64(0)
	for _, s := range samples {
		peak = max(peak, s)
	}
	row.Inputs = fmt.Sprintf("%d lines written", len(lines))
	row.Seen = fmt.Sprintf("%d findings; RSS MiB each second: %v", findings, condense(samples, 20))
	row.Lost = last["events_lost"]
	t.Logf("RSS MiB: %v", samples)
	if peak > bound {
		t.Errorf("RSS reached %d MiB, bound %d MiB", peak, bound)
	}
	for i, run := range [][]int64{samples[:half], samples[half:]} {
		if len(run) < 60 {
			continue
		}
		third := len(run) / 3
		mid, end := slices.Max(run[third:2*third]), slices.Max(run[2*third:])
		if end > mid+16 {
			t.Errorf("run %d: RSS still growing after warm-up: %d MiB in its middle third, %d MiB in its last", i+1, mid, end)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines do not parse after a kill -9 and a restart", bad, len(lines))
	}
}

// condense keeps at most n evenly spaced samples.
func condense(s []int64, n int) []int64 {
	if len(s) <= n {
		return s
	}
	out := make([]int64, 0, n)
	for i := range n {
		out = append(out, s[i*(len(s)-1)/(n-1)])
	}
	return out
}
