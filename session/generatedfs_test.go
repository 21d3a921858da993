package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGeneratedDevs(t *testing.T) {
	text := strings.Join([]string{
		"22 27 0:21 / /proc rw,relatime - proc proc rw",
		"23 27 0:22 / /sys rw,relatime - sysfs sysfs rw",
		"24 23 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw",
		"27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
		"28 27 0:30 / /tmp rw - tmpfs tmpfs rw",
		"not a mountinfo line",
	}, "\n") + "\n"
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got := generatedDevs(p)
	want := map[uint64]string{unix.Mkdev(0, 21): "proc", unix.Mkdev(0, 22): "sysfs", unix.Mkdev(0, 23): "cgroup2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("generatedDevs = %v, want %v", got, want)
	}
	if got := generatedDevs(filepath.Join(t.TempDir(), "none")); got != nil {
		t.Errorf("a missing file: %v, want nil", got)
	}
	// The map is bounded: a mount table the traced user grew.
	var b strings.Builder
	for i := range maxGeneratedDevs + 10 {
		fmt.Fprintf(&b, "%d 1 0:%d / /p%d rw - proc proc rw\n", 100+i, 100+i, i)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := len(generatedDevs(p)); n != maxGeneratedDevs {
		t.Errorf("%d devices kept, want %d", n, maxGeneratedDevs)
	}
}
