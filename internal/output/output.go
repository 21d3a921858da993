// Package output writes once's reports and streams to the files users
// name, without ever writing through a link or leaving a partial report
// that looks complete.
package output

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// WriteReport writes to path atomically (a 0600 temp file renamed into
// place, so a failed write never leaves a report that looks complete), or
// to def when path is empty or "-".
func WriteReport(path string, def io.Writer, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(def)
	}
	// Only a regular file (or a new one) is replaced by rename: renaming
	// over /dev/null or a FIFO would replace the device node itself, and
	// over a symlink would leave a file where the link was.
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("write report: %s is a symlink; refusing to write through it", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		if err := write(f); err != nil {
			f.Close()
			return fmt.Errorf("write report %s: %w", path, err)
		}
		return f.Close()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write report: %w", err)
	}
	w := bufio.NewWriter(tmp)
	if err := write(w); err != nil {
		tmp.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// OpenStream opens a file for a long-running stream of output: created
// 0600, appended to, and never through a symlink someone planted there.
func OpenStream(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("open %s: it is a symlink; refusing to write through it", path)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}
