package compare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestRunAsCredential: with Options.Credential, every timed run of both
// sides runs as that user, under each CPU source (a cgroup v1 run forks
// from a thread that joined the run's group: it must be the one that
// dropped once's privileges), and once's own threads keep theirs.
func TestRunAsCredential(t *testing.T) {
	testprog.RequireRoot(t)
	for _, src := range []CPUSource{CPUCgroup2, CPUCgroup1, CPURusage} {
		t.Run(string(src), func(t *testing.T) {
			if _, err := newMeter(src); err != nil {
				t.Skipf("%s is not usable here: %v", src, err)
			}
			// Not t.TempDir: the user must reach it.
			dir, err := os.MkdirTemp("", "once-cred-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			os.Chmod(dir, 0o777)
			out := filepath.Join(dir, "uids")
			os.WriteFile(out, nil, 0o666)
			os.Chmod(out, 0o666)
			side := func(label string) []string {
				return []string{"sh", "-c", "echo " + label + " $(id -u) $(id -g) $(grep CapBnd /proc/self/status) >> " + out}
			}
			cred := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
			res, err := Run(context.Background(), side("a"), side("b"), Options{Runs: 2, Warmup: 1, CPU: src, Credential: cred})
			if err != nil {
				t.Fatal(err)
			}
			if res.A.Failed != 0 || res.B.Failed != 0 {
				t.Errorf("failed runs: %d, %d", res.A.Failed, res.B.Failed)
			}
			data, _ := os.ReadFile(out)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) != 6 {
				t.Errorf("%d runs written, want 6: %q", len(lines), lines)
			}
			for _, l := range lines {
				if f := strings.Fields(l); len(f) != 5 || f[1] != "65534" || f[2] != "65534" || f[4] != "0000000000000000" {
					t.Errorf("a run as %q, want uid and gid 65534 and an empty bounding set", l)
				}
			}
			if os.Geteuid() != 0 {
				t.Errorf("once's own euid is now %d", os.Geteuid())
			}
			if err := os.WriteFile(filepath.Join("/root", ".once-credential-test"), nil, 0o600); err != nil {
				t.Errorf("once lost root's access to files: %v", err)
			}
			os.Remove(filepath.Join("/root", ".once-credential-test"))
		})
	}
}
