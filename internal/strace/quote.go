package strace

import (
	"fmt"
	"strings"
)

// decodeString decodes a string argument as strace prints it: in double
// quotes, with C-style escapes (-xx turns every byte into \xNN, the default
// mixes \n, \", \\ and octal), and optionally followed by "..." when strace
// truncated it. ok is false for a non-string such as NULL or an address,
// printed when the tracee's memory could not be read.
func decodeString(s string) (v string, ok bool, err error) {
	if !strings.HasPrefix(s, `"`) {
		return "", false, nil
	}
	var b strings.Builder
	i := 1
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			break
		}
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case '\\', '"', '\'', '?':
			b.WriteByte(c)
		case 'x':
			// strace always prints two hex digits; accept one for safety.
			n, width := digits(s[i+1:], 16, 2)
			if width == 0 {
				return "", false, fmt.Errorf("bad \\x escape in %s", s)
			}
			b.WriteByte(byte(n))
			i += width
		case '0', '1', '2', '3', '4', '5', '6', '7':
			// Octal takes up to three digits; strace pads to three when a
			// digit follows, so greedy reading is unambiguous.
			n, width := digits(s[i:], 8, 3)
			if n > 0xff {
				return "", false, fmt.Errorf("octal escape out of range in %s", s)
			}
			b.WriteByte(byte(n))
			i += width - 1
		default:
			return "", false, fmt.Errorf("unknown escape \\%c in %s", c, s)
		}
	}
	if i >= len(s) {
		return "", false, fmt.Errorf("unterminated string %s", s)
	}
	// What may follow the closing quote: nothing, or the "..." that marks
	// a string strace cut at the -s limit.
	if rest := s[i+1:]; rest != "" && rest != "..." {
		return "", false, fmt.Errorf("unexpected %q after string", rest)
	}
	return b.String(), true, nil
}

// digits reads up to max digits of the given base from the start of s and
// returns their value and how many it read.
func digits(s string, base, max int) (n, width int) {
	for width < max && width < len(s) {
		d := digitVal(s[width])
		if d < 0 || d >= base {
			break
		}
		n = n*base + d
		width++
	}
	return n, width
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
