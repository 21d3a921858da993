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

// Screen is a terminal's alternate screen, drawn in place like top's.
type Screen struct {
	f      *os.File
	closed bool
}

// OpenScreen switches w, a terminal, to its alternate screen and hides
// the cursor; Close puts both back. A nil Screen (w not a terminal file)
// does nothing.
func OpenScreen(w io.Writer) *Screen {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	f.WriteString("\x1b[?1049h\x1b[?25l")
	return &Screen{f: f}
}

// Close leaves the alternate screen, with the cursor shown again.
func (s *Screen) Close() {
	if s != nil && !s.closed {
		s.closed = true
		s.f.WriteString("\x1b[?25h\x1b[?1049l")
	}
}

// Size is the terminal's width and height (80x24 when it can't be read).
func (s *Screen) Size() (cols, rows int) {
	if s != nil {
		if ws, err := unix.IoctlGetWinsize(int(s.f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
			return int(ws.Col), int(ws.Row)
		}
	}
	return 80, 24
}

// Draw writes lines over the screen from its top-left corner, each
// cleared to its end, then clears what is below: one write, no blank
// frame in between.
func (s *Screen) Draw(lines []string) error {
	if s == nil {
		return nil
	}
	var b []byte
	b = append(b, "\x1b[H"...)
	for i, l := range lines {
		b = append(b, l...)
		b = append(b, "\x1b[K"...)
		if i < len(lines)-1 {
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\x1b[J"...)
	_, err := s.f.Write(b)
	return err
}
