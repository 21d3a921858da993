package main

import (
	"bytes"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readyWatch wakes on any write in the directories of the ready files, so
// a tracer's ready line is seen when it is written rather than up to a
// poll interval later (5 ms polls added 2.5 ms on average to every
// start-up figure).
type readyWatch struct{ fd int }

// newReadyWatch watches dirs; nil if inotify is unavailable (wait then
// sleeps).
func newReadyWatch(dirs []string) *readyWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	for _, d := range dirs {
		if _, err := unix.InotifyAddWatch(fd, d, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_CLOSE_WRITE); err != nil {
			unix.Close(fd)
			return nil
		}
	}
	return &readyWatch{fd: fd}
}

// wait returns after a write in a watched directory, or after d.
func (w *readyWatch) wait(d time.Duration) {
	if w == nil {
		time.Sleep(d)
		return
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, int(d.Milliseconds())); n > 0 {
		buf := make([]byte, 4096)
		for {
			if n, err := unix.Read(w.fd, buf); n <= 0 || err != nil {
				break
			}
		}
	}
}

func (w *readyWatch) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}

// landingWatch notes when a file of one name lands in a directory: is
// renamed into it (once writes a report to a temporary file and renames
// it) or is closed after a write there.
type landingWatch struct {
	f    *os.File
	name []byte
	at   atomic.Int64 // unix ns of the last landing; 0: none
	done chan struct{}
}

func newLandingWatch(dir, name string) (*landingWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Non-blocking, the file is the runtime poller's: Close ends a Read.
	w := &landingWatch{f: os.NewFile(uintptr(fd), "inotify"), name: []byte(name), done: make(chan struct{})}
	go w.read()
	return w, nil
}

func (w *landingWatch) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			if bytes.Equal(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00"), w.name) {
				w.at.Store(now)
			}
			off = end
		}
	}
}

// stop ends the watch and returns when the file last landed (unix ns, 0
// if it did not).
func (w *landingWatch) stop() int64 {
	w.f.Close()
	<-w.done
	return w.at.Load()
}
