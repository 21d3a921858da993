package filegen

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// once check --opens PATH=N stats PATH, then opens it for its
// generation (FS_IOC_GETVERSION). Whoever can write PATH's directory can
// put something else there in between: a link to a device, whose open
// acts (a pty allocated, a watchdog armed), or a FIFO. Read must open
// nothing but the file stat saw: here st is a regular file's, and the
// name is now a FIFO's (on the same file system, whose type Read
// wants); an open of the FIFO is seen by inotify.
func TestReadOpensOnlyTheFileStatSaw(t *testing.T) {
	dir := t.TempDir()
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	switch uint64(sfs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
	default:
		t.Skipf("%s is on a file system (%#x) whose generation Read does not read", dir, sfs.Type)
	}
	file, fifo := filepath.Join(dir, "f"), filepath.Join(dir, "fifo")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := Read(file, &st); !ok {
		t.Fatalf("Read(%s): no generation of the file stat saw", file)
	}
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	// The file swapped for the FIFO after the stat.
	if err := unix.Renameat2(unix.AT_FDCWD, fifo, unix.AT_FDCWD, file, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if gen, ok := Read(file, &st); ok {
		t.Errorf("Read of a FIFO put in the place of the file stat saw: generation %d", gen)
	}
	var buf [4096]byte
	if n, _ := unix.Read(in, buf[:]); n > 0 {
		t.Errorf("Read opened the FIFO put at %s after the stat (inotify: %d bytes of IN_OPEN)", file, n)
	}
}
