package collector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestGeneratedFSOfOwnMounts: the kernel says which file system an opened
// file is on, when it is one that makes its content at each read: a
// procfs or sysfs that only the command's namespaces have (unshare
// --mount-proc, a new network namespace's sysfs: a container's own) is
// one too, though once's mount table does not know their devices. A
// duplicate open there is marked (FSType), with and without BTF casts;
// one of a plain file is not.
func TestGeneratedFSOfOwnMounts(t *testing.T) {
	testprog.RequireRoot(t)
	unshare := testprog.NeedTool(t, "unshare")
	plain := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/proc/1/stat": "proc", "/mnt/kernel/uevent_seqnum": "sysfs", plain: ""}
	argv := []string{unshare, "-p", "-f", "-n", "-m", "--propagation", "private", "--mount-proc", "sh", "-c",
		"mount -t sysfs sysfs /mnt && cat /proc/1/stat /proc/1/stat /mnt/kernel/uevent_seqnum /mnt/kernel/uevent_seqnum \"$0\" \"$0\" >/dev/null", plain}
	for _, casts := range []bool{true, false} {
		name := "BTF casts"
		if !casts {
			name = "no BTF casts"
		}
		t.Run(name, func(t *testing.T) {
			if !casts {
				collector.WithoutBTFCasts(t)
			}
			r := traceCmd(t, exec.Command(argv[0], argv[1:]...), collector.Options{})
			got := map[string]string{}
			for i := range r.Findings {
				if f := &r.Findings[i]; f.Kind == trace.KindDuplicateOpen && f.Comm == "cat" {
					got[f.Subject()] = f.FSType
				}
			}
			for path, fstype := range want {
				if t2, ok := got[path]; !ok || t2 != fstype {
					t.Errorf("%s: a duplicate %v on %q, want one on %q (findings: %q)", path, ok, t2, fstype, got)
				}
			}
		})
	}
}
