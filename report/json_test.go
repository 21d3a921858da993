package report

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"unicode/utf8"

	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// hostileStrings are byte strings every encoder must carry intact.
var hostileStrings = []string{
	"",
	"plain",
	"\xff\xfe",
	"a\nb",
	"\x1b[31m",
	"\u202e",
	"\x00\x01\x1f\x7f",
	"quote\" back\\slash / slash",
	"<>&",
	"\u0085\u2028\u2029\ufeff",
	"\xed\xa0\x80", // UTF-8-encoded surrogate: three bad bytes
	"\xf0\x9f\x98", // truncated 4-byte sequence
	"😀\U000E0041",  // astral printable and astral tag character
	"\xc3\xa9\xc3", // valid é then a lone lead byte
	strings.Repeat("\xff", 4096),
	strings.Repeat("é\x80", 2048),
	strings.Repeat("/x", 2048),
}

func TestJSONStringRoundTrip(t *testing.T) {
	check := func(s string) bool {
		lit := appendJSONString(nil, s)
		if !json.Valid(lit) {
			t.Errorf("%q: encoded %s is not valid JSON", s, lit)
			return false
		}
		if !utf8.Valid(lit) {
			t.Errorf("%q: encoded %q is not valid UTF-8", s, lit)
			return false
		}
		for _, c := range lit {
			if c < 0x20 || c == 0x7f {
				t.Errorf("%q: encoded %q holds raw control byte %#x", s, lit, c)
				return false
			}
		}
		back, err := UnescapeJSONBytes(lit)
		if err != nil || string(back) != s {
			t.Errorf("UnescapeJSONBytes(%s) = %q, %v; want %q", lit, back, err, s)
			return false
		}
		// For valid UTF-8 the standard decoder must agree too.
		if utf8.ValidString(s) {
			var std string
			if err := json.Unmarshal(lit, &std); err != nil || std != s {
				t.Errorf("json.Unmarshal(%s) = %q, %v; want %q", lit, std, err, s)
				return false
			}
		}
		return true
	}
	for _, s := range hostileStrings {
		check(s)
	}
	cfg := &quick.Config{MaxCount: 5000, Values: func(v []reflect.Value, r *rand.Rand) {
		v[0] = reflect.ValueOf(string(randomHostileBytes(r)))
	}}
	if err := quick.Check(check, cfg); err != nil {
		t.Error(err)
	}
	if err := quick.Check(func(b []byte) bool { return check(string(b)) }, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

func TestJSONStringEscapes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a", `"a"`},
		{"\xff\xfe", `"\udcff\udcfe"`},
		{"\x80", `"\udc80"`},
		{"a\nb\tc\rd\be\ff", `"a\nb\tc\rd\be\ff"`},
		{"\x1b[31m", `"\u001b[31m"`},
		{"\x00\x7f", `"\u0000\u007f"`},
		{"\"\\/", `"\"\\/"`},
		{"<&>", `"<&>"`},
		{"é日😀", `"é日😀"`},
		{"\u202e\u0085\u2028", `"\u202e\u0085\u2028"`},
		{"\U000E0041", `"\udb40\udc41"`},
	} {
		if got := string(appendJSONString(nil, tc.in)); got != tc.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestUnescapeJSONBytesErrors(t *testing.T) {
	for _, in := range []string{
		``, `"`, `abc`, `"abc`, `"a"b"`,
		"\"a\nb\"",       // raw control byte
		"\"\xff\"",       // raw invalid UTF-8
		`"\x41"`,         // not a JSON escape
		`"\u12"`,         // short \u
		`"\uzzzz"`,       // not hex
		`"\ud800"`,       // lone high surrogate
		`"\ud800\u0041"`, // high surrogate not followed by a low one
		`"\udc10"`,       // lone low surrogate that encodes no byte
		`"\`,             // dangling backslash
	} {
		if b, err := UnescapeJSONBytes([]byte(in)); err == nil {
			t.Errorf("UnescapeJSONBytes(%q) = %q, want an error", in, b)
		}
	}
	// A valid pair whose low half is in the surrogateescape range is a
	// rune, not a byte.
	b, err := UnescapeJSONBytes([]byte(`"\udb40\udc80"`))
	if err != nil || string(b) != "\U000E0080" {
		t.Errorf("pair: got %q, %v", b, err)
	}
}

// TestJSONPythonSurrogateescape checks the documented contract with the
// real consumer: Python's json.loads then os.fsencode restores the bytes.
func TestJSONPythonSurrogateescape(t *testing.T) {
	py := testprog.NeedTool(t, "python3")
	var in bytes.Buffer
	in.WriteString("[")
	for i, s := range hostileStrings {
		if i > 0 {
			in.WriteString(",")
		}
		in.Write(appendJSONString(nil, s))
	}
	in.WriteString("]")
	cmd := exec.Command(py, "-c",
		"import json, os, sys\n"+
			"for s in json.load(sys.stdin): print(os.fsencode(s).hex())")
	cmd.Stdin = &in
	cmd.Env = append(cmd.Environ(), "LC_ALL=C.UTF-8", "PYTHONUTF8=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(hostileStrings) {
		t.Fatalf("python printed %d lines, want %d", len(lines), len(hostileStrings))
	}
	for i, s := range hostileStrings {
		if want := hexOf(s); lines[i] != want {
			t.Errorf("python decoded %q as %s, want %s", s, lines[i], want)
		}
	}
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&0xf])
	}
	return b.String()
}

// hostileResult is the sample Result with every attacker-controlled
// string replaced by s.
func hostileResult(s string) *trace.Result {
	return hostileResultFrom(func() string { return s })
}

// hostileResultFrom is the sample Result with every attacker-controlled
// string replaced by successive values of next.
func hostileResultFrom(next func() string) *trace.Result {
	r := sampleResult()
	r.Command = []string{next(), next()}
	for _, p := range r.Processes {
		p.Comm, p.ParentComm, p.Exe = next(), next(), next()
		p.Argv = []string{next(), next()}
		for _, f := range p.Opens {
			f.Path, f.Paths = next(), []string{next(), next()}
			for i := range f.Calls {
				f.Calls[i].Fname, f.Calls[i].Path = next(), next()
			}
		}
		for _, f := range p.FailedOpens {
			f.Fname, f.Base = next(), next()
		}
		for i := range p.Execs {
			p.Execs[i].Filename, p.Execs[i].Argv = next(), []string{next()}
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		f.Comm, f.ParentComm, f.Path, f.Target = next(), next(), next(), next()
		f.Paths = []string{next(), next()}
		attempts := slices.Clone(f.Attempts)
		for j := range attempts {
			attempts[j].Path = next()
		}
		f.Attempts = attempts
		if f.Found != nil {
			f.Found = strp(next())
		}
		calls := slices.Clone(f.Calls)
		for j := range calls {
			calls[j].Fname, calls[j].Path = next(), next()
		}
		f.Calls = calls
	}
	return r
}

func TestJSONHostileValidAndLossless(t *testing.T) {
	for _, s := range hostileStrings {
		var buf bytes.Buffer
		if err := JSON(&buf, hostileResult(s)); err != nil {
			t.Fatal(err)
		}
		out := buf.Bytes()
		if !json.Valid(out) {
			t.Fatalf("%q: output is not valid JSON", s)
		}
		if !bytes.HasSuffix(out, []byte("}\n")) {
			t.Errorf("%q: output does not end with a newline", s)
		}
		// Every string literal in the output decodes to s or to one of the
		// fixed strings the renderer writes; pick the comm of process 0.
		var doc struct {
			Processes []struct {
				Comm json.RawMessage `json:"comm"`
			} `json:"processes"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		got, err := UnescapeJSONBytes(doc.Processes[0].Comm)
		if err != nil || string(got) != s {
			t.Errorf("comm round trip: got %q, %v; want %q", got, err, s)
		}
	}
}

// TestJSONContract checks that every documented key is present, with the
// right JSON type, for every object kind.
func TestJSONContract(t *testing.T) {
	r := sampleResult()
	// One probe chain where nothing was found: "found" must be null.
	r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindFailedExecProbes,
		Key: r.Processes[1].Key, Pid: 1240,
		WastedNs: 10, ChainDetail: trace.ChainDetail{Target: "nope", Failed: 1, Attempts: []trace.Attempt{{Path: "/a/nope", Errno: 2, Ns: 10}}}})
	// An open chain whose misses' directories were stat-ed (ld.so's).
	r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindFailedOpenProbes,
		Key: r.Processes[1].Key, Pid: 1240,
		WastedNs: 30, ChainDetail: trace.ChainDetail{Target: "libz.so", Failed: 2, DirChecks: 1, Attempts: []trace.Attempt{
			{Path: "/a/tls/libz.so", Errno: 2, Ns: 10, Syscall: trace.SysOpenat}, {Path: "/a/libz.so", Errno: 2, Ns: 10, Syscall: trace.SysOpenat}}}})
	// A library found through ld.so's cache, and a suffix a loader
	// tries beside another name of its stem.
	libc := "/lib/libc.so.6"
	r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindFailedOpenProbes,
		Key: r.Processes[1].Key, Pid: 1240, WastedNs: 10, ChainDetail: trace.ChainDetail{Target: "libc.so.6", Failed: 1,
			Found: &libc, ViaCache: "/etc/ld.so.cache", Attempts: []trace.Attempt{
				{Path: "/a/libc.so.6", Errno: 2, Ns: 10, Syscall: trace.SysOpenat}, {Path: "/lib/libc.so.6", Syscall: trace.SysOpenat}}}})
	r.Findings = append(r.Findings, trace.Finding{Kind: trace.KindFailedStatProbes,
		Key: r.Processes[1].Key, Pid: 1240, WastedNs: 20, ChainDetail: trace.ChainDetail{Target: "x.h.gch", Failed: 2,
			Variants: []string{"x.h"}, VariantMisses: 2, Attempts: []trace.Attempt{
				{Path: "/i1/x.h.gch", Errno: 2, Ns: 10, Syscall: trace.SysNewfstatat}, {Path: "/i2/x.h.gch", Errno: 2, Ns: 10, Syscall: trace.SysNewfstatat}}}})
	sawDirChecks, sawVia, sawVariants := false, false, false
	var buf bytes.Buffer
	if err := JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	const (
		num = "number"
		str = "string"
		arr = "array"
		obj = "object"
		boo = "bool"
		nul = "null"
	)
	typeOf := func(v any) string {
		switch v.(type) {
		case float64:
			return num
		case string:
			return str
		case []any:
			return arr
		case map[string]any:
			return obj
		case bool:
			return boo
		case nil:
			return nul
		}
		return "?"
	}
	expect := func(where string, m map[string]any, want map[string]string) {
		t.Helper()
		for k, typ := range want {
			v, ok := m[k]
			if !ok {
				t.Errorf("%s: missing key %q", where, k)
				continue
			}
			if got := typeOf(v); got != typ && !(typ == "string|null" && (got == str || got == nul)) &&
				!(typ == "number|null" && (got == num || got == nul)) {
				t.Errorf("%s.%s: type %s, want %s", where, k, got, typ)
			}
		}
		for k := range m {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: undocumented key %q", where, k)
			}
		}
	}
	top := map[string]string{
		"schema_version": num, "command": arr, "exit_code": num, "exit_signal": str, "start_errno": num, "start_error": str, "duration_ns": num, "timed_out": boo, "interrupted": str, "still_running": num, "violations": arr, "argv_redacted": boo,
		"files": str, "events_lost": num, "totals": obj, "processes": arr, "findings": arr,
		"wasted_ns": num, "wasted_share_wall": num, "waste_by_kind": arr, "groups": arr,
		"cpu_ns": num, "wasted_share_cpu": num, "processes_listed": str, "programs_omitted": num, "programs": arr,
	}
	for _, c := range trace.Shown {
		top[c.JSON] = num
	}
	expect("top", doc, top)
	if doc["schema_version"] != float64(1) {
		t.Errorf("schema_version = %v", doc["schema_version"])
	}
	expect("totals", doc["totals"].(map[string]any), map[string]string{
		"processes": num, "opens": num, "failed_opens": num, "execs": num, "failed_execs": num, "findings": num,
		"lookups": num, "failed_lookups": num,
	})
	callKeys := map[string]string{
		"syscall": str, "tid": num, "fname": str, "dirfd": num, "flags": num, "flags_text": str,
		"mode": num, "resolve": num, "ret": num, "ns": num, "path": str,
		"fname_truncated": boo, "fname_unreadable": boo, "path_truncated": boo,
	}
	fileKeys := map[string]string{
		"path": str, "paths": arr, "paths_capped": boo, "dev": num, "ino": num, "generation": num, "file_type": str, "path_truncated": boo, "count": num, "syscalls": arr, "calls": arr, "calls_omitted": num,
	}
	for _, pv := range doc["programs"].([]any) {
		expect("program", pv.(map[string]any), map[string]string{
			"comm": str, "exe": str, "processes": num, "listed": num, "opens": num, "files": num, "duplicate_files": num,
			"failed_opens": num, "execs": num, "failed_execs": num, "lookups": num, "failed_lookups": num,
			"findings": num, "avoidable": num, "wasted_ns": num,
		})
	}
	for _, pv := range doc["processes"].([]any) {
		p := pv.(map[string]any)
		expect("process", p, map[string]string{
			"pid": num, "ppid": num, "comm": str, "last_comm": str, "parent_comm": str, "exe": str, "argv": arr,
			"argv_truncated": boo, "uid": num, "cgroup_id": num, "exec_id": num, "start_ns": num,
			"cgroup": str, "container_id": str, "container_name": str, "pod": str, "namespace": str, "runtime": str,
			"exited": boo, "exit_code": "number|null", "compat": boo, "threads": num, "threads_capped": boo, "totals": obj, "opens": arr, "path_opens": arr,
			"special_opens": arr, "failed_opens": arr, "execs": arr, "execs_omitted": num, "detail_dropped": num,
		})
		expect("process.totals", p["totals"].(map[string]any), map[string]string{
			"opens": num, "files": num, "duplicate_files": num, "failed_opens": num, "execs": num, "failed_execs": num,
			"lookups": num, "failed_lookups": num,
		})
		if (p["exit_code"] == nil) == p["exited"].(bool) {
			t.Errorf("process %v: exit_code %v with exited %v", p["pid"], p["exit_code"], p["exited"])
		}
		for _, list := range []string{"opens", "path_opens", "special_opens"} {
			for _, fv := range p[list].([]any) {
				f := fv.(map[string]any)
				expect(list, f, fileKeys)
				for _, cv := range f["calls"].([]any) {
					expect(list+".calls", cv.(map[string]any), callKeys)
				}
			}
		}
		for _, fv := range p["failed_opens"].([]any) {
			expect("failed_opens", fv.(map[string]any), map[string]string{
				"fname": str, "base": str, "errno": num, "error": str, "count": num,
			})
		}
		for _, ev := range p["execs"].([]any) {
			e := ev.(map[string]any)
			expect("execs", e, map[string]string{
				"syscall": str, "tid": num, "filename": str, "path": str, "argv": arr, "argv_truncated": boo,
				"filename_truncated": boo, "filename_unreadable": boo, "argv_unreadable": boo,
				"errno": num, "error": str, "ok": boo, "ns": num,
			})
			if ok := e["ok"].(bool); ok != (e["errno"] == float64(0)) || ok != (e["error"] == "") {
				t.Errorf("exec %v: ok/errno/error disagree", e)
			}
		}
	}
	head := map[string]string{
		"kind": str, "pid": num, "ppid": num, "comm": str, "last_comm": str, "parent_comm": str, "exec_id": num, "start_ns": num,
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range head {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	kinds := map[string]bool{}
	sawNullFound := false
	for _, fv := range doc["findings"].([]any) {
		f := fv.(map[string]any)
		kind := f["kind"].(string)
		kinds[kind] = true
		switch trace.FindingKind(kind).Info().Shape {
		case trace.ShapeMiss:
			expect(kind, f, with(map[string]string{
				"path": str, "errno": num, "error": str, "count": num, "chained": num, "wasted_ns": num, "calls": arr, "calls_omitted": num,
			}))
			for _, cv := range f["calls"].([]any) {
				expect(kind+".calls", cv.(map[string]any), callKeys)
			}
			continue
		case trace.ShapeFile:
			expect(kind, f, with(map[string]string{
				"path": str, "paths": arr, "paths_capped": boo, "dev": num, "ino": num, "generation": num, "count": num, "wasted_ns": num, "calls": arr, "calls_omitted": num,
			}))
			for _, cv := range f["calls"].([]any) {
				expect(kind+".calls", cv.(map[string]any), callKeys)
			}
			continue
		}
		chainKeys := map[string]string{
			"target": str, "attempts": arr, "attempts_omitted": num, "failed": num, "found": "string|null", "wasted_ns": num,
		}
		if _, ok := f["dir_checks"]; ok {
			chainKeys["dir_checks"] = num // an open chain's, when not 0
			sawDirChecks = true
		}
		if _, ok := f["via_cache"]; ok {
			chainKeys["via_cache"] = str // an open chain's found through ld.so's cache
			sawVia = true
		}
		if _, ok := f["variants"]; ok {
			chainKeys["variants"], chainKeys["variant_misses"] = arr, num
			sawVariants = true
		}
		expect(kind, f, with(chainKeys))
		for _, av := range f["attempts"].([]any) {
			a := av.(map[string]any)
			want := map[string]string{"path": str, "errno": num, "error": str, "ns": num, "fallback": boo}
			if _, ok := a["syscall"]; ok || kind == string(trace.KindFailedStatProbes) {
				want["syscall"] = str // open and lookup chains only
			}
			expect(kind+".attempts", a, want)
		}
		sawNullFound = sawNullFound || f["found"] == nil
	}
	for _, ki := range trace.Kinds {
		if !kinds[string(ki.Kind)] {
			t.Errorf("no %s finding in the sample", ki.Kind)
		}
	}
	if !sawNullFound {
		t.Error("found: no null for a chain without a winner")
	}
	if !sawDirChecks {
		t.Error("dir_checks: absent from a chain that has them")
	}
	if !sawVia {
		t.Error("via_cache: absent from a chain that has it")
	}
	if !sawVariants {
		t.Error("variants: absent from a chain that has them")
	}
}

// TestJSONEmptyArrays checks that empty and nil lists are [] and never null.
func TestJSONEmptyArrays(t *testing.T) {
	r := &trace.Result{
		Processes: []*trace.Process{{Pid: 1}},
		Findings: []trace.Finding{
			{Kind: trace.KindDuplicateOpen, Pid: 1},
			{Kind: trace.KindFailedOpenProbes, Pid: 1},
		},
	}
	var out, buf bytes.Buffer
	if err := JSON(&out, r); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&buf, out.Bytes()); err != nil {
		t.Fatal(err)
	}
	// Only found (no winner) and exit_code (not exited) may be null.
	nulls := regexp.MustCompile(`"([a-z_]+)":null`)
	for _, m := range nulls.FindAllStringSubmatch(buf.String(), -1) {
		if m[1] != "found" && m[1] != "exit_code" {
			t.Errorf("unexpected null: %s", m[0])
		}
	}
	for _, key := range []string{`"command":[]`, `"argv":[]`, `"opens":[]`, `"path_opens":[]`, `"special_opens":[]`,
		`"failed_opens":[]`, `"execs":[]`, `"paths":[]`, `"calls":[]`, `"attempts":[]`} {
		if !bytes.Contains(buf.Bytes(), []byte(key)) {
			t.Errorf("output lacks %s", key)
		}
	}
}

// A file's syscalls come from its exact kinds: past the calls kept (the
// first few hundred), a kind used only later must still be listed.
func TestJSONSyscallsFromKinds(t *testing.T) {
	f := &trace.FileOpens{Path: "/f", Count: 600,
		Kinds: []trace.CallKind{{Syscall: trace.SysOpen, Count: 300}, {Syscall: trace.SysOpenat2, Count: 300}},
		Calls: []trace.OpenCall{{Syscall: trace.SysOpen, Ret: 3, Path: "/f"}}, CallsOmitted: 599}
	r := &trace.Result{Processes: []*trace.Process{{Pid: 1, Opens: []*trace.FileOpens{f}}}}
	var buf bytes.Buffer
	if err := JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Processes []struct {
			Opens []struct {
				Syscalls []string `json:"syscalls"`
			} `json:"opens"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.Processes[0].Opens[0].Syscalls; !slices.Equal(got, []string{"open", "openat2"}) {
		t.Errorf("syscalls %q, want [open openat2]", got)
	}
}

func TestNilResult(t *testing.T) {
	for name, f := range map[string]func(*bytes.Buffer) error{
		"Text":     func(b *bytes.Buffer) error { return Text(b, nil) },
		"JSON":     func(b *bytes.Buffer) error { return JSON(b, nil) },
		"Markdown": func(b *bytes.Buffer) error { return Markdown(b, nil) },
	} {
		if err := f(new(bytes.Buffer)); err == nil {
			t.Errorf("%s(nil) did not fail", name)
		}
	}
}

// TestJSONWasteAndGroups: wasted_ns is exactly the sum over the findings;
// groups are ranked by wasted_ns, and each names findings of its kind,
// program and subject that add up to it.
func TestJSONWasteAndGroups(t *testing.T) {
	var out bytes.Buffer
	if err := JSON(&out, sampleResult()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		WastedNs       uint64  `json:"wasted_ns"`
		CPUNs          int64   `json:"cpu_ns"`
		WastedShareCPU float64 `json:"wasted_share_cpu"`
		Findings       []struct {
			Kind     string `json:"kind"`
			Comm     string `json:"comm"`
			WastedNs uint64 `json:"wasted_ns"`
		} `json:"findings"`
		Groups []struct {
			Kind       string `json:"kind"`
			Program    string `json:"program"`
			WastedNs   uint64 `json:"wasted_ns"`
			Count      int    `json:"count"`
			Suggestion string `json:"suggestion"`
			Findings   []int  `json:"findings"`
		} `json:"groups"`
		WasteByKind []struct {
			Kind     string `json:"kind"`
			WastedNs uint64 `json:"wasted_ns"`
		} `json:"waste_by_kind"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var sum, byKind, byGroup uint64
	for _, f := range doc.Findings {
		sum += f.WastedNs
	}
	for _, k := range doc.WasteByKind {
		byKind += k.WastedNs
	}
	if doc.WastedNs != sum || byKind != sum || sum == 0 {
		t.Errorf("wasted_ns %d, by kind %d, findings sum %d", doc.WastedNs, byKind, sum)
	}
	if doc.CPUNs != 540e6 || doc.WastedShareCPU != float64(sum)/540e6 {
		t.Errorf("cpu_ns %d, wasted_share_cpu %v: want 540ms and %d ns of it", doc.CPUNs, doc.WastedShareCPU, sum)
	}
	seen := map[int]bool{}
	for i, g := range doc.Groups {
		if g.Suggestion == "" {
			t.Errorf("group %d (%s %s) has no suggestion", i, g.Kind, g.Program)
		}
		if i > 0 && g.WastedNs > doc.Groups[i-1].WastedNs {
			t.Errorf("group %d (%d ns) ranked after one of %d ns", i, g.WastedNs, doc.Groups[i-1].WastedNs)
		}
		var w uint64
		for _, j := range g.Findings {
			f := doc.Findings[j]
			if f.Kind != g.Kind || f.Comm != g.Program || seen[j] {
				t.Errorf("group %d names finding %d (%s %s) twice or of another group", i, j, f.Kind, f.Comm)
			}
			seen[j] = true
			w += f.WastedNs
		}
		if w != g.WastedNs || g.Count != len(g.Findings) {
			t.Errorf("group %d: %d ns over %d findings, says %d ns and %d", i, w, len(g.Findings), g.WastedNs, g.Count)
		}
		byGroup += w
	}
	if len(seen) != len(doc.Findings) || byGroup != sum {
		t.Errorf("groups cover %d of %d findings, %d of %d ns", len(seen), len(doc.Findings), byGroup, sum)
	}
}

// TestJSONListsFailedStart: when the command's own exec failed
// (start_errno), the process that tried, once's forked copy, is in
// processes with that execve, whatever --processes says: it has no
// finding and no file, but it is what the report is about.
func TestJSONListsFailedStart(t *testing.T) {
	for _, listed := range []string{"", trace.ProcessesFindings, trace.ProcessesAll} {
		r := &trace.Result{Command: []string{"./nosuch"}, ExitCode: 127, StartErrno: 2, ProcessesListed: listed,
			Execs: 1, FailedExecs: 1,
			Processes: []*trace.Process{{Key: trace.ImageKey{Pid: 7, Start: 1, ExecID: 1}, Comm: "once",
				Totals: trace.ProcessTotals{Execs: 1, FailedExecs: 1},
				Execs:  []trace.ExecAttempt{{Syscall: trace.SysExecve, Tid: 7, Filename: "./nosuch", Path: "/tmp/nosuch", Argv: []string{"./nosuch"}, Errno: 2}}}}}
		var buf bytes.Buffer
		if err := JSON(&buf, r); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Processes []struct {
				Execs []struct {
					Filename string `json:"filename"`
					Errno    int    `json:"errno"`
				} `json:"execs"`
			} `json:"processes"`
			Programs []struct {
				Listed int `json:"listed"`
			} `json:"programs"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Processes) != 1 || len(doc.Processes[0].Execs) != 1 || doc.Processes[0].Execs[0].Errno != 2 {
			t.Errorf("--processes %q: processes %+v, want the forked copy with its failed execve", listed, doc.Processes)
		}
		if len(doc.Programs) != 1 || doc.Programs[0].Listed != 1 {
			t.Errorf("--processes %q: programs %+v, want the copy listed", listed, doc.Programs)
		}
	}
}

// A process's detail_dropped is its own count of the detail the byte
// budgets kept out (trace.Process.DetailDropped), not always 0: the run's
// detail_dropped alone does not say which image lost it.
func TestJSONProcessDetailDropped(t *testing.T) {
	for _, n := range []int{0, 1, 18935} {
		r := &trace.Result{Counters: trace.Counters{DetailDropped: uint64(n)}, ProcessesListed: trace.ProcessesAll,
			Processes: []*trace.Process{{Key: trace.ImageKey{Pid: 7, Start: 1, ExecID: 1}, Comm: "go", DetailDropped: n,
				Totals: trace.ProcessTotals{Opens: 1}}}}
		var buf bytes.Buffer
		if err := JSON(&buf, r); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			DetailDropped int `json:"detail_dropped"`
			Processes     []struct {
				DetailDropped int `json:"detail_dropped"`
			} `json:"processes"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Processes) != 1 || doc.Processes[0].DetailDropped != n || doc.DetailDropped != n {
			t.Errorf("detail_dropped %d: run's %d, processes %+v", n, doc.DetailDropped, doc.Processes)
		}
	}
}
