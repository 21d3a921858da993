package collector

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
	"golang.org/x/sys/unix"
)

func TestUserDev(t *testing.T) {
	for _, tc := range []struct{ major, minor uint32 }{
		{0, 0}, {8, 1}, {253, 3}, {0, 300}, {259, 65537}, {4095, 1<<20 - 1},
	} {
		kdev := tc.major<<20 | tc.minor
		if got, want := userDev(kdev), unix.Mkdev(tc.major, tc.minor); got != want {
			t.Errorf("userDev(%d:%d) = %#x, want %#x", tc.major, tc.minor, got, want)
		}
		// The tally keys go back to the kernel encoding.
		if back := kernelDev(userDev(kdev)); back != kdev {
			t.Errorf("kernelDev(userDev(%#x)) = %#x", kdev, back)
		}
	}
}

// TestSharedConstantsMatchHeader holds trace's copies of the constants
// bpf/once.h shares with Go (which detect and report read, and which
// cannot import bpf) to what bpf2go generated from the header.
func TestSharedConstantsMatchHeader(t *testing.T) {
	status := map[trace.Status]bpf.OnceEventStatus{
		trace.StFnameTruncated: bpf.OnceEventStatusST_FNAME_TRUNCATED, trace.StFnameUnreadable: bpf.OnceEventStatusST_FNAME_UNREADABLE,
		trace.StPathTruncated: bpf.OnceEventStatusST_PATH_TRUNCATED, trace.StPathUnresolved: bpf.OnceEventStatusST_PATH_UNRESOLVED,
		trace.StArgvTruncated: bpf.OnceEventStatusST_ARGV_TRUNCATED, trace.StArgvUnreadable: bpf.OnceEventStatusST_ARGV_UNREADABLE,
		trace.StFnameReread: bpf.OnceEventStatusST_FNAME_REREAD, trace.StPathIsBase: bpf.OnceEventStatusST_PATH_IS_BASE,
		trace.StTallyNext: bpf.OnceEventStatusST_TALLY_NEXT, trace.StUntimed: bpf.OnceEventStatusST_UNTIMED,
		trace.StCompat: bpf.OnceEventStatusST_COMPAT, trace.StSeenBefore: bpf.OnceEventStatusST_SEEN_BEFORE,
		trace.StArgsSent: bpf.OnceEventStatusST_ARGS_SENT, trace.StPathInternal: bpf.OnceEventStatusST_PATH_INTERNAL,
		trace.StStackKept: bpf.OnceEventStatusST_STACK_KEPT,
	}
	// Every status bit bpf2go generated has its trace constant above.
	gen, err := os.ReadFile("../bpf/once_bpfel.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(gen), "OnceEventStatusST_") - 1; n != len(status) { // ST_STACK is the decoder's
		t.Errorf("once.h has %d status bits, trace %d (and ST_STACK)", n, len(status))
	}
	for g, c := range status {
		if uint32(g) != uint32(c) {
			t.Errorf("status bit %#x in trace, %#x in once.h", g, c)
		}
	}
	files := map[uint16]bpf.OnceFileType{
		trace.FileFIFO: bpf.OnceFileTypeFILE_FIFO, trace.FileChr: bpf.OnceFileTypeFILE_CHR, trace.FileDir: bpf.OnceFileTypeFILE_DIR,
		trace.FileBlk: bpf.OnceFileTypeFILE_BLK, trace.FileReg: bpf.OnceFileTypeFILE_REG, trace.FileLnk: bpf.OnceFileTypeFILE_LNK,
		trace.FileSock: bpf.OnceFileTypeFILE_SOCK,
	}
	for g, c := range files {
		if uint32(g) != uint32(c) {
			t.Errorf("file type %#o in trace, %#o in once.h", g, c)
		}
	}
	// Every file system of enum generated_fs but GEN_FS_NONE has its
	// name, one trace.GeneratedFS knows, and fits the XST_FS bits.
	if n := strings.Count(string(gen), "OnceGeneratedFsGEN_FS_") - 1; n != len(generatedFSNames) {
		t.Errorf("once.h has %d generated file systems, the collector %d", n, len(generatedFSNames))
	}
	for v, name := range generatedFSNames {
		if !trace.GeneratedFS(name) || uint32(v)<<bpf.OnceOpenXstatusXST_FS_SHIFT&^uint32(bpf.OnceOpenXstatusXST_FS_MASK) != 0 {
			t.Errorf("generated_fs %d: %q, not a trace.GeneratedFS or past XST_FS_MASK", v, name)
		}
		if got := generatedFS(uint16(v) << bpf.OnceOpenXstatusXST_FS_SHIFT); got != name {
			t.Errorf("generatedFS of %d: %q, want %q", v, got, name)
		}
	}
	header := []bpf.OnceMissErrno{bpf.OnceMissErrnoMISS_ENOENT, bpf.OnceMissErrnoMISS_EACCES, bpf.OnceMissErrnoMISS_ENOTDIR,
		bpf.OnceMissErrnoMISS_ENAMETOOLONG, bpf.OnceMissErrnoMISS_ELOOP}
	if len(header) != len(trace.MissErrnos) {
		t.Errorf("trace.MissErrnos %v, once.h %v", trace.MissErrnos, header)
	}
	for _, e := range header {
		if !trace.IsMiss(int32(e)) {
			t.Errorf("errno %d is a miss in once.h, not in trace.IsMiss", e)
		}
	}
	// The kernel sends a found name's opens for longer than once watch
	// holds its chain, whose clock runs behind the kernel's by the
	// events' delay.
	if held := time.Duration(bpf.OnceProbeHoldPROBE_HELD_MS) * time.Millisecond; held < 2*detect.HeldFor {
		t.Errorf("the kernel holds a found name %v, once watch its chain %v: want at least twice that", held, detect.HeldFor)
	}
}

func record[T any](head *T, tail ...string) []byte {
	n := int(unsafe.Sizeof(*head))
	b := append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(head)), n)...)
	for _, s := range tail {
		b = append(b, s...)
	}
	return b
}

func TestDecode(t *testing.T) {
	open := bpf.OnceOpenEvent{
		Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN, Syscall: uint8(trace.SysOpenat), Status: uint16(trace.StPathTruncated)},
		Task: bpf.OnceTaskInfo{Pid: 10, Tid: 11, Ppid: 1, Uid: 1000, StartNs: 5, ExecId: 2, Comm: [16]uint8{'c', 'p'}},
		Ino:  42, Gen: 7, Dev: 8<<20 | 1, Ret: 3, Dirfd: -100, Flags: unix.O_RDONLY | unix.O_CLOEXEC,
		FnameLen: 3, PathLen: 9,
	}
	exec := bpf.OnceExecEvent{
		Hdr:      bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC, Syscall: uint8(trace.SysExecve)},
		Task:     bpf.OnceTaskInfo{Pid: 20, Tid: 20},
		Ret:      -2,
		FnameLen: 7, ArgsLen: 10,
	}
	image := bpf.OnceProcEvent{
		Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_IMAGE}, PathLen: 11, ExeDev: 259<<20 | 2,
	}
	tests := []struct {
		name  string
		rec   []byte
		check func(t *testing.T, ev *trace.Event)
		err   bool
	}{
		{"open", record(&open, "a\nb", "/tmp/a\nb\x1b"), func(t *testing.T, ev *trace.Event) {
			o := ev.Open
			// Cut (StPathTruncated): marked so that it can't pass for
			// an absolute path.
			if ev.Kind != trace.EventOpen || o.Fname != "a\nb" || o.Path != trace.PathCut+"/tmp/a\nb\x1b" || o.Ino != 42 || o.Gen != 7 ||
				o.Dev != unix.Mkdev(8, 1) || o.Ret != 3 || o.Syscall != trace.SysOpenat || ev.Task.Comm != "cp" ||
				o.Status != trace.StPathTruncated || ev.Task.Image() != (trace.ImageKey{Pid: 10, Start: 5, ExecID: 2}) {
				t.Errorf("decoded %+v %+v", ev.Task, o)
			}
		}, false},
		{"exec argv", record(&exec, "/a/true", "true\x00-x\x00\xff\x00"), func(t *testing.T, ev *trace.Event) {
			e := ev.Exec
			if e.Filename != "/a/true" || len(e.Argv) != 3 || e.Argv[2] != "\xff" || e.Ret != -2 {
				t.Errorf("decoded %+v", e)
			}
		}, false},
		{"image", record(&image, "/usr/bin/cp"), func(t *testing.T, ev *trace.Event) {
			if ev.Kind != trace.EventImage || ev.Proc.Exe != "/usr/bin/cp" || ev.Proc.ExeDev != unix.Mkdev(259, 2) {
				t.Errorf("decoded %+v", ev.Proc)
			}
		}, false},
		{"short header", []byte{1, 0}, nil, true},
		{"short open", record(&open)[:40], nil, true},
		{"strings past the end", record(&open, "abc", "/tm"), nil, true},
		{"unknown kind", record(&bpf.OnceEventHeader{Kind: 99}), nil, true},
		{"empty", nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ev trace.Event
			err := Decode(tc.rec, &ev)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if tc.check != nil {
				tc.check(t, &ev)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	open := bpf.OnceOpenEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN}, FnameLen: 2, PathLen: 3}
	exec := bpf.OnceExecEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC}, FnameLen: 1, ArgsLen: 4}
	f.Add(record(&open, "ab", "/ab"))
	f.Add(record(&exec, "x", "a\x00b\x00"))
	args := exec
	args.Hdr.Kind = bpf.OnceEventKindEVENT_EXEC_ARGS
	f.Add(record(&args, "x", "a\x00b\x00"))
	f.Add(uringSubmitRecord(1, trace.SysIoUringOpenat, "name"))
	f.Add(uringCompleteRecord(1, 10, 3, trace.StPathTruncated, "/path"))
	f.Add([]byte{5, 0, 0, 0})
	f.Add(stacked(record(&open, "ab", "/ab"), testTail(2, 5), []uint64{1, 2}, []byte("12345")))
	f.Add(stacked(record(&args, "x", "a\x00b\x00"), testTail(0, 3), nil, []byte("abc")))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev trace.Event
		_ = Decode(b, &ev)
	})
}

func TestLockdownError(t *testing.T) {
	for state, wantErr := range map[string]bool{
		"[none] integrity confidentiality\n": false,
		"none [integrity] confidentiality\n": false,
		"none integrity [confidentiality]\n": true,
	} {
		err := lockdownError(state)
		if (err != nil) != wantErr {
			t.Errorf("%q: %v", state, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "lockdown") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("message %q: want one line naming lockdown", err)
		}
	}
}

// TestPidNamespaceError: once run in a pid namespace of its own follows
// nothing (the kernel side keys tasks by the initial namespace's pids,
// once knows its command's only in its own): refused, on one line naming
// the namespace and what to do, not a run that "traced nothing". The
// initial namespace, or one that can't be told, passes.
func TestPidNamespaceError(t *testing.T) {
	for _, tc := range []struct {
		ino     uint64
		wantErr bool
	}{
		{procPidInitIno, false},
		{0, false},
		{4026532175, true},
	} {
		err := pidNamespaceError(tc.ino)
		if (err != nil) != tc.wantErr {
			t.Errorf("pid:[%d]: %v", tc.ino, err)
		}
		var pe *PreflightError
		if err != nil && (!errors.As(err, &pe) || !strings.Contains(err.Error(), "pid:[4026532175]") ||
			!strings.Contains(err.Error(), "hostPID") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("message %q: want one line naming the namespace and hostPID", err)
		}
	}
	for _, tc := range []struct {
		ino       uint64
		selfKnown bool
		want      []string // "" : no warning
		not       string
	}{
		{4026532175, false, []string{"pid:[4026532175]", "--pid takes those", "its own calls are traced"}, ""},
		{4026532175, true, []string{"pid:[4026532175]", "--pid takes those", "lower bounds"}, "own calls"},
		{procPidInitIno, true, nil, ""},
		{procPidInitIno, false, nil, ""},
	} {
		w := pidNamespaceWarning(tc.ino, tc.selfKnown)
		if (w == "") != (tc.want == nil) || (tc.not != "" && strings.Contains(w, tc.not)) {
			t.Errorf("pid:[%d] self known %v: watch's warning %q", tc.ino, tc.selfKnown, w)
		}
		for _, s := range tc.want {
			if !strings.Contains(w, s) {
				t.Errorf("pid:[%d] self known %v: watch's warning %q lacks %q", tc.ino, tc.selfKnown, w, s)
			}
		}
	}
	for _, tc := range []struct {
		ino     uint64
		wantErr bool
	}{
		{procPidInitIno, false},
		{0, false},
		{4026532175, true},
	} {
		err := stacksPidNamespaceError(tc.ino)
		var pe *PreflightError
		if (err != nil) != tc.wantErr || err != nil && (!errors.As(err, &pe) || !strings.Contains(err.Error(), "--stacks") ||
			!strings.Contains(err.Error(), "hostPID") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("--stacks in pid:[%d]: %v", tc.ino, err)
		}
	}
	// This test's own namespace: the initial one, as make test runs.
	if err := checkPidNamespace(); err != nil {
		t.Logf("this process: %v", err)
	}
}

// TestUserNamespaceError: in a user namespace of its own once holds
// every capability there and none the kernel asks for: refused on one
// line naming the namespace, not an EPERM from the first map create
// with a hint about RLIMIT_MEMLOCK. The initial namespace, or one that
// can't be told, passes.
func TestUserNamespaceError(t *testing.T) {
	for _, tc := range []struct {
		ino     uint64
		wantErr bool
	}{
		{procUserInitIno, false},
		{0, false},
		{4026532180, true},
	} {
		err := userNamespaceError(tc.ino)
		if (err != nil) != tc.wantErr {
			t.Errorf("user:[%d]: %v", tc.ino, err)
		}
		var pe *PreflightError
		if err != nil && (!errors.As(err, &pe) || !strings.Contains(err.Error(), "user:[4026532180]") ||
			strings.Contains(err.Error(), "MEMLOCK") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("message %q: want one line naming the namespace", err)
		}
	}
}
