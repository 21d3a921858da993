package trace

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactArg(t *testing.T) {
	tests := []struct{ in, want string }{
		// The first 12 hex digits of sha256 of the bytes.
		{"", "sha256:e3b0c44298fc"},
		{"abc", "sha256:ba7816bf8f01"},
		{"--token=s3cret", RedactArg("--token=s3cret")},
	}
	for _, tc := range tests {
		got := RedactArg(tc.in)
		if got != tc.want {
			t.Errorf("RedactArg(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !strings.HasPrefix(got, RedactPrefix) || len(got) != len(RedactPrefix)+12 {
			t.Errorf("RedactArg(%q) = %q: not the prefix and 12 hex digits", tc.in, got)
		}
		if tc.in != "" && strings.Contains(got, tc.in) {
			t.Errorf("RedactArg(%q) = %q shows the argument", tc.in, got)
		}
	}
	if RedactArg("a") == RedactArg("b") {
		t.Error("two arguments redact alike")
	}
}

func TestRedactCommand(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"nil", nil, nil},
		{"empty", []string{}, []string{}},
		{"the program is kept", []string{"curl"}, []string{"curl"}},
		{"every argument redacted", []string{"curl", "-H", "Authorization: x"}, []string{"curl", RedactArg("-H"), RedactArg("Authorization: x")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := slices.Clone(tc.in)
			got := RedactCommand(tc.in)
			if !slices.Equal(got, tc.want) || (tc.in == nil && got != nil) {
				t.Errorf("RedactCommand(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !slices.Equal(tc.in, orig) {
				t.Errorf("RedactCommand changed its argument: %q", tc.in)
			}
			inPlace := slices.Clone(tc.in)
			RedactArgv(inPlace)
			if !slices.Equal(inPlace, tc.want) {
				t.Errorf("RedactArgv(%q) = %q, want %q", tc.in, inPlace, tc.want)
			}
		})
	}
}

func TestSameArg(t *testing.T) {
	tests := []struct {
		arg, s string
		want   bool
	}{
		{"/b/script", "/b/script", true},
		{RedactArg("/b/script"), "/b/script", true},
		{RedactArg("/b/other"), "/b/script", false},
		{"/b/scrip", "/b/script", false},
		{RedactPrefix, "", false},
		{RedactArg(""), "", true},
		{"", "", true},
	}
	for _, tc := range tests {
		if got := SameArg(tc.arg, tc.s); got != tc.want {
			t.Errorf("SameArg(%q, %q) = %v, want %v", tc.arg, tc.s, got, tc.want)
		}
	}
}

func TestSyscallString(t *testing.T) {
	tests := []struct {
		s    Syscall
		want string
	}{
		{SysUnknown, "unknown"},
		{SysOpen, "open"},
		{SysOpenat, "openat"},
		{SysOpenat2, "openat2"},
		{SysCreat, "creat"},
		{SysExecve, "execve"},
		{SysExecveat, "execveat"},
		{SysIoUringOpenat, "io_uring_openat"},
		{SysIoUringOpenat2, "io_uring_openat2"},
		{SysNewfstatat, "newfstatat"},
		{SysStatx, "statx"},
		{SysStat, "stat"},
		{SysLstat, "lstat"},
		{SysAccess, "access"},
		{SysFaccessat, "faccessat"},
		{SysFaccessat2, "faccessat2"},
		{SysMkdir, "mkdir"},
		{SysMkdirat, "mkdirat"},
		{SysIoUringStatx, "io_uring_statx"},
		{SysIoUringStatx + 1, "unknown"},
		{255, "unknown"},
	}
	for _, tc := range tests {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("Syscall(%d).String() = %q, want %q", tc.s, got, tc.want)
		}
	}
	// The values are enum syscall_kind's in bpf/once.h: fixed.
	for s := SysUnknown; s < 255; s++ {
		if s.IsLookup() != ((s >= SysNewfstatat && s <= SysFaccessat2) || s == SysIoUringStatx) {
			t.Errorf("Syscall(%d).IsLookup() = %v", s, s.IsLookup())
		}
		if s.IsMade() != (s == SysMkdir || s == SysMkdirat) {
			t.Errorf("Syscall(%d).IsMade() = %v", s, s.IsMade())
		}
	}
	if SysOpen != 1 || SysExecveat != 6 || SysIoUringOpenat2 != 8 || SysIoUringStatx != 18 {
		t.Errorf("the syscall values moved: open %d, execveat %d, io_uring_openat2 %d, io_uring_statx %d",
			SysOpen, SysExecveat, SysIoUringOpenat2, SysIoUringStatx)
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		code int32
		want int
	}{
		{0, 0},
		{1 << 8, 1},
		{127 << 8, 127},
		{255 << 8, 255},
		{9, 128 + 9},              // SIGKILL
		{0x80 | 11, 128 + 11},     // SIGSEGV, core dumped
		{15, 128 + 15},            // SIGTERM
		{2<<8 | 0x7f, 128 + 0x7f}, // the low bits rule
	}
	for _, tc := range tests {
		if got := ExitStatus(tc.code); got != tc.want {
			t.Errorf("ExitStatus(%#x) = %d, want %d", tc.code, got, tc.want)
		}
	}
}

func TestFileTypes(t *testing.T) {
	tests := []struct {
		t     uint16
		name  string
		apart bool
	}{
		{FileReg, "reg", false},
		{FileDir, "dir", false},
		{FileLnk, "lnk", false},
		{FileChr, "chr", true},
		{FileBlk, "blk", true},
		{FileFIFO, "fifo", true},
		{FileSock, "sock", true},
		{0, "", false},
		{0o170000, "", false},
	}
	for _, tc := range tests {
		if got := FileTypeName(tc.t); got != tc.name {
			t.Errorf("FileTypeName(%#o) = %q, want %q", tc.t, got, tc.name)
		}
		if got := FileApart(tc.t); got != tc.apart {
			t.Errorf("FileApart(%#o) = %v, want %v", tc.t, got, tc.apart)
		}
	}
}

func TestStatusHas(t *testing.T) {
	tests := []struct {
		s, b Status
		want bool
	}{
		{0, StPathTruncated, false},
		{StPathTruncated, StPathTruncated, true},
		{StPathTruncated | StUntimed, StUntimed, true},
		{StPathTruncated | StUntimed, StPathTruncated | StUntimed, true},
		{StPathTruncated, StPathTruncated | StUntimed, false},
		{StSeenBefore, 0, true},
	}
	for _, tc := range tests {
		if got := tc.s.Has(tc.b); got != tc.want {
			t.Errorf("Status(%#x).Has(%#x) = %v, want %v", tc.s, tc.b, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	task := Task{Pid: 10, Tid: 11, PPid: 1, UID: 1000, Start: 500, ExecID: 3, CgroupID: 9, Comm: "cp"}
	if got, want := task.Image(), (ImageKey{Pid: 10, Start: 500, ExecID: 3}); got != want {
		t.Errorf("Image() = %+v, want %+v", got, want)
	}
	if got, want := task.Proc(), (ProcKey{Pid: 10, Start: 500}); got != want {
		t.Errorf("Proc() = %+v, want %+v", got, want)
	}
	if got := task.Image().Proc(); got != task.Proc() {
		t.Errorf("Image().Proc() = %+v, want %+v", got, task.Proc())
	}
	// A reused pid is another process; a later exec another image of
	// the same process.
	reused, execd := task, task
	reused.Start, execd.ExecID = 900, 4
	if reused.Proc() == task.Proc() || execd.Image() == task.Image() || execd.Proc() != task.Proc() {
		t.Error("keys do not tell processes and images apart")
	}
}

func TestOpenRecordNs(t *testing.T) {
	for _, tc := range []struct{ enter, exit, want uint64 }{{100, 350, 250}, {7, 7, 0}} {
		o := OpenRecord{EnterNs: tc.enter, ExitNs: tc.exit}
		if got := o.Ns(); got != tc.want {
			t.Errorf("enter %d exit %d: Ns() = %d, want %d", tc.enter, tc.exit, got, tc.want)
		}
	}
}

func TestResultStack(t *testing.T) {
	r := &Result{Stacks: []Stack{{ID: 1, Stop: "a"}, {ID: 3, Stop: "b"}, {ID: 7, Stop: "c"}}}
	tests := []struct {
		id   StackID
		want string // Stop of the stack found, "" for none
	}{
		{1, "a"}, {3, "b"}, {7, "c"},
		{0, ""}, {2, ""}, {8, ""}, {StackNotKept, ""},
	}
	for _, tc := range tests {
		s := r.Stack(tc.id)
		got := ""
		if s != nil {
			got = s.Stop
			if s.ID != tc.id {
				t.Errorf("Stack(%d) gives stack %d", tc.id, s.ID)
			}
		}
		if got != tc.want {
			t.Errorf("Stack(%d) = %q, want %q", tc.id, got, tc.want)
		}
	}
	if (&Result{}).Stack(1) != nil {
		t.Error("a result without stacks gives one")
	}
	var _ StackSource = r
}
