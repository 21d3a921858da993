package collector_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// The filesystems scratchFS can make: a loop-mounted image for the disk
// filesystems, tmpfs, and overlayfs over either.
var scratchFSTypes = []string{"ext4", "xfs", "btrfs", "tmpfs", "overlay-tmpfs", "overlay-ext4"}

// scratchFS mounts a new, empty filesystem of the given type for t and
// returns a directory in it; it is unmounted when t ends. A disk
// filesystem whose mkfs is not installed is skipped (fatal with CI=true,
// whose machine installs them); so is a machine without loop devices.
func scratchFS(t *testing.T, fstype string) string {
	t.Helper()
	testprog.RequireRoot(t)
	base := t.TempDir()
	if strings.ContainsAny(base, ",:") {
		t.Fatalf("scratchFS: %s can't be an overlayfs option (a test name with , or :)", base)
	}
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	switch fstype {
	case "tmpfs":
		testprog.Mount(t, mnt, "-t", "tmpfs", "tmpfs")
	case "ext4", "xfs", "btrfs":
		testprog.LoopMount(t, base, mnt, fstype)
	case "overlay-tmpfs", "overlay-ext4":
		layers := filepath.Join(base, "layers")
		if err := os.Mkdir(layers, 0o755); err != nil {
			t.Fatal(err)
		}
		if fstype == "overlay-tmpfs" {
			testprog.Mount(t, layers, "-t", "tmpfs", "tmpfs")
		} else {
			testprog.LoopMount(t, base, layers, "ext4")
		}
		for _, d := range []string{"lower", "upper", "work"} {
			if err := os.Mkdir(filepath.Join(layers, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		testprog.Mount(t, mnt, "-t", "overlay", "overlay", "-o",
			"lowerdir="+layers+"/lower,upperdir="+layers+"/upper,workdir="+layers+"/work")
	default:
		t.Fatalf("scratchFS: unknown type %q", fstype)
	}
	dir := filepath.Join(mnt, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
