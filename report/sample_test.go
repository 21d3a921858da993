package report

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/trace"
)

func TestMain(m *testing.M) {
	// tablewriter measures East Asian ambiguous-width runes (such as the µ
	// of "µs") as two columns in a CJK locale; pin the narrow width so the
	// golden files do not depend on the environment running the tests.
	twwidth.SetEastAsian(false)
	// Wall-clock times (event lines) in one zone, whatever the machine's.
	time.Local = time.UTC
	os.Exit(m.Run())
}

// Hostile strings used by the sample and by several tests.
const (
	hostileComm = "ev|l*_`\x1b[31m"
	hostileExe  = "/tmp/e\nvil\xff"
	hostileDir  = "/tmp/\x1b[31mred\nline\xff/```lib"
)

func strp(s string) *string { return &s }

// sampleResult builds the synthetic Result behind the golden files: a cp
// that opens /tmp/src three times (two syscalls, two spellings through a
// hard link), an env that searches PATH for true through six missing
// directories, and a process with hostile names that probes for a library
// and falls back to /bin/sh for a script. Counters are all non-zero.
func sampleResult() *trace.Result {
	dev := unix.Mkdev(8, 1)
	srcCalls := []trace.OpenCall{
		{Syscall: trace.SysOpenat, Tid: 1234, Fname: "/tmp/src", Dirfd: -100, Flags: unix.O_RDONLY | unix.O_CLOEXEC,
			Ret: 3, EnterNs: 10_000, Ns: 2_100, Path: "/tmp/src"},
		{Syscall: trace.SysOpenat, Tid: 1234, Fname: "src", Dirfd: -100, Flags: unix.O_RDONLY | unix.O_CLOEXEC,
			Ret: 4, EnterNs: 20_000, Ns: 1_800, Path: "/tmp/src"},
		{Syscall: trace.SysOpen, Tid: 1235, Fname: "/tmp/src-link", Dirfd: -100, Flags: unix.O_RDONLY,
			Ret: 5, EnterNs: 30_000, Ns: 1_234, Path: "/tmp/src-link"},
	}
	dstCalls := []trace.OpenCall{
		{Syscall: trace.SysOpenat, Tid: 1234, Fname: "/tmp/dst", Dirfd: -100,
			Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC, Mode: 0o644,
			Ret: 6, EnterNs: 40_000, Ns: 9_000, Path: "/tmp/dst"},
	}
	cp := &trace.Process{
		Key: trace.ImageKey{Pid: 1234, Start: 5_000_000_000, ExecID: 1},
		Pid: 1234, PPid: 1200, UID: 1000, CgroupID: 4242,
		Comm: "cp", ParentComm: "bash", Exe: "/usr/bin/cp",
		Argv:    []string{"cp", "/tmp/src", "/tmp/dst"},
		Threads: 2, Exited: true, ExitCode: 0,
		Opens: []*trace.FileOpens{
			{Dev: dev, Ino: 1234, FileType: trace.FileReg, Path: "/tmp/src", Paths: []string{"/tmp/src", "/tmp/src-link"}, Count: 3, Calls: srcCalls},
			{Dev: dev, Ino: 99, FileType: trace.FileReg, Path: "/tmp/dst", Paths: []string{"/tmp/dst"}, Count: 1, Calls: dstCalls},
		},
		// A device written to twice: listed apart, never a duplicate.
		SpecialOpens: []*trace.FileOpens{
			{Dev: 5, Ino: 4, FileType: trace.FileChr, Path: "/dev/null", Paths: []string{"/dev/null"}, Count: 2, Calls: []trace.OpenCall{
				{Syscall: trace.SysOpenat, Tid: 1234, Fname: "/dev/null", Dirfd: -100, Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC,
					Mode: 0o666, Ret: 8, EnterNs: 60_000, Ns: 900, Path: "/dev/null"},
				{Syscall: trace.SysOpenat, Tid: 1234, Fname: "/dev/null", Dirfd: -100, Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC,
					Mode: 0o666, Ret: 8, EnterNs: 70_000, Ns: 800, Path: "/dev/null"},
			}},
		},
		PathOpens: []*trace.FileOpens{
			{Dev: dev, Ino: 2, FileType: trace.FileDir, Path: "/tmp", Paths: []string{"/tmp"}, Count: 1, Calls: []trace.OpenCall{
				{Syscall: trace.SysOpenat2, Tid: 1234, Fname: "/tmp", Dirfd: -100, Flags: unix.O_PATH | unix.O_CLOEXEC,
					Resolve: 0x8, Ret: 7, EnterNs: 50_000, Ns: 700, Path: "/tmp"},
			}},
		},
		FailedOpens: []*trace.FailedOpen{
			{Fname: "/etc/cp.conf", Errno: int32(unix.ENOENT), Count: 2},
		},
		Execs: []trace.ExecAttempt{
			{Syscall: trace.SysExecve, Tid: 1234, Filename: "/usr/bin/cp", Argv: []string{"cp", "/tmp/src", "/tmp/dst"},
				Dirfd: -100, EnterNs: 1_000, Ns: 250_000},
		},
	}

	var envExecs []trace.ExecAttempt
	var envAttempts []trace.Attempt
	var wasted uint64
	for i, dir := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
		ns := uint64(4_000 + 500*i)
		wasted += ns
		envExecs = append(envExecs, trace.ExecAttempt{Syscall: trace.SysExecve, Tid: 1240,
			Filename: dir + "/true", Argv: []string{"true"}, Dirfd: -100, Errno: int32(unix.ENOENT),
			EnterNs: uint64(100_000 + 10_000*i), Ns: ns})
		envAttempts = append(envAttempts, trace.Attempt{Path: dir + "/true", Errno: int32(unix.ENOENT), Ns: ns})
	}
	envExecs = append(envExecs, trace.ExecAttempt{Syscall: trace.SysExecve, Tid: 1240,
		Filename: "/usr/bin/true", Argv: []string{"true"}, Dirfd: -100, EnterNs: 200_000, Ns: 120_000})
	envAttempts = append(envAttempts, trace.Attempt{Path: "/usr/bin/true", Ns: 120_000})
	env := &trace.Process{
		Key: trace.ImageKey{Pid: 1240, Start: 6_000_000_000, ExecID: 1},
		Pid: 1240, PPid: 1200, UID: 1000, CgroupID: 4242,
		Comm: "env", ParentComm: "bash", Exe: "/usr/bin/env",
		Argv:    []string{"env", "PATH=/a:/b:/c:/d:/e:/f:/usr/bin", "true"},
		Threads: 1,
		Execs:   envExecs,
	}

	libAttempts := []trace.Attempt{
		{Path: hostileDir + "/libz.so.1", Errno: int32(unix.ENOENT), Ns: 3_000},
		{Path: "/usr/local/lib/libz.so.1", Errno: int32(unix.EACCES), Ns: 2_500},
		{Path: "/usr/lib/libz.so.1", Ns: 6_000},
	}
	evil := &trace.Process{
		Key: trace.ImageKey{Pid: 1300, Start: 7_000_000_000, ExecID: 3},
		Pid: 1300, PPid: 1240, UID: 0,
		Comm: hostileComm, ParentComm: "env\u202e",
		// It renamed itself: a name that would close the parenthesis.
		LastComm:      "x) ppid 1 (\x1b[2J",
		Exe:           hostileExe,
		Argv:          []string{hostileExe, "a b", "", "say \"hi\""},
		ArgvTruncated: true,
		Threads:       1, Exited: true, ExitCode: 137,
		FailedOpens: []*trace.FailedOpen{
			{Fname: "libz.so.1", Base: hostileDir, Errno: int32(unix.ENOENT), Count: 1},
			{Fname: "/usr/local/lib/libz.so.1", Errno: int32(unix.EACCES), Count: 1},
		},
		Execs: []trace.ExecAttempt{
			{Syscall: trace.SysExecveat, Tid: 1300, Filename: "./run\xff.sh", Argv: []string{"./run\xff.sh"},
				FilenameTruncated: true, Dirfd: 3, Errno: int32(unix.ENOEXEC), EnterNs: 300_000, Ns: 15_000},
			{Syscall: trace.SysExecve, Tid: 1300, Filename: "/bin/sh", Argv: []string{"/bin/sh", "./run\xff.sh"},
				ArgvTruncated: true, Dirfd: -100, EnterNs: 320_000, Ns: 90_000},
		},
	}

	for _, p := range []*trace.Process{cp, env, evil} {
		withKinds(p.Opens)
		withKinds(p.PathOpens)
		withKinds(p.SpecialOpens)
		withTotals(p)
	}
	// A 32-bit program: its syscalls were not seen.
	legacy := &trace.Process{
		Key: trace.ImageKey{Pid: 1400, Start: 8_000_000_000, ExecID: 2},
		Pid: 1400, PPid: 1234, UID: 1000,
		Comm: "legacy32", ParentComm: "make", Exe: "/opt/old/bin/legacy32",
		Argv:    []string{"/opt/old/bin/legacy32"},
		Threads: 1, Exited: true, ExitCode: 0, Compat: true,
	}
	r := &trace.Result{
		Command:  []string{"make", "-j4", "all"},
		ExitCode: 2,
		Started:  time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Duration: 1_500 * time.Millisecond,
		CPU:      540 * time.Millisecond,
		Counters: trace.Counters{
			DroppedEvents: 3, EnterMapFull: 1, MissedEnter: 2, FnameTruncated: 4, FnameUnreadable: 5,
			PathTruncated: 6, PathUnresolved: 7, ArgvTruncated: 8, ArgvUnreadable: 9, DecodeErrors: 10,
			EventsReceived: 1234, CompatImages: 1,
		},
		Processes: []*trace.Process{cp, env, evil, legacy},
		Findings: []trace.Finding{
			{Kind: trace.KindFailedExecProbes, Key: env.Key, Pid: env.Pid, PPid: env.PPid, Comm: env.Comm,
				ParentComm: env.ParentComm,
				WastedNs:   wasted, ChainDetail: trace.ChainDetail{Target: "true", Attempts: envAttempts, Failed: 6, Found: strp("/usr/bin/true")}},
			{Kind: trace.KindExecShellFallback, Key: evil.Key, Pid: evil.Pid, PPid: evil.PPid, Comm: evil.Comm,
				LastComm: evil.LastComm, ParentComm: evil.ParentComm,
				WastedNs: 15_000, ChainDetail: trace.ChainDetail{Target: "./run\xff.sh", Attempts: []trace.Attempt{
					{Path: "./run\xff.sh", Errno: int32(unix.ENOEXEC), Ns: 15_000},
					{Path: "/bin/sh", Ns: 90_000},
				}, Failed: 1, Found: strp("/bin/sh")}},
			{Kind: trace.KindDuplicateOpen, Key: cp.Key, Pid: cp.Pid, PPid: cp.PPid, Comm: cp.Comm,
				ParentComm: cp.ParentComm, FileDetail: trace.FileDetail{Path: "/tmp/src", Paths: []string{"/tmp/src", "/tmp/src-link"}, Dev: dev, Ino: 1234, Count: 3, Calls: srcCalls}},
			{Kind: trace.KindFailedOpenProbes, Key: evil.Key, Pid: evil.Pid, PPid: evil.PPid, Comm: evil.Comm,
				LastComm: evil.LastComm, ParentComm: evil.ParentComm,
				WastedNs: 5_500, ChainDetail: trace.ChainDetail{Target: "libz.so.1", Attempts: libAttempts, Failed: 2, Found: strp("/usr/lib/libz.so.1")}},
		},
		Opens: 11, FailedOpens: 4, Execs: 10, FailedExecs: 7, Lookups: 14, FailedLookups: 9,
	}
	// Lookups: a shell's PATH search with stat, a file stat-ed three
	// times (the first counted in the kernel, not sent), one path missed
	// again and again.
	lookup := func(sc trace.Syscall, fname string, ret int32, ns uint64) trace.OpenCall {
		return trace.OpenCall{Syscall: sc, Tid: env.Pid, Fname: fname, Dirfd: -100, Ret: ret, Ns: ns, Path: fname}
	}
	r.Findings = append(r.Findings,
		trace.Finding{Kind: trace.KindFailedStatProbes, Key: env.Key, Pid: env.Pid, PPid: env.PPid, Comm: env.Comm,
			ParentComm: env.ParentComm, WastedNs: 2_100, ChainDetail: trace.ChainDetail{Target: "ls", Attempts: []trace.Attempt{
				{Path: "/a/ls", Errno: int32(unix.ENOENT), Syscall: trace.SysNewfstatat, Ns: 800},
				{Path: "/b\x1b[2J/ls", Errno: int32(unix.ENOENT), Syscall: trace.SysNewfstatat, Ns: 700},
				{Path: "/c/ls", Errno: int32(unix.EACCES), Syscall: trace.SysAccess, Ns: 600},
				{Path: "/usr/bin/ls", Syscall: trace.SysNewfstatat, Ns: 1_500},
			}, Failed: 3, Found: strp("/usr/bin/ls")}},
		trace.Finding{Kind: trace.KindDuplicateStat, Key: env.Key, Pid: env.Pid, PPid: env.PPid, Comm: env.Comm,
			ParentComm: env.ParentComm, WastedNs: 1_900, FileDetail: trace.FileDetail{Path: "/usr/bin/ls", Paths: []string{"/usr/bin/ls"},
				Dev: dev, Ino: 4321, Count: 3, Calls: []trace.OpenCall{
					lookup(trace.SysNewfstatat, "/usr/bin/ls", 0, 1_000), lookup(trace.SysStatx, "/usr/bin/ls", 0, 900)},
				Kinds: []trace.CallKind{{Syscall: trace.SysNewfstatat, Count: 1}, {Syscall: trace.SysStatx, Flags: unix.AT_SYMLINK_NOFOLLOW, Count: 1}}}},
		trace.Finding{Kind: trace.KindRepeatedMiss, Key: env.Key, Pid: env.Pid, PPid: env.PPid, Comm: env.Comm,
			ParentComm: env.ParentComm, WastedNs: 4_000, FileDetail: trace.FileDetail{Path: "/etc/app\n.conf", Errno: int32(unix.ENOENT),
				Count: 5, Calls: []trace.OpenCall{lookup(trace.SysAccess, "/etc/app\n.conf", -2, 1_000), lookup(trace.SysOpenat, "/etc/app\n.conf", -2, 1_000)},
				CallsOmitted: 3, Kinds: []trace.CallKind{{Syscall: trace.SysAccess, Count: 2}, {Syscall: trace.SysOpenat, Flags: unix.O_RDONLY | unix.O_CLOEXEC, Count: 3}}}},
	)
	r.Waste = trace.TotalsOf(r.Findings)
	return r
}

// withKinds fills each file's Kinds from its calls, as the collector's
// State does.
func withKinds(files []*trace.FileOpens) {
	for _, f := range files {
		for _, c := range f.Calls {
			i := slices.IndexFunc(f.Kinds, func(k trace.CallKind) bool {
				return k.Syscall == c.Syscall && k.Flags == c.Flags
			})
			if i < 0 {
				f.Kinds = append(f.Kinds, trace.CallKind{Syscall: c.Syscall, Flags: c.Flags})
				i = len(f.Kinds) - 1
			}
			f.Kinds[i].Count++
		}
	}
}

// withTotals sets p.Totals from its lists, as the engine counts them.
func withTotals(p *trace.Process) {
	var t trace.ProcessTotals
	type fileID struct{ dev, ino uint64 }
	files := map[fileID]bool{}
	for _, group := range [][]*trace.FileOpens{p.Opens, p.PathOpens, p.SpecialOpens} {
		for _, f := range group {
			t.Opens += f.Count
			files[fileID{f.Dev, f.Ino}] = true
		}
	}
	for _, f := range p.Opens {
		if f.Count > 1 {
			t.DupFiles++
		}
	}
	for _, f := range p.FailedOpens {
		t.FailedOpens += f.Count
	}
	t.Opens += t.FailedOpens
	t.Files = len(files)
	t.Execs = len(p.Execs)
	for _, e := range p.Execs {
		if e.Errno != 0 {
			t.FailedExecs++
		}
	}
	p.Totals = t
}
