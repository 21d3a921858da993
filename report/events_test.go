package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/trace"
)

// An exec's --events line shows the name as passed and, when it reads
// otherwise, the file tried, as an open's shows the file opened.
func TestEventsExecResolved(t *testing.T) {
	for _, c := range []struct {
		name string
		r    trace.ExecRecord
		want string
	}{
		{"absolute", trace.ExecRecord{Filename: "/bin/ls", Argv: []string{"ls"}}, "/bin/ls [ls]"},
		{"relative to a dirfd", trace.ExecRecord{Syscall: trace.SysExecveat, Filename: "tgt", Path: "/d1", Status: trace.StPathIsBase, Ret: -2, Argv: []string{"tgt"}}, "tgt -> /d1/tgt [tgt]"},
		{"AT_EMPTY_PATH", trace.ExecRecord{Syscall: trace.SysExecveat, Path: "/memfd:x (deleted)", Argv: []string{"x"}}, `"" -> "/memfd:x (deleted)" [x]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			p := NewEventPrinter(&b)
			p.Print(&trace.Event{Kind: trace.EventExec, Task: trace.Task{Pid: 1, Comm: "x"}, Exec: c.r}, detect.Annotation{})
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+c.want) {
				t.Errorf("line %q, want it to end in %q", last, c.want)
			}
		})
	}
}

// A failed open's or lookup's --events line shows, as an exec's does,
// the file tried when the name is relative: the name in the directory
// the kernel says it was tried in (the dirfd's or the cwd's), or, under
// openat2's RESOLVE_IN_ROOT, below it as below "/". Where the directory
// is not known (a dirfd that names no file) an open's line, like an
// exec's, has the name alone.
func TestEventsOpenTried(t *testing.T) {
	in := func(base, fname string, ret int32) trace.OpenRecord {
		return trace.OpenRecord{Syscall: trace.SysOpenat, Fname: fname, Path: base, Status: trace.StPathIsBase, Ret: ret}
	}
	inRoot := in("/srv/root", "/etc/x", -2)
	inRoot.Syscall, inRoot.Resolve = trace.SysOpenat2, trace.ResolveInRoot
	upInRoot := in("/srv/root", "../etc/x", -2)
	upInRoot.Syscall, upInRoot.Resolve = trace.SysOpenat2, trace.ResolveInRoot
	lookup := in("/tmp/d", "../nosuch", -2)
	lookup.Syscall = trace.SysStatx
	cut := in(trace.PathCut+"/deep", "x", -2)
	cut.Status |= trace.StPathTruncated
	for _, c := range []struct {
		name string
		o    trace.OpenRecord
		want string
	}{
		{"failed, relative to the cwd", in("/tmp/d", "nosuch", -2), "nosuch -> /tmp/d/nosuch"},
		{"failed, with a space", in("/tmp/my dir", "no such", -13), `"no such" -> "/tmp/my dir/no such"`},
		{"failed lookup, up a directory", lookup, "../nosuch -> /tmp/nosuch"},
		{"failed, RESOLVE_IN_ROOT", inRoot, "/etc/x -> /srv/root/etc/x"},
		{"failed, RESOLVE_IN_ROOT, up from the root", upInRoot, "../etc/x -> /srv/root/etc/x"},
		{"failed, the directory cut", cut, "x -> " + quoteArg(trace.PathCut+"/deep/x") + " [path truncated]"},
		{"failed, the directory unknown", trace.OpenRecord{Syscall: trace.SysOpenat, Dirfd: 99, Fname: "nosuch", Ret: -9}, "nosuch"},
		{"failed, absolute", trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "/x/y", Ret: -2}, "/x/y"},
		{"opened, relative", trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "a", Path: "/tmp/a", Ret: 3}, "a -> /tmp/a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			p := NewEventPrinter(&b)
			p.Print(&trace.Event{Kind: trace.EventOpen, Task: trace.Task{Pid: 1, Comm: "x"}, Open: c.o}, detect.Annotation{})
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+c.want) {
				t.Errorf("line %q, want it to end in %q", last, c.want)
			}
		})
	}
}

// TestOpenLineMatchesFormat: an open's line, appended by hand, is what
// eventHeader lays out with fmt.
func TestOpenLineMatchesFormat(t *testing.T) {
	task := trace.Task{Pid: 4242, PPid: 1, Comm: "cp"}
	tests := []struct {
		name  string
		o     trace.OpenRecord
		task  trace.Task
		tag   string
		dup   int
		where string
		wall  int64
	}{
		{"opened", trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "a", Path: "/tmp/a", Ret: 3, ExitNs: 12345678901}, task, "", 0, "", 0},
		{"failed", trace.OpenRecord{Syscall: trace.SysOpen, Fname: "/x/y", Ret: -2, ExitNs: 1}, task, "", 0, "", 0},
		{"a repeat, a search ended, in a pod", trace.OpenRecord{Syscall: trace.SysOpenat2, Fname: "/a", Path: "/a", Ret: 12345, ExitNs: 99},
			task, "  PROBE 2 failed -> /a", 3, `  in "pod/x"`, 0},
		{"a failed repeat: no DUP", trace.OpenRecord{Syscall: trace.SysCreat, Fname: "z", Ret: -13}, task, "", 4, "", 0},
		{"a relative lookup: the file in the directory kept", trace.OpenRecord{Syscall: trace.SysNewfstatat, Fname: "plain", Path: "/tmp/dir", Status: trace.StPathIsBase, Ret: 0, ExitNs: 7}, task, "", 0, "", 0},
		{"unreadable, cut, wall clock", trace.OpenRecord{Syscall: trace.SysNewfstatat, Fname: "q", Ret: 0,
			Status: trace.StFnameUnreadable | trace.StPathTruncated, ExitNs: 5e9}, task, "", 0, "", 1_700_000_000_000_000_000},
		{"wide and long names", trace.OpenRecord{Syscall: trace.SysIoUringOpenat2, Fname: "f\x01ü", Path: "/ü/f", Ret: 7},
			trace.Task{Pid: 123456789, PPid: 987654321, Comm: "ünïcödé-cömm"}, "", 2, "", 0},
		{"an empty name", trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "", Ret: -2}, task, "", 0, "", 0},
		{"a thread's", trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "a", Path: "/tmp/a", Ret: 3},
			trace.Task{Pid: 4242, Tid: 4250, PPid: 1, Comm: "cp"}, "", 2, "", 0},
		{"a wide fd", trace.OpenRecord{Syscall: trace.SysIoUringStatx, Fname: "rel", Path: "/d", Ret: 123456,
			Status: trace.StPathIsBase}, task, "", 0, "", 0},
		{"a failed relative open: the file in the directory kept", trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "rel", Path: "/d",
			Ret: -2, Status: trace.StPathIsBase}, task, "", 2, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &EventPrinter{wall: tc.wall}
			o := &tc.o
			comm := Escape(tc.task.Comm)
			got := string(p.appendOpenLine(nil, o, &tc.task, comm, tc.tag, tc.dup, tc.where))
			fd, errs, tag := fmt.Sprint(o.Ret), "0", tc.tag
			if o.Ret < 0 {
				fd, errs = "-1", ErrnoName(-o.Ret)
			} else if tc.dup > 1 {
				tag = fmt.Sprintf("  DUP %dx", tc.dup) + tag
			}
			name := quoteArg(o.Fname)
			if o.Status.Has(trace.StFnameUnreadable) {
				name = "<unreadable>"
			} else if o.Fname == "" {
				name = `""`
			}
			if shown := o.Path; (o.Ret >= 0 || o.Status.Has(trace.StPathIsBase)) && shown != "" {
				// A relative lookup's or failed open's Path is its
				// directory: the file is the name there.
				if o.Status.Has(trace.StPathIsBase) {
					shown = o.Path + "/" + o.Fname
				}
				if shown != o.Fname {
					name += " -> " + quoteArg(shown)
				}
			}
			if tc.task.Tid != 0 && tc.task.Tid != tc.task.Pid {
				tag = fmt.Sprintf("  tid %d", tc.task.Tid) + tag
			}
			// The TIME column as fmt and time lay it out.
			when := fmt.Sprintf("%.6f", float64(o.ExitNs)/1e9)
			if tc.wall != 0 {
				when = time.Unix(0, tc.wall+int64(o.ExitNs)).Format("15:04:05.000")
			}
			want := fmt.Sprintf(eventHeader, when, fmt.Sprint(tc.task.Pid), fmt.Sprint(tc.task.PPid), comm,
				o.Syscall.String(), fd, errs, name+truncMark(o.Status)+tag+tc.where)
			if overflows(when, fmt.Sprint(tc.task.Pid), fmt.Sprint(tc.task.PPid), comm, o.Syscall.String(), fd, errs) {
				// fmt pushes the rest of the line right; appendHead
				// only the columns next to the wide one: the same
				// words, the path where the header has it.
				if !slices.Equal(strings.Fields(got), strings.Fields(want)) {
					t.Errorf("line\n%q\nwant the words of\n%q", got, want)
				}
				if at, path := utf8.RuneCountInString(got[:strings.Index(got, name)]), pathColumn(); at != path {
					t.Errorf("line\n%q\nhas its path at column %d, want %d", got, at, path)
				}
				return
			}
			if got != want {
				t.Errorf("line\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// overflows reports whether a column is wider than eventHeader's width.
func overflows(cols ...string) bool {
	for i, w := range []int{12, 7, 7, 16, 10, 4, 8} {
		if utf8.RuneCountInString(cols[i]) > w {
			return true
		}
	}
	return false
}

// pathColumn is where the header's PATH / ARGS starts, in runes.
func pathColumn() int {
	h := fmt.Sprintf(eventHeader, "TIME", "PID", "PPID", "COMM", "SYSCALL", "FD", "ERR", "PATH / ARGS")
	return strings.Index(h, "PATH / ARGS")
}

// TestEventClock holds the TIME column, its second formatted once and
// kept, to time.Format's HH:MM:SS.mmm of each time in turn: within a
// second, across seconds, on a whole second, and back.
func TestEventClock(t *testing.T) {
	const offset = 1_700_000_000_000_000_000
	p := NewEventPrinter(io.Discard)
	p.SetClock(offset)
	for _, ns := range []uint64{0, 999_999, 1_000_000, 123_456_789, 999_999_999, 1_000_000_000, 1_000_999_999,
		59_999_000_000, 60_000_000_001, 3_600_123_000_000, 5_000_000, 86_400_000_000_000} {
		want := time.Unix(0, offset+int64(ns)).Format("15:04:05.000")
		if got := p.when(ns); got != want {
			t.Errorf("%d ns: %q, want %q", ns, got, want)
		}
	}
}

// TestEventNamesCannotFakeTags: a name with spaces is quoted, as argv
// is, so that no file name can pass for a tag (DUP, PROBE, tid) or for
// the file a name resolved to.
func TestEventNamesCannotFakeTags(t *testing.T) {
	task := trace.Task{Pid: 7, Tid: 7, PPid: 1, Comm: "cat"}
	for _, tc := range []struct {
		name string
		ev   trace.Event
		ann  detect.Annotation
		want string
	}{
		{"a DUP tag", trace.Event{Kind: trace.EventOpen, Task: task, Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3,
			Fname: "/tmp/y  DUP 7x", Path: "/tmp/y  DUP 7x"}}, detect.Annotation{}, ` "/tmp/y  DUP 7x"` + "\n"},
		{"a PROBE tag", trace.Event{Kind: trace.EventOpen, Task: task, Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: -2,
			Fname: "/nope  PROBE 3 failed -> /usr/bin/sudo"}}, detect.Annotation{}, ` "/nope  PROBE 3 failed -> /usr/bin/sudo"` + "\n"},
		{"a resolution", trace.Event{Kind: trace.EventOpen, Task: task, Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3,
			Fname: "a -> /etc/shadow", Path: "/home/u/a -> /etc/shadow"}}, detect.Annotation{}, ` "a -> /etc/shadow" -> "/home/u/a -> /etc/shadow"` + "\n"},
		{"an exec's name and the name a search found", trace.Event{Kind: trace.EventExec, Task: task, Exec: trace.ExecRecord{Syscall: trace.SysExecve,
			Filename: "/bin/x  tid 9", Argv: []string{"x"}}}, detect.Annotation{ProbeFailed: 1, ProbeFound: "/b/x y"},
			` "/bin/x  tid 9" [x]  PROBE 1 failed -> "/b/x y"` + "\n"},
		{"a plain name stays bare", trace.Event{Kind: trace.EventOpen, Task: task, Open: trace.OpenRecord{Syscall: trace.SysOpenat, Ret: 3,
			Fname: "/etc/hostname", Path: "/etc/hostname"}}, detect.Annotation{Dup: 2}, " /etc/hostname  DUP 2x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			p := NewEventPrinter(&b)
			p.Print(&tc.ev, tc.ann)
			lines := strings.SplitAfter(b.String(), "\n")
			if got := lines[1]; !strings.HasSuffix(got, tc.want) {
				t.Errorf("line %q, want it to end in %q", got, tc.want)
			}
		})
	}
}

// TestWideLineMatchesFormat: with SetWide an open's line is what
// eventHeaderWide lays out with fmt, and its FLAGS what strace prints.
func TestWideLineMatchesFormat(t *testing.T) {
	task := trace.Task{Pid: 4242, PPid: 1, UID: 1000, Comm: "cp"}
	for _, tc := range []struct {
		name       string
		o          trace.OpenRecord
		lat, flags string
	}{
		{"an open", trace.OpenRecord{Syscall: trace.SysOpenat, Flags: 0x80000, Fname: "/a", Path: "/a", Ret: 3, EnterNs: 1000, ExitNs: 3500}, "2.5", "O_RDONLY|O_CLOEXEC"},
		{"a creat: its mode", trace.OpenRecord{Syscall: trace.SysCreat, Flags: 0x241, Mode: 0o600, Fname: "/a", Path: "/a", Ret: 3, EnterNs: 1, ExitNs: 2}, "0.0", "O_WRONLY|O_CREAT|O_TRUNC,0600"},
		{"an open without O_CREAT: no mode", trace.OpenRecord{Syscall: trace.SysOpen, Mode: 0o777, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "O_RDONLY"},
		{"openat2's resolve", trace.OpenRecord{Syscall: trace.SysOpenat2, Resolve: 0x8, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "O_RDONLY,resolve=RESOLVE_BENEATH"},
		{"openat2's resolve, several and unknown", trace.OpenRecord{Syscall: trace.SysOpenat2, Resolve: 0x4c, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "O_RDONLY,resolve=RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH|0x40"},
		{"access: its mode", trace.OpenRecord{Syscall: trace.SysAccess, Mode: 4, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "R_OK"},
		{"faccessat: F_OK", trace.OpenRecord{Syscall: trace.SysFaccessat, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "F_OK"},
		{"statx: AT flags", trace.OpenRecord{Syscall: trace.SysStatx, Flags: 0x100, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "AT_SYMLINK_NOFOLLOW"},
		{"stat: no flags argument", trace.OpenRecord{Syscall: trace.SysStat, Fname: "/a", Ret: -2, EnterNs: 1, ExitNs: 1001}, "1.0", "-"},
		{"untimed", trace.OpenRecord{Syscall: trace.SysOpenat, Status: trace.StUntimed, Fname: "/a", Ret: -2, ExitNs: 1001}, "-", "O_RDONLY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &EventPrinter{wide: true}
			got := string(p.appendOpenLine(nil, &tc.o, &task, "cp", "", 0, ""))
			fd, errs := fmt.Sprint(tc.o.Ret), "0"
			if tc.o.Ret < 0 {
				fd, errs = "-1", ErrnoName(-tc.o.Ret)
			}
			when := fmt.Sprintf("%.6f", float64(tc.o.ExitNs)/1e9)
			want := fmt.Sprintf(eventHeaderWide, when, "1000", "4242", "1", "cp", tc.o.Syscall.String(), fd, errs, tc.lat, tc.flags, "/a")
			if len(tc.flags) > 20 {
				// Too wide for its column: the same words.
				if !slices.Equal(strings.Fields(got), strings.Fields(want)) {
					t.Errorf("line\n%q\nwant the words of\n%q", got, want)
				}
				return
			}
			if got != want {
				t.Errorf("line\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestEventCommColumn: COMM is a fixed-width column: a comm whose escapes
// make it wider (PR_SET_NAME "ev\x1b[31mil\nx\x07" is 19 columns
// escaped, 15 control bytes 60) is cut with … between two escapes, and
// one of wide runes is measured in terminal columns, so that SYSCALL
// starts where the header's does on every line.
func TestEventCommColumn(t *testing.T) {
	for _, tc := range []struct {
		comm, cell string
	}{
		{"cp", "cp"},
		{"ev\x1b[31mil\nx\x07", `"ev\x1b[31mil…"`},
		{"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f", `\x01\x02\x03…`},
		{"a\\b\\c\\d\\e\\f\\g\\", `a\\b\\c\\d\\e\\…`},
		{"日本語漢字", "日本語漢字"},
		// A space, a quote, '[' or nothing: quoted, as a path is, so
		// that the line's columns still split on spaces; cut inside
		// the quotes.
		{"my worker", `"my worker"`},
		{"", `""`},
		{"my worker threa", `"my worker thr…"`},
		{"a b\x07", `"a b\x07"`},
		{`say "hi"`, `"say \"hi\""`},
		{`x"y`, `"x\"y"`},
		{"[kworker]", `"[kworker]"`},
		{`a b"cdefghijklm`, `"a b\"cdefghij…"`},
	} {
		for _, wide := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q wide %v", tc.comm, wide), func(t *testing.T) {
				var b strings.Builder
				p := NewEventPrinter(&b)
				p.SetWide(wide)
				task := trace.Task{Pid: 4242, PPid: 1, Comm: tc.comm}
				p.Print(&trace.Event{Kind: trace.EventOpen, Task: task, Open: trace.OpenRecord{Syscall: trace.SysOpenat, Fname: "/a", Ret: -2}}, detect.Annotation{})
				p.Print(&trace.Event{Kind: trace.EventExec, Task: task, Exec: trace.ExecRecord{Syscall: trace.SysExecve, Filename: "/b", Ret: -2}}, detect.Annotation{})
				lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
				col := Width(lines[0][:strings.Index(lines[0], "SYSCALL")])
				for _, l := range lines[1:] {
					i := strings.Index(l, " openat ")
					if i < 0 {
						i = strings.Index(l, " execve ")
					}
					if got := Width(l[:i+1]); got != col {
						t.Errorf("SYSCALL at column %d, the header's at %d:\n%s\n%s", got, col, lines[0], l)
					}
					if !strings.Contains(l, " "+tc.cell+" ") {
						t.Errorf("no COMM cell %q in %q", tc.cell, l)
					}
				}
			})
		}
	}
}
