package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// floodScript makes, as any user can, 64 directories x 1,024 basenames of
// failed opens, each path about 3.9 KB: what once watch and once check
// once kept in full, hundreds of MB of it.
const floodScript = `
import os, sys
comp = "c" * 250
prefix = "/tmp/" + "/".join([comp] * 15)
n = 0
for d in range(64):
    for b in range(1024):
        try:
            os.open("%s/d%02d/name%04d" % (prefix, d, b), os.O_RDONLY)
        except OSError:
            n += 1
print(n)
`

// floodMemoryLimit is the memory cgroup limit the shipped DaemonSet sets.
const floodMemoryLimit = 256 << 20

// TestUnprivilegedFlood: the flood, made by uid 65534, leaves once watch
// and once check within a memory bound of 150 MiB (the README states the
// byte budgets behind it),
// with every failure counted and the dropped detail said; and once watch
// survives it inside a 256 MiB memory cgroup.
func TestUnprivilegedFlood(t *testing.T) {
	testprog.RequireRoot(t)
	setpriv := needTool(t, "setpriv")
	// The system's: a user's own (pyenv) is not the unprivileged user's
	// to run.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = needTool(t, "python3")
	}
	flood := []string{setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", python, "-c", floodScript}
	const bound = 150 << 20

	t.Run("watch", func(t *testing.T) {
		row := reltest.Record(t, "watch: 65,536 failed opens of 3.9 KB paths by uid 65534")
		out := filepath.Join(t.TempDir(), "w.jsonl")
		w := startWatch(t, "--format", "json", "-o", out, "--uid", "65534", "--interval", "200ms")
		runOK(t, flood...)
		testprog.WaitFor(30*time.Second, func() bool { return summaryCovers(t, out, 65536) }) // the backlog
		hwm := vmHWM(t, w.cmd.Process.Pid)
		w.stop(t, os.Interrupt)
		sum := lastSummary(t, out)
		row.Inputs, row.Seen, row.Lost = "65536 failed opens", sum["failed_opens"], sum["events_lost"]
		t.Logf("once watch: peak RSS %d MiB, %v failed opens, %v details dropped", hwm>>20, sum["failed_opens"], sum["detail_dropped"])
		if hwm > bound {
			t.Errorf("peak RSS %d MiB, bound %d MiB", hwm>>20, bound>>20)
		}
		if sum["failed_opens"].(float64)+sum["events_lost"].(float64) < 65536 || sum["detail_dropped"].(float64) == 0 {
			t.Errorf("failed opens %v (lost %v), detail dropped %v: want all counted and the dropped detail said",
				sum["failed_opens"], sum["events_lost"], sum["detail_dropped"])
		}
	})
	t.Run("check", func(t *testing.T) {
		row := reltest.Record(t, "check: 65,536 failed opens of 3.9 KB paths by uid 65534")
		rep := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(buildOnce(t), append([]string{"check", "--max-opens", "1000", "--format", "json", "-o", rep, "--"}, flood...)...)
		hwm := peakOf(t, cmd)
		data, _ := os.ReadFile(rep)
		failed := regexp.MustCompile(`"failed_opens": (\d+)`).FindSubmatch(data)
		lost := regexp.MustCompile(`"events_lost": (\d+)`).FindSubmatch(data)
		row.Inputs = "65536 failed opens"
		if failed != nil {
			row.Seen = string(failed[1])
		}
		t.Logf("once check: peak RSS %d MiB", hwm>>20)
		if hwm > bound {
			t.Errorf("peak RSS %d MiB, bound %d MiB", hwm>>20, bound>>20)
		}
		if failed == nil || lost == nil {
			t.Fatalf("no totals in the report")
		}
		// The ring may overflow (every event carries a 3.9 KB path):
		// what is lost is counted.
		n, _ := strconv.Atoi(string(failed[1]))
		l, _ := strconv.Atoi(string(lost[1]))
		if n+l < 65536 {
			t.Errorf("%d failed opens counted and %d events lost, want 65536 in all", n, l)
		}
		row.Lost = l
	})
	t.Run("watch in a 256 MiB memory cgroup", func(t *testing.T) {
		row := reltest.Record(t, "watch in a 256 MiB memory cgroup: the same flood")
		cg := memoryCgroup(t, floodMemoryLimit)
		out := filepath.Join(t.TempDir(), "w.jsonl")
		bin := buildOnce(t)
		sh := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec %s watch --format json -o %s --uid 65534 --interval 200ms`, cg, bin, out)
		w := startWatchCmd(t, exec.Command("/bin/sh", "-c", sh))
		runOK(t, flood...)
		testprog.WaitFor(30*time.Second, func() bool { return summaryCovers(t, out, 65536) })
		if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatalf("once watch is gone (OOM-killed?): %v", err)
		}
		w.stop(t, nil)
		sum := lastSummary(t, out)
		row.Inputs, row.Seen, row.Lost = "65536 failed opens", sum["failed_opens"], sum["events_lost"]
		if sum["failed_opens"].(float64)+sum["events_lost"].(float64) < 65536 {
			t.Errorf("failed opens %v: want all counted", sum["failed_opens"])
		}
	})
}

// vmHWM is a process's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// peakOf runs cmd to its end and returns its peak RSS, read from /proc
// while it runs (its rusage would carry this test's own memory, which the
// vfork that starts it shares).
func peakOf(t *testing.T, cmd *exec.Cmd) int64 {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
				t.Fatalf("%v: %v", cmd.Args, err)
			}
			return peak
		case <-tick.C:
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
			if err != nil {
				continue
			}
			if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b); m != nil {
				kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
				peak = max(peak, kb<<10)
			}
		}
	}
}

// memoryCgroup makes a memory cgroup limited to limit bytes and returns
// its directory: cgroup v2's where the memory controller is there, else
// v1's (this machine's kind: v1 controllers, cgroup2 at /unified).
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := fmt.Sprintf("once-test-%d", os.Getpid())
	for _, c := range []struct{ root, file string }{
		{"/sys/fs/cgroup", "memory.max"},
		{"/sys/fs/cgroup/memory", "memory.limit_in_bytes"},
	} {
		if _, err := os.Stat(filepath.Join(c.root, c.file)); err != nil && c.file == "memory.max" {
			if ctl, err := os.ReadFile(filepath.Join(c.root, "cgroup.controllers")); err != nil || !strings.Contains(string(ctl), "memory") {
				continue
			}
		}
		dir := filepath.Join(c.root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		t.Cleanup(func() { os.Remove(dir) })
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			t.Fatalf("limit %s: %v", dir, err)
		}
		return dir
	}
	t.Fatal("no memory cgroup controller to limit once watch with")
	return ""
}
