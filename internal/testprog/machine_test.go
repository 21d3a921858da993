package testprog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckNull: the null device passes; a regular file where it should
// be, a missing one and another device do not.
func TestCheckNull(t *testing.T) {
	regular := filepath.Join(t.TempDir(), "null")
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // in the error; "" for none
	}{
		{os.DevNull, ""},
		{regular, "is not the null device"},
		{"/dev/zero", "is not the null device"},
		{filepath.Join(t.TempDir(), "missing"), "no such file"},
	} {
		err := checkNull(tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.path, err, tc.want)
		}
	}
}
