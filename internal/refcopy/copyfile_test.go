package refcopy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// TestCopyFileContents copies files of assorted sizes with each copy method
// (on one filesystem copy_file_range serves them all unless told otherwise)
// and across filesystems, where copy_file_range gives way to sendfile.
func TestCopyFileContents(t *testing.T) {
	sizes := []int{0, 1, 4095, 4096, 100_000, 3*bufSize + 17, 5<<20 + 3}
	other := otherFSDir(t)
	for _, m := range []method{copyFileRange, sendFile, readWrite} {
		for _, dstDir := range []string{"", other} {
			name := methodNames[m]
			if dstDir != "" {
				name += "/cross-fs"
			}
			t.Run(name, func(t *testing.T) {
				withMethod(t, m)
				dir := tempDir(t)
				if dstDir == "" {
					dstDir = dir
				}
				for i, size := range sizes {
					src := filepath.Join(dir, fmt.Sprintf("src%d", i))
					dst := filepath.Join(dstDir, fmt.Sprintf("dst-%s-%d", strings.ReplaceAll(name, "/", "-"), i))
					want := randomBytes(size, uint64(i))
					writeFile(t, src, want, 0o640)
					if err := CopyFile(src, dst, Options{}); err != nil {
						t.Fatalf("CopyFile %d bytes: %v", size, err)
					}
					equalBytes(t, fmt.Sprintf("copy of %d bytes", size), readFile(t, dst), want)
					if got := modeOf(t, dst); got != 0o640 {
						t.Errorf("mode %o, want 640", got)
					}
				}
			})
		}
	}
}

// TestCopyFileSparse checks that holes stay holes: the destination must
// have exactly the source's map of data and holes, for a file with a hole
// before 1 MiB of data (the classic case), a trailing hole, a file that is
// all hole, and several extents; on tmpfs and on the temporary directory's
// filesystem, in both directions, with every copy method.
func TestCopyFileSparse(t *testing.T) {
	const mib = 1 << 20
	page := []byte(strings.Repeat("data", 1024)) // 4 KiB, one page or block
	layouts := []struct {
		name string
		size int64
		data map[int64][]byte
	}{
		{"hole-then-data", 2 * mib, map[int64][]byte{mib: page}},
		{"trailing-hole", 4 * mib, map[int64][]byte{0: page}},
		{"all-hole", 8 * mib, nil},
		{"extents", 3*mib + 4096, map[int64][]byte{0: page, mib: page, 3 * mib: page}},
	}
	shm := otherFSDir(t)
	dirs := map[string]string{"tmpfs": shm, "tempdir": tempDir(t)}
	for _, m := range []method{copyFileRange, sendFile, readWrite} {
		for srcFS, srcDir := range dirs {
			for dstFS, dstDir := range dirs {
				t.Run(fmt.Sprintf("%s/%s-to-%s", methodNames[m], srcFS, dstFS), func(t *testing.T) {
					withMethod(t, m)
					for _, l := range layouts {
						src := filepath.Join(srcDir, fmt.Sprintf("sparse-%s-%s-%s-%d", l.name, srcFS, dstFS, m))
						dst := src + ".copy"
						if dstDir != srcDir {
							dst = filepath.Join(dstDir, filepath.Base(dst))
						}
						makeSparse(t, src, l.size, l.data)
						if err := CopyFile(src, dst, Options{}); err != nil {
							t.Fatalf("%s: %v", l.name, err)
						}
						checkSparseCopy(t, l.name, src, dst, l.size)
						os.Remove(src)
						os.Remove(dst)
					}
				})
			}
		}
	}
}

func checkSparseCopy(t *testing.T, name, src, dst string, size int64) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dst, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size {
		t.Errorf("%s: size %d, want %d", name, st.Size, size)
	}
	srcMap, dstMap := dataExtents(t, src), dataExtents(t, dst)
	if fmt.Sprint(dstMap) != fmt.Sprint(srcMap) {
		t.Errorf("%s: data extents %v, want the source's %v", name, dstMap, srcMap)
	}
	// Independently of SEEK_DATA: allocated space well under the size.
	if st.Blocks*512 >= size/2 {
		t.Errorf("%s: %d blocks allocated for %d bytes; the holes were filled", name, st.Blocks, size)
	}
	equalBytes(t, name+" contents", readFile(t, dst), readFile(t, src))
}

// TestCopyFileMode checks that the destination gets the source's mode
// exactly, whatever the umask and whatever mode an existing destination had.
func TestCopyFileMode(t *testing.T) {
	old := unix.Umask(0o077) // would strip group and other bits at creation
	defer unix.Umask(old)
	dir := tempDir(t)
	for _, mode := range []uint32{0o600, 0o644, 0o755, 0o444, 0o4755, 0o2750, 0o1644, 0} {
		src := filepath.Join(dir, fmt.Sprintf("src-%o", mode))
		writeFile(t, src, []byte("x"), 0o600)
		if err := unix.Chmod(src, mode); err != nil {
			t.Fatal(err)
		}
		for _, existing := range []bool{false, true} {
			dst := filepath.Join(dir, fmt.Sprintf("dst-%o-%v", mode, existing))
			if existing {
				writeFile(t, dst, []byte("longer old contents"), 0o666)
			}
			if err := CopyFile(src, dst, Options{}); err != nil {
				t.Fatalf("mode %o: %v", mode, err)
			}
			// The test runs as the owner of both files (set-ID bits kept).
			if got := modeOf(t, dst); got != mode {
				t.Errorf("mode %o (existing destination %v): copy has %o", mode, existing, got)
			}
			if got := string(readFile(t, dst)); got != "x" {
				t.Errorf("mode %o: copy contains %q, want %q", mode, got, "x")
			}
		}
	}
}

// TestCopyFileSetIDOtherOwner checks that set-ID bits are dropped when the
// copy does not have the source's owner, which would otherwise hand out the
// copier's identity.
func TestCopyFileSetIDOtherOwner(t *testing.T) {
	testprog.RequireRoot(t) // to give the source another owner
	dir := tempDir(t)
	src := filepath.Join(dir, "src")
	writeFile(t, src, []byte("x"), 0o755)
	if err := unix.Chown(src, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(src, 0o6755); err != nil { // chown cleared them
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if err := CopyFile(src, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, dst); got != 0o755 {
		t.Errorf("copy of a 6755 file owned by someone else has mode %o, want 755", got)
	}
}

// TestCopyFileFollowsLinks checks that without -r a link named as the
// source is followed, like cp.
func TestCopyFileFollowsLinks(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, filepath.Join(dir, "target"), []byte("contents"), 0o644)
	if err := os.Symlink("target", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "copy")
	if err := CopyFile(filepath.Join(dir, "link"), dst, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dst); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("copy of a link without -r: %v, %v; want a regular file", fi, err)
	}
	if got := string(readFile(t, dst)); got != "contents" {
		t.Errorf("copy contains %q", got)
	}
}

// TestCopyFileStreams checks that a FIFO named as the source without -r is
// read to its end, as cp does, rather than refused or copied by offsets.
func TestCopyFileStreams(t *testing.T) {
	dir := tempDir(t)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	want := randomBytes(300_000, 7) // more than a pipe buffer
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return // the copy fails and reports it
		}
		f.Write(want)
		f.Close()
	}()
	dst := filepath.Join(dir, "copy")
	if err := CopyFile(fifo, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	equalBytes(t, "copy of a FIFO", readFile(t, dst), want)
}

// TestCopyFileProcFile checks that a pseudo-file whose size is 0 is read
// to its end instead of copied as empty.
func TestCopyFileProcFile(t *testing.T) {
	dst := filepath.Join(tempDir(t), "version")
	if err := CopyFile("/proc/version", dst, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dst); len(got) == 0 || !strings.HasPrefix(string(got), "Linux") {
		t.Errorf("copy of /proc/version: %q", got)
	}
}
