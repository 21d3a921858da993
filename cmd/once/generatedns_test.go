package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestGeneratedFSOtherMountNamespace: a duplicate open of a file on a
// procfs that only the command's mount namespace has (unshare -p
// --mount-proc, a container's own /proc) is on proc as the host's is:
// its suggestion says that proc makes the file at each read. once's own
// mount table does not have that procfs's device; the kernel says which
// file system an opened file is on.
func TestGeneratedFSOtherMountNamespace(t *testing.T) {
	testprog.RequireRoot(t)
	unshare := needTool(t, "unshare")
	bin := buildOnce(t)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"host /proc", []string{"cat", "/proc/1/stat", "/proc/1/stat"}},
		{"a /proc of its own", []string{unshare, "-p", "-f", "--mount-proc", "cat", "/proc/1/stat", "/proc/1/stat"}},
		{"a /proc mounted elsewhere", []string{unshare, "-m", "--propagation", "private", "sh", "-c",
			"mount -t proc proc /mnt && cat /mnt/1/stat /mnt/1/stat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"run", "--"}, tc.argv...)...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("once run: %v\n%s", err, out)
			}
			var line string
			for l := range strings.Lines(string(out)) {
				if strings.Contains(l, "open it once and pass the descriptor") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no duplicate_open of /proc/1/stat:\n%s", out)
			}
			if !strings.Contains(line, "the file is on proc, which makes its content at each read") {
				t.Errorf("the suggestion does not say the file is on proc:\n%s", line)
			}
		})
	}
}
