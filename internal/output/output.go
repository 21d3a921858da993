// Package output writes once's reports and streams to the files users
// name, without ever writing through a link, into another user's file, or
// leaving a partial report that looks complete.
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

// Check says, before anything runs, whether path can take a report: its
// directory exists and is a directory, and path is not a symlink. Checked
// up front so that a typo costs nothing, not the run it would report on.
func Check(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("-o %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("-o %s: %s is not a directory", path, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("-o %s: directory %s: %w", path, dir, err)
	}
	if lst, err := os.Lstat(path); err == nil && lst.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("-o %s: it is a symlink; refusing to write through it", path)
	}
	return nil
}

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
	// A short temp name: the report's own may be up to NAME_MAX already.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".once-*.tmp")
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

// Stream is a file a long-running stream of records is appended to.
type Stream struct {
	*os.File
	// Repaired: the file did not end in a newline when opened (an
	// unclean stop cut its last record): a newline was written first, so
	// that the next record starts on a line of its own.
	Repaired bool
}

// OpenStream opens a file for a long-running stream of output: created
// 0600 or appended to, never through a symlink, never a file of another
// user's or one that group or others can write (root's system-wide trace
// would be readable by them), never a FIFO that would hang the open. The
// checks are made on the opened file, not on the path.
func OpenStream(path string) (*Stream, error) {
	// Read-write: the last byte is read back, to end a cut line.
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("open %s: it is a symlink; refusing to write through it", path)
		case errors.Is(err, unix.ENXIO), errors.Is(err, unix.EISDIR):
			return nil, fmt.Errorf("open %s: not a regular file", path)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: not a regular file", path)
	case int(st.Uid) != os.Geteuid():
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: owned by uid %d, not this user (%d); refusing to append to another user's file", path, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: writable by group or others (mode %04o); refusing to append to it", path, st.Mode&0o7777)
	}
	// Blocking from now on: a regular file never blocks, and a write
	// must not return EAGAIN halfway.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Stream{File: os.NewFile(uintptr(fd), path)}
	if st.Size > 0 {
		var last [1]byte
		if _, err := unix.Pread(fd, last[:], st.Size-1); err == nil && last[0] != '\n' {
			if _, err := s.File.Write([]byte{'\n'}); err != nil {
				s.Close()
				return nil, fmt.Errorf("open %s: %w", path, err)
			}
			s.Repaired = true
		}
	}
	return s, nil
}

// RecordWriter buffers whole records: each Write is one record (a JSON
// line, a table), and what reaches the file in one write(2) is whole
// records only, so that a crash or a full disk can cut at most the record
// being written, never one already buffered in two.
type RecordWriter struct {
	w   io.Writer
	buf []byte
}

// NewRecordWriter buffers up to size bytes of records for w.
func NewRecordWriter(w io.Writer, size int) *RecordWriter {
	return &RecordWriter{w: w, buf: make([]byte, 0, size)}
}

// Write buffers p, one whole record, writing out what is buffered first
// when p would not fit.
func (r *RecordWriter) Write(p []byte) (int, error) {
	if len(r.buf)+len(p) > cap(r.buf) {
		if err := r.Flush(); err != nil {
			return 0, err
		}
		if len(p) > cap(r.buf) {
			return r.w.Write(p)
		}
	}
	r.buf = append(r.buf, p...)
	return len(p), nil
}

// WriteString is Write of a string.
func (r *RecordWriter) WriteString(s string) (int, error) { return r.Write([]byte(s)) }

// Flush writes out every buffered record.
func (r *RecordWriter) Flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	_, err := r.w.Write(r.buf)
	r.buf = r.buf[:0]
	return err
}
