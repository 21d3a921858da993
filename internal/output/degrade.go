package output

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// WarnEvery is how often, at most, a Degrading writer warns that it could
// not write or writes again.
const WarnEvery = time.Minute

// Degrading buffers whole records like RecordWriter, but a write that
// fails (a full file system, a quota, an I/O error) is not an error: the
// records it could not write are dropped and counted, a warning is given
// (at most once per WarnEvery), and the next flush tries again. A
// long-running stream (once watch -o) thus goes on while its file cannot
// take it, so that whoever can fill that file system cannot stop it.
//
// A record a failed write cut is taken back out of a regular file
// (truncated away) so that every line stays whole; when it can't be, the
// next write starts on a new line, so that only that line is cut.
type Degrading struct {
	mu   sync.Mutex
	w    io.Writer
	name string
	warn func(string)
	now  func() time.Time

	buf  []byte
	size int
	ends []int // where each buffered record ends in buf

	cut      bool // the destination may end inside a record
	failing  bool // the last write failed
	warned   bool // this failure was warned about
	lastWarn time.Time

	records, bytes uint64 // dropped
}

// NewDegrading buffers up to size bytes of records for w, which name
// (shown in warnings) designates; warn gets each warning's line.
func NewDegrading(w io.Writer, name string, size int, warn func(string)) *Degrading {
	return &Degrading{w: w, name: name, warn: warn, now: time.Now, size: size, buf: make([]byte, 0, size)}
}

// Write buffers p, one whole record, writing out what is buffered first
// when p would not fit. It never fails.
func (d *Degrading) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.buf) > 0 && len(d.buf)+len(p) > d.size {
		d.flush()
	}
	d.buf = append(d.buf, p...)
	d.ends = append(d.ends, len(d.buf))
	if len(d.buf) > d.size {
		// A record larger than the buffer: written alone.
		d.flush()
	}
	return len(p), nil
}

// WriteString is Write of a string.
func (d *Degrading) WriteString(s string) (int, error) { return d.Write([]byte(s)) }

// Flush writes out every buffered record, or drops and counts them. It
// never fails.
func (d *Degrading) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flush()
	return nil
}

// Dropped is how many records, and how many bytes of them, could not be
// written so far.
func (d *Degrading) Dropped() (records, bytes uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.records, d.bytes
}

func (d *Degrading) flush() {
	if len(d.buf) == 0 {
		return
	}
	defer func() {
		d.buf, d.ends = d.buf[:0], d.ends[:0]
		if cap(d.buf) > 4*d.size {
			d.buf = make([]byte, 0, d.size) // a huge record's buffer not kept
		}
	}()
	if d.cut {
		if _, err := d.w.Write([]byte{'\n'}); err != nil {
			d.failed(0, err)
			return
		}
		d.cut = false
	}
	n, err := d.w.Write(d.buf)
	if err != nil {
		d.failed(n, err)
		return
	}
	if d.failing {
		d.failing = false
		if d.warned {
			d.warned = false
			d.say(fmt.Sprintf("once: writing to %s again; %d records (%d bytes) could not be written so far", d.name, d.records, d.bytes))
		}
	}
}

// failed counts what a write of the buffer that wrote n bytes and then
// failed with err left out, and takes a cut record back out.
func (d *Degrading) failed(n int, err error) {
	whole := 0 // bytes of the records written whole
	kept := 0
	for _, e := range d.ends {
		if e > n {
			break
		}
		whole, kept = e, kept+1
	}
	d.records += uint64(len(d.ends) - kept)
	d.bytes += uint64(len(d.buf) - whole)
	if part := n - whole; part > 0 && !d.untruncate(int64(part)) {
		d.cut = true
	}
	if !d.failing {
		d.failing = true
		if now := d.now(); d.lastWarn.IsZero() || now.Sub(d.lastWarn) >= WarnEvery {
			d.lastWarn, d.warned = now, true
			d.say(fmt.Sprintf("once: WARNING: could not write to %s: %v; going on, counting what is not written (output_dropped)", d.name, err))
		}
	}
}

// untruncate takes the last part bytes written back out of the file, when
// the destination is a regular file: true if it did.
func (d *Degrading) untruncate(part int64) bool {
	f, ok := d.w.(interface {
		Stat() (os.FileInfo, error)
		Truncate(int64) error
	})
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < part {
		return false
	}
	end := st.Size() - part
	if f.Truncate(end) != nil {
		return false
	}
	// A file not opened to append would go on writing past the end.
	if sk, ok := d.w.(io.Seeker); ok {
		if _, err := sk.Seek(end, io.SeekStart); err != nil {
			return false
		}
	}
	return true
}

func (d *Degrading) say(msg string) {
	if d.warn != nil {
		d.warn(msg)
	}
}
