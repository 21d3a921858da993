package testprog

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CheckMachine says what on this machine would make the tests fail for
// reasons none of them is about. The null device is one: a script's
// `rm -f $OUT` with OUT=/dev/null leaves a regular file there at the next
// redirection, after which tmux will not start, every `>/dev/null` is an
// open of one regular file (a duplicate open in once's reports), and the
// tests fail far from the cause.
func CheckMachine() error { return checkNull(os.DevNull) }

// checkNull says whether path is the null device (character device 1:3).
func checkNull(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		return fmt.Errorf("%s is not the null device (mode %#o); as root: rm -f %[1]s && mknod -m 666 %[1]s c 1 3", path, st.Mode)
	}
	return nil
}
