package testprog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// LoopMount makes a file system of fstype (ext4, xfs or btrfs) in an
// image file under base, mounts it on mnt through a loop device, and
// unmounts it when t ends. It skips (fails under CI) without
// mkfs.FSTYPE or loop devices.
func LoopMount(t testing.TB, base, mnt, fstype string) {
	t.Helper()
	mkfs := NeedTool(t, "mkfs."+fstype)
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		Skipf(t, "no loop devices: %v", err)
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
	Mount(t, mnt, "-o", "loop", img)
}

// Mount runs mount(8) with args and mnt, and unmounts mnt when t ends.
func Mount(t testing.TB, mnt string, args ...string) {
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
