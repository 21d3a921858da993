package mountinfo

import (
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	text := `22 1 0:21 / /proc rw,nosuid - proc proc rw
35 24 0:30 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
36 24 0:31 /.. /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
40 22 0:40 /a\040b /mnt/with\040space\134x rw shared:5 - tmpfs my\011src rw,size=64k
broken line
41 22 0:41 / /short rw -
`
	got := Parse(text)
	want := []Mount{
		{ID: 22, Dev: unix.Mkdev(0, 21), Root: "/", Point: "/proc", FSType: "proc", Source: "proc", SuperOptions: []string{"rw"}},
		{ID: 35, Dev: unix.Mkdev(0, 30), Root: "/", Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Source: "cgroup", SuperOptions: []string{"rw", "memory"}},
		{ID: 36, Dev: unix.Mkdev(0, 31), Root: "/..", Point: "/sys/fs/cgroup/unified", FSType: "cgroup2", Source: "cgroup2", SuperOptions: []string{"rw", "nsdelegate"}},
		{ID: 40, Dev: unix.Mkdev(0, 40), Root: "/a b", Point: "/mnt/with space\\x", FSType: "tmpfs", Source: "my\tsrc", SuperOptions: []string{"rw", "size=64k"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse =\n%+v\nwant\n%+v", got, want)
	}
	if !got[1].HasOption("memory") || got[2].HasOption("memory") {
		t.Error("HasOption")
	}
}

func TestFind(t *testing.T) {
	text := "22 1 0:21 / /proc rw - proc proc rw\n" +
		"220 1 259:3 / /big rw - ext4 /dev/nvme0n1p3 rw\n" +
		"49 27 0:41 / /mnt/b rw - btrfs /dev/loop1 rw,subvolid=5\n"
	for _, c := range []struct {
		id   int
		dev  uint64
		want bool
	}{{22, unix.Mkdev(0, 21), true}, {220, unix.Mkdev(259, 3), true}, {49, unix.Mkdev(0, 41), true}, {2, 0, false}, {4, 0, false}} {
		m, ok := Find(strings.NewReader(text), c.id)
		if ok != c.want || m.Dev != c.dev || (ok && m.ID != c.id) {
			t.Errorf("Find(%d) = %+v, %v; want dev %d, %v", c.id, m, ok, c.dev, c.want)
		}
	}
	// A line longer than the kernel writes is skipped, and the search
	// goes on; so is one without its newline at the end.
	long := "5 1 0:5 /" + strings.Repeat("x", 3*maxLine) + " /x rw - tmpfs t rw\n6 1 0:6 / /y rw - tmpfs t rw"
	if m, ok := Find(strings.NewReader(long), 6); !ok || m.Dev != unix.Mkdev(0, 6) || m.Point != "/y" {
		t.Errorf("Find(6) past a long line = %+v, %v", m, ok)
	}
	if _, ok := Find(strings.NewReader(long), 5); ok {
		t.Error("Find(5) read a line over maxLine")
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`plain`: "plain", `a\040b`: "a b", `\134`: `\`, `\12`: `\12`, `\089`: `\089`, `end\`: `end\`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEach: Each gives what Parse gives, a line at a time, skips a line
// over maxLine and goes on, and stops when told.
func TestEach(t *testing.T) {
	text := "22 1 0:21 / /proc rw - proc proc rw\n" +
		"broken line\n" +
		"5 1 0:5 /" + strings.Repeat("x", 3*maxLine) + " /x rw - tmpfs t rw\n" +
		"49 27 0:41 / /mnt/b rw - fuse.sshfs u@h: rw\n" +
		"6 1 0:6 / /y rw - tmpfs t rw"
	var ids []int
	Each(strings.NewReader(text), func(m Mount) bool { ids = append(ids, m.ID); return true })
	if !reflect.DeepEqual(ids, []int{22, 49, 6}) {
		t.Errorf("Each gave mounts %v, want 22 49 6", ids)
	}
	ids = nil
	Each(strings.NewReader(text), func(m Mount) bool { ids = append(ids, m.ID); return m.FSType != "fuse.sshfs" })
	if !reflect.DeepEqual(ids, []int{22, 49}) {
		t.Errorf("Each told to stop at 49 gave %v", ids)
	}
}
