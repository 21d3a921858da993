package compare

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckSpace: a cp/mv workload is refused when the file system has
// fewer bytes or inodes free than it needs (a copy twice its files, a
// move once), and left to its writes when statfs fails.
func TestCheckSpace(t *testing.T) {
	defer func(f func(string) (uint64, uint64, error)) { freeSpace = f }(freeSpace)
	for _, tc := range []struct {
		name        string
		free, nodes uint64
		err         error
		files, size int
		move        bool
		want        string // in the error; "" for none
	}{
		{"a copy that fits", 64 << 10, 1000, nil, 2, 4096, false, ""},
		{"a copy past the bytes", 64 << 10, 1000, nil, 10, 4096, false, "needs 80 KiB (--files 10 × --size 4096, twice: a source and a copy) in /t, which has 64 KiB free (1000 inodes)"},
		{"a move of the same fits", 64 << 10, 1000, nil, 10, 4096, true, ""},
		{"past the inodes", 1 << 40, 100, nil, 100, 0, false, "needs 0 bytes"},
		{"2 PiB", 1 << 40, 1 << 40, nil, 1000000, 1 << 30, false, "needs 1.9 PiB"},
		{"statfs failed", 0, 0, errors.New("EIO"), 1000000, 1 << 30, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			freeSpace = func(string) (uint64, uint64, error) { return tc.free, tc.nodes, tc.err }
			err := CheckSpace("/t", tc.files, tc.size, tc.move)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
