package report

import (
	"math"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpenFlags(t *testing.T) {
	tests := []struct {
		flags uint64
		want  string
	}{
		{0, "O_RDONLY"},
		{unix.O_RDONLY | unix.O_CLOEXEC, "O_RDONLY|O_CLOEXEC"},
		{unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC, "O_WRONLY|O_CREAT|O_TRUNC"},
		{unix.O_RDWR | unix.O_APPEND, "O_RDWR|O_APPEND"},
		{unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY, "O_RDWR|O_CREAT|O_EXCL|O_NOCTTY"},
		{unix.O_RDONLY | unix.O_NONBLOCK | unix.O_DIRECTORY | unix.O_CLOEXEC, "O_RDONLY|O_NONBLOCK|O_DIRECTORY|O_CLOEXEC"},
		{unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NOATIME, "O_RDONLY|O_NOFOLLOW|O_NOATIME"},
		{unix.O_WRONLY | unix.O_DIRECT, "O_WRONLY|O_DIRECT"},
		{unix.O_WRONLY | unix.O_DSYNC, "O_WRONLY|O_DSYNC"},
		// O_SYNC contains the O_DSYNC bit: only O_SYNC is named.
		{unix.O_WRONLY | unix.O_SYNC, "O_WRONLY|O_SYNC"},
		{unix.O_PATH | unix.O_CLOEXEC, "O_RDONLY|O_CLOEXEC|O_PATH"},
		// O_TMPFILE contains the O_DIRECTORY bit: only O_TMPFILE is named.
		{unix.O_RDWR | unix.O_TMPFILE, "O_RDWR|O_TMPFILE"},
		{unix.O_RDWR | unix.O_TMPFILE | unix.O_EXCL, "O_RDWR|O_EXCL|O_TMPFILE"},
		// Every named flag at once, in print order.
		{unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC | unix.O_APPEND |
			unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC |
			unix.O_SYNC | unix.O_PATH | unix.O_TMPFILE,
			"O_RDWR|O_CREAT|O_EXCL|O_NOCTTY|O_TRUNC|O_APPEND|O_NONBLOCK|O_DIRECT|O_NOFOLLOW|O_NOATIME|O_CLOEXEC|O_SYNC|O_PATH|O_TMPFILE"},
		// Unknown bits are kept, in hex, after the names.
		{1 << 30, "O_RDONLY|0x40000000"},
		{unix.O_WRONLY | unix.O_CLOEXEC | 1<<40, "O_WRONLY|O_CLOEXEC|0x10000000000"},
		// Access mode 3 has no name.
		{3, "0x3"},
		{3 | unix.O_CLOEXEC, "0x3|O_CLOEXEC"},
	}
	if kernelOLargefile != 0 {
		tests = append(tests, struct {
			flags uint64
			want  string
		}{unix.O_RDONLY | kernelOLargefile, "O_RDONLY|O_LARGEFILE"})
	}
	for _, tc := range tests {
		if got := OpenFlags(tc.flags); got != tc.want {
			t.Errorf("OpenFlags(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}

func TestErrnoName(t *testing.T) {
	for _, tc := range []struct {
		errno int32
		want  string
	}{
		{int32(unix.ENOENT), "ENOENT"},
		{int32(unix.EACCES), "EACCES"},
		{int32(unix.ENOEXEC), "ENOEXEC"},
		{int32(unix.ENOTDIR), "ENOTDIR"},
		// The kernel's own, which strace names: a call a signal
		// interrupted, restarted or ended with its process.
		{512, "ERESTARTSYS"},
		{513, "ERESTARTNOINTR"},
		{514, "ERESTARTNOHAND"},
		{516, "ERESTART_RESTARTBLOCK"},
		{0, "E0"},
		{-1, "E-1"},
		{9999, "E9999"},
	} {
		if got := ErrnoName(tc.errno); got != tc.want {
			t.Errorf("ErrnoName(%d) = %q, want %q", tc.errno, got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		ns   uint64
		want string
	}{
		{0, "0ns"},
		{999, "999ns"},
		{1000, "1µs"},
		{1234, "1.2µs"},
		{1250, "1.3µs"},
		{9_949, "9.9µs"},
		{9_950, "10µs"},
		{35_000, "35µs"},
		{999_499, "999µs"},
		{999_500, "1ms"},
		{1_500_000, "1.5ms"},
		{35_000_000, "35ms"},
		{350_400_000, "350ms"},
		{999_999_999, "1s"},
		{2_500_000_000, "2.5s"},
		{125_000_000_000, "125s"},
		{math.MaxUint64, "18446744074s"},
	} {
		if got := Duration(tc.ns); got != tc.want {
			t.Errorf("Duration(%d) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

func TestDevString(t *testing.T) {
	for _, tc := range []struct {
		major, minor uint32
		want         string
	}{
		{0, 0, "0:0"},
		{8, 1, "8:1"},
		{259, 3, "259:3"},
		{0, 1 << 19, "0:524288"}, // minor numbers above 255 use the high bits
		{4095, 1<<20 - 1, "4095:1048575"},
	} {
		if got := DevString(unix.Mkdev(tc.major, tc.minor)); got != tc.want {
			t.Errorf("DevString(Mkdev(%d, %d)) = %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
}
