package collector_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
	"golang.org/x/sys/unix"
)

// TestRepeatStrings: where every open is sent, one that repeats the
// thread's last one goes without its strings (EVENT_OPEN_REPEAT), and user
// space gives it that open's. Every open must still come out with the
// name it was given and the path it resolved to then, though a directory
// above was renamed in between (the same name bytes, another path), to a
// name too long to be compared in the kernel, and the buffer named another
// file in the same directory. And what the path does not show must be the
// open's own, not the repeated one's: a new file renamed over the name,
// other flags, another comm.
func TestRepeatStrings(t *testing.T) {
	const name = "renameopen"
	prog := copyHelper(t, testprog.Renameopen, t.TempDir(), name)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(root, "a", "sub", "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(f, filepath.Join(root, "a", "sub", "g")); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(root, "a", "sub", "f.next")
	if err := os.WriteFile(next, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	var old, replaced unix.Stat_t
	if err := unix.Stat(f, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(next, &replaced); err != nil {
		t.Fatal(err)
	}
	w := startBlocked(t, nil, prog, root)
	repeated := 0
	s := traceFilteredWith(t, collector.Filter{Comms: []string{name, name + "2"}}, func(tr *collector.Tracer) {
		collector.SetRepeatSeen(tr, func(ev *trace.Event) {
			if o := &ev.Open; len(o.Fname) > 4 && o.Fname[:4] == "sub/" {
				repeated++
			}
		})
	}, w)

	const long = "a-directory-name-of-forty-bytes-long-xx"
	const ro, rw = unix.O_RDONLY | unix.O_CLOEXEC, unix.O_RDWR | unix.O_CLOEXEC
	type open struct {
		fname, path string
		ino, flags  uint64
		comm        string
	}
	var want []open
	for _, step := range []struct {
		dir, file string
		n         int
		ino       uint64
		flags     uint64
		comm      string
	}{
		{"a", "f", 3, old.Ino, ro, name}, {"b", "f", 2, old.Ino, ro, name}, {"a", "f", 2, old.Ino, ro, name},
		{long, "f", 2, old.Ino, ro, name}, {"a", "g", 2, old.Ino, ro, name}, {"a", "f", 1, old.Ino, ro, name},
		{"a", "f", 2, replaced.Ino, ro, name}, {"a", "f", 2, replaced.Ino, rw, name},
		{"a", "f", 2, replaced.Ino, rw, name + "2"},
	} {
		for range step.n {
			want = append(want, open{"sub/" + step.file, filepath.Join(root, step.dir, "sub", step.file),
				step.ino, step.flags, step.comm})
		}
	}
	var got []open
	for _, ev := range s.of(w.proc(), trace.EventOpen) {
		if o := &ev.Open; o.Syscall == trace.SysOpenat && len(o.Fname) > 4 && o.Fname[:4] == "sub/" {
			if o.Ret < 0 {
				t.Errorf("failed open %+v", o)
			}
			got = append(got, open{o.Fname, o.Path, o.Ino, o.Flags, ev.Task.Comm})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d opens, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("open %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	// And the opens that repeat the one before them in every way the
	// kernel compares came as repeat records: each step's second and
	// later ones, but for the long directory's, whose name the kernel
	// does not compare (its opens all go in full).
	if want := 2 + 1 + 1 + 0 + 1 + 0 + 1 + 1 + 1; repeated != want {
		t.Errorf("%d opens came as repeat records, want %d", repeated, want)
	}
}
