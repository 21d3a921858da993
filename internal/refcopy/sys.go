package refcopy

import (
	"golang.org/x/sys/unix"
)

// The wrappers below retry a system call that a signal interrupted. The Go
// runtime installs its handlers with SA_RESTART, so EINTR is rare, but a
// blocking open (a FIFO) or a read from a slow device can still see it, and
// the os package guards the same calls the same way.

func retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

func retryN[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err != unix.EINTR {
			return v, err
		}
	}
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	return retryN(func() (int, error) { return unix.Openat(dirfd, name, flags, mode) })
}

func fstat(fd int, st *unix.Stat_t) error {
	return retry(func() error { return unix.Fstat(fd, st) })
}

func fstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	return retry(func() error { return unix.Fstatat(dirfd, name, st, flags) })
}

// closeFD closes fd. It never retries: on Linux the descriptor is released
// even when close reports EINTR, and retrying could close a descriptor that
// another goroutine has just been given.
func closeFD(fd int) error { return unix.Close(fd) }

// readlinkat returns the target of the symbolic link name, growing the
// buffer until the target fits: readlink silently truncates.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := retryN(func() (int, error) { return unix.Readlinkat(dirfd, name, buf) })
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// fileID identifies a file independently of its names.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: st.Dev, ino: st.Ino} }

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isReg(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }
