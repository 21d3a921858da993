package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fullDisk is a destination with room for a number of bytes: a write past
// it writes what fits and fails with ENOSPC, as write(2) on a full file
// system does. file, when set, receives what is written (and exposes Stat
// and Truncate through fileDisk).
type fullDisk struct {
	room int
	out  bytes.Buffer
}

func (d *fullDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.room)
	d.room -= n
	d.out.Write(p[:n])
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	}
	return n, nil
}

// fileDisk is fullDisk over a real file: Stat and Truncate are the file's.
type fileDisk struct {
	*os.File
	room int
}

func (d *fileDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.room)
	d.room -= n
	if _, err := d.File.Write(p[:n]); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: d.Name(), Err: syscall.ENOSPC}
	}
	return n, nil
}

func TestDegrading(t *testing.T) {
	rec := func(i int) string { return strings.Repeat(string(rune('a'+i)), 9) + "\n" } // 10 bytes
	type step struct {
		room    int // bytes the destination takes from now on (-1: unchanged)
		records int // records written, then a flush
	}
	for _, tc := range []struct {
		name        string
		file        bool
		steps       []step
		want        string // what the destination holds
		records     uint64
		bytes       uint64
		warnings    int
		resumptions int
	}{
		{name: "room for all", steps: []step{{100, 3}},
			want: rec(0) + rec(1) + rec(2)},
		{name: "full from the start", steps: []step{{0, 3}},
			want: "", records: 3, bytes: 30, warnings: 1},
		{name: "full, then room again", steps: []step{{0, 2}, {100, 2}},
			want: rec(2) + rec(3), records: 2, bytes: 20, warnings: 1, resumptions: 1},
		{name: "a cut record in a file is taken back out", file: true, steps: []step{{15, 2}, {100, 1}},
			want: rec(0) + rec(2), records: 1, bytes: 10, warnings: 1, resumptions: 1},
		{name: "a cut record elsewhere: the next starts on a new line", steps: []step{{15, 2}, {100, 1}},
			want: rec(0) + rec(1)[:5] + "\n" + rec(2), records: 1, bytes: 10, warnings: 1, resumptions: 1},
		{name: "the new line itself fails", steps: []step{{15, 2}, {0, 1}, {100, 1}},
			want: rec(0) + rec(1)[:5] + "\n" + rec(3), records: 2, bytes: 20, warnings: 1, resumptions: 1},
		{name: "warned once a minute however often it fails", steps: []step{{0, 1}, {100, 1}, {0, 1}, {100, 1}, {0, 1}},
			want: rec(1) + rec(3), records: 3, bytes: 30, warnings: 1, resumptions: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dest interface{ Write([]byte) (int, error) }
			var mem *fullDisk
			var fd *fileDisk
			if tc.file {
				f, err := os.Create(filepath.Join(t.TempDir(), "out"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				fd = &fileDisk{File: f}
				dest = fd
			} else {
				mem = &fullDisk{}
				dest = mem
			}
			var warns []string
			d := NewDegrading(dest, "out.jsonl", 1<<10, func(s string) { warns = append(warns, s) })
			clock := time.Unix(1000, 0)
			d.now = func() time.Time { return clock }
			i := 0
			for _, s := range tc.steps {
				if s.room >= 0 {
					if fd != nil {
						fd.room = s.room
					} else {
						mem.room = s.room
					}
				}
				for range s.records {
					if n, err := d.WriteString(rec(i)); n != 10 || err != nil {
						t.Fatalf("WriteString: %d, %v", n, err)
					}
					i++
				}
				if err := d.Flush(); err != nil {
					t.Fatalf("Flush: %v", err)
				}
				clock = clock.Add(time.Second)
			}
			var got string
			if fd != nil {
				b, _ := os.ReadFile(fd.Name())
				got = string(b)
			} else {
				got = mem.out.String()
			}
			if got != tc.want {
				t.Errorf("written %q, want %q", got, tc.want)
			}
			if r, b := d.Dropped(); r != tc.records || b != tc.bytes {
				t.Errorf("dropped %d records (%d bytes), want %d (%d)", r, b, tc.records, tc.bytes)
			}
			var w, r int
			for _, s := range warns {
				switch {
				case strings.HasPrefix(s, "once: WARNING: could not write to out.jsonl: ") && strings.Contains(s, "no space left"):
					w++
				case strings.HasPrefix(s, "once: writing to out.jsonl again"):
					r++
				default:
					t.Errorf("unexpected warning %q", s)
				}
			}
			if w != tc.warnings || r != tc.resumptions {
				t.Errorf("%d warnings and %d resumptions %q, want %d and %d", w, r, warns, tc.warnings, tc.resumptions)
			}
		})
	}
}

// TestDegradingWarnsAgain: a failure a minute after the last warning is
// warned about again.
func TestDegradingWarnsAgain(t *testing.T) {
	disk := &fullDisk{}
	var warns []string
	d := NewDegrading(disk, "f", 64, func(s string) { warns = append(warns, s) })
	clock := time.Unix(1000, 0)
	d.now = func() time.Time { return clock }
	for _, room := range []int{0, 100, 0} {
		disk.room = room
		d.WriteString("record\n")
		d.Flush()
		clock = clock.Add(WarnEvery)
	}
	if len(warns) != 3 {
		t.Errorf("warnings %q: want the failure, the resumption and the second failure", warns)
	}
}

// TestDegradingLargeRecord: a record larger than the buffer is written
// whole, alone, and the buffer's size is kept.
func TestDegradingLargeRecord(t *testing.T) {
	disk := &fullDisk{room: 1 << 20}
	d := NewDegrading(disk, "f", 16, nil)
	d.WriteString("small\n")
	big := strings.Repeat("x", 100) + "\n"
	d.WriteString(big)
	d.WriteString("tail\n")
	d.Flush()
	if got := disk.out.String(); got != "small\n"+big+"tail\n" {
		t.Errorf("written %q", got)
	}
}
