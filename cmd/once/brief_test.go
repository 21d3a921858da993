package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// briefWorkload is a program whose findings depend on every way the kernel
// decides which opens once watch sends: a repeat of a file past the
// thread's recent ones, a repeat right after, a repeat by another thread,
// a probe ended by a success several first opens later, a probe never
// ended, an O_PATH open before a real one, and an exec, after which the
// new image has opened nothing. Its first image has the comm name, the
// second (cat) name+"2". A second program (comm name) opens a file and
// execs itself to open it twice with no other open in between.
func briefWorkload(t *testing.T, name string) (argvs [][]string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	files = map[string]string{}
	for _, f := range []string{"A", "B", "C", "G", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "D3/x.cfg"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files[f] = p
	}
	opener := namedCopy(t, testprog.Build(t, testprog.Opener), name)
	cat := namedCopy(t, "/bin/cat", name+"2")
	argv := []string{opener, "open:" + files["A"]}
	for _, f := range []string{"F1", "F2", "F3", "F4", "F5"} {
		argv = append(argv, "open:"+files[f])
	}
	argv = append(argv, "open:"+files["A"], "repeat:2:open:"+files["B"],
		"fail:"+filepath.Join(dir, "D1/x.cfg"), "fail:"+filepath.Join(dir, "D2/x.cfg"),
		"open:"+files["F6"], "open:"+files["F7"], "open:"+files["F8"], "open:"+files["D3/x.cfg"],
		"fail:"+filepath.Join(dir, "D1/y.cfg"), "fail:"+filepath.Join(dir, "D2/y.cfg"),
		"threads:2:open:"+files["C"])
	// Twenty first opens while both basenames pend (y.cfg for good): none
	// ends a probe, none is sent.
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, fmt.Sprintf("H%d", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		argv = append(argv, "open:"+p)
	}
	argv = append(argv,
		"opath:"+files["G"], "open:"+files["G"], "open:"+files["A"],
		// A first open, not sent, right before the exec: reported at it.
		"open:"+files["F9"],
		// The new image opens A twice: a duplicate of its own, found
		// although the thread's recent opens (of the image before) had A.
		"exec:"+cat+":"+files["A"]+":"+files["A"])
	// A program opens A and execs itself to open A twice the same way,
	// with no other open in between: the thread's recent opens, of the
	// image before, have A.
	reopen := namedCopy(t, testprog.Build(t, testprog.Reopen), name)
	return [][]string{argv, {reopen, files["A"], "1", "2"}}, files
}

// findingKeys reduces findings to what must not depend on how the events
// reached the detectors: kind, file or target, counts, and what was found.
func findingKeys(t *testing.T, findings []map[string]any, comm string) []string {
	t.Helper()
	var keys []string
	for _, m := range findings {
		if m["comm"] != comm && m["comm"] != comm+"2" {
			continue
		}
		switch m["kind"] {
		case "duplicate_open":
			keys = append(keys, fmt.Sprintf("dup %v x%v", m["path"], m["count"]))
		default:
			var tries []string
			for _, a := range m["attempts"].([]any) {
				tries = append(tries, fmt.Sprint(a.(map[string]any)["path"]))
			}
			keys = append(keys, fmt.Sprintf("%v %v failed=%v found=%v tries=%v", m["kind"], m["target"], m["failed"], m["found"], tries))
		}
	}
	sort.Strings(keys)
	return keys
}

// TestWatchSendsWhatFindingsNeed: once watch (findings, not events) has
// the kernel count a file's first open instead of sending it. Its findings
// must be exactly once run's (which is sent every open) on the same
// program, and its open totals exactly those of a watch that is sent every
// event, running at the same time.
func TestWatchSendsWhatFindingsNeed(t *testing.T) {
	const comm = "oncebrief"
	argvs, files := briefWorkload(t, comm)

	// once run: every open sent.
	var runFindings []map[string]any
	for _, argv := range argvs {
		runOut := filepath.Join(t.TempDir(), "run.json")
		runOK(t, append([]string{buildOnce(t), "run", "--format", "json", "-o", runOut, "--"}, argv...)...)
		data, err := os.ReadFile(runOut)
		if err != nil {
			t.Fatal(err)
		}
		var report struct {
			Findings []map[string]any `json:"findings"`
		}
		if err := json.Unmarshal(data, &report); err != nil {
			t.Fatal(err)
		}
		runFindings = append(runFindings, report.Findings...)
	}
	want := findingKeys(t, runFindings, comm)

	brief := startWatch(t, "--format", "json", "--comm", comm, "--comm", comm+"2", "--metrics", "127.0.0.1:0", "--interval", "100ms")
	every := startWatch(t, "--format", "json", "--events", "--comm", comm, "--comm", comm+"2")
	ranFrom := time.Now()
	for _, argv := range argvs {
		runOK(t, argv...)
	}
	ranTo := time.Now()
	every.stop(t, os.Interrupt)
	var everySum map[string]any
	okOpens := map[string]int{}
	for _, m := range jsonLines(t, every.stdout.Bytes()) {
		switch m["type"] {
		case "summary":
			everySum = m
		case "open":
			if m["ret"].(float64) >= 0 {
				okOpens[m["comm"].(string)]++
			}
		}
	}
	if everySum == nil || okOpens[comm] == 0 || okOpens[comm+"2"] == 0 {
		t.Fatalf("from the watch sent every event: summary %v, successful opens by comm %v", everySum, okOpens)
	}
	// Per comm, the opens not sent are known as each thread reports them
	// (with its next event sent, at its exec, at its exit): all of them by
	// the time the workload has exited, each under the comm of the image
	// that made it, not the one it exec'd.
	url := metricsURL(t, brief)
	for c, n := range okOpens {
		series := fmt.Sprintf(`once_opens_total{comm=%q,container="",namespace="",pod="",result="ok"} %d`, c, n)
		if body := scrapeUntil(t, url, series); !strings.Contains(body, series) {
			t.Errorf("metrics lack %q:\n%s", series, grepLines(body, comm))
		}
	}
	brief.stop(t, os.Interrupt)

	var findings []map[string]any
	var briefSum map[string]any
	for _, m := range jsonLines(t, brief.stdout.Bytes()) {
		switch m["type"] {
		case "finding":
			findings = append(findings, m)
		case "summary":
			briefSum = m
		}
	}
	got := findingKeys(t, findings, comm)
	t.Logf("findings:\n  %s", strings.Join(got, "\n  "))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("once watch findings differ from once run's\nwatch:\n  %s\nrun:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	// The expected ones, stated: both modes could be wrong together.
	for _, w := range []string{
		"dup " + files["A"] + " x3", // past the recent ones, then after an O_PATH open
		"dup " + files["B"] + " x2", // right after
		"dup " + files["C"] + " x2", // by two threads
		"dup " + files["A"] + " x2", // by an exec'd image, twice: once by each workload
		fmt.Sprintf("failed_open_probes x.cfg failed=2 found=%s", files["D3/x.cfg"]),
		"failed_open_probes y.cfg failed=2 found=<nil>",
	} {
		n := 0
		for _, g := range got {
			if strings.HasPrefix(g, w) {
				n++
			}
		}
		want := 1
		if w == "dup "+files["A"]+" x2" {
			want = 2
		}
		if n != want {
			t.Errorf("%d findings %q, want %d; got:\n  %s", n, w, want, strings.Join(got, "\n  "))
		}
	}
	for _, g := range got {
		// G: its first open was O_PATH, which no detector counts. The
		// exec'd image opened A once: a new image has no files yet.
		if strings.HasPrefix(g, "dup "+files["G"]) {
			t.Errorf("O_PATH open counted as a first open: %s", g)
		}
	}

	if briefSum == nil {
		t.Fatal("no summary")
	}
	differ := false
	for _, k := range []string{"opens", "failed_opens", "duplicate_opens", "events_lost"} {
		if briefSum[k] != everySum[k] {
			differ = true
			t.Errorf("summary %s: %v with first opens counted in the kernel, %v with every event sent", k, briefSum[k], everySum[k])
		}
	}
	if differ {
		// When the brief watch's counts moved, against when the
		// workloads ran: a count from outside that window is another
		// process's, one inside it the workloads' counted twice.
		t.Logf("workloads ran %s to %s", ranFrom.UTC().Format(time.RFC3339Nano), ranTo.UTC().Format(time.RFC3339Nano))
		var last string
		for _, m := range jsonLines(t, brief.stdout.Bytes()) {
			if m["type"] != "summary" {
				continue
			}
			now := fmt.Sprintf("events %v opens %v execs %v processes %v", m["events"], m["opens"], m["execs"], m["processes"])
			if now != last {
				t.Logf("brief watch at %v: %s", m["time"], now)
				last = now
			}
		}
	}
	if u, _ := briefSum["opens_unsent"].(float64); u < 34 {
		t.Errorf("opens_unsent %v: want at least the workload's 34 first opens that end no probe", briefSum["opens_unsent"])
	}
	if briefSum["events"].(float64) >= everySum["events"].(float64) {
		t.Errorf("brief watch received %v events, the one sent every event %v: nothing saved", briefSum["events"], everySum["events"])
	}
}

// TestWatchReportsUnsentWhileRunning: a process that only opens new files
// has them reach the per-comm counts while it runs (every 256), not only
// when it exits.
func TestWatchReportsUnsentWhileRunning(t *testing.T) {
	const comm = "oncelongrun"
	dir := t.TempDir()
	for i := 0; i < 300; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh := namedCopy(t, "/bin/sh", comm)
	w := startWatch(t, "--format", "json", "-o", filepath.Join(t.TempDir(), "out.jsonl"), "--comm", comm, "--metrics", "127.0.0.1:0", "--interval", "100ms")
	defer w.stop(t, os.Interrupt)
	// Each redirection opens a file; then the shell waits on its stdin.
	cmd := exec.Command(sh, "-c", `for f in "$0"/f*; do : < "$f"; done; read x`, dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	re := regexp.MustCompile(`once_opens_total\{comm="` + comm + `",container="",namespace="",pod="",result="ok"\} (\d+)`)
	url := metricsURL(t, w)
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) { // polling an HTTP endpoint, bounded by the deadline
		body = scrape(t, url)
		if m := re.FindStringSubmatch(body); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 256 {
				return
			}
		}
	}
	t.Errorf("after 300 new files opened, the running shell's opens are not counted:\n%s", grepLines(body, comm))
}

// TestWatchForkCopyUnsentKeepItsComm: a shell's forked child that opens a file
// for a redirection and then execs the command (`cmd <file`, `cmd
// >/dev/null`) made its first opens as a copy of the shell, which sent
// nothing before the exec: its unsent count must go out under the shell's
// comm, as an --events watch shows the opens, not the exec'd program's.
func TestWatchForkCopyUnsentKeepItsComm(t *testing.T) {
	const comm = "oncefcopy"
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// bash, not dash: dash vforks and makes a redirection's open in the
	// shell itself.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	sh := namedCopy(t, bash, comm)
	cat := namedCopy(t, "/bin/cat", comm+"2")
	brief := startWatch(t, "--format", "json", "-o", filepath.Join(t.TempDir(), "out.jsonl"), "--comm", comm, "--comm", comm+"2", "--metrics", "127.0.0.1:0", "--interval", "100ms")
	every := startWatch(t, "--format", "json", "--events", "--comm", comm, "--comm", comm+"2")
	// Each command a child of the shell: the redirection's open, then
	// the exec, with nothing sent in between.
	runOK(t, sh, "-c", `"$0" <"$1" >/dev/null; "$0" <"$1" >/dev/null; :`, cat, in)
	every.stop(t, os.Interrupt)
	okOpens := map[string]int{}
	for _, m := range jsonLines(t, every.stdout.Bytes()) {
		switch m["syscall"] {
		case "open", "openat", "openat2", "creat":
		default:
			continue // a lookup
		}
		if m["type"] == "open" && m["ret"].(float64) >= 0 {
			okOpens[m["comm"].(string)]++
		}
	}
	if okOpens[comm] == 0 || okOpens[comm+"2"] == 0 {
		t.Fatalf("the watch sent every event saw opens by comm %v", okOpens)
	}
	url := metricsURL(t, brief)
	for c, n := range okOpens {
		series := fmt.Sprintf(`once_opens_total{comm=%q,container="",namespace="",pod="",result="ok"} %d`, c, n)
		if body := scrapeUntil(t, url, series); !strings.Contains(body, series) {
			t.Errorf("metrics lack %q:\n%s", series, grepLines(body, comm))
		}
	}
	brief.stop(t, os.Interrupt)
}

// TestWatchThreadsOpeningOneNewFile: four threads open each of 300 new
// files at the same moment, so that the image's table of files is raced
// for one file at a time, the moment its small table fills included.
// Exactly one of the four opens is the file's first: every file is a
// duplicate opened 4 times.
func TestWatchThreadsOpeningOneNewFile(t *testing.T) {
	const comm = "oncerace"
	dir := t.TempDir()
	opener := namedCopy(t, testprog.Build(t, testprog.Opener), comm)
	argv := []string{opener}
	for i := 0; i < 300; i++ {
		p := filepath.Join(dir, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		argv = append(argv, "threads:4:open:"+p)
	}
	w := startWatch(t, "--format", "json", "--comm", comm)
	const runs = 5
	for i := 0; i < runs; i++ {
		runOK(t, argv...)
	}
	w.stop(t, os.Interrupt)
	counts := map[float64]int{}
	var sum map[string]any
	for _, m := range jsonLines(t, w.stdout.Bytes()) {
		switch {
		case m["type"] == "summary":
			sum = m
		case m["kind"] == "duplicate_open" && strings.HasPrefix(m["path"].(string), dir+"/"):
			counts[m["count"].(float64)]++
		}
	}
	if len(counts) != 1 || counts[4] != runs*300 {
		t.Errorf("duplicate findings of the 300 files by count %v, want %d of count 4", counts, runs*300)
	}
	if sum == nil {
		t.Fatal("no summary")
	}
	if sum["files_capped"].(float64) != 0 || sum["events_lost"].(float64) != 0 {
		t.Errorf("files_capped %v, events_lost %v: want 0 and 0", sum["files_capped"], sum["events_lost"])
	}
}
