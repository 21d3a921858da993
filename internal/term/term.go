// Package term is what once needs of a terminal: whether output goes to
// one, and single key presses from it.
package term

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// RawKeys puts a terminal in non-canonical, no-echo mode and delivers
// single key presses; restore puts it back.
func RawKeys(in *os.File) (restore func(), keys <-chan byte) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}, nil
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return func() {}, nil
	}
	ch := make(chan byte, 16)
	go func() {
		b := make([]byte, 1)
		for {
			n, err := in.Read(b)
			if err != nil {
				return
			}
			if n == 1 {
				ch <- b[0]
			}
		}
	}()
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, ch
}
