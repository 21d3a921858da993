package testprog

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// Pids returns the processes whose command line starts with argv, read
// from /proc: what pgrep -f does, without needing procps on the machine.
func Pids(argv ...string) []int {
	want := []byte{}
	for _, a := range argv {
		want = append(want, a...)
		want = append(want, 0)
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmdline, want) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
