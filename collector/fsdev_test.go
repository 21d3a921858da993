package collector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// A file's device is the one stat gives it, where that is not its
// superblock's: btrfs gives each subvolume a device of its own, and
// numbers each subvolume's inodes on its own (a snapshot has its source's
// numbers and generations); an overlay of lower layers on several file
// systems without xino gives each layer's files the layer's device, and
// its files share numbers across layers. On the superblock's device two
// such files were one file, opened once each: a duplicate open that is
// none. Each test opens a, b, a, where a and b share inode number and
// generation, and wants one duplicate (a, twice) and stat's devices.
func TestBtrfsSubvolumesAreOtherFiles(t *testing.T) {
	btrfs := testprog.NeedTool(t, "btrfs")
	for _, m := range fileIDModes {
		t.Run(m.name, func(t *testing.T) {
			dir := scratchFS(t, "btrfs")
			sv, snap := filepath.Join(dir, "sv"), filepath.Join(dir, "snap")
			run(t, btrfs, "subvolume", "create", sv)
			if err := os.WriteFile(filepath.Join(sv, "f"), []byte("f\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			run(t, btrfs, "subvolume", "snapshot", sv, snap)
			checkOtherFiles(t, m, filepath.Join(sv, "f"), filepath.Join(snap, "f"))
		})
	}
}

func TestOverlayLayersAreOtherFiles(t *testing.T) {
	testprog.RequireRoot(t)
	mkfs := testprog.NeedTool(t, "mkfs.ext4")
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testprog.Skipf(t, "no loop devices: %v", err)
	}
	for _, m := range fileIDModes {
		t.Run(m.name, func(t *testing.T) {
			base := t.TempDir()
			var lowers []string
			for _, name := range []string{"a", "b"} {
				// mke2fs -d makes the file inode 12 with generation 0
				// in each image: two layers' files with one identity.
				src := filepath.Join(base, name+".src")
				if err := os.MkdirAll(src, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(src, name), []byte(name+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				img := filepath.Join(base, name+".img")
				f, err := os.Create(img)
				if err == nil {
					err = f.Truncate(8 << 20)
					f.Close()
				}
				if err != nil {
					t.Fatal(err)
				}
				run(t, mkfs, "-q", "-F", "-d", src, img)
				lower := filepath.Join(base, name)
				if err := os.Mkdir(lower, 0o755); err != nil {
					t.Fatal(err)
				}
				testprog.Mount(t, lower, "-o", "loop,ro", img)
				lowers = append(lowers, lower)
			}
			mnt := filepath.Join(base, "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			testprog.Mount(t, mnt, "-t", "overlay", "overlay", "-o", "xino=off,lowerdir="+strings.Join(lowers, ":"))
			checkOtherFiles(t, m, filepath.Join(mnt, "a"), filepath.Join(mnt, "b"))
		})
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// checkOtherFiles traces opens of a, b, a, which stat says share inode
// number and are two files.
func checkOtherFiles(t *testing.T, m fileIDMode, a, b string) {
	t.Helper()
	ia, ib := idOf(t, a), idOf(t, b)
	if ia.ino != ib.ino || ia.dev == ib.dev {
		t.Fatalf("stat: %s %+v, %s %+v: want one inode number on two devices", a, ia, b, ib)
	}
	if m.noCasts {
		collector.WithoutBTFCasts(t)
	}
	bin := testprog.Build(t, testprog.Opener)
	r := traceCmd(t, exec.Command(bin, "openat:"+a, "openat:"+b, "openat:"+a), m.opts)
	var dups []string
	for _, f := range findings(r, trace.KindDuplicateOpen) {
		name := map[string]string{a: "a", b: "b"}[f.Path]
		if name == "" {
			continue
		}
		dups = append(dups, name+"x"+strconv.Itoa(f.Count))
		if f.Path == a && (f.Dev != ia.dev || f.Ino != ia.ino) {
			t.Errorf("duplicate of %s: dev %d ino %d, stat says %+v", a, f.Dev, f.Ino, ia)
		}
	}
	slices.Sort(dups)
	if got := strings.Join(dups, " "); got != "ax2" {
		t.Errorf("duplicate_open findings %q, want \"ax2\"", got)
	}
	for _, p := range r.Processes {
		for _, fo := range p.Opens {
			want, ok := map[string]fileID{a: ia, b: ib}[fo.Path]
			if ok && (fo.Dev != want.dev || fo.Ino != want.ino) {
				t.Errorf("%s: dev %d ino %d, stat says %+v", fo.Path, fo.Dev, fo.Ino, want)
			}
		}
	}
}
