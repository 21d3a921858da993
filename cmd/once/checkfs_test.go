package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// once check --opens names a file by what stat gives its path; the opens
// must be counted by the same device. On btrfs stat gives a subvolume's
// (the top one's too, and a root file system on btrfs is a subvolume),
// not the superblock's: an assertion of 0 opens held however often the
// file was opened, one of 1 found no process opening it, and a file and
// its copy in a snapshot were one file.
func TestCheckOpensBtrfs(t *testing.T) {
	testprog.RequireRoot(t)
	btrfs := testprog.NeedTool(t, "btrfs")
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	testprog.LoopMount(t, dir, mnt, "btrfs")
	sh := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	sv, snap := filepath.Join(mnt, "sv"), filepath.Join(mnt, "snap")
	sh(btrfs, "subvolume", "create", sv)
	top := filepath.Join(mnt, "top")
	for _, p := range []string{top, filepath.Join(sv, "f")} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh(btrfs, "subvolume", "snapshot", sv, snap)
	svf, snapf := filepath.Join(sv, "f"), filepath.Join(snap, "f")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"top subvolume, 0 opens", []string{"check", "--opens", top + "=0", "--", "cat", top, top}, 1, "cat opened " + top + " 2 times, expected 0"},
		{"top subvolume, 2 opens", []string{"check", "--opens", top + "=2", "--", "cat", top, top}, 0, ""},
		{"a file and its snapshot's", []string{"check", "--opens", svf + "=1", "--", "cat", svf, snapf}, 0, ""},
		{"a file and its snapshot's, max-opens", []string{"check", "--max-opens", "1", "--", "cat", svf, snapf}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.msg != "" && !bytes.Contains(stderr.Bytes(), []byte(tc.msg)) {
				t.Errorf("stderr lacks %q:\n%s", tc.msg, stderr.String())
			}
		})
	}
}

// once check --opens names the file at PATH before the run. ext4 gives a
// freed inode number to the next file made: a file removed and another
// made in its place (a rewrite by rm and create) may have its number,
// which is another file, told apart by its generation as the report
// tells them apart; the named file's opens were those of both.
func TestCheckOpensInodeReused(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil || sfs.Type != unix.EXT4_SUPER_MAGIC {
		t.Skipf("SKIP %s is not on ext4", dir)
	}
	f, g := filepath.Join(dir, "f"), filepath.Join(dir, "g")
	if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(f, &st); err != nil {
		t.Fatal(err)
	}
	script := "cat " + f + " >/dev/null; rm " + f + "; echo y >" + g + "; cat " + g + " " + g + " >/dev/null"
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--opens", f + "=1", "--", "sh", "-c", script}, &stdout, &stderr)
	var gst unix.Stat_t
	if err := unix.Stat(g, &gst); err != nil {
		t.Fatal(err)
	}
	if gst.Ino != st.Ino {
		t.Skipf("SKIP ext4 gave %s another number (%d, %d had %d)", g, gst.Ino, st.Ino, st.Ino)
	}
	if code != 0 {
		t.Errorf("exit %d, want 0 (%s opened once; %s, with its number, 3 times); stderr:\n%s", code, f, g, stderr.String())
	}
}
