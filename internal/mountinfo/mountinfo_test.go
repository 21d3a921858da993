package mountinfo

import (
	"reflect"
	"testing"
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
		{Root: "/", Point: "/proc", FSType: "proc", Source: "proc", SuperOptions: []string{"rw"}},
		{Root: "/", Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Source: "cgroup", SuperOptions: []string{"rw", "memory"}},
		{Root: "/..", Point: "/sys/fs/cgroup/unified", FSType: "cgroup2", Source: "cgroup2", SuperOptions: []string{"rw", "nsdelegate"}},
		{Root: "/a b", Point: "/mnt/with space\\x", FSType: "tmpfs", Source: "my\tsrc", SuperOptions: []string{"rw", "size=64k"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse =\n%+v\nwant\n%+v", got, want)
	}
	if !got[1].HasOption("memory") || got[2].HasOption("memory") {
		t.Error("HasOption")
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
