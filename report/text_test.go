package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/trace"
)

func TestTextEmptyResult(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, &trace.Result{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "WARNING") {
		t.Errorf("warning without lost events:\n%s", out)
	}
	// Only the counters that are not zero: none here.
	const summary = "once: 0 processes, 0 opens (0 failed), 0 execs (0 failed), 0 lookups (0 failed), 0 findings; no events lost\n"
	if !strings.HasSuffix(out, "\n"+summary) {
		t.Errorf("output does not end with the zero summary line:\n%s", out)
	}
	if !strings.Contains(out, "findings: none") {
		t.Errorf("no 'findings: none':\n%s", out)
	}
}

// TestSummaryLineAgreement: each count of the summary line agrees with
// its noun, the notes' included: "1 process", not "1 processes".
func TestSummaryLineAgreement(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    trace.Result
		want string
	}{
		{"ones", trace.Result{Processes: []*trace.Process{{Pid: 1}}, Opens: 1, Execs: 1, Lookups: 1, Findings: []trace.Finding{{}},
			Counters: trace.Counters{LookupsTallied: 1, PathsInternal: 1, DecodeErrors: 1}},
			"once: 1 process, 1 open (0 failed), 1 exec (0 failed), 1 lookup (0 failed), 1 finding; 1 event lost (decode 1); 1 internal path, 1 repeat lookup counted in the kernel"},
		{"twos", trace.Result{Processes: []*trace.Process{{Pid: 1}, {Pid: 2}}, Opens: 2, FailedOpens: 1, Execs: 2, Lookups: 2,
			Counters: trace.Counters{LookupsTallied: 2, ReaderStalls: 2}},
			"once: 2 processes, 2 opens (1 failed), 2 execs (0 failed), 2 lookups (0 failed), 0 findings; no events lost; 2 repeat lookups counted in the kernel, 2 reader stalls"},
	} {
		if got := SummaryLine(&tc.r); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// Every note has its singular, or a new one would read "1 ... s".
	for _, s := range trace.Group(trace.CounterNote) {
		if noteOne[s.JSON] == "" {
			t.Errorf("note %s (%q) has no singular label in noteOne", s.JSON, s.Label)
		}
	}
}

func TestTextWarningOnlyWhenLost(t *testing.T) {
	for _, tc := range []struct {
		c    trace.Counters
		warn string
	}{
		{trace.Counters{FnameTruncated: 5, PathUnresolved: 1, EventsReceived: 9}, ""},
		{trace.Counters{DroppedEvents: 2}, "WARNING: 2 events were lost; counts are lower bounds, and a finding may be wrong (a lost success makes a search look failed)\n"},
		{trace.Counters{EnterMapFull: 1, MissedEnter: 1, DecodeErrors: 1}, "WARNING: 3 events were lost; counts are lower bounds, and a finding may be wrong (a lost success makes a search look failed)\n"},
		{trace.Counters{DroppedEvents: 7, DroppedByRing: []uint64{5, 0, 2, 0}, DecodeErrors: 1},
			"WARNING: 8 events were lost (ring buffers full: 5 in ring 0, 2 in ring 2 of 4); counts are lower bounds, and a finding may be wrong (a lost success makes a search look failed)\n"},
		{trace.Counters{DecodeErrors: 1, DroppedByRing: []uint64{0, 0}}, "WARNING: 1 event was lost; counts are lower bounds, and a finding may be wrong (a lost success makes a search look failed)\n"},
	} {
		var buf bytes.Buffer
		if err := Text(&buf, &trace.Result{Counters: tc.c}); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(buf.String(), "\n")
		beforeSummary := lines[len(lines)-3] // last element is "" after the final newline
		if tc.warn == "" && strings.Contains(buf.String(), "WARNING") {
			t.Errorf("%+v: unexpected warning", tc.c)
		}
		if tc.warn != "" && beforeSummary != tc.warn {
			t.Errorf("%+v: line before summary = %q, want %q", tc.c, beforeSummary, tc.warn)
		}
	}
}

func TestProcessLineQuoting(t *testing.T) {
	p := &trace.Process{
		Pid: 7, PPid: 1, Comm: "x) ppid 1 (init", ParentComm: "(sd-pam)",
		Exe: "/opt/my app/bin", Argv: []string{"a b", "", `say "hi"`, "[argv", `back\slash`},
	}
	f := &trace.Finding{Pid: 7}
	got := processLine(&processGroup{proc: p, findings: []*trace.Finding{f}})
	want := `pid 7 ("x) ppid 1 (init") ppid 1 ("(sd-pam)") exe "/opt/my app/bin" argv: "a b" "" "say \"hi\"" "[argv" back\\slash`
	if got != want {
		t.Errorf("processLine:\n got %s\nwant %s", got, want)
	}
	// A forked copy has no argv; a process missing from Result.Processes
	// is still shown from the finding.
	p.Argv = nil
	if got := processLine(&processGroup{proc: p, findings: []*trace.Finding{f}}); !strings.HasSuffix(got, "argv: [none: forked, no exec]") {
		t.Errorf("forked copy: %s", got)
	}
	f = &trace.Finding{Pid: 9, PPid: 8, Comm: "sh", ParentComm: "make"}
	if got, want := processLine(&processGroup{findings: []*trace.Finding{f}}), "pid 9 (sh) ppid 8 (make) exe [unknown] argv: [unknown]"; got != want {
		t.Errorf("unknown process: got %q, want %q", got, want)
	}
}

func TestTextUnknownKind(t *testing.T) {
	r := &trace.Result{Findings: []trace.Finding{
		{Kind: "new_kind\x1b", Pid: 1, ChainDetail: trace.ChainDetail{Target: "t", Failed: 1, Attempts: []trace.Attempt{{Path: "/x", Errno: 2}}}},
	}}
	var buf bytes.Buffer
	if err := TextDetails(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "  new_kind\\x1b:\n") || !strings.Contains(buf.String(), "ENOENT") {
		t.Errorf("unknown kind not rendered:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "→ nothing specific is known of this kind: 1 failed per finding × 1 finding, 0ns\n") {
		t.Errorf("unknown kind's suggestion does not say nothing is known:\n%s", buf.String())
	}
}

func TestCallsSummary(t *testing.T) {
	calls := []trace.OpenCall{
		{Syscall: trace.SysOpenat, Flags: unix.O_CLOEXEC},
		{Syscall: trace.SysOpen, Flags: 0},
		{Syscall: trace.SysOpenat, Flags: unix.O_CLOEXEC},
	}
	if got, want := callsSummary(calls), "openat O_RDONLY|O_CLOEXEC x2, open O_RDONLY x1"; got != want {
		t.Errorf("callsSummary = %q, want %q", got, want)
	}
}

// TestTextLongSubjectCut: a very long path does not widen the findings
// table to its length: its SUBJECT is cut in the middle with …, keeping
// its start and its file name, a line under the table says so, and
// --details and JSON keep it whole.
func TestTextLongSubjectCut(t *testing.T) {
	long := "/tmp" + strings.Repeat("/deep", 760) + "/config.json" // 3.8 KB
	p := &trace.Process{Key: trace.ImageKey{Pid: 7, Start: 1, ExecID: 1}, Pid: 7, Comm: "app", Argv: []string{"app"}}
	short := "/etc/hosts"
	r := &trace.Result{Command: []string{"app"}, Processes: []*trace.Process{p}, Opens: 6,
		Findings: []trace.Finding{
			{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: 7, Comm: "app", Proc: p, WastedNs: 2000,
				FileDetail: trace.FileDetail{Path: long, Paths: []string{long}, Count: 3}},
			{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: 7, Comm: "app", Proc: p, WastedNs: 1000,
				FileDetail: trace.FileDetail{Path: short, Paths: []string{short}, Count: 3}},
		}}
	var buf bytes.Buffer
	if err := Text(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	var table []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  KIND ") || strings.HasPrefix(l, "  duplicate_open ") {
			table = append(table, l)
		}
	}
	if len(table) != 3 {
		t.Fatalf("findings table rows %q in\n%s", table, out)
	}
	for _, l := range table {
		if w := Width(l); w > 160 {
			t.Errorf("a findings table line %d columns wide: %.200q", w, l)
		}
	}
	if !strings.Contains(table[1], "/tmp/deep/") || !strings.Contains(table[1], "…") || !strings.Contains(table[1], "/deep/config.json ") {
		t.Errorf("the long subject is not cut in its middle with …, its start and file name kept: %.300q", table[1])
	}
	if !strings.Contains(table[2], " /etc/hosts ") {
		t.Errorf("a short subject is cut: %q", table[2])
	}
	if !strings.Contains(out, "is cut in the middle with …") {
		t.Errorf("no line says a subject was cut:\n%.2000s", out)
	}
	for name, render := range map[string]func(*bytes.Buffer, *trace.Result) error{
		"--details": func(b *bytes.Buffer, r *trace.Result) error { return TextDetails(b, r) },
		"json":      func(b *bytes.Buffer, r *trace.Result) error { return JSON(b, r) },
	} {
		buf.Reset()
		if err := render(&buf, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), long) {
			t.Errorf("%s does not keep the long subject whole", name)
		}
	}
}

// A file whose spellings were cut says so: the count is a lower bound.
func TestDupTableSaysSpellingsCut(t *testing.T) {
	f := &trace.Finding{Kind: trace.KindDuplicateOpen, FileDetail: trace.FileDetail{
		Path: "/t/a", Paths: []string{"/t/a", "/t/b"}, Count: 3, PathsCapped: true}}
	var b bytes.Buffer
	if err := dupTable([]*trace.Finding{f}).render(&b, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " 2+ ") || !strings.Contains(b.String(), "not kept") {
		t.Errorf("table does not say the spellings were cut:\n%s", b.String())
	}
	f.PathsCapped = false
	b.Reset()
	if err := dupTable([]*trace.Finding{f}).render(&b, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "2+") || strings.Contains(b.String(), "not kept") {
		t.Errorf("table says the spellings were cut:\n%s", b.String())
	}
}

// A duplicate the code named by a symlink (/etc/os-release, resolved to
// /usr/lib/os-release) or by a relative name is shown by the name it
// passed too: grepping the code for the resolved path finds nothing.
// The ranked row's suggestion, --details' table and Markdown say it.
func TestDuplicateShowsNamePassed(t *testing.T) {
	p := trace.Process{Key: trace.ImageKey{Pid: 7, ExecID: 1}, Pid: 7, Comm: "python3", Exe: "/usr/bin/python3"}
	call := func(fname string) trace.OpenCall {
		return trace.OpenCall{Syscall: trace.SysOpenat, Tid: 7, Fname: fname, Dirfd: -100, Flags: unix.O_RDONLY, Ret: 3, Path: "/usr/lib/os-release", Ns: 1000}
	}
	f := trace.Finding{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: 7, Comm: "python3", Proc: &p, WastedNs: 1000}
	f.Path, f.Paths, f.Count = "/usr/lib/os-release", []string{"/usr/lib/os-release"}, 4
	f.Calls = []trace.OpenCall{call("/etc/os-release"), call("os-release"), call("/usr/lib/os-release"), call("/usr/lib//os-release")}
	f.Kinds = []trace.CallKind{{Syscall: trace.SysOpenat, Flags: unix.O_RDONLY, Count: 4}}
	r := &trace.Result{Processes: []*trace.Process{&p}, Findings: []trace.Finding{f}}
	for name, render := range map[string]func(io.Writer, *trace.Result) error{"text": Text, "details": TextDetails, "markdown": Markdown} {
		var b bytes.Buffer
		if err := render(&b, r); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"/etc/os-release", "os-release"} {
			if !strings.Contains(strings.ReplaceAll(out, "/usr/lib/os-release", ""), want) {
				t.Errorf("%s does not name %q, as the code passed it:\n%s", name, want, out)
			}
		}
	}
	var b bytes.Buffer
	if err := dupTable([]*trace.Finding{&r.Findings[0]}).render(&b, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  as passed: /etc/os-release") || !strings.Contains(b.String(), "  as passed: os-release") ||
		strings.Contains(b.String(), "as passed: /usr/lib/") {
		t.Errorf("table does not show the names passed, the resolved one apart:\n%s", b.String())
	}
	if got := suggest(groupAcross(r)[0], nil, quoteArg); !strings.HasPrefix(got, `the calls name it "/etc/os-release" and "os-release": `) {
		t.Errorf("suggestion %q does not begin with the names passed", got)
	}
}

// --details shows each process with findings, not only those behind the
// top groups: a small exec chain's process, ranked past them, is there.
// Past detailProcesses, the processes left out are counted, with their
// findings and time.
func TestDetailsShowsEachProcess(t *testing.T) {
	mk := func(n int) *trace.Result {
		r := &trace.Result{}
		for i := range n {
			p := &trace.Process{Key: trace.ImageKey{Pid: uint32(i + 2)}, Pid: uint32(i + 2), Comm: fmt.Sprintf("prog%d", i)}
			r.Processes = append(r.Processes, p)
			f := trace.Finding{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: p.Pid, Comm: p.Comm, Proc: p, WastedNs: uint64(1000 * (n - i))}
			f.Path, f.Count = fmt.Sprintf("/cache/%d", i), 2
			r.Findings = append(r.Findings, f)
		}
		return r
	}
	r := mk(25)
	var b strings.Builder
	if err := TextDetails(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Processes {
		if !strings.Contains(b.String(), fmt.Sprintf("\npid %d (%s)", p.Pid, p.Comm)) {
			t.Errorf("--details has no section of pid %d, which has findings:\n%s", p.Pid, b.String())
		}
	}
	if strings.Contains(b.String(), "left out") {
		t.Errorf("--details says processes were left out:\n%s", b.String())
	}
	r = mk(detailProcesses + 3)
	b.Reset()
	if err := TextDetails(&b, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\npid "); n != detailProcesses {
		t.Errorf("--details has %d sections, want %d", n, detailProcesses)
	}
	if want := "3 more processes with findings (3 findings, 6µs wasted) left out: --format json lists every one"; !strings.Contains(b.String(), want) {
		t.Errorf("--details does not say %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("--details shows the findings of %d of the %d processes with findings", detailProcesses, detailProcesses+3); !strings.Contains(b.String(), want) {
		t.Errorf("the hint does not say %q:\n%s", want, b.String())
	}
}
