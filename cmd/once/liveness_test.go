package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// syncBuffer is a bytes.Buffer several goroutines write and read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// get is one GET of url: its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue is the value of the sample named by the start of its line
// (name and labels), -1 when absent.
func metricValue(body, series string) float64 {
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// TestWatchReaderStall: /healthz answers 200 while the drain loop polls,
// idle (no event at all selected) for longer than --stall-timeout too,
// and 503 with a one-line reason within the timeout once the loop is
// blocked (a renderer stuck, as the --stacks unwinder stuck on a file
// would be), the stall counted in the metrics; healthy again once the
// loop goes on. In-process: the block is the beforeRender hook, which
// runs inside the loop.
func TestWatchReaderStall(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "liveness: the reader blocked, and idle")
	var block atomic.Bool
	release := make(chan struct{})
	beforeRender = func() {
		if block.Load() {
			<-release
		}
	}
	defer func() { beforeRender = nil }()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"watch", "--comm", "oncenothingis", "--format", "json", "--interval", "100ms",
			"--metrics", "127.0.0.1:0", "--stall-timeout", "1s", "--duration", "60s"}, &stdout, &stderr)
	}()
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; {
		if m := regexp.MustCompile(`serving metrics on http://(\S+)/metrics`).FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1]
			break
		}
		select {
		case c := <-code:
			t.Fatalf("once watch exited %d: %s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics address: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond) // waiting for the watch to start, bounded by the deadline
	}
	unblock := sync.OnceFunc(func() {
		block.Store(false)
		close(release)
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			unblock()
			select {
			case c := <-code:
				t.Errorf("once watch exited %d before it was stopped: %s", c, stderr.String())
				return
			default:
			}
			// Caught by the watch's signal.NotifyContext, which is
			// registered while it runs.
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			select {
			case c := <-code:
				if c != 0 {
					t.Errorf("once watch exited %d: %s", c, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("once watch did not stop")
			}
		})
	}
	defer stop()
	// Idle past the timeout: healthy.
	time.Sleep(1500 * time.Millisecond) // longer than --stall-timeout, on purpose
	if st, body := get(t, base+"/healthz"); st != 200 {
		t.Fatalf("idle: /healthz %d %q, want 200", st, body)
	}
	_, m := get(t, base+"/metrics")
	if v := metricValue(m, "once_reader_stalls_total"); v != 0 {
		t.Errorf("idle: once_reader_stalls_total %v, want 0", v)
	}
	block.Store(true)
	blocked := time.Now()
	var st int
	var body string
	for time.Since(blocked) < 5*time.Second {
		if st, body = get(t, base+"/healthz"); st == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling the endpoint, bounded
	}
	took := time.Since(blocked)
	row.Inputs = "idle 1.5s, then the loop blocked; --stall-timeout 1s"
	if st != http.StatusServiceUnavailable || strings.Count(body, "\n") != 1 || !strings.Contains(body, "stalled") {
		t.Errorf("blocked: /healthz %d %q, want 503 and one line saying it stalled", st, body)
	} else if took > 2500*time.Millisecond {
		t.Errorf("blocked: /healthz failed after %v, want within the 1s timeout and a poll", took)
	}
	_, m = get(t, base+"/metrics")
	stalls := metricValue(m, "once_reader_stalls_total")
	if stalls < 1 {
		t.Errorf("blocked: once_reader_stalls_total %v, want at least 1", stalls)
	}
	if age := metricValue(m, "once_reader_progress_age_seconds"); age < 1 {
		t.Errorf("blocked: once_reader_progress_age_seconds %v, want at least 1", age)
	}
	row.Seen = fmt.Sprintf("503 after %v, %v stalls", took.Round(time.Millisecond), stalls)
	unblock()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if st, _ = get(t, base+"/healthz"); st == 200 {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the endpoint, bounded
	}
	if st != 200 {
		t.Errorf("released: /healthz %d, want 200 again", st)
	}
}

// TestWatchFullDisk: `once watch -o FILE` on a full file system (a 64 KiB
// tmpfs) goes on tracing and serving metrics, counts the records it could
// not write (metrics, the summary), warns, and writes again once space is
// freed, every line of the file whole.
func TestWatchFullDisk(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "watch -o on a full file system")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "oncefull", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	out := filepath.Join(dir, "out.jsonl")
	w := startWatch(t, "--format", "json", "-o", out, "--metrics", "127.0.0.1:0", "--interval", "50ms")
	url := metricsURL(t, w)
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	filler := filepath.Join(dir, "filler")
	fill := func() int64 {
		f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		chunk := make([]byte, 512)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
		st, _ := f.Stat()
		return st.Size()
	}
	size := fill()
	// Keep it full while watch's lines come: what it could write
	// before the filler's last chunk took the rest.
	deadline := time.Now().Add(10 * time.Second)
	var dropped, dropped2 float64
	for ; time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) { // polling, bounded
		fill()
		select {
		case err := <-exited:
			t.Fatalf("once watch exited on a full disk: %v\n%s", err, w.stderr.buf.String())
		default:
		}
		dropped = metricValue(scrape(t, url), "once_output_records_dropped_total")
		if dropped >= 3 {
			break
		}
	}
	events := metricValue(scrape(t, url), "once_events_processed_total")
	// More intervals, all dropped, while the filler's opens make events
	// (on an idle machine they may be the only ones).
	var m string
	var events2 float64
	for i := 0; time.Now().Before(deadline.Add(10 * time.Second)); i++ { // polling, bounded
		time.Sleep(100 * time.Millisecond)
		fill()
		// A failed open is always sent: events on a quiet machine (the
		// filler's own repeated opens are only counted in the kernel).
		os.Open(filepath.Join(dir, fmt.Sprintf("missing-%d", i)))
		m = scrape(t, url)
		dropped2 = metricValue(m, "once_output_records_dropped_total")
		events2 = metricValue(m, "once_events_processed_total")
		if dropped2 > dropped && events2 > events {
			break
		}
	}
	if dropped < 3 || dropped2 <= dropped || events2 <= events {
		t.Errorf("full disk: records dropped %v then %v, events %v then %v: want both growing", dropped, dropped2, events, events2)
	}
	if b := metricValue(m, "once_output_bytes_dropped_total"); b <= 0 {
		t.Errorf("full disk: once_output_bytes_dropped_total %v, want > 0", b)
	}
	before, _ := os.ReadFile(out)
	os.Remove(filler)
	var after []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) { // polling, bounded
		after, _ = os.ReadFile(out)
		if bytes.Contains(after[len(before):], []byte(`"output_dropped":`)) && !bytes.Contains(after[len(before):], []byte(`"output_dropped":0,`)) {
			break
		}
	}
	w.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("once watch: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("once watch did not stop")
	}
	for line := range w.stderr.ch {
		w.stderr.buf.WriteString(line + "\n")
	}
	after, _ = os.ReadFile(out)
	if len(after) <= len(before) {
		t.Errorf("nothing written after space was freed (%d bytes before, %d after)", len(before), len(after))
	}
	var last map[string]any
	for i, l := range strings.Split(strings.TrimSuffix(string(after), "\n"), "\n") {
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Errorf("line %d is not whole JSON: %q", i+1, l)
		}
	}
	if v, _ := last["output_dropped"].(float64); v < dropped2 {
		t.Errorf("the last summary says output_dropped %v, want at least %v", last["output_dropped"], dropped2)
	}
	if warns := strings.Count(w.stderr.buf.String(), "could not write"); warns != 1 {
		t.Errorf("stderr has %d warnings that the output could not be written, want 1:\n%s", warns, w.stderr.buf.String())
	}
	row.Inputs = fmt.Sprintf("tmpfs size=64k, filled (%d bytes), then freed", size)
	row.Seen = fmt.Sprintf("%v records dropped, %d bytes written after", dropped2, len(after)-len(before))
}

// TestRunEventsOnFullDisk: once run --events-o on a full file system
// traces the command to its end, reports the event lines it could not
// write (output_dropped) and warns, rather than losing them in silence.
func TestRunEventsOnFullDisk(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "run --events-o on a full file system")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "oncefull", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(dir, "filler"), "bs=4k").CombinedOutput(); err == nil {
		t.Fatalf("dd filled a 64k tmpfs without error: %s", out)
	}
	opener := testprog.Build(t, testprog.Opener)
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("x"), 0o644)
	report := filepath.Join(t.TempDir(), "report.json")
	code, _, stderr := runOnce(t, nil, "run", "--events", "--format", "json", "--events-o", filepath.Join(dir, "events.jsonl"),
		"-o", report, "--", opener, "repeat:50:openat:"+target)
	if code != 0 {
		t.Fatalf("once run exited %d: %s", code, stderr)
	}
	var r map[string]any
	b, _ := os.ReadFile(report)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	dropped, _ := r["output_dropped"].(float64)
	if dropped < 50 {
		t.Errorf("report: output_dropped %v, want at least the 50 opens' lines", r["output_dropped"])
	}
	if !strings.Contains(stderr, "could not write to") {
		t.Errorf("stderr does not warn that the events could not be written: %q", stderr)
	}
	row.Inputs = "50 opens, --events-o on a full 64k tmpfs"
	row.Seen = fmt.Sprintf("%v event lines counted as not written", dropped)
}
