package refcopy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Error is a failure to copy or move one file, worded the way cp(1) and
// mv(1) word it so that the reference programs read like the tools they
// stand in for:
//
//	cannot stat 'x': No such file or directory
//	-r not specified; omitting directory 'x'
//	error writing 'y': No space left on device; 'y' was truncated and left incomplete
//
// The message is always one line: names are quoted with Quote, which
// escapes control characters.
type Error struct {
	// Msg says what failed, with the file names already quoted.
	Msg string
	// Err is the system error (a unix.Errno), or nil when the operation was
	// refused without one, such as a directory without -r.
	Err error
	// Note is appended after the system error, to say what state the
	// failure left behind; empty if there is nothing to add.
	Note string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(describe(e.Err))
	}
	if e.Note != "" {
		b.WriteString("; ")
		b.WriteString(e.Note)
	}
	return b.String()
}

// Unwrap returns the system error, so callers can test for unix.ENOENT and
// the like with errors.Is.
func (e *Error) Unwrap() error { return e.Err }

// failf returns an *Error whose message is format applied to args; callers
// pass file names through Quote first.
func failf(err error, format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: err}
}

// describe renders a system error the way strerror(3) does ("No such file
// or directory"): Go's errno strings are the same text, lower-cased.
func describe(err error) string {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	s := errno.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// Quote quotes a file name for a message: in single quotes, as cp(1) does,
// when that is unambiguous, and otherwise as a Go string literal, so that a
// name with a quote, a newline or invalid UTF-8 cannot break the message
// onto several lines or make it misleading.
func Quote(name string) string {
	plain := utf8.ValidString(name) && !strings.ContainsFunc(name, func(r rune) bool {
		return r == '\'' || !unicode.IsPrint(r)
	})
	if plain {
		return "'" + name + "'"
	}
	return strconv.Quote(name)
}

// Flatten returns the individual failures in err: CopyFile, CopyTree and
// Move keep going after a failure and report all of them together (joined
// with errors.Join), while a command prints one line per failure.
func Flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Flatten(e)...)
		}
		return out
	}
	return []error{err}
}
