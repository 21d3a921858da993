package strace

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The testdata/*.strace fixtures are real strace output made by
// testdata/regen.sh. Their pids and some paths are of the machine that made
// them, so the tests check structure and relations rather than absolute
// pids.

func parseFixture(t *testing.T, name string) []Call {
	t.Helper()
	calls, err := ParseFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("ParseFile(%s): %v", name, err)
	}
	if len(calls) == 0 {
		t.Fatalf("ParseFile(%s): no calls", name)
	}
	return calls
}

func parseString(t *testing.T, s string) []Call {
	t.Helper()
	calls, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatalf("Parse: %v\ninput:\n%s", err, s)
	}
	return calls
}

func filter(calls []Call, keep func(Call) bool) []Call {
	var out []Call
	for _, c := range calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func paths(calls []Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Path)
	}
	return out
}

func execs(calls []Call) []Call { return filter(calls, Call.IsExec) }

func TestFixtureEnvPath(t *testing.T) {
	// env PATH=/x1:/x2:/usr/bin true: env's execvp tries each entry.
	calls := parseFixture(t, "env_path.strace")
	ex := execs(calls)
	if got, want := paths(ex), []string{"/usr/bin/env", "/x1/true", "/x2/true", "/usr/bin/true"}; !slices.Equal(got, want) {
		t.Fatalf("execve paths = %q, want %q", got, want)
	}
	for i, c := range ex {
		wantErr := ""
		if i == 1 || i == 2 {
			wantErr = "ENOENT"
		}
		if c.Errno != wantErr || c.NoReturn || (wantErr == "" && c.Ret != 0) || (wantErr != "" && c.Ret != -1) {
			t.Errorf("execve %q: ret %d errno %q noreturn %v; want errno %q", c.Path, c.Ret, c.Errno, c.NoReturn, wantErr)
		}
		if c.Pid != ex[0].Pid || c.Tgid != c.Pid || c.Dirfd != AtFDCWD {
			t.Errorf("execve %q: pid %d tgid %d dirfd %d; want all in pid %d, AT_FDCWD", c.Path, c.Pid, c.Tgid, c.Dirfd, ex[0].Pid)
		}
	}
	if want := []string{"env", "PATH=/x1:/x2:/usr/bin", "true"}; !slices.Equal(ex[0].Argv, want) {
		t.Errorf("env argv = %q, want %q", ex[0].Argv, want)
	}
	if want := []string{"true"}; !slices.Equal(ex[1].Argv, want) {
		t.Errorf("/x1/true argv = %q, want %q", ex[1].Argv, want)
	}
}

func TestFixtureCp(t *testing.T) {
	calls := parseFixture(t, "cp.strace")
	var rel []Call
	for _, c := range calls {
		if c.Syscall != "openat" && c.Syscall != "execve" {
			t.Errorf("unexpected syscall %s at line %d", c.Syscall, c.Line)
		}
		if c.Line == 0 || !c.HasPath {
			t.Errorf("line %d: Line or HasPath not set: %+v", c.Line, c)
		}
		if !strings.HasPrefix(c.Path, "/") {
			rel = append(rel, c)
		}
	}
	// cp src dst: probe dst, open src for reading, create dst.
	if got, want := paths(rel), []string{"dst", "src", "dst"}; !slices.Equal(got, want) {
		t.Fatalf("relative opens = %q, want %q", got, want)
	}
	if rel[0].Errno != "ENOENT" || rel[1].Ret < 0 || rel[2].Ret < 0 {
		t.Errorf("results: %+v", rel)
	}
	if rel[2].Mode != "0644" {
		t.Errorf("dst mode = %q, want 0644", rel[2].Mode)
	}
	const oWronly, oCreat = 0x1, 0x40
	if bits, err := rel[2].FlagBits(); err != nil || bits&(oWronly|oCreat) != oWronly|oCreat {
		t.Errorf("dst flags %q = %#x, %v; want O_WRONLY|O_CREAT set", rel[2].Flags, bits, err)
	}
}

func TestFixturePythonSubprocess(t *testing.T) {
	// Python's subprocess.run(["true"]) vforks; the child searches PATH
	// itself, one execve per entry, while the parent's vfork is unfinished.
	calls := parseFixture(t, "python_subprocess.strace")
	root := calls[0].Pid
	vforks := filter(calls, func(c Call) bool { return c.Syscall == "vfork" })
	if len(vforks) != 1 || vforks[0].Pid != root || !vforks[0].Succeeded() {
		t.Fatalf("vfork calls = %+v; want one successful vfork by %d", vforks, root)
	}
	child := int(vforks[0].Ret)
	var failed, ok []Call
	for _, c := range execs(calls)[1:] {
		if c.Pid != child || c.Tgid != child {
			t.Errorf("execve %q in pid %d/tgid %d; want the vfork child %d", c.Path, c.Pid, c.Tgid, child)
		}
		if !slices.Equal(c.Argv, []string{"true"}) || filepath.Base(c.Path) != "true" {
			t.Errorf("execve %q argv %q; want a PATH candidate for true", c.Path, c.Argv)
		}
		if c.Failed() {
			failed = append(failed, c)
		} else {
			ok = append(ok, c)
		}
	}
	if len(failed) == 0 || len(ok) != 1 || !ok[0].Succeeded() {
		t.Fatalf("got %d failed and %d successful child execs; want some failures and one success", len(failed), len(ok))
	}
	for _, c := range failed {
		if c.Errno != "ENOENT" {
			t.Errorf("execve %q errno %q, want ENOENT", c.Path, c.Errno)
		}
	}
}

// oddName is the file name used by the odd_name fixtures.
const oddName = "a\", \"b) c\nd\x1be\xc3\xa9"

func TestFixtureOddName(t *testing.T) {
	for _, fixture := range []string{"odd_name.strace", "odd_name_default.strace"} {
		t.Run(fixture, func(t *testing.T) {
			calls := parseFixture(t, fixture)
			var got []Call
			for _, c := range calls {
				if strings.Contains(c.Path, "b) c") {
					got = append(got, c)
				}
			}
			want := []string{"dir/" + oddName, "dir/" + oddName, oddName, "dir/" + oddName + ".missing"}
			if fixture == "odd_name_default.strace" {
				want = []string{"dir/" + oddName, "dir/" + oddName + ".missing"}
			}
			if !slices.Equal(paths(got), want) {
				t.Fatalf("paths = %q, want %q", paths(got), want)
			}
			if last := got[len(got)-1]; last.Errno != "ENOENT" {
				t.Errorf("missing file: errno %q, want ENOENT", last.Errno)
			}
			// The opener's own argv carries the name too.
			if argv := calls[0].Argv; len(argv) < 2 || argv[1] != "openat:dir/"+oddName {
				t.Errorf("argv = %q", argv)
			}
			if fixture == "odd_name.strace" {
				if got[1].Syscall != "openat2" || got[1].Flags != "0x80000" {
					t.Errorf("openat2 call = %+v", got[1])
				}
				// dirfd:dir:NAME resolves NAME against the fd of "dir".
				if dirOpen := got[2]; dirOpen.Dirfd < 0 {
					t.Errorf("dirfd-relative open has dirfd %d", dirOpen.Dirfd)
				}
			}
		})
	}
}

func TestFixtureSpawnpFork(t *testing.T) {
	// env PATH=/x1:/x2:/usr/bin spawnp -fork true: spawnp forks (clone
	// without CLONE_THREAD), the child posix_spawnp's (clone3 with
	// CLONE_VM|CLONE_VFORK), and the grandchild probes PATH.
	calls := parseFixture(t, "spawnp_fork.strace")
	root := calls[0].Pid
	ex := execs(calls)
	if got, want := paths(ex), []string{"/usr/bin/env", "./spawnp", "/x1/true", "/x2/true", "/usr/bin/true"}; !slices.Equal(got, want) {
		t.Fatalf("exec paths = %q, want %q", got, want)
	}
	grandchild := ex[2].Pid
	if grandchild == root || ex[2].Tgid != grandchild {
		t.Errorf("PATH probes ran in pid %d tgid %d; want a separate process from %d", grandchild, ex[2].Tgid, root)
	}
	for _, c := range ex[2:4] {
		if c.Errno != "ENOENT" || c.Pid != grandchild {
			t.Errorf("probe %q: errno %q pid %d", c.Path, c.Errno, c.Pid)
		}
	}
	if !ex[4].Succeeded() || ex[4].Pid != grandchild {
		t.Errorf("final exec %+v; want success in %d", ex[4], grandchild)
	}
	clone3 := filter(calls, func(c Call) bool { return c.Syscall == "clone3" })
	if len(clone3) != 1 || int(clone3[0].Ret) != grandchild || clone3[0].Flags != "0x4100" {
		t.Errorf("clone3 = %+v; want one returning %d with flags 0x4100", clone3, grandchild)
	}
}

func TestFixtureThreadExec(t *testing.T) {
	// opener threads:1:exec:./exitonly execs from a non-leader thread.
	// strace shows the result under the leader's pid, announced either by
	// "<pid changed to N ...>" or by "+++ superseded by execve ... +++".
	for _, fixture := range []string{"thread_exec.strace", "thread_exec_unfinished.strace"} {
		t.Run(fixture, func(t *testing.T) {
			calls := parseFixture(t, fixture)
			root := calls[0].Pid
			ex := execs(calls)
			if len(ex) != 2 {
				t.Fatalf("execs = %+v; want 2", ex)
			}
			e := ex[1]
			if e.Path != "./exitonly" || !e.Succeeded() || e.Ret != 0 {
				t.Errorf("thread execve = %+v; want a successful ./exitonly", e)
			}
			if e.Pid == root || e.Tgid != root {
				t.Errorf("thread execve pid %d tgid %d; want a non-leader thread of %d", e.Pid, e.Tgid, root)
			}
			for _, c := range calls {
				if c.Syscall == "clone" && (!c.Succeeded() || !hasCloneThread(c.Flags)) {
					t.Errorf("clone at line %d: %+v", c.Line, c)
				}
			}
		})
	}
}

func TestFixtureOpenerAll(t *testing.T) {
	calls := parseFixture(t, "opener_all.strace")
	root := calls[0].Pid
	type key struct {
		syscall, path string
	}
	count := map[key]int{}
	var threadTids []int
	for _, c := range calls {
		switch c.Path {
		case "src", "new", "missing", ".", "./exitonly", "":
			if c.Syscall == "clone" || c.Syscall == "clone3" {
				continue
			}
			count[key{c.Syscall, c.Path}]++
			if c.Syscall == "openat" && c.Path == "src" && c.Flags == "0x80000" && c.Pid != root && c.Tgid == root {
				threadTids = append(threadTids, c.Pid)
			}
		}
	}
	want := map[key]int{
		{"open", "src"}: 1,
		// openat, opath, dirfd (relative to the dir fd), repeat:2,
		// threads:3 and the child's one.
		{"openat", "src"}:        1 + 1 + 1 + 2 + 3 + 1,
		{"openat2", "src"}:       1,
		{"creat", "new"}:         1,
		{"openat", "."}:          1,
		{"openat", "missing"}:    1,
		{"openat", "./exitonly"}: 1,
		{"execveat", ""}:         1,
	}
	if !reflect.DeepEqual(count, want) {
		t.Errorf("counts = %v\nwant %v", count, want)
	}
	slices.Sort(threadTids)
	if len(slices.Compact(threadTids)) != 3 {
		t.Errorf("threads:3 opens ran in tids %v; want 3 distinct non-leader threads", threadTids)
	}
	// child:openat:src runs in a new process that execs /proc/self/exe.
	for _, c := range execs(calls) {
		if c.Path == "/proc/self/exe" && (c.Tgid == root || !c.Succeeded()) {
			t.Errorf("child exec %+v; want a successful exec in a new process", c)
		}
		if c.Syscall == "execveat" {
			if c.Dirfd < 0 || c.Flags != "0x1000" || !slices.Equal(c.Argv, []string{"./exitonly"}) {
				t.Errorf("execveat = %+v; want AT_EMPTY_PATH on an fd", c)
			}
		}
	}
}

func TestParseSymbolicAndBracketPids(t *testing.T) {
	// strace's defaults (no -X raw, no -xx) and the "[pid N]" prefix used
	// when it writes to a terminal.
	in := `execve("/bin/x", ["x"], 0x7ffd4 /* 3 vars */) = 0
[pid  4242] openat(AT_FDCWD, "/etc/\"q\"\ttab", O_RDONLY|O_CLOEXEC) = 3
[pid  4242] openat(3</etc>, "rel", O_RDONLY) = -1 EACCES (Permission denied)
[pid  4243] clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|CLONE_THREAD|SIGCHLD) = 4244
`
	calls := parseString(t, in)
	if len(calls) != 4 {
		t.Fatalf("got %d calls, want 4", len(calls))
	}
	if calls[0].Pid != 0 || calls[1].Pid != 4242 {
		t.Errorf("pids %d, %d; want 0 and 4242", calls[0].Pid, calls[1].Pid)
	}
	if c := calls[1]; c.Dirfd != AtFDCWD || c.Path != "/etc/\"q\"\ttab" || c.Flags != "O_RDONLY|O_CLOEXEC" {
		t.Errorf("symbolic openat = %+v", c)
	}
	if _, err := calls[1].FlagBits(); err == nil {
		t.Error("FlagBits on symbolic flags: want an error")
	}
	if c := calls[2]; c.Dirfd != 3 || c.Errno != "EACCES" || c.Ret != -1 {
		t.Errorf("openat with -y dirfd = %+v", c)
	}
	if !hasCloneThread(calls[3].Flags) {
		t.Errorf("symbolic CLONE_THREAD not recognised in %q", calls[3].Flags)
	}
}

func TestParseUnfinished(t *testing.T) {
	in := `100 openat(-100, "a", 0x80000 <unfinished ...>
101 openat(-100, "b, \") c", 0x80000) = 4
100 <... openat resumed>)       = 3
101 clone(child_stack=0x1, flags=0xd0f00 <unfinished ...>
100 openat(-100, "killed", 0 <unfinished ...>
101 <... clone resumed>, tls=0x2) = 102
100 +++ killed by SIGKILL +++
102 openat(-100, "eof", 0 <unfinished ...>
103 ???( <detached ...>
104 read(0, "x", 1) = ?
105 openat(-100, "weird", 0) = -1 (errno 530)
106 openat2(-100, "h", {flags=0x241, mode=0600, resolve=0x8}, 24) = 5
107 execve("/b", ["a\x31", "b"...], 0x1 /* 2 vars */) = -1 E2BIG (Argument list too long)
107 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---
107 +++ exited with 0 +++
[ Process PID=108 runs in 32 bit mode. ]
`
	calls := parseString(t, in)
	byPath := map[string]Call{}
	for _, c := range calls {
		byPath[c.Syscall+":"+c.Path] = c
	}
	if len(calls) != 9 {
		t.Fatalf("got %d calls (%+v); want 9 without the ??? placeholder", len(calls), calls)
	}
	// Entry order is kept even though "a" completed after "b".
	if calls[0].Path != "a" || calls[1].Path != "b, \") c" {
		t.Errorf("order: %q, %q", calls[0].Path, calls[1].Path)
	}
	if c := byPath["openat:a"]; c.Ret != 3 || c.NoReturn || c.Line != 1 || c.Flags != "0x80000" {
		t.Errorf("resumed openat = %+v", c)
	}
	if c := calls[2]; c.Syscall != "clone" || c.Ret != 102 || c.Flags != "0xd0f00" || len(c.Args) != 3 {
		t.Errorf("resumed clone = %+v", c)
	}
	if c := calls[3]; c.Path != "killed" || c.Tgid != 100 {
		t.Errorf("fourth call = %+v; want the killed openat of 100", c)
	}
	for _, p := range []string{"openat:killed", "openat:eof", "read:"} {
		if c := byPath[p]; !c.NoReturn || c.Succeeded() {
			t.Errorf("%s: NoReturn %v; want a call without return value", p, c.NoReturn)
		}
	}
	if c := byPath["openat:eof"]; c.Tgid != 101 || c.Pid != 102 {
		t.Errorf("thread 102: pid %d tgid %d; want tgid 101", c.Pid, c.Tgid)
	}
	if c := byPath["openat:weird"]; c.Errno != "errno 530" || !c.Failed() {
		t.Errorf("unnamed errno = %+v", c)
	}
	if c := byPath["openat2:h"]; c.Flags != "0x241" || c.Mode != "0600" || c.Dirfd != AtFDCWD {
		t.Errorf("openat2 = %+v", c)
	}
	if c := byPath["execve:/b"]; !slices.Equal(c.Argv, []string{"a1", "b"}) || c.Errno != "E2BIG" {
		t.Errorf("execve = %+v", c)
	}
}

func TestParsePidChangedWithoutSupersededLine(t *testing.T) {
	// With -qqq strace drops the "superseded" line; the pid change marker
	// alone must be enough to join the execve.
	in := `10 clone(child_stack=0x1, flags=0xd0f00) = 11
11 execve("/x", ["/x"], 0x1 /* 1 var */ <pid changed to 10 ...>
10 <... execve resumed>) = 0
10 openat(-100, "after", 0) = 3
`
	calls := parseString(t, in)
	if len(calls) != 3 {
		t.Fatalf("got %d calls; want 3", len(calls))
	}
	if c := calls[1]; c.Pid != 11 || c.Tgid != 10 || !c.Succeeded() {
		t.Errorf("execve = %+v; want success by thread 11 of 10", c)
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"resumed without entry": "5 <... openat resumed>) = 3\n",
		"garbage":               "5 this is not strace\n",
		"unterminated":          "5 openat(-100, \"x\", 0\n",
		"no return value":       "5 openat(-100, \"x\", 0)\n",
		"bad escape":            "5 openat(-100, \"\\q\", 0) = 3\n",
		"bad return":            "5 openat(-100, \"x\", 0) = what\n",
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("%s: Parse(%q) succeeded; want an error", name, in)
		}
	}
}

func TestDecodeString(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`""`, "", true},
		{`"plain"`, "plain", true},
		{`"\x2f\x61\x0a\x1b\xff"`, "/a\n\x1b\xff", true},
		{`"\33e\303\251"`, "\x1be\xc3\xa9", true},
		{`"\0012"`, "\x012", true}, // three octal digits, then a literal 2
		{`"\1"`, "\x01", true},
		{`"a\"b\\c"`, `a"b\c`, true},
		{`"\t\n\v\f\r"`, "\t\n\v\f\r", true},
		{`"trunc"...`, "trunc", true},
		{`NULL`, "", false},
		{`0x7ffd1234`, "", false},
	} {
		got, ok, err := decodeString(tc.in)
		if err != nil || got != tc.want || ok != tc.ok {
			t.Errorf("decodeString(%s) = %q, %v, %v; want %q, %v", tc.in, got, ok, err, tc.want, tc.ok)
		}
	}
	for _, in := range []string{`"open`, `"\x"`, `"a"b`, `"\9"`} {
		if _, _, err := decodeString(in); err == nil {
			t.Errorf("decodeString(%s): want an error", in)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	args, end := splitArgs(`3, "a, (b)\"", [1, 2], {x=[3, 4]} => {y=5}, 0x1 /* a, b */) = 0`)
	want := []string{"3", `"a, (b)\""`, "[1, 2]", "{x=[3, 4]} => {y=5}", "0x1 /* a, b */"}
	if !slices.Equal(args, want) || end < 0 {
		t.Errorf("splitArgs = %q (end %d), want %q", args, end, want)
	}
	if args, end := splitArgs(``); len(args) != 0 || end != -1 {
		t.Errorf("splitArgs(empty) = %q, %d", args, end)
	}
}

func TestFlagBits(t *testing.T) {
	c := Call{Syscall: "clone", Flags: "0x1200000|17"}
	if bits, err := c.FlagBits(); err != nil || bits != 0x1200011 {
		t.Errorf("FlagBits(%q) = %#x, %v", c.Flags, bits, err)
	}
	if _, err := (Call{Syscall: "execve"}).FlagBits(); err == nil {
		t.Error("FlagBits without flags: want an error")
	}
}

// TestParseStatxOfDescriptor: statx of a descriptor is no lookup, whether
// strace prints its flags "0x1000" or, with AT_STATX_SYNC_AS_STAT (0)
// printed as nothing, "|0x1000" (Debian 12's strace under -X raw).
func TestParseStatxOfDescriptor(t *testing.T) {
	calls := parseString(t, `100 statx(18, "", |0x1000, 0xfff, {stx_mask=0x1fff, stx_attributes=0, stx_mode=0100644, stx_size=19, ...}) = 0
100 statx(18, "", 0x1000, 0xfff, {stx_mask=0x1fff, stx_attributes=0, stx_mode=0100644, stx_size=19, ...}) = 0
100 statx(-100, "/tmp", |0x100, 0xfff, {stx_mask=0x1fff, stx_attributes=0, stx_mode=040777, stx_size=4096, ...}) = 0
`)
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	for i, want := range []bool{false, false, true} {
		if got := calls[i].IsLookup(); got != want {
			t.Errorf("call %d (flags %q): IsLookup %v, want %v", i, calls[i].Flags, got, want)
		}
	}
}
