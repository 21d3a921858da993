package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// watchProc is a running `once watch`.
type watchProc struct {
	cmd    *exec.Cmd
	stdout *bytes.Buffer
	stderr *lockedBuffer
}

type lockedBuffer struct {
	ch  chan string
	buf bytes.Buffer
}

// startWatch runs once watch and returns when it says it is attached.
func startWatch(t *testing.T, args ...string) *watchProc {
	t.Helper()
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	return startWatchCmd(t, exec.Command(bin, append([]string{"watch"}, args...)...))
}

// startWatchCmd is startWatch of a command that execs once watch.
func startWatchCmd(t *testing.T, cmd *exec.Cmd) *watchProc {
	t.Helper()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watchProc{cmd: cmd, stdout: &stdout, stderr: &lockedBuffer{ch: make(chan string, 100)}}
	// A test that fails before it stops the watch must not leave it
	// attached for the tests after it.
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			w.stderr.ch <- sc.Text()
		}
		close(w.stderr.ch)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-w.stderr.ch:
			if !ok {
				cmd.Wait()
				t.Fatalf("once watch exited before attaching: %s", w.stderr.buf.String())
			}
			w.stderr.buf.WriteString(line + "\n")
			if strings.HasPrefix(line, "once: watching") {
				return w
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("once watch did not attach: %s", w.stderr.buf.String())
		}
	}
}

// stop signals watch and waits for it; it must exit 0.
func (w *watchProc) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if sig != nil {
		w.cmd.Process.Signal(sig)
	}
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		for line := range w.stderr.ch {
			w.stderr.buf.WriteString(line + "\n")
		}
		if err != nil && sig != syscall.SIGKILL {
			t.Fatalf("once watch: %v\n%s", err, w.stderr.buf.String())
		}
	case <-time.After(30 * time.Second):
		w.cmd.Process.Kill()
		t.Fatal("once watch did not stop")
	}
}

// namedCopy copies a binary under a distinctive name (its comm).
func namedCopy(t *testing.T, bin, name string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runOK(t *testing.T, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
	return cmd.Process.Pid
}

func jsonLines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for i, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %d is not JSON: %v: %q", i+1, err, l)
		}
		if _, ok := m["type"].(string); !ok {
			t.Fatalf("line %d has no type: %q", i+1, l)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestWatchJSONEvents(t *testing.T) {
	opener := namedCopy(t, testprog.Build(t, testprog.Opener), "oncewatchjson")
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	w := startWatch(t, "--format", "json", "--events", "--comm", "oncewatchjson")
	runOK(t, opener, "repeat:3:openat:"+f, "fail:"+f+".missing")
	w.stop(t, os.Interrupt)

	lines := jsonLines(t, w.stdout.Bytes())
	opens, failed := 0, 0
	for _, m := range lines {
		if m["type"] == "summary" || m["type"] == "finding" {
			continue
		}
		if m["comm"] != "oncewatchjson" {
			t.Errorf("event from another comm passed the filter: %v", m)
		}
		for _, k := range []string{"ts_ns", "pid", "tid", "ppid", "uid", "syscall", "ret", "errno", "error", "ns", "cgroup_id"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s event lacks %q: %v", m["type"], k, m)
			}
		}
		if m["type"] == "open" && m["path"] == f {
			opens++
			if m["dev"] == nil || m["ino"] == nil || m["flags_text"] != "O_RDONLY|O_CLOEXEC" {
				t.Errorf("open line %v", m)
			}
		}
		if m["type"] == "open" && m["fname"] == f+".missing" {
			failed++
			if m["error"] != "ENOENT" || m["errno"].(float64) != 2 {
				t.Errorf("failed open line %v", m)
			}
		}
	}
	if opens != 3 || failed != 1 {
		t.Errorf("saw %d opens of the target and %d failed opens, want 3 and 1", opens, failed)
	}
	last := lines[len(lines)-1]
	if last["type"] != "summary" || last["dropped_events"] == nil || last["events_lost"] == nil {
		t.Errorf("last line is not a summary with loss counters: %v", last)
	}
}

// TestWatchHeldCounts: a process still running, idle, when once watch
// stops: what its thread counted in the kernel and held in its slot
// (repeats of a file, of a stat, a run of misses) is in the final
// findings, exactly, as strace would count the calls.
func TestWatchHeldCounts(t *testing.T) {
	const name = "oncewatchheld"
	opener := namedCopy(t, testprog.Build(t, testprog.Opener), name)
	f := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, "--format", "json", "--comm", name)
	cmd := exec.Command(opener, "-hold", "repeat:21:openat:"+f, "repeat:22:stat:"+f, "repeat:23:fail:"+f+".missing")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "held\n" {
		t.Fatalf("opener said %q, %v; want held", l, err)
	}
	w.stop(t, os.Interrupt)
	got := map[string]float64{}
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] != "finding" || m["pid"] != float64(cmd.Process.Pid) {
			continue
		}
		n, _ := m["count"].(float64)
		got[m["kind"].(string)] = n
	}
	want := map[string]float64{"duplicate_open": 21, "duplicate_stat": 22, "repeated_miss": 23}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("findings of the held process %v, want %v:\n%s", got, want, w.stdout.String())
	}
}

// TestWatchEnvProbes is the acceptance scenario: env with six bad PATH
// entries, launched in a loop, shows 6 failed probes per launch.
func TestWatchEnvProbes(t *testing.T) {
	w := startWatch(t, "--format", "json", "--comm", "env", "--interval", "100ms")
	pids := map[float64]bool{}
	for i := 0; i < 3; i++ {
		pids[float64(runOK(t, "env", "PATH=/a:/b:/c:/d:/e:/f:/usr/bin", "true"))] = true
	}
	w.stop(t, syscall.SIGTERM)
	n := 0
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		if m["type"] != "finding" || !pids[m["pid"].(float64)] {
			continue
		}
		if m["kind"] != "failed_exec_probes" || m["comm"] != "env" || m["failed"].(float64) != 6 || m["found"] != "/usr/bin/true" || m["wasted_ns"].(float64) <= 0 {
			t.Errorf("finding %v", m)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d exec probe findings for our 3 launches, want 3:\n%s", n, w.stdout.String())
	}
}

func TestWatchTextOnPipe(t *testing.T) {
	w := startWatch(t, "--interval", "100ms", "--duration", "1s")
	w.stop(t, nil)
	out := w.stdout.String()
	if strings.Count(out, "once watch ") < 3 {
		t.Errorf("want a table per interval, got:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("non-terminal output contains escape codes")
	}
	if !strings.Contains(out, "lost 0 (dropped 0") || !strings.Contains(out, "total:") {
		t.Errorf("table lacks loss counters or totals:\n%s", out)
	}
}

func TestWatchMetrics(t *testing.T) {
	opener := namedCopy(t, testprog.Build(t, testprog.Opener), "oncemetrics")
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	w := startWatch(t, "--format", "json", "-o", filepath.Join(t.TempDir(), "out.jsonl"), "--metrics", "127.0.0.1:0", "--interval", "100ms")
	url := metricsURL(t, w)
	runOK(t, opener, "repeat:2:openat:"+f)
	want := `once_duplicate_opens_total{comm="oncemetrics",container="",namespace="",pod=""} 1`
	body := scrapeUntil(t, url, want)
	w.stop(t, os.Interrupt)
	for _, s := range []string{want, `once_opens_total{comm="oncemetrics",container="",namespace="",pod="",result="ok"}`, "once_events_processed_total", `once_events_lost_total{kind="ringbuf_full"} 0`, "once_processes "} {
		if !strings.Contains(body, s) {
			t.Errorf("metrics lack %q", s)
		}
	}
}

// metricsURL is where a watch started with --metrics serves them.
func metricsURL(t *testing.T, w *watchProc) string {
	t.Helper()
	for _, line := range strings.Split(w.stderr.buf.String(), "\n") {
		if m := regexp.MustCompile(`serving metrics on (http://\S+)`).FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no metrics address in %q", w.stderr.buf.String())
	return ""
}

// scrapeUntil reads the metrics at url until they contain want, for at
// most 10 s; it returns the last body read.
func scrapeUntil(t *testing.T, url, want string) string {
	t.Helper()
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		body = scrape(t, url)
		if strings.Contains(body, want) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling an HTTP endpoint, bounded by the deadline
	}
	return body
}

// scrape reads the metrics at url once.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// progIDsOf lists the BPF programs process pid holds, from the prog_id
// lines of its descriptors' fdinfo: exactly this once's programs, whatever
// else is loaded on the machine.
// onceProgs is how many BPF programs once loads: every program in its
// object (the exit programs are each attached to several tracepoints).
func onceProgs(t *testing.T) int {
	t.Helper()
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	return len(spec.Programs)
}

func progIDsOf(t *testing.T, pid int) []ebpf.ProgramID {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[ebpf.ProgramID]bool{}
	var ids []ebpf.ProgramID
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if m := regexp.MustCompile(`(?m)^prog_id:\s+(\d+)`).FindSubmatch(data); m != nil {
			id, _ := strconv.Atoi(string(m[1]))
			if !seen[ebpf.ProgramID(id)] {
				seen[ebpf.ProgramID(id)] = true
				ids = append(ids, ebpf.ProgramID(id))
			}
		}
	}
	return ids
}

func loaded(ids []ebpf.ProgramID) []ebpf.ProgramID {
	var still []ebpf.ProgramID
	for _, id := range ids {
		if p, err := ebpf.NewProgramFromID(id); err == nil {
			p.Close()
			still = append(still, id)
		}
	}
	return still
}

// TestWatchLeavesNothingAttached: every way watch can end releases every
// BPF program it loaded, SIGKILL included (links are tied to its
// descriptors).
func TestWatchLeavesNothingAttached(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "leak: once watch ends (SIGINT, SIGTERM, SIGKILL, --duration)")
	row.Inputs = "4 endings"
	for _, tc := range []struct {
		name string
		sig  os.Signal
		args []string
	}{
		{"SIGINT", os.Interrupt, nil},
		{"SIGTERM", syscall.SIGTERM, nil},
		{"SIGKILL", syscall.SIGKILL, nil},
		{"--duration", nil, []string{"--duration", "300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := startWatch(t, append([]string{"--format", "json"}, tc.args...)...)
			ids := progIDsOf(t, w.cmd.Process.Pid)
			if len(ids) < onceProgs(t) {
				t.Fatalf("watch holds %d BPF programs, want the %d once loads: the check can't see them", len(ids), onceProgs(t))
			}
			w.stop(t, tc.sig)
			// A program is freed asynchronously (RCU) after its last
			// reference goes: wait for that, with a deadline.
			deadline := time.Now().Add(10 * time.Second)
			for len(loaded(ids)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if still := loaded(ids); len(still) > 0 {
				t.Errorf("programs %v still loaded after %s", still, tc.name)
			}
		})
	}
}

// TestWatchChurn: 100,000 short-lived processes, each with a duplicate
// open, through a 1,000-image table: the table stays at its cap, ended
// images make room (no image is evicted before it ended) and once's
// memory stays bounded.
func TestWatchChurn(t *testing.T) {
	row := reltest.Record(t, "watch: churn, 100,000 processes through a 1,000-image table")
	row.Inputs = "100000 processes x 2 opens"
	forker := namedCopy(t, testprog.Build(t, testprog.Forker), "oncechurn")
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	w := startWatch(t, "--format", "json", "-o", out, "--comm", "oncechurn", "--max-processes", "1000", "--interval", "250ms")
	runOK(t, forker, "100000", f)
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	w.stop(t, os.Interrupt)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var last map[string]any
	maxProcs := 0.0
	for _, m := range jsonLines(t, data) {
		if m["type"] == "summary" {
			last = m
			if p := m["processes"].(float64); p > maxProcs {
				maxProcs = p
			}
		}
	}
	if last == nil {
		t.Fatal("no summary line")
	}
	if maxProcs > 1000 {
		t.Errorf("process table reached %v, cap 1000", maxProcs)
	}
	row.Seen, row.Lost = uint64(last["events"].(float64)), uint64(last["events_lost"].(float64))
	// Each child exits before the next forks: the table lets go of
	// ended images, whose findings were made, and evicts none that
	// had not ended.
	if last["evicted"].(float64) != 0 || last["events_lost"].(float64) != 0 {
		t.Errorf("evicted %v, lost %v: want no image evicted before it ended and nothing lost", last["evicted"], last["events_lost"])
	}
	if got := last["duplicate_opens"].(float64) + 0; got < 100000 {
		t.Errorf("%v duplicate opens counted, want 100000 (one per child)", got)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no VmHWM in %s", status)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	t.Logf("once watch peak RSS %d MB after 100,000 processes", kb/1024)
	if kb > 200*1024 {
		t.Errorf("peak RSS %d MB: memory not bounded", kb/1024)
	}
}

// TestWatchEventsFullSpeed is the acceptance case of the event stream at
// full speed: a process opening a tmpfs file 200,000 times as fast as it
// can, open, openat and openat2 in turn, under watch --events --comm
// NAME --format json -o FILE: one open line for every open, each with
// its call, name, path and file (and mode 0: open and openat without
// O_CREAT have a mode argument only in a register), and no event lost.
func TestWatchEventsFullSpeed(t *testing.T) {
	const n = 200000
	const name = "oncefullspeed"
	prog := namedCopy(t, testprog.Build(t, testprog.Openmix), name)
	dir := t.TempDir()
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		d, err := os.MkdirTemp("/dev/shm", "once-fullspeed-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	f := filepath.Join(dir, "target")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "events.jsonl")
	w := startWatch(t, "--events", "--comm", name, "--format", "json", "-o", out)
	pid := runOK(t, prog, f, strconv.Itoa(n))
	w.stop(t, os.Interrupt)

	file, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	type line struct {
		Type       string  `json:"type"`
		Pid        int     `json:"pid"`
		Tid        int     `json:"tid"`
		Comm       string  `json:"comm"`
		Syscall    string  `json:"syscall"`
		Ret        int     `json:"ret"`
		Fname      string  `json:"fname"`
		Path       string  `json:"path"`
		FlagsText  string  `json:"flags_text"`
		Mode       uint64  `json:"mode"`
		Ino        uint64  `json:"ino"`
		FileType   string  `json:"file_type"`
		EventsLost *uint64 `json:"events_lost"`
	}
	var want unix.Stat_t
	if err := unix.Stat(f, &want); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	opens, bad := 0, 0
	var last line
	var lastRaw string
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not JSON: %v: %q", err, sc.Bytes())
		}
		last = l
		if l.Type == "summary" {
			lastRaw = sc.Text()
		}
		if l.Type != "open" || l.Pid != pid || l.Fname != f {
			continue
		}
		opens++
		calls[l.Syscall]++
		if (l.Tid != pid || l.Comm != name || l.Ret < 0 || l.Path != f || l.FlagsText != "O_RDONLY|O_CLOEXEC" || l.Mode != 0 ||
			l.Ino != want.Ino || l.FileType != "reg") && bad < 5 {
			bad++
			t.Errorf("open line %+v", l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if opens != n {
		t.Errorf("%d open lines of %s, want %d", opens, f, n)
	}
	if calls["open"] != n/3+1 || calls["openat"] != n/3+1 || calls["openat2"] != n/3 {
		t.Errorf("calls %v, want open and openat %d, openat2 %d", calls, n/3+1, n/3)
	}
	if last.Type != "summary" || last.EventsLost == nil || *last.EventsLost != 0 {
		t.Errorf("the last line is no summary with events_lost 0; the last summary: %s", lastRaw)
	}
}
