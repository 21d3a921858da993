package refcopy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// tempDir is t.TempDir with symbolic links resolved, so that paths compare
// equal to what the kernel reports.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// otherFSDir returns a fresh directory on a different filesystem from
// tempDir: /dev/shm, a tmpfs on any ordinary Linux system. The test is
// skipped, loudly, when there is no such filesystem to use.
func otherFSDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/dev/shm", "refcopy-test-")
	if err != nil {
		testprog.Skipf(t, "the cross-filesystem test cannot use /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if devOf(t, d) == devOf(t, tempDir(t)) {
		testprog.Skipf(t, "the cross-filesystem test: /dev/shm and %s are on the same filesystem", os.TempDir())
	}
	return d
}

func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// withMethod makes copies start at method m for the rest of the test.
func withMethod(t *testing.T, m method) {
	old := firstMethod
	firstMethod = m
	t.Cleanup(func() { firstMethod = old })
}

var methodNames = map[method]string{copyFileRange: "copy_file_range", sendFile: "sendfile", readWrite: "pread"}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	b := make([]byte, n)
	r.Read(b)
	return b
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile applies the umask; tests want the exact mode.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func modeOf(t *testing.T, path string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (or cannot be checked: %v); want it absent", path, err)
	}
}

// extent is a data region [Start, End) as SEEK_DATA/SEEK_HOLE report it.
type extent struct{ Start, End int64 }

// dataExtents maps the data regions of the file at path.
func dataExtents(t *testing.T, path string) []extent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	var out []extent
	for pos := int64(0); ; {
		start, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if err == unix.ENXIO {
			return out
		}
		if err != nil {
			t.Fatalf("SEEK_DATA %s at %d: %v", path, pos, err)
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			t.Fatalf("SEEK_HOLE %s at %d: %v", path, start, err)
		}
		out = append(out, extent{start, end})
		pos = end
	}
}

// makeSparse creates a file of the given size that is all hole except for
// data written at the given offsets: ftruncate, then pwrite.
func makeSparse(t *testing.T, path string, size int64, data map[int64][]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off, b := range data {
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

// treeSnapshot describes everything under root, for comparing trees: each
// entry's type, permission bits, and contents or link target.
func treeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		desc := fmt.Sprintf("%v", mode)
		switch {
		case mode.Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case mode.IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d bytes %x", len(b), b[:min(len(b), 16)])
			if len(b) > 16 {
				desc += fmt.Sprintf("... sum %d", checksum(b))
			}
		}
		snap[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func checksum(b []byte) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// diffSnapshots reports the differences between two tree snapshots.
func diffSnapshots(t *testing.T, got, want map[string]string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s: got %q, want %q", k, got[k], want[k])
		}
	}
}

func equalBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: %d bytes, want %d; first difference at offset %d", what, len(got), len(want), i)
	}
}

// errLines returns the one-line messages of a joined error.
func errLines(err error) []string {
	var out []string
	for _, e := range Flatten(err) {
		out = append(out, e.Error())
	}
	return out
}
