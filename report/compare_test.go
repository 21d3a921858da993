package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/compare"
	"github.com/oncetool/once/trace"
)

// The comparisons behind the compare golden files.
var compareCases = []struct {
	name  string
	build func() *compare.Result
}{
	{"cp", cpComparison},
	{"launcher", launcherComparison},
	{"untraced", untracedComparison},
	{"noisy", noisyComparison},
	{"stacks", stacksComparison},
}

// stacksComparison is cpComparison with the before side traced with
// --stacks: its findings' call sites are shown.
func stacksComparison() *compare.Result {
	r := cpComparison()
	r.A.Trace = stackResult()
	return r
}

var compareFormats = []struct {
	ext    string
	render func(io.Writer, *compare.Result) error
}{
	{"text", CompareText},
	{"json", CompareJSON},
	{"md", CompareMarkdown},
}

func ms(v float64) time.Duration { return time.Duration(v * 1e6) }

// fillStats computes the Stats of both sides and the ratios from the
// samples with compare's own formulas, which give the same bits on every
// architecture.
func fillStats(r *compare.Result) { compare.Compute(r) }

// cpuFrom sets both sides' CPU source.
func cpuFrom(r *compare.Result, src compare.CPUSource) {
	for _, s := range []*compare.Side{&r.A, &r.B} {
		s.CPUSource, s.CPUExact = src, src.Exact()
	}
}

// samples builds timed runs from parallel lists of milliseconds; the CPU
// time of each is its user plus its sys time.
func samples(wall, user, sys []float64, exit ...int) []compare.Sample {
	out := make([]compare.Sample, len(wall))
	for i := range wall {
		out[i] = compare.Sample{Wall: ms(wall[i]), User: ms(user[i]), Sys: ms(sys[i]), CPU: ms(user[i]) + ms(sys[i])}
		if i < len(exit) {
			out[i].ExitCode = exit[i]
		}
	}
	return out
}

// fileOpens is one file opened n times by openat with flags, each call
// taking ns.
func fileOpens(ino uint64, path string, flags uint64, n int, ns uint64) *trace.FileOpens {
	f := &trace.FileOpens{Dev: unix.Mkdev(8, 1), Ino: ino, Path: path, Paths: []string{path}, Count: n}
	for i := 0; i < n; i++ {
		f.Calls = append(f.Calls, trace.OpenCall{Syscall: trace.SysOpenat, Tid: 1, Fname: path, Dirfd: atFDCWD,
			Flags: flags, Ret: int32(3 + i), Ns: ns, Path: path})
	}
	withKinds([]*trace.FileOpens{f})
	return f
}

// cpTrace is a small traced cp -r of three files: each source opened
// perSrc times, each destination once, plus the C library.
func cpTrace(pid uint32, comm string, perSrc int) *trace.Result {
	p := &trace.Process{Key: trace.ImageKey{Pid: pid, Start: 1e9, ExecID: 1}, Pid: pid, PPid: 1, Comm: comm,
		Exe: "/usr/local/bin/" + comm, Argv: []string{comm, "-r", "src", "dst"}, Exited: true, Threads: 1}
	p.Opens = append(p.Opens, fileOpens(10, "/usr/lib/libc.so.6", unix.O_RDONLY|unix.O_CLOEXEC, 1, 3_000))
	r := &trace.Result{Command: p.Argv, Duration: 200 * time.Millisecond, Processes: []*trace.Process{p},
		Counters: trace.Counters{EventsSent: 20, EventsReceived: 20}}
	for i, name := range []string{"f1", "f2", "f3"} {
		src := fileOpens(uint64(101+i), "/tmp/once-compare-1/src/"+name, unix.O_RDONLY|unix.O_CLOEXEC, perSrc, 2_000)
		p.Opens = append(p.Opens, src)
		if perSrc > 1 {
			r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindDuplicateOpen, Key: p.Key, Pid: pid,
				PPid: 1, Comm: comm,
				WastedNs: uint64(perSrc-1) * 2_000, FileDetail: trace.FileDetail{Path: src.Path, Paths: src.Paths, Dev: src.Dev, Ino: src.Ino, Count: src.Count, Calls: src.Calls}})
		}
	}
	for i, name := range []string{"f1", "f2", "f3"} {
		p.Opens = append(p.Opens, fileOpens(uint64(201+i), "/tmp/once-compare-1/dst/"+name,
			unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 1, 9_000))
	}
	r.Opens = 1 + 3*perSrc + 3
	return r
}

// wasteOf is a side's totals per kind, as compare.summarise makes them:
// every kind of trace.Kinds in its order, those given filled in.
func wasteOf(ts ...trace.KindTotal) []trace.KindTotal {
	out := make([]trace.KindTotal, len(trace.Kinds))
	for i, ki := range trace.Kinds {
		out[i].Kind = ki.Kind
		for _, t := range ts {
			if t.Kind == ki.Kind {
				out[i] = t
			}
		}
	}
	return out
}

func cpComparison() *compare.Result {
	dir := "/tmp/once-compare-1"
	wr := uint64(unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC)
	r := &compare.Result{
		Workload: "copying 3 files of 4096 bytes",
		Runs:     3,
		Warmup:   1,
		A: compare.Side{
			Label:   "before",
			Command: []string{"/usr/local/bin/refcp", "-r", dir + "/src", dir + "/dst"},
			Trace:   cpTrace(4100, "refcp", 3),
			Samples: samples([]float64{185.0, 200.0, 214.7}, []float64{18.0, 17.9, 18.1}, []float64{170.2, 177.3, 184.4}),
			Opens:   13, DuplicateOpens: 6, DuplicateFiles: 3, WastedOpenNs: 12_000,
			Waste: wasteOf(trace.KindTotal{Kind: trace.KindDuplicateOpen, Findings: 3, Avoidable: 6, WastedNs: 12_000}),
			Patterns: []compare.OpenPattern{
				{Role: "src", Syscall: "openat", Flags: unix.O_RDONLY, PerFile: 3, Files: 3},
				{Role: "dst", Syscall: "openat", Flags: wr, PerFile: 1, Files: 3},
			},
			PerProcessOpens: []compare.ProcessOpens{{Pid: 4100, Comm: "refcp", Opens: 13, Files: 7, DupFiles: 3}},
		},
		B: compare.Side{
			Label:   "after",
			Command: []string{"./target/release/cp", "-r", dir + "/src", dir + "/dst"},
			Trace:   cpTrace(4200, "cp", 1),
			Samples: samples([]float64{150.0, 171.0, 194.1}, []float64{18.2, 18.0, 18.1}, []float64{140.1, 146.9, 153.7}),
			Opens:   7,
			Waste:   wasteOf(),
			Patterns: []compare.OpenPattern{
				{Role: "src", Syscall: "openat", Flags: unix.O_RDONLY, PerFile: 1, Files: 3},
				{Role: "dst", Syscall: "openat", Flags: wr, PerFile: 1, Files: 3},
			},
			PerProcessOpens: []compare.ProcessOpens{{Pid: 4200, Comm: "cp", Opens: 7, Files: 7}},
		},
		Machine:   compare.Machine{Kernel: "Linux 6.18.0 x86_64", CPUs: 2, CPU: "AMD EPYC 7B13"},
		Reproduce: []string{"once compare --ref cp --files 3 --size 4096 --runs 3 -- ./target/release/cp -r {src} {dst}"},
		Plot:      "cp.svg",
	}
	cpuFrom(r, compare.CPUCgroup2)
	fillStats(r)
	return r
}

// launcherTrace is a launcher that finds its target in PATH entry
// len(misses)+1, each miss an ENOENT execve taking the given ns; the
// launcher also reads /etc/ld.so.cache dupCache times.
func launcherTrace(pid uint32, misses []uint64, dupCache int, lost uint64) *trace.Result {
	l := &trace.Process{Key: trace.ImageKey{Pid: pid, Start: 2e9, ExecID: 1}, Pid: pid, PPid: 1, Comm: "launcher",
		Exe: "/usr/local/bin/launcher", Argv: []string{"launcher", "oncetarget"}, Threads: 1}
	l.Opens = []*trace.FileOpens{fileOpens(5, "/etc/ld.so.cache", unix.O_RDONLY|unix.O_CLOEXEC, dupCache, 1_500)}
	r := &trace.Result{Command: l.Argv, Duration: 2 * time.Millisecond, Counters: trace.Counters{DroppedEvents: lost}}
	var attempts []trace.Attempt
	var wasted uint64
	for i, ns := range misses {
		path := "/tmp/once-compare-2/d" + string(rune('1'+i)) + "/oncetarget"
		l.Execs = append(l.Execs, trace.ExecAttempt{Syscall: trace.SysExecve, Tid: pid, Filename: path,
			Argv: []string{"oncetarget"}, Dirfd: atFDCWD, Errno: int32(unix.ENOENT), Ns: ns})
		attempts = append(attempts, trace.Attempt{Path: path, Errno: int32(unix.ENOENT), Ns: ns})
		wasted += ns
	}
	found := "/tmp/once-compare-2/d7/oncetarget"
	l.Execs = append(l.Execs, trace.ExecAttempt{Syscall: trace.SysExecve, Tid: pid, Filename: found,
		Argv: []string{"oncetarget"}, Dirfd: atFDCWD, Ns: 80_000})
	attempts = append(attempts, trace.Attempt{Path: found, Ns: 80_000})
	t := &trace.Process{Key: trace.ImageKey{Pid: pid, Start: 2e9, ExecID: 2}, Pid: pid, PPid: 1, Comm: "oncetarget",
		Exe: found, Argv: []string{"oncetarget"}, Threads: 1, Exited: true}
	r.Processes = []*trace.Process{l, t}
	if len(misses) > 0 {
		r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindFailedExecProbes, Key: l.Key, Pid: pid,
			PPid: 1, Comm: l.Comm, WastedNs: wasted, ChainDetail: trace.ChainDetail{Target: "oncetarget", Attempts: attempts, Failed: len(misses), Found: &found}})
	}
	if dupCache > 1 {
		f := l.Opens[0]
		r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindDuplicateOpen, Key: l.Key, Pid: pid, PPid: 1,
			Comm:     l.Comm,
			WastedNs: uint64(dupCache-1) * 1_500, FileDetail: trace.FileDetail{Path: f.Path, Paths: f.Paths, Dev: f.Dev, Ino: f.Ino, Count: f.Count, Calls: f.Calls}})
	}
	r.Opens, r.Execs, r.FailedExecs = dupCache, len(misses)+1, len(misses)
	return r
}

func launcherComparison() *compare.Result {
	misses := []uint64{5_000, 5_500, 6_000, 6_000, 6_200, 6_500}
	r := &compare.Result{
		Workload: "launching a program found in entry 7 of PATH",
		Runs:     4,
		Warmup:   0,
		A: compare.Side{
			Label:   "before",
			Command: []string{"/usr/local/bin/launcher", "oncetarget"},
			Trace:   launcherTrace(5000, misses, 2, 2),
			Samples: samples([]float64{1.20, 1.31, 1.25, 1.40}, []float64{0.21, 0.20, 0.22, 0.21},
				[]float64{0.60, 0.62, 0.66, 0.61}, 0, 0, 1, 0),
			Opens: 2, DuplicateOpens: 1, DuplicateFiles: 1, WastedOpenNs: 1_500, FailedExecs: 6, WastedExecNs: 35_200,
			// The launcher also looks its target up with stat in each
			// PATH entry first, and stats its config three times.
			Lookups: 10, FailedLookups: 6,
			Waste: wasteOf(trace.KindTotal{Kind: trace.KindDuplicateOpen, Findings: 1, Avoidable: 1, WastedNs: 1_500},
				trace.KindTotal{Kind: trace.KindFailedExecProbes, Findings: 1, Avoidable: 6, WastedNs: 35_200},
				trace.KindTotal{Kind: trace.KindFailedStatProbes, Findings: 1, Avoidable: 6, WastedNs: 9_000},
				trace.KindTotal{Kind: trace.KindDuplicateStat, Findings: 1, Avoidable: 2, WastedNs: 1_200}),
			Patterns: []compare.OpenPattern{
				{Role: "/etc/ld.so.cache", Syscall: "openat", Flags: unix.O_RDONLY, PerFile: 2, Files: 1},
			},
			PerProcessOpens: []compare.ProcessOpens{
				{Pid: 5000, Comm: "launcher", Opens: 2, Files: 1, DupFiles: 1, ExecProbe: 6},
				{Pid: 5000, Comm: "oncetarget"},
			},
		},
		B: compare.Side{
			Label:   "after",
			Command: []string{"/usr/local/bin/launcher", "/tmp/once-compare-2/d7/oncetarget"},
			Trace:   launcherTrace(5100, nil, 1, 0),
			Samples: samples([]float64{1.10, 1.12, 1.18, 1.09}, []float64{0.20, 0.21, 0.20, 0.19},
				[]float64{0.55, 0.54, 0.57, 0.52}),
			Opens:   1,
			Lookups: 1,
			Waste:   wasteOf(),
			PerProcessOpens: []compare.ProcessOpens{
				{Pid: 5100, Comm: "launcher", Opens: 1, Files: 1},
				{Pid: 5100, Comm: "oncetarget"},
			},
		},
		Machine:   compare.Machine{Kernel: "Linux 6.18.0 aarch64", CPUs: 1, CPU: ""},
		Reproduce: []string{"once compare --ref launch --path-dirs 7 --runs 4 -- /usr/local/bin/launcher {target}"},
	}
	cpuFrom(r, compare.CPUCgroup1)
	fillStats(r)
	return r
}

// untracedComparison is a --no-trace comparison without a workload name
// or reproduce commands, whose baseline has no user time (no ratio).
func untracedComparison() *compare.Result {
	r := &compare.Result{
		Runs:   2,
		Warmup: 2,
		A: compare.Side{Label: "before", Command: []string{"sh", "-c", "true"},
			Samples: samples([]float64{0.9, 1.1}, []float64{0, 0}, []float64{0.4, 0.5})},
		B: compare.Side{Label: "after", Command: []string{"true"},
			Samples: samples([]float64{0.45, 0.55}, []float64{0, 0.001}, []float64{0.2, 0.25})},
		Machine: compare.Machine{CPUs: 8, CPU: "Intel(R) Xeon(R) CPU @ 2.20GHz"},
	}
	cpuFrom(r, compare.CPURusage)
	fillStats(r)
	return r
}

// noisyComparison has a slow first run and outliers, and sides whose CPU
// times come from different sources, one of them not exact.
func noisyComparison() *compare.Result {
	r := &compare.Result{
		Workload: "running the command",
		Runs:     8,
		Warmup:   0,
		A: compare.Side{Label: "before", Command: []string{"make", "-j4"},
			Samples: samples([]float64{95, 50, 51, 49, 50, 52, 48, 50}, []float64{20, 20, 24, 20, 20, 16, 20, 20},
				[]float64{28, 28, 24, 28, 28, 32, 28, 28})},
		B: compare.Side{Label: "after", Command: []string{"make", "-j8"},
			Samples: samples([]float64{40, 41, 39, 40, 90, 40, 41, 39}, []float64{20, 20, 20, 20, 20, 20, 20, 20},
				[]float64{30, 30, 30, 30, 30, 30, 30, 30})},
		Machine: compare.Machine{Kernel: "Linux 6.18.0 x86_64", CPUs: 4},
	}
	r.A.CPUSource, r.A.CPUExact = compare.CPUCgroup2, true
	r.B.CPUSource = compare.CPURusage
	fillStats(r)
	return r
}

func TestCompareGolden(t *testing.T) {
	for _, c := range compareCases {
		for _, f := range compareFormats {
			name := "compare." + c.name + "." + f.ext + ".golden"
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := f.render(&buf, c.build()); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, name, buf.Bytes())
				if f.ext != "json" {
					if i := badControl(buf.Bytes()); i >= 0 {
						t.Errorf("%s: raw control byte 0x%02x at offset %d", name, buf.Bytes()[i], i)
					}
				}
			})
		}
	}
}

func TestCompareNil(t *testing.T) {
	for _, f := range compareFormats {
		if err := f.render(io.Discard, nil); err == nil {
			t.Errorf("%s: no error for a nil result", f.ext)
		}
	}
}

// TestCompareJSONContract checks that every documented key is present
// with its JSON type, that nothing else is, and the values of a few.
func TestCompareJSONContract(t *testing.T) {
	stats := map[string]string{"n": "number", "min": "number", "median": "number", "mean": "number", "stddev": "number",
		"max": "number", "outliers": "number", "slow_first_run": "bool"}
	ratio := map[string]string{"mean": "number", "spread": "number", "median": "number", "factor": "number",
		"factor_stddev": "number", "speed": "string", "median_factor": "number", "median_speed": "string", "summary": "string"}
	side := map[string]string{
		"command": "array", "wall_ns": "object", "user_ns": "object", "sys_ns": "object", "failed_runs": "number",
		"opens": "number", "failed_opens": "number", "duplicate_opens": "number", "duplicate_files": "number", "failed_exec_probes": "number",
		"wasted_exec_ns": "number", "wasted_open_ns": "number", "patterns": "array", "processes": "array",
		"events_lost": "number|null", "samples": "array",
		"cpu_ns": "object", "cpu_source": "string", "cpu_exact": "bool", "user_sys_exact": "bool",
		"lookups": "number", "failed_lookups": "number", "waste_by_kind": "array",
	}
	kindTotal := map[string]string{"kind": "string", "findings": "number", "avoidable": "number", "wasted_ns": "number"}
	pattern := map[string]string{"role": "string", "syscall": "string", "flags": "number", "flags_text": "string",
		"per_file": "number", "files": "number"}
	process := map[string]string{"pid": "number", "comm": "string", "opens": "number", "files": "number",
		"dup_files": "number", "failed_execs": "number"}
	sample := map[string]string{"wall_ns": "number", "user_ns": "number", "sys_ns": "number", "exit_code": "number", "cpu_ns": "number"}
	top := map[string]string{"schema_version": "number", "workload": "string", "runs": "number", "warmup": "number",
		"before": "object", "after": "object", "ratio": "object", "machine": "object", "reproduce": "array",
		"plot": "string", "outlier_mads": "number", "warnings": "array"}

	// Every key is a row of a table in SCHEMA.md's compare section.
	schema, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(schema), "# once compare JSON report")
	if !ok {
		t.Fatal("SCHEMA.md has no compare section")
	}
	for _, m := range []map[string]string{stats, ratio, side, pattern, process, sample, top} {
		for k := range m {
			if !strings.Contains(section, "\n| `"+k+"` |") {
				t.Errorf("key %q is not documented in SCHEMA.md's compare section", k)
			}
		}
	}

	for _, c := range compareCases {
		var buf bytes.Buffer
		if err := CompareJSON(&buf, c.build()); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(buf.Bytes()) || !bytes.HasSuffix(buf.Bytes(), []byte("}\n")) {
			t.Fatalf("%s: invalid JSON:\n%s", c.name, buf.Bytes())
		}
		var doc map[string]any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		checkKeys(t, c.name, doc, top)
		if doc["schema_version"] != float64(CompareSchemaVersion) {
			t.Errorf("%s: schema_version = %v", c.name, doc["schema_version"])
		}
		for _, name := range []string{"before", "after"} {
			s := doc[name].(map[string]any)
			where := c.name + "." + name
			checkKeys(t, where, s, side)
			for _, k := range []string{"wall_ns", "user_ns", "sys_ns", "cpu_ns"} {
				checkKeys(t, where+"."+k, s[k].(map[string]any), stats)
			}
			for _, k := range s["waste_by_kind"].([]any) {
				checkKeys(t, where+".waste_by_kind", k.(map[string]any), kindTotal)
			}
			for _, p := range s["patterns"].([]any) {
				checkKeys(t, where+".patterns", p.(map[string]any), pattern)
			}
			for _, p := range s["processes"].([]any) {
				checkKeys(t, where+".processes", p.(map[string]any), process)
			}
			for _, p := range s["samples"].([]any) {
				checkKeys(t, where+".samples", p.(map[string]any), sample)
			}
			if traced := c.name != "untraced" && c.name != "noisy"; traced != (s["events_lost"] != nil) {
				t.Errorf("%s: events_lost = %v", where, s["events_lost"])
			}
		}
		r := doc["ratio"].(map[string]any)
		checkKeys(t, c.name+".ratio", r, map[string]string{"wall": "object", "user": "object|null", "sys": "object|null",
			"cpu": "object|null"})
		for _, k := range []string{"wall", "user", "sys", "cpu"} {
			if q, ok := r[k].(map[string]any); ok {
				checkKeys(t, c.name+".ratio."+k, q, ratio)
			}
		}
		checkKeys(t, c.name+".machine", doc["machine"].(map[string]any),
			map[string]string{"kernel": "string", "cpus": "number", "cpu": "string"})
	}

	// Values: the cp case.
	var doc struct {
		Before struct {
			WallNs   struct{ Mean float64 } `json:"wall_ns"`
			Patterns []struct {
				Role      string `json:"role"`
				FlagsText string `json:"flags_text"`
				PerFile   int    `json:"per_file"`
				Files     int    `json:"files"`
			} `json:"patterns"`
			DuplicateOpens int     `json:"duplicate_opens"`
			EventsLost     *uint64 `json:"events_lost"`
		} `json:"before"`
		Ratio struct{ Wall struct{ Mean float64 } } `json:"ratio"`
	}
	var buf bytes.Buffer
	r := cpComparison()
	if err := CompareJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Before.WallNs.Mean != r.A.Wall.Mean || doc.Ratio.Wall.Mean != r.Wall.Mean || doc.Before.DuplicateOpens != 6 ||
		doc.Before.EventsLost == nil || *doc.Before.EventsLost != 0 {
		t.Errorf("cp values: %+v", doc)
	}
	if p := doc.Before.Patterns; len(p) != 2 || p[0].Role != "src" || p[0].FlagsText != "O_RDONLY" || p[0].PerFile != 3 || p[0].Files != 3 {
		t.Errorf("cp patterns: %+v", p)
	}
}

// checkKeys checks that obj has exactly the keys of want, each of one of
// the JSON types listed ("number|null").
func checkKeys(t *testing.T, where string, obj map[string]any, want map[string]string) {
	t.Helper()
	for k, types := range want {
		v, ok := obj[k]
		if !ok {
			t.Errorf("%s: key %q missing", where, k)
			continue
		}
		if !slices.Contains(strings.Split(types, "|"), jsonType(v)) {
			t.Errorf("%s.%s: type %s, want %s", where, k, jsonType(v), types)
		}
	}
	for k := range obj {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: undocumented key %q", where, k)
		}
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

// hostileComparison is the cp comparison with every string that comes
// from the traced system or the command line replaced by s.
func hostileComparison(s string) *compare.Result {
	r := cpComparison()
	r.Workload = "copying " + s
	r.A.Command = []string{"refcp", s, "-r"}
	r.B.Command = []string{s, "x"}
	r.A.Patterns[0].Role = "/tmp/" + s
	r.B.Patterns[1].Role = s
	r.A.PerProcessOpens[0].Comm = s
	r.Machine.Kernel, r.Machine.CPU = s, s
	r.Reproduce = []string{"once compare -- " + s, s}
	return r
}

// TestCompareHostile renders hostile strings in every format: Text and
// Markdown must hold no control byte and keep their line structure (the
// same number of lines as with a plain string), Markdown's code blocks
// must not be closable from inside, and JSON must carry the bytes intact.
func TestCompareHostile(t *testing.T) {
	render := func(f func(io.Writer, *compare.Result) error, r *compare.Result) []byte {
		var buf bytes.Buffer
		if err := f(&buf, r); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	plainText := bytes.Count(render(CompareText, hostileComparison("plain")), []byte("\n"))
	plainMD := bytes.Count(render(CompareMarkdown, hostileComparison("plain")), []byte("\n"))
	strs := append(slices.Clone(hostileStrings), "```|*_[x](y)\x1b[31m\na", "\x1b]0;title\x07 a\nb")
	for _, s := range strs {
		r := hostileComparison(s)
		text, md := render(CompareText, r), render(CompareMarkdown, r)
		for name, out := range map[string][]byte{"text": text, "markdown": md} {
			if i := badControl(out); i >= 0 {
				t.Fatalf("%q: %s: raw control byte %#x at %d:\n%s", s, name, out[i], i, out)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if why := checkInert(l); why != "" {
					t.Fatalf("%q: %s: line %q: %s", s, name, l, why)
				}
			}
		}
		if n := bytes.Count(text, []byte("\n")); n != plainText {
			t.Errorf("%q: text has %d lines, %d with a plain string:\n%s", s, n, plainText, text)
		}
		if n := bytes.Count(md, []byte("\n")); n != plainMD {
			t.Errorf("%q: markdown has %d lines, %d with a plain string:\n%s", s, n, plainMD, md)
		}
		checkCompareMarkdown(t, string(md))
		// Without reproduce commands the Markdown shows the commands.
		r.Reproduce = nil
		md = render(CompareMarkdown, r)
		if i := badControl(md); i >= 0 {
			t.Fatalf("%q: markdown without reproduce: raw control byte %#x at %d", s, md[i], i)
		}
		checkCompareMarkdown(t, string(md))

		js := render(CompareJSON, hostileComparison(s))
		if !json.Valid(js) {
			t.Fatalf("%q: invalid JSON", s)
		}
		var doc struct {
			Workload json.RawMessage `json:"workload"`
			Before   struct {
				Command   []json.RawMessage                `json:"command"`
				Patterns  []struct{ Role json.RawMessage } `json:"patterns"`
				Processes []struct{ Comm json.RawMessage } `json:"processes"`
			} `json:"before"`
			After struct {
				Command []json.RawMessage `json:"command"`
			} `json:"after"`
			Machine   struct{ Kernel, CPU json.RawMessage } `json:"machine"`
			Reproduce []json.RawMessage                     `json:"reproduce"`
		}
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			raw  json.RawMessage
			want string
		}{
			{doc.Workload, "copying " + s},
			{doc.Before.Command[1], s},
			{doc.After.Command[0], s},
			{doc.Before.Patterns[0].Role, "/tmp/" + s},
			{doc.Before.Processes[0].Comm, s},
			{doc.Machine.Kernel, s},
			{doc.Machine.CPU, s},
			{doc.Reproduce[1], s},
		} {
			if got, err := UnescapeJSONBytes(c.raw); err != nil || string(got) != c.want {
				t.Errorf("%q: JSON %s decodes to %q, %v", s, c.raw, got, err)
			}
		}
	}
}

// TestCompareHostileArgs pins the escaped forms of an argument with ESC
// and newline: Escape'd in Text and Markdown, byte-exact in JSON.
func TestCompareHostileArgs(t *testing.T) {
	const arg = "\x1b[31mred\nline"
	const esc = `\x1b[31mred\nline`
	r := cpComparison()
	r.B.Command = []string{"./cp", arg, "dst"}
	r.Reproduce = []string{"once compare --ref cp -- ./cp '" + arg + "' dst"}
	var text, md, js bytes.Buffer
	if err := CompareText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := CompareMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := CompareJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  after: ./cp \"" + esc + "\" dst\n", "  # escaped: once compare --ref cp -- ./cp '" + esc + "' dst\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if want := "\n# escaped: once compare --ref cp -- ./cp '" + esc + "' dst\n"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	r.Reproduce = nil
	md.Reset()
	if err := CompareMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if want := "\n# after\n./cp \"" + esc + "\" dst\n"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown without reproduce lacks %q:\n%s", want, md.String())
	}
	if want := `"command": [` + "\n" + `      "./cp",` + "\n" + `      "\u001b[31mred\nline",`; !strings.Contains(js.String(), want) {
		t.Errorf("JSON lacks %q:\n%s", want, js.String())
	}
}

// checkCompareMarkdown checks that every code block is closed only by its
// own fence and that no pipe outside the blocks could start a table.
func checkCompareMarkdown(t *testing.T, md string) {
	t.Helper()
	fence := ""
	blocks, rows := 0, 0
	for _, l := range strings.Split(md, "\n") {
		if fence != "" {
			if l == fence {
				fence = ""
				continue
			}
			if strings.HasPrefix(strings.TrimLeft(l, " "), fence) {
				t.Fatalf("Markdown: line %q inside a %s fence would close it", l, fence)
			}
			continue
		}
		if strings.HasPrefix(l, "```") {
			fence = strings.TrimRight(l, "abcdefghijklmnopqrstuvwxyz")
			blocks++
			continue
		}
		// The timing table's rows, of the renderer's own numbers: 8
		// cells each, and no other line with a pipe.
		if strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "|:-") {
			rows++
			if unescapedPipes(l) != 9 {
				t.Fatalf("Markdown: table row %q has %d pipes, want 9", l, unescapedPipes(l))
			}
			continue
		}
		if unescapedPipes(l) > 0 {
			t.Fatalf("Markdown: unescaped pipe outside a code block: %q", l)
		}
	}
	if rows != 4 {
		t.Fatalf("Markdown: %d table rows, want 4 (header, rule, before, after):\n%s", rows, md)
	}
	if fence != "" {
		t.Fatal("Markdown: unclosed code block")
	}
	if blocks != 2 {
		t.Fatalf("Markdown: %d code blocks, want 2:\n%s", blocks, md)
	}
}

func TestCompareFormatting(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{
		{0, "0.0ns"}, {9.9, "9.9ns"}, {9_950, "9950.0ns"}, {9_951, "10.0µs"}, {35_200, "35.2µs"},
		{1_290_000, "1290.0µs"}, {199_912_345, "199.9ms"}, {9_949_999_999, "9950.0ms"}, {12_345e9, "12345.0s"},
	} {
		if got := unitFor(tc.ns).format(tc.ns); got != tc.want {
			t.Errorf("format(%v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
	if got := wastedString(0); got != "0" {
		t.Errorf("wastedString(0) = %q", got)
	}
	// Before and after in one unit, the larger's.
	for _, tc := range []struct {
		a, b         uint64
		wantA, wantB string
	}{
		{10_000, 8_483, "10.0µs", "8.5µs"}, {9_020, 8_768, "9020ns", "8768ns"}, {0, 35_200, "0", "35.2µs"},
		{9_879, 12, "9879ns", "12ns"}, {9_951, 12, "10.0µs", "0.0µs"},
	} {
		if a, b := wastedPair(tc.a, tc.b); a != tc.wantA || b != tc.wantB {
			t.Errorf("wastedPair(%d, %d) = %q, %q; want %q, %q", tc.a, tc.b, a, b, tc.wantA, tc.wantB)
		}
	}
	// A wasted time is whole ns: no ".0" in ns.
	for ns, want := range map[uint64]string{9_879: "9879ns", 7: "7ns", 9_951: "10.0µs"} {
		if got := wastedString(ns); got != want {
			t.Errorf("wastedString(%d) = %q, want %q", ns, got, want)
		}
	}
	// A kind's row says what it counts: a search's failed attempts (as
	// run's EACH does), else the avoidable calls (a miss's repeats, not
	// its misses).
	for _, tc := range []struct {
		t    trace.KindTotal
		want string
	}{
		{trace.KindTotal{Kind: trace.KindRepeatedMiss, Findings: 1, Avoidable: 3}, "3 avoidable (1 finding)"},
		{trace.KindTotal{Kind: trace.KindDuplicateStat, Findings: 2, Avoidable: 4}, "4 avoidable (2 findings)"},
		{trace.KindTotal{Kind: trace.KindFailedStatProbes, Findings: 1, Avoidable: 6}, "6 failed (1 finding)"},
		{trace.KindTotal{Kind: trace.KindRepeatedMiss}, "0 (0 findings)"},
		// Every repeat an attempt of a search: counted in its row.
		{trace.KindTotal{Kind: trace.KindRepeatedMiss, Findings: 3, Chained: 5}, "0 (3 findings, their 5 repeats counted in the searches)"},
		{trace.KindTotal{Kind: trace.KindRepeatedMiss, Findings: 3, Avoidable: 2, Chained: 1}, "2 avoidable (3 findings, 1 more repeat counted in the searches)"},
	} {
		if got := avoidableString(tc.t); got != tc.want {
			t.Errorf("avoidableString(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
	if got := meanPair(compare.Stats{N: 5, Mean: 199.9e6, Stddev: 14.9e6}, compare.Stats{N: 5, Mean: 171.7e6, Stddev: 23.6e6}, unitFor(199.9e6)); got != "199.9ms ± 14.9ms -> 171.7ms ± 23.6ms" {
		t.Errorf("meanPair = %q", got)
	}
	// Both sides in the table's one unit.
	// One run a side: σ is undefined, and not shown as 0.
	if got := meanPair(compare.Stats{N: 1, Mean: 11.6e6}, compare.Stats{N: 1, Mean: 21.6e6}, unitFor(21.6e6)); got != "11.6ms -> 21.6ms" {
		t.Errorf("meanPair of single runs = %q", got)
	}
	if got := relativeText(measures[0], compare.Ratio{Mean: 1.86, Median: 1.86, Defined: true, NoSpread: true}); strings.Contains(got, "±") {
		t.Errorf("relativeText of single runs = %q", got)
	}
	if got := meanPair(compare.Stats{N: 5, Mean: 1.5e6, Stddev: 0.1e6}, compare.Stats{N: 5, Mean: 800e3, Stddev: 20e3}, unitFor(1.5e6)); got != "1500.0µs ± 100.0µs -> 800.0µs ± 20.0µs" {
		t.Errorf("meanPair = %q", got)
	}
	for _, tc := range []struct {
		p    compare.OpenPattern
		want string
	}{
		{compare.OpenPattern{Role: "src", Syscall: "open", Flags: 0, PerFile: 3, Files: 1}, `open("src", O_RDONLY) x3`},
		{compare.OpenPattern{Role: "src", Syscall: "openat", Flags: 0, PerFile: 3, Files: 3000}, `openat("src/*", O_RDONLY) x3 per file (3000 files)`},
		{compare.OpenPattern{Role: "/etc/a\"b\n", Syscall: "openat", Flags: unix.O_WRONLY | unix.O_CREAT, PerFile: 2, Files: 2},
			`openat("/etc/a\"b\n", O_WRONLY|O_CREAT) x2 per file (2 files)`},
	} {
		if got := patternString(tc.p, " per file"); got != tc.want {
			t.Errorf("patternString(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
	for in, want := range map[string]string{"copying": "Copying", "éa": "Éa", "1 x": "1 x", "\xffa": "\xffa", "": ""} {
		if got := capitalise(in); got != want {
			t.Errorf("capitalise(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"- a": `\- a`, "12. a": `12\. a`, "3) b": `3\) b`, "3 runs": "3 runs", "+": `\+`} {
		if got := mdLineStart(in); got != want {
			t.Errorf("mdLineStart(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{`a\b 'c d'`: `a\b 'c d'`, "a\tb": `# escaped: a\tb`, "\u202e": `# escaped: \u{202E}`} {
		if got := reproduceLine(in); got != want {
			t.Errorf("reproduceLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCompareWarnings checks the warning lines of every format.
func TestCompareWarnings(t *testing.T) {
	r := launcherComparison()
	r.A.Trace.Counters.StacksMapsLost = 3
	var text, md bytes.Buffer
	if err := CompareText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := CompareMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"WARNING: before: 1 of 4 timed runs exited non-zero (exit 1); its times may not measure the intended work",
		"WARNING: before: the traced run lost 2 events; its counts are lower bounds, and a finding may be wrong (a lost success makes a search look failed): run it again with a larger --ring-size",
		"WARNING: before: the traced run lost 3 mapping records; its counts stand, but some call sites may end at an unknown mapping",
	} {
		if !strings.Contains(text.String(), "\n"+w+"\n") {
			t.Errorf("text lacks %q", w)
		}
		if !strings.Contains(md.String(), "> **"+w+"**\n") {
			t.Errorf("markdown lacks %q", w)
		}
	}
	if strings.Contains(text.String(), "WARNING: after") {
		t.Errorf("warning for the after side:\n%s", text.String())
	}
}

// FuzzCompareRender renders a comparison whose strings come from the
// fuzzer and checks the safety properties of each format.
func FuzzCompareRender(f *testing.F) {
	f.Add("\x1b[31m\na")
	f.Add("```|*_\xff\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		r := hostileComparison(s)
		var text, md, js bytes.Buffer
		if err := CompareText(&text, r); err != nil {
			t.Fatal(err)
		}
		if err := CompareMarkdown(&md, r); err != nil {
			t.Fatal(err)
		}
		if err := CompareJSON(&js, r); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string][]byte{"text": text.Bytes(), "markdown": md.Bytes()} {
			if i := badControl(out); i >= 0 {
				t.Fatalf("%s: raw control byte %#x at %d", name, out[i], i)
			}
		}
		checkCompareMarkdown(t, md.String())
		if !json.Valid(js.Bytes()) {
			t.Fatal("invalid JSON")
		}
		var svg bytes.Buffer
		if err := ComparePlot(&svg, r); err != nil {
			t.Fatal(err)
		}
		readSVG(t, svg.Bytes())
	})
}

// svgSummary is what a test reads back from a plot: the text of every
// <text> element, and the filled circles (the run points) by fill colour.
type svgSummary struct {
	texts   []string
	circles map[string]int
}

// readSVG parses svg as XML, which fails on a control character as on
// broken markup.
func readSVG(t *testing.T, svg []byte) svgSummary {
	t.Helper()
	sum := svgSummary{circles: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			inText = el.Name.Local == "text"
			if el.Name.Local != "path" {
				continue
			}
			var d, style string
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "d":
					d = a.Value
				case "style":
					style = a.Value
				}
			}
			// A glyph circle is two arcs; boxes, bars and lines have none.
			if strings.Count(d, "A") == 2 {
				fill, _, _ := strings.Cut(strings.TrimPrefix(style, "fill:"), ";")
				sum.circles[strings.ToLower(fill)]++
			}
		case xml.CharData:
			if inText {
				sum.texts = append(sum.texts, string(el))
			}
		case xml.EndElement:
			inText = false
		}
	}
	return sum
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// TestComparePlot: the SVG parses, names both sides, and draws every timed
// run of each side once per time panel (wall, and CPU when exact on both
// sides), in the side's colour.
func TestComparePlot(t *testing.T) {
	for _, c := range compareCases {
		t.Run(c.name, func(t *testing.T) {
			r := c.build()
			var buf bytes.Buffer
			if err := ComparePlot(&buf, r); err != nil {
				t.Fatal(err)
			}
			sum := readSVG(t, buf.Bytes())
			for _, want := range []string{"before", "after", "wall time, every timed run a point"} {
				if !slices.Contains(sum.texts, want) {
					t.Errorf("no text %q in %q", want, sum.texts)
				}
			}
			panels := 1
			if r.A.CPUExact && r.B.CPUExact {
				panels = 2
			}
			if cpu := slices.Contains(sum.texts, "CPU time, every timed run a point"); cpu != (panels == 2) {
				t.Errorf("CPU panel drawn: %v, CPU exact on both sides: %v", cpu, panels == 2)
			}
			for i, s := range []*compare.Side{&r.A, &r.B} {
				if got, want := sum.circles[hexColor(plotColors[i])], panels*len(s.Samples); got != want {
					t.Errorf("%s: %d points, want %d (%d runs, %d panels)", sideNames[i], got, want, len(s.Samples), panels)
				}
			}
			traced := r.A.Trace != nil || r.B.Trace != nil
			if got := slices.Contains(sum.texts, "all opens"); got != traced {
				t.Errorf("opens panel drawn: %v, traced: %v", got, traced)
			}
		})
	}
	if err := ComparePlot(io.Discard, nil); err == nil {
		t.Error("no error for a nil result")
	}
}

// TestComparePlotHostile: strings from the traced system and the command
// line reach the SVG escaped: it still parses, and no byte of it is a
// control character.
func TestComparePlotHostile(t *testing.T) {
	for _, s := range append(slices.Clone(hostileStrings), "</text><script>x</script>", "\x1b]0;t\x07\n\r&amp;\xff") {
		var buf bytes.Buffer
		if err := ComparePlot(&buf, hostileComparison(s)); err != nil {
			t.Fatal(err)
		}
		// Tabs and newlines lay out the markup; no other control byte may
		// be anywhere.
		if i := bytes.IndexFunc(buf.Bytes(), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
			t.Fatalf("%q: raw control byte %#x at %d", s, buf.Bytes()[i], i)
		}
		sum := readSVG(t, buf.Bytes())
		if !slices.Contains(sum.texts, "before") || !slices.Contains(sum.texts, "after") {
			t.Fatalf("%q: side names missing: %q", s, sum.texts)
		}
		for _, txt := range sum.texts {
			if why := checkInert(txt); why != "" {
				t.Fatalf("%q: SVG text %q: %s", s, txt, why)
			}
		}
	}
}

func TestMarkdownPlotLink(t *testing.T) {
	for in, want := range map[string]string{
		"cp.svg":             "cp.svg",
		"../plots/a b.svg":   "../plots/a%20b.svg",
		"x).svg":             "x%29.svg",
		"é\n[x](y).svg":      "%C3%A9%0A%5Bx%5D%28y%29.svg",
		"/tmp/once-demo.svg": "/tmp/once-demo.svg",
	} {
		if got := mdLinkDest(in); got != want {
			t.Errorf("mdLinkDest(%q) = %q, want %q", in, got, want)
		}
	}
	r := cpComparison()
	r.Plot = "plots/(1).svg"
	var md, text bytes.Buffer
	if err := CompareMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if want := "\n![Wall and CPU time of every run, and the opens, before and after](plots/%281%29.svg)\n"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	if err := CompareText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\nplot: plots/(1).svg\n") {
		t.Errorf("text lacks the plot:\n%s", text.String())
	}
}

// TestShortWords: a path is named by its last element on the plot's
// axis; a shell's script is no path, and two different scripts keep
// labels of their own.
func TestShortWords(t *testing.T) {
	for _, tc := range []struct{ argv, want []string }{
		{[]string{"/usr/bin/refcp", "-r", "/tmp/src", "dst/"}, []string{"refcp", "-r", "src", "dst"}},
		{[]string{"sh", "-c", "true </dev/null && true"}, []string{"sh", "-c", "true </dev/null && true"}},
		{[]string{"/"}, []string{"/"}},
	} {
		if got := shortWords(tc.argv); !slices.Equal(got, tc.want) {
			t.Errorf("shortWords(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// dupSide is a compare side whose traced run has a duplicate_open
// finding per count of opens given, as summarise makes it.
func dupSide(counts ...int) *compare.Side {
	s := &compare.Side{Trace: &trace.Result{}}
	for i, n := range counts {
		f := trace.Finding{Kind: trace.KindDuplicateOpen, Pid: uint32(100 + i)}
		f.Count = n
		s.Trace.Findings = append(s.Trace.Findings, f)
		s.DuplicateFiles++
		s.DuplicateOpens += n - 1
	}
	return s
}

// TestDupString: the extra opens of a compare side are "N files × M extra
// opens" only when every file had M: 2 extra opens on one file and 4 on
// another are 6 on 2 files, not "2 files × 3 extra opens", which no file
// had.
func TestDupString(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *compare.Side
		want string
	}{
		{"none", dupSide(), "0"},
		{"one file", dupSide(3), "2 (1 file × 2 extra opens)"},
		{"even", dupSide(3, 3, 3), "6 (3 files × 2 extra opens)"},
		{"uneven, divisible", dupSide(3, 5), "6 (2 files)"},
		{"uneven", dupSide(3, 4), "5 (2 files)"},
		{"not traced", &compare.Side{DuplicateOpens: 6, DuplicateFiles: 2}, "6 (2 files)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dupString(tc.s); got != tc.want {
				t.Errorf("dupString = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCompareProcessTableBounded: a side's process table shows its first
// 20 processes and sums the rest in one row (a build runs thousands); the
// JSON lists every one.
func TestCompareProcessTableBounded(t *testing.T) {
	r := launcherComparison()
	var procs []compare.ProcessOpens
	for i := range 401 {
		procs = append(procs, compare.ProcessOpens{Pid: uint32(1000 + i), Comm: "launch", Opens: 2, Files: 2, ExecProbe: 6})
	}
	r.A.PerProcessOpens = procs
	var text, js bytes.Buffer
	if err := CompareText(&text, r); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if n := len(regexp.MustCompile(`(?m)^\s+\d+\s+launch\s`).FindAllString(out, -1)); n != 20 {
		t.Errorf("%d rows of launch, want 20:\n%s", n, out)
	}
	if want := regexp.MustCompile(`(?m)^\s+381 more \(each in --format json\)\s+762\s+762\s+0\s+2286$`); !want.MatchString(out) {
		t.Errorf("no row summing the other 381 processes:\n%s", out)
	}
	if !strings.Contains(out, "processes, before (401):") {
		t.Errorf("the heading lacks the count of every process:\n%s", out)
	}
	if err := CompareJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(js.String(), `"comm": "launch"`); n != 401 {
		t.Errorf("JSON lists %d processes, want 401", n)
	}
}

// The opens row says how many failed, as the lookups row does.
func TestCompareOpensFailed(t *testing.T) {
	r := &compare.Result{}
	r.A.Trace, r.A.Opens, r.A.FailedOpens = &trace.Result{}, 13, 2
	r.B.Trace, r.B.Opens = &trace.Result{}, 7
	var b strings.Builder
	if err := countTable(r).render(&b, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "13 (2 failed)") || !strings.Contains(b.String(), "7 (0 failed)") {
		t.Errorf("the opens row does not say how many failed:\n%s", b.String())
	}
}
