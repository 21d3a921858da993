package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// floodProcs is how many flooders run at once: one per core, 2 to 4.
func floodProcs() int { return max(2, min(4, runtime.NumCPU())) }

// floodDir is a directory for the flooder to make a new O_TMPFILE in at
// every open: files the kernel side can't tally as repeats, so every open
// is an event. On tmpfs where there is one: a disk filesystem makes each
// open too slow to flood anything.
func floodDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "onceflood-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startFlooders starts n flooders opening f for ms milliseconds (extra:
// the flooder's further arguments); wait returns the opens they made in
// all.
func startFlooders(t *testing.T, flooder, f string, n, ms int, extra ...string) (wait func() uint64) {
	t.Helper()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range n {
		cmd := exec.Command(flooder, append([]string{strconv.Itoa(ms), f}, extra...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	return func() uint64 {
		var total uint64
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("flooder: %v: %s", err, outs[i])
			}
			n, err := strconv.ParseUint(strings.TrimSpace(outs[i].String()), 10, 64)
			if err != nil {
				t.Fatalf("flooder output %q: %v", outs[i], err)
			}
			total += n
		}
		return total
	}
}

func vmKB(t *testing.T, pid int, field string) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return kb
}

// lastSummary returns the last summary line of a watch JSON output file,
// nil if there is none yet.
func lastSummary(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The file is being appended to: only whole lines count.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		return nil
	}
	var last map[string]any
	for _, m := range jsonLines(t, data) {
		if m["type"] == "summary" {
			last = m
		}
	}
	return last
}

// summaryCovers reports whether the last whole summary line in path counts
// at least n failed opens, seen or lost: once watch has read its backlog.
func summaryCovers(t *testing.T, path string, n float64) bool {
	t.Helper()
	s := lastSummary(t, path)
	failed, _ := s["failed_opens"].(float64)
	lost, _ := s["events_lost"].(float64)
	return failed+lost >= n
}

// TestWatchFlood: one flooder per core failing to open a new name at
// every open, in a tight loop, against a one-page ring buffer (every
// failure of a new name is sent: nothing the kernel can count instead).
// once watch must lose events and count every one it lost (seen + lost
// covers every open made), say so on stderr and in its summary lines,
// keep its memory bounded, and, in a second flood, stop promptly on
// SIGINT while the flood goes on.
func TestWatchFlood(t *testing.T) {
	row := reltest.Record(t, "watch: flood into a 4 KiB ring")
	flooder := namedCopy(t, testprog.Build(t, testprog.Flooder), "onceflood")
	f := filepath.Join(floodDir(t), "missing")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	w := startWatch(t, "--format", "json", "-o", out, "--ring-size", "4096", "--comm", "onceflood", "--interval", "100ms")
	pid := w.cmd.Process.Pid
	n := floodProcs()

	// Flood 1: to the end, then every open must be accounted for.
	inputs := startFlooders(t, flooder, f, n, 1500, "failnew")()
	row.Inputs = fmt.Sprintf("%d opens by %d flooders", inputs, n)
	var seen, lost, dropped float64
	for deadline := time.Now().Add(10 * time.Second); ; {
		if m := lastSummary(t, out); m != nil {
			seen, lost, dropped = m["opens"].(float64), m["events_lost"].(float64), m["dropped_events"].(float64)
			if seen+lost >= float64(inputs) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: %v opens seen + %v lost < %d made: losses not all counted", seen, lost, inputs)
		}
		time.Sleep(50 * time.Millisecond) // polling the output file, bounded by the deadline
	}
	row.Seen, row.Lost = uint64(seen), uint64(lost)
	t.Logf("flood 1: %d opens made, %v seen, %v lost (%v dropped)", inputs, seen, lost, dropped)
	if lost == 0 || dropped == 0 || seen == 0 || seen >= float64(inputs) {
		t.Errorf("flooding a one-page ring: %v seen, %v lost (%v dropped) of %d: want some seen and some lost", seen, lost, dropped, inputs)
	}

	// Flood 2: SIGINT in the middle of it. Draining the ring at exit must
	// not chase producers that never pause.
	wait := startFlooders(t, flooder, f, n, 1500, "failnew")
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		vmKB(t, pid, "VmRSS")             // the process is alive and readable throughout
		time.Sleep(50 * time.Millisecond) // letting the flood run, bounded by the deadline
	}
	hwm := vmKB(t, pid, "VmHWM")
	stopped := time.Now()
	w.stop(t, os.Interrupt)
	stopTook := time.Since(stopped)
	wait()
	t.Logf("stopped mid-flood in %v; peak RSS %d kB", stopTook, hwm)
	if stopTook > 5*time.Second {
		t.Errorf("once watch took %v to stop on SIGINT under flood", stopTook)
	}
	if hwm > 200*1024 {
		t.Errorf("peak RSS %d MB under flood: memory not bounded", hwm/1024)
	}
	final := lastSummary(t, out)
	if final == nil || final["events_lost"].(float64) < lost {
		t.Fatalf("final summary %v: loss counter went down from %v", final, lost)
	}
	// Stopping must not invent losses: with the entry programs detached
	// before the exit ones, every exit in flight would count a missed
	// entry.
	if me := final["missed_enter"].(float64); me != 0 {
		t.Errorf("%v missed entries counted: stopping mid-flood made up losses", me)
	}
	if m := regexp.MustCompile(`(?m)^once: WARNING: [1-9]\d* events lost so far \(dropped [1-9]`).FindString(w.stderr.buf.String()); m == "" {
		t.Errorf("no loss warning on stderr:\n%s", w.stderr.buf.String())
	}
}

// TestWatchFloodRepeats: flooders failing a stat, or an open, of one
// name in a tight loop against a one-page ring. once watch counts the
// repeats in the kernel and reports them every so often; a report the
// ring has no room for must not take its counts with it: every call made
// is counted, or counted lost (counts_lost, in events_lost), however many
// reports found no room; and such a report is not itself counted lost
// (reports_deferred), so the losses counted are no more than the calls
// missing.
func TestWatchFloodRepeats(t *testing.T) {
	flooder := namedCopy(t, testprog.Build(t, testprog.Flooder), "onceflood")
	for _, tc := range []struct {
		mode, call, field string
	}{
		{"statfail", "stats", "failed_lookups"},
		{"fail", "opens", "failed_opens"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			row := reltest.Record(t, "watch: failed "+tc.call+" of one name flooding a 4 KiB ring")
			f := filepath.Join(floodDir(t), "missing")
			out := filepath.Join(t.TempDir(), "out.jsonl")
			w := startWatch(t, "--format", "json", "-o", out, "--ring-size", "4096", "--comm", "onceflood", "--interval", "100ms")
			n := floodProcs()
			inputs := startFlooders(t, flooder, f, n, 1000, tc.mode)()
			row.Inputs = fmt.Sprintf("%d %s by %d flooders", inputs, tc.call, n)
			var m map[string]any
			for deadline := time.Now().Add(10 * time.Second); ; {
				if m = lastSummary(t, out); m != nil && m[tc.field].(float64)+m["events_lost"].(float64) >= float64(inputs) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the flood: %v %s seen + %v lost < %d made: counts lost with their reports, uncounted",
						m[tc.field], tc.field, m["events_lost"], inputs)
				}
				time.Sleep(50 * time.Millisecond) // polling the output file, bounded by the deadline
			}
			w.stop(t, os.Interrupt)
			seen, lost := uint64(m[tc.field].(float64)), uint64(m["events_lost"].(float64))
			row.Seen, row.Lost = seen, lost
			t.Logf("%d %s made: %d seen, %d events lost (%v dropped, %v counts lost, %v reports deferred)",
				inputs, tc.call, seen, lost, m["dropped_events"], m["counts_lost"], m["reports_deferred"])
			// A report the ring had no room for loses nothing (its
			// counts come with the thread's next record): deferred, not
			// lost. What is lost is calls, and a few records of the
			// flooders' own (exec, exit).
			if seen+lost > inputs+uint64(16*n) {
				t.Errorf("%d %s made, %d seen, %d counted lost: losses overstated (reports whose counts came later counted lost?)",
					inputs, tc.call, seen, lost)
			}
		})
	}
}

// TestCheckFlood: once check on a command that floods a one-page ring
// must not pass: lost events make the result incomplete, exit 1.
func TestCheckFlood(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "check: flood into a 4 KiB ring")
	flooder := testprog.Build(t, testprog.Flooder)
	dir := t.TempDir()
	f := floodDir(t)
	rep := filepath.Join(dir, "report.txt")
	count := filepath.Join(dir, "count")
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--ring-size", "4096", "--max-exec-probes", "100", "-o", rep,
		"--", "sh", "-c", `exec "$0" 1000 "$1" >"$2"`, flooder, f, count}, &stdout, &stderr)
	if code != checkViolated {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, checkViolated, stderr.String())
	}
	if !regexp.MustCompile(`(?m)^once check: [1-9]\d* events? lost: result incomplete$`).MatchString(stderr.String()) {
		t.Errorf("stderr lacks the loss violation:\n%s", stderr.String())
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	// The summary line: "once: 1 process, N opens (0 failed), ..., M events lost (...".
	m := regexp.MustCompile(`(?m)^once: \d+ process(?:es)?, (\d+) opens? .* (\d+) events? lost \(dropped [1-9]`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("report's summary line shows no drop:\n%s", lastLines(string(data), 2))
	}
	seen, _ := strconv.ParseUint(string(m[1]), 10, 64)
	lost, _ := strconv.ParseUint(string(m[2]), 10, 64)
	n, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := strconv.ParseUint(strings.TrimSpace(string(n)), 10, 64)
	if err != nil {
		t.Fatalf("flooder count %q: %v", n, err)
	}
	row.Inputs, row.Seen, row.Lost = fmt.Sprintf("%d opens by 1 flooder", inputs), seen, lost
	if lost == 0 || seen >= inputs || seen+lost < inputs {
		t.Errorf("report: %d opens seen, %d lost, of %d made: want some lost and all accounted for", seen, lost, inputs)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestWatchFloodRings: flooders failing to open a new name at every open
// (an event each: nothing the kernel can tally) into two one-page rings,
// a flooder per CPU: every open is seen or counted lost, and the
// summary's dropped_events_by_ring has a count per ring that adds up to
// dropped_events, above 0. (One failure repeated is mostly tallied in the
// kernel, and a first open of a file is not sent by once watch: whether
// two rings overflow under those depends on the machine's speed.)
func TestWatchFloodRings(t *testing.T) {
	row := reltest.Record(t, "watch: flood into two 4 KiB rings")
	if runtime.NumCPU() < 2 {
		testprog.Skipf(t, "one CPU: one ring")
	}
	flooder := namedCopy(t, testprog.Build(t, testprog.Flooder), "onceflood")
	f := filepath.Join(floodDir(t), "missing")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	w := startWatch(t, "--format", "json", "-o", out, "--rings", "2", "--ring-size", "4096", "--comm", "onceflood", "--interval", "100ms")
	n := floodProcs()
	inputs := startFlooders(t, flooder, f, n, 1000, "failnew")()
	row.Inputs = fmt.Sprintf("%d opens by %d flooders", inputs, n)
	var m map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; {
		if m = lastSummary(t, out); m != nil && m["opens"].(float64)+m["events_lost"].(float64) >= float64(inputs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: %v: losses not all counted of %d opens", m, inputs)
		}
		time.Sleep(50 * time.Millisecond) // polling the output file, bounded by the deadline
	}
	w.stop(t, os.Interrupt)
	row.Seen, row.Lost = uint64(m["opens"].(float64)), uint64(m["events_lost"].(float64))
	byRing, _ := m["dropped_events_by_ring"].([]any)
	if len(byRing) != 2 {
		t.Fatalf("dropped_events_by_ring %v: want two counts", m["dropped_events_by_ring"])
	}
	var sum float64
	for _, v := range byRing {
		sum += v.(float64)
	}
	t.Logf("%d opens: %v seen, %v lost, dropped by ring %v", inputs, m["opens"], m["events_lost"], byRing)
	if dropped := m["dropped_events"].(float64); sum != dropped || dropped == 0 {
		t.Errorf("dropped by ring %v add up to %v, dropped_events %v: want the same, above 0", byRing, sum, dropped)
	}
}

// TestWatchStopsWithItsOutputBlocked: once watch --events writing to a
// pipe whose reader holds it open and stopped reading (a pager, a stuck
// consumer) is blocked in its write, where it never sees Ctrl-C. It
// must end all the same, stopGrace after the signal, saying that the
// rest of its output is lost (exit 4), not wait for the reader.
func TestWatchStopsWithItsOutputBlocked(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	flooder := namedCopy(t, testprog.Build(t, testprog.Flooder), "onceblock")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // held open, never read
	cmd := exec.Command(bin, "watch", "--events", "--comm", "onceblock")
	cmd.Stdout = w
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for attached := false; !attached; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("once watch exited before attaching")
			}
			attached = strings.HasPrefix(l, "once: watching")
		case <-time.After(30 * time.Second):
			t.Fatal("once watch did not attach within 30s")
		}
	}
	// Each open a name not tried before: a line each, far past the
	// pipe's 64 KiB.
	startFlooders(t, flooder, filepath.Join(floodDir(t), "missing"), 1, 500, "failnew")()
	time.Sleep(500 * time.Millisecond) // its lines written up to the full pipe
	signaled := time.Now()
	cmd.Process.Signal(os.Interrupt)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-time.After(stopGrace + 10*time.Second):
		t.Fatalf("once watch did not end within %v of SIGINT, its output blocked", stopGrace+10*time.Second)
	}
	took := time.Since(signaled)
	var said []string
	for l := range lines {
		said = append(said, l)
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != exitTrace || !slices.ContainsFunc(said, func(l string) bool { return strings.Contains(l, "stopped without the rest of its output") }) {
		t.Errorf("once watch ended after %v with %v, saying %q; want exit %d and that its output was cut", took, waitErr, said, exitTrace)
	}
}
