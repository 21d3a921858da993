// Package output writes once's reports and streams to the files users
// name, without ever writing through a link, into another user's file or
// a FIFO, socket or device they planted at the name, or leaving a partial
// report that looks complete.
package output

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Std is once's own standard output and error, which the names "-",
// /dev/stdout and /dev/stderr mean.
type Std struct{ Stdout, Stderr io.Writer }

// Pick is the stream of std that path names: std.Stdout for "-" and
// /dev/stdout, std.Stderr for /dev/stderr; nil for any other path. Those
// names are never opened: /dev/stdout is a link to whatever once's fd 1
// is, which is once's to write, and opening it anew would truncate a
// file it was redirected to.
func (std Std) Pick(path string) io.Writer {
	switch path {
	case "-", "/dev/stdout":
		return std.Stdout
	case "/dev/stderr":
		return std.Stderr
	}
	return nil
}

// IsStd reports whether path names one of once's own standard streams.
func IsStd(path string) bool {
	return path == "-" || path == "/dev/stdout" || path == "/dev/stderr"
}

// isNull reports whether st is the null device, character device 1:3,
// whatever its name: a sink that keeps nothing and reaches no one.
func isNull(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(uint64(st.Rdev)) == 1 && unix.Minor(uint64(st.Rdev)) == 3
}

// kind names what a file that is not regular is, for an error.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}

// Check says, before anything runs, whether path can take a report: see
// Usable. Checked up front so that a typo or a planted FIFO costs
// nothing, not the run it would report on. Its error names the path as
// -o does.
func Check(path string) error {
	if err := Usable(path); err != nil {
		return fmt.Errorf("-o %s: %w", path, err)
	}
	return nil
}

// Usable says whether once may write its output to path: "" (the
// default stream), one of once's own streams (Std.Pick), the null device,
// a regular file of this user's, or a new file in a directory that
// exists and once may write. Never a symlink, a FIFO, a socket, another
// device, a directory or another user's file: in a directory others can
// write (/tmp) those are what another user planted to read root's report
// (every argv, paths under /root), to hang once, or to have root write
// over a file of theirs. The error does not repeat the path.
func Usable(path string) error {
	if path == "" || IsStd(path) {
		return nil
	}
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	switch {
	case err == nil && isNull(&st):
		return nil
	case err == nil:
		if err := refuse(&st); err != nil {
			return err
		}
	case !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR):
		// ENOENT and ENOTDIR: the directory's checks say it better.
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !dst.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	// Permission bits are not all: root passes access(2) where no file
	// can be made (/proc, /sys, a read-only bind mount's directory under
	// a writable one). A file made and removed says what the write will
	// meet, before the run rather than after it.
	f, err := os.CreateTemp(dir, ".once-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("directory %s: cannot make a file there: %w", dir, err)
	}
	os.Remove(f.Name())
	f.Close()
	return nil
}

// refuse is why an existing file that is not the null device cannot take
// once's output, or nil for a regular file of this user's.
func refuse(st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errors.New("it is a symlink; refusing to write through it")
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("it is %s, not a regular file; refusing to write to it", kind(st.Mode))
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("owned by uid %d, not this user (%d); refusing to write to another user's file", st.Uid, os.Geteuid())
	}
	return nil
}

// File is output being written to a path: to a temp file renamed into
// place by Commit, or straight to once's own stream or the null device.
type File struct {
	path string
	w    io.Writer
	// tmp and buf: the temp file and its buffer; replace: path was a
	// regular file of this user's when opened (else the rename must not
	// replace anything).
	tmp *os.File
	buf *bufio.Writer
	// dir is path's directory, opened (O_PATH) when the temp file was
	// made in it: the temp file's name in it (tmpName) and path's base
	// are resolved in it, never again through the directory's path,
	// whose parts a user who owns one may swap for a link mid-run.
	dir     *os.File
	tmpName string
	replace bool
	// null: the null device, opened.
	null *os.File
}

// Create opens path for once's output: std's stream for the names Pick
// knows; the null device, opened without following a link or blocking
// and checked on the opened file; else a 0600 temp file (O_CREAT|O_EXCL)
// beside path that Commit renames into place, so that a failed write
// never leaves output that looks complete. The rename replaces only a
// regular file of this user's that was there when Create looked, and
// nothing when nothing was: whatever another user puts at path meanwhile
// is never written to, and a rename onto it fails. The temp file and the
// rename are in path's directory as it was at Create, opened then: a
// directory on the path swapped for a link meanwhile takes the report
// nowhere else. Anything Usable refuses is refused, nothing opened.
func Create(path string, std Std) (*File, error) {
	if w := std.Pick(path); w != nil {
		return &File{path: path, w: w}, nil
	}
	if IsStd(path) {
		return nil, fmt.Errorf("%s: no such stream here", path)
	}
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	switch {
	case err == nil && isNull(&st):
		return openNull(path)
	case err == nil:
		if err := refuse(&st); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, unix.ENOENT):
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	existed := err == nil
	dirName := filepath.Dir(path)
	dfd, err := unix.Open(dirName, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dirName, Err: err}
	}
	dir := os.NewFile(uintptr(dfd), dirName)
	tmp, name, err := createTemp(dir)
	if err != nil {
		dir.Close()
		return nil, err
	}
	f := &File{path: path, tmp: tmp, buf: bufio.NewWriter(tmp), replace: existed, dir: dir, tmpName: name}
	f.w = f.buf
	return f, nil
}

// createTemp makes a new 0600 temp file in dir: a short name (the
// report's own may be up to NAME_MAX already), never one that was there.
func createTemp(dir *os.File) (*os.File, string, error) {
	for try := 0; ; try++ {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		name := ".once-" + hex.EncodeToString(b[:]) + ".tmp"
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) && try < 100 {
			continue
		}
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		// The umask may have taken bits off, never added any; 0600
		// whatever it is.
		if err := unix.Fchmod(fd, 0o600); err != nil {
			unix.Close(fd)
			unix.Unlinkat(int(dir.Fd()), name, 0)
			return nil, "", err
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), name, nil
	}
}

// openNull opens the null device at path, and checks that what it opened
// is that device: the name may have been replaced since it was looked at.
// O_NONBLOCK: a FIFO put there meanwhile must not hang the open.
func openNull(path string) (*File, error) {
	n, err := openNullFile(path)
	if err != nil {
		return nil, err
	}
	return &File{path: path, w: n, null: n}, nil
}

func openNullFile(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s: it is a symlink; refusing to write through it", path)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if !isNull(&st) {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: it is %s, not a regular file; refusing to write to it", path, kind(st.Mode))
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Write writes to the output.
func (f *File) Write(p []byte) (int, error) { return f.w.Write(p) }

// Commit finishes the output: the temp file flushed, closed and renamed
// into place.
func (f *File) Commit() error {
	switch {
	case f.null != nil:
		return f.null.Close()
	case f.tmp == nil:
		return nil
	}
	defer f.dir.Close()
	defer unix.Unlinkat(int(f.dir.Fd()), f.tmpName, 0) // after a failed rename
	if err := f.buf.Flush(); err != nil {
		f.tmp.Close()
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if err := f.tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	d, base := int(f.dir.Fd()), filepath.Base(f.path)
	rename := func() error {
		if err := unix.Renameat(d, f.tmpName, d, base); err != nil {
			return &os.LinkError{Op: "rename", Old: f.tmp.Name(), New: f.path, Err: err}
		}
		return nil
	}
	if f.replace {
		return rename()
	}
	err := unix.Renameat2(d, f.tmpName, d, base, unix.RENAME_NOREPLACE)
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%s: it appeared while once ran; refusing to replace it", f.path)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		// A filesystem without RENAME_NOREPLACE.
		return rename()
	case err != nil:
		return &os.LinkError{Op: "rename", Old: f.tmp.Name(), New: f.path, Err: err}
	}
	return nil
}

// Abort drops the output: the temp file removed, nothing renamed.
func (f *File) Abort() {
	switch {
	case f.null != nil:
		f.null.Close()
	case f.tmp != nil:
		f.tmp.Close()
		unix.Unlinkat(int(f.dir.Fd()), f.tmpName, 0)
		f.dir.Close()
	}
}

// WriteReport writes a report to path through Create and Commit, or to
// def when path is empty.
func WriteReport(path string, def io.Writer, std Std, write func(io.Writer) error) error {
	if path == "" {
		return write(def)
	}
	f, err := Create(path, std)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := write(f); err != nil {
		f.Abort()
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
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
// user's, one with another name (a hard link), or one that group or others can write (root's system-wide trace
// would be readable by them), never a FIFO that would hang the open, a
// socket or a device; the null device is a sink. The checks are made on
// the opened file, not on the path; a path that is no regular file when
// looked at is not even opened (opening a device can act on it). Once's
// own streams (Std.Pick) are the caller's to use, not opened here.
func OpenStream(path string) (*Stream, error) {
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err == nil {
		if isNull(&lst) {
			f, err := openNullFile(path)
			if err != nil {
				return nil, fmt.Errorf("open %w", err)
			}
			return &Stream{File: f}, nil
		}
		if lst.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, fmt.Errorf("open %s: %w", path, refuse(&lst))
		}
	}
	// Read-write: the last byte is read back, to end a cut line.
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o600)
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
		return nil, fmt.Errorf("open %s: it is %s, not a regular file", path, kind(st.Mode))
	case int(st.Uid) != os.Geteuid():
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: owned by uid %d, not this user (%d); refusing to append to another user's file", path, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: writable by group or others (mode %04o); refusing to append to it", path, st.Mode&0o7777)
	case st.Nlink > 1:
		// Where fs.protected_hardlinks is 0, a user may link any file
		// of root's into /tmp under the name root appends to.
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: it has %d hard links (another name elsewhere); refusing to append to it", path, st.Nlink)
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
// records only, never one buffered in two writes. A kill -9 or a full
// disk may still cut the write short (the kernel stops at a page boundary
// when a fatal signal comes, or where the space ends): one record cut,
// the ones after it in that write lost. OpenStream ends a cut line.
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
