package collector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		mount(t, mnt, "-t", "tmpfs", "tmpfs")
	case "ext4", "xfs", "btrfs":
		loopMount(t, base, mnt, fstype)
	case "overlay-tmpfs", "overlay-ext4":
		layers := filepath.Join(base, "layers")
		if err := os.Mkdir(layers, 0o755); err != nil {
			t.Fatal(err)
		}
		if fstype == "overlay-tmpfs" {
			mount(t, layers, "-t", "tmpfs", "tmpfs")
		} else {
			loopMount(t, base, layers, "ext4")
		}
		for _, d := range []string{"lower", "upper", "work"} {
			if err := os.Mkdir(filepath.Join(layers, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		mount(t, mnt, "-t", "overlay", "overlay", "-o",
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

func loopMount(t *testing.T, base, mnt, fstype string) {
	t.Helper()
	mkfs := testprog.NeedTool(t, "mkfs."+fstype)
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testprog.Skipf(t, "no loop devices: %v", err)
	}
	img := filepath.Join(base, fstype+".img")
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(300 << 20) // xfs's least
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{"ext4": {"-q", "-F"}, "xfs": {"-q", "-f"}, "btrfs": {"-q", "-f"}}[fstype]
	if out, err := exec.Command(mkfs, append(args, img)...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.%s: %v\n%s", fstype, err, out)
	}
	mount(t, mnt, "-o", "loop", img)
}

// mount runs mount(8) with args and mnt, and unmounts mnt when t ends.
func mount(t *testing.T, mnt string, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", append(args, mnt)...).CombinedOutput(); err != nil {
		t.Fatalf("mount %s %s: %v\n%s", strings.Join(args, " "), mnt, err, out)
	}
	t.Cleanup(func() {
		// A process of the test may still be leaving it: try for a while,
		// then detach it lazily rather than leave it mounted.
		for i := 0; i < 50; i++ {
			if exec.Command("umount", mnt).Run() == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
}
