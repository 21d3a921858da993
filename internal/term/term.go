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

// Raw is a terminal put in non-canonical, no-echo mode by RawKeys.
type Raw struct {
	fd       int
	old, raw unix.Termios
	on       bool
}

// RawKeys puts a terminal in non-canonical, no-echo mode and delivers
// single key presses; Restore puts it back. A nil *Raw (in not a
// terminal) does nothing.
func RawKeys(in *os.File) (*Raw, <-chan byte) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, nil
	}
	r := &Raw{fd: fd, old: *old, raw: *old}
	r.raw.Lflag &^= unix.ICANON | unix.ECHO
	r.raw.Cc[unix.VMIN], r.raw.Cc[unix.VTIME] = 1, 0
	if !r.Resume() {
		return nil, nil
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
	return r, ch
}

// Restore puts the terminal back as RawKeys found it.
func (r *Raw) Restore() {
	if r != nil && r.on {
		r.on = false
		_ = unix.IoctlSetTermios(r.fd, unix.TCSETS, &r.old)
	}
}

// Resume puts the terminal in raw mode again after a Restore (once
// continued after a stop); false if it could not.
func (r *Raw) Resume() bool {
	if r == nil {
		return false
	}
	if !r.on {
		if err := unix.IoctlSetTermios(r.fd, unix.TCSETS, &r.raw); err != nil {
			return false
		}
		r.on = true
	}
	return true
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
		s.leave()
	}
}

// Suspend leaves the alternate screen for a while (once stopped by
// Ctrl-Z), the shell's own screen shown with the cursor; Resume
// switches back. Neither does anything once closed.
func (s *Screen) Suspend() {
	if s != nil && !s.closed {
		s.leave()
	}
}

// Resume switches to the alternate screen again after Suspend; the
// caller draws it anew.
func (s *Screen) Resume() {
	if s != nil && !s.closed {
		s.f.WriteString("\x1b[?1049h\x1b[?25l")
	}
}

func (s *Screen) leave() { s.f.WriteString("\x1b[?25h\x1b[?1049l") }

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
