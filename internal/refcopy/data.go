package refcopy

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// method is a way of moving bytes from the source descriptor to the
// destination. They are tried in order, and a file falls back to the next
// one for good when the kernel says the current one cannot serve this pair
// of files.
type method int

const (
	// copyFileRange moves data inside the kernel and lets the filesystem
	// share extents or do a server-side copy; it needs both files on a
	// filesystem that supports it (cross-filesystem only since Linux 5.3,
	// and since 5.19 only between filesystems of the same type).
	copyFileRange method = iota
	// sendFile still avoids the round trip through user memory and works
	// between any filesystems.
	sendFile
	// readWrite always works: pread into a buffer, pwrite it out.
	readWrite
)

// firstMethod is the method each file starts with. Tests lower it to
// exercise the fallbacks on filesystems where the faster methods work.
var firstMethod = copyFileRange

const (
	// maxChunk bounds one copy_file_range or sendfile call, so that a huge
	// extent is copied in pieces the kernel handles without overflow
	// (sendfile caps a call at 2 GiB anyway).
	maxChunk = 1 << 30
	// bufSize is the buffer for readWrite, large enough to make the
	// per-call overhead small without keeping much memory.
	bufSize = 256 << 10
)

// dataCopier copies the contents of one file: src and dst are descriptors
// and srcName and dstName are the quoted names for messages.
type dataCopier struct {
	src, dst         int
	srcName, dstName string
	method           method
	buf              []byte
}

// copyData copies the contents of the open file src, whose fstat result is
// st, into dst, which has just been opened with O_TRUNC and is therefore
// empty.
//
// Everything happens through the one descriptor src: the sparse probe
// (lseek SEEK_DATA/SEEK_HOLE) and the copy. The destination is first
// extended to the source size with ftruncate, which leaves it a single
// hole; then only the data extents are copied, at their offsets, so holes
// stay holes without ever being read or written.
func copyData(src, dst int, st *unix.Stat_t, srcName, dstName string) error {
	c := &dataCopier{src: src, dst: dst, srcName: srcName, dstName: dstName, method: firstMethod}
	size := st.Size
	if size == 0 || !isReg(st) {
		// A FIFO or a device, which has no size or offsets; or an empty
		// regular file, which may be a pseudo-file (procfs) whose size
		// says nothing about its contents: read until end of file.
		return c.stream()
	}
	if err := retry(func() error { return unix.Ftruncate(dst, size) }); err != nil {
		return failf(err, "error writing %s", dstName)
	}
	for pos := int64(0); pos < size; {
		start, end, err := c.nextExtent(pos, size)
		if err != nil {
			return err
		}
		if start >= size {
			break // only a hole is left, and ftruncate made it already
		}
		n, err := c.copyRange(start, end)
		if err != nil {
			return err
		}
		if n < end-start {
			// The source ended early: it was truncated while we copied.
			// Copy what there was, like cp, and no invented zeros.
			return c.truncate(start + n)
		}
		pos = end
	}
	return nil
}

// nextExtent returns the first data extent [start, end) at or after pos,
// clipped to size; start is size when there is no more data.
func (c *dataCopier) nextExtent(pos, size int64) (start, end int64, err error) {
	start, err = unix.Seek(c.src, pos, unix.SEEK_DATA)
	switch {
	case err == unix.ENXIO:
		// No data after pos: the rest of the file is a hole.
		return size, size, nil
	case err == unix.EINVAL || errors.Is(err, unix.EOPNOTSUPP):
		// No sparse-file support (rare: the VFS fallback treats the whole
		// file as data). Copy everything that is left.
		return pos, size, nil
	case err != nil:
		return 0, 0, failf(err, "cannot read %s", c.srcName)
	}
	end, err = unix.Seek(c.src, start, unix.SEEK_HOLE)
	if err != nil {
		return 0, 0, failf(err, "cannot read %s", c.srcName)
	}
	// The file may have grown since fstat; the copy is of the size seen then.
	return min(start, size), min(end, size), nil
}

// copyRange copies the bytes [start, end) of the source to the same offsets
// in the destination and returns how many it copied, which is less than
// end-start only if the source hit end of file first.
func (c *dataCopier) copyRange(start, end int64) (int64, error) {
	off := start
	for off < end {
		var n int
		var err error
		switch c.method {
		case copyFileRange:
			// Explicit offsets: neither descriptor's file position is used
			// or moved.
			in, out := off, off
			n, err = retryN(func() (int, error) {
				return unix.CopyFileRange(c.src, &in, c.dst, &out, int(min(end-off, maxChunk)), 0)
			})
		case sendFile:
			// sendfile reads at an explicit offset but writes at the
			// destination's file position, so place that first.
			if _, err = unix.Seek(c.dst, off, unix.SEEK_SET); err != nil {
				return off - start, failf(err, "error writing %s", c.dstName)
			}
			in := off
			n, err = retryN(func() (int, error) {
				return unix.Sendfile(c.dst, c.src, &in, int(min(end-off, maxChunk)))
			})
		case readWrite:
			n, err = c.readWriteAt(off, end)
			if err != nil {
				return off - start, err
			}
			if n == 0 {
				return off - start, nil // end of file
			}
		}
		if c.method != readWrite {
			if err != nil && cannotServe(err) {
				c.method++
				continue
			}
			if err != nil {
				return off - start, c.transferError(err)
			}
			if n == 0 {
				// Either the source really ends here, or the filesystem
				// cannot tell (copy_file_range on some pseudo-files
				// returns 0). The next method settles which; readWrite
				// treats 0 as the end for sure.
				c.method++
				continue
			}
		}
		off += int64(n)
	}
	return off - start, nil
}

// cannotServe reports whether err from copy_file_range or sendfile means
// "not for these files" rather than a real I/O failure, so that the next
// method should be tried.
func cannotServe(err error) bool {
	return err == unix.EXDEV || err == unix.EINVAL || err == unix.ENOSYS ||
		errors.Is(err, unix.EOPNOTSUPP)
}

// transferError words a failure of copy_file_range or sendfile, which do
// not say which side failed: errors that can only come from writing are
// reported against the destination, the rest against the pair.
func (c *dataCopier) transferError(err error) error {
	switch err {
	case unix.ENOSPC, unix.EDQUOT, unix.EFBIG, unix.EROFS:
		return failf(err, "error writing %s", c.dstName)
	}
	return failf(err, "error copying %s to %s", c.srcName, c.dstName)
}

// readWriteAt copies one buffer's worth of [off, end) with pread and
// pwrite and returns the number of bytes copied, 0 at end of file.
func (c *dataCopier) readWriteAt(off, end int64) (int, error) {
	if c.buf == nil {
		c.buf = make([]byte, bufSize)
	}
	buf := c.buf[:min(int64(len(c.buf)), end-off)]
	n, err := retryN(func() (int, error) { return unix.Pread(c.src, buf, off) })
	if err != nil {
		return 0, failf(err, "error reading %s", c.srcName)
	}
	for w := 0; w < n; {
		m, err := retryN(func() (int, error) { return unix.Pwrite(c.dst, buf[w:n], off+int64(w)) })
		if err == nil && m == 0 {
			err = io.ErrShortWrite // would otherwise loop forever
		}
		if err != nil {
			return 0, failf(err, "error writing %s", c.dstName)
		}
		w += m
	}
	return n, nil
}

// stream copies from the source's current position to end of file with
// read and write: for files whose size cannot be trusted, and for FIFOs and
// character devices, which have no offsets.
func (c *dataCopier) stream() error {
	buf := make([]byte, bufSize)
	for {
		n, err := retryN(func() (int, error) { return unix.Read(c.src, buf) })
		if err != nil {
			return failf(err, "error reading %s", c.srcName)
		}
		if n == 0 {
			return nil
		}
		for w := 0; w < n; {
			m, err := retryN(func() (int, error) { return unix.Write(c.dst, buf[w:n]) })
			if err == nil && m == 0 {
				err = io.ErrShortWrite // would otherwise loop forever
			}
			if err != nil {
				return failf(err, "error writing %s", c.dstName)
			}
			w += m
		}
	}
}

// truncate sets the destination size after the source turned out shorter
// than fstat said.
func (c *dataCopier) truncate(size int64) error {
	if err := retry(func() error { return unix.Ftruncate(c.dst, size) }); err != nil {
		return failf(err, "error writing %s", c.dstName)
	}
	return nil
}
