package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Strings from the traced system (paths, argv, comm, ...) are raw bytes
// chosen by whoever wrote the traced program, so they are hostile input:
// they may carry terminal escape sequences, newlines that fake report lines,
// bidi overrides that reorder what the reader sees, or bytes that are not
// UTF-8 at all. Each output format has its own escaping, all in this file:
//
//   - Text:     Escape, a reversible backslash notation.
//   - JSON:     appendJSONString, surrogateescape (PEP 383) for bad bytes.
//   - Markdown: mdText for inline text and table cells (Escape, then
//     markdown punctuation), Escape inside code fences.

const hexDigits = "0123456789abcdef"

// Escape renders s so that it is safe to print on a terminal and so that
// distinct inputs give distinct outputs:
//
//   - printable, valid UTF-8 passes through unchanged;
//   - a backslash becomes `\\`;
//   - newline, carriage return and tab become `\n`, `\r`, `\t`;
//   - other C0 controls and DEL become `\xNN`;
//   - each byte that is not part of valid UTF-8 becomes `\xNN`;
//   - C1 controls (U+0080–U+009F), the Unicode bidi and zero-width format
//     controls (U+200B–U+200F, U+202A–U+202E, U+2066–U+2069, U+FEFF) and
//     every other rune that unicode.IsPrint rejects (other format
//     characters, line and paragraph separators, non-ASCII spaces,
//     private-use and unassigned code points) become `\u{XXXX}`.
//
// The output never contains a byte below 0x20, nor 0x7f.
func Escape(s string) string {
	if isPlainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\':
				b.WriteString(`\\`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20 || c == 0x7f:
				writeHexByte(&b, c)
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHexByte(&b, c)
		case escapeRune(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Inert makes a message safe to print on a terminal: what Escape escapes
// but the backslash, which it leaves alone, so that a message already
// quoted (%q) reads as written. For once's own messages, which quote
// strings from its command line and environment: those can hold any byte.
func Inert(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if c := s[i]; c == '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		j := strings.IndexByte(s[i:], '\\')
		if j < 0 {
			j = len(s)
		} else {
			j += i
		}
		b.WriteString(Escape(s[i:j]))
		i = j
	}
	return b.String()
}

// isPlainASCII reports whether s is printable ASCII without a backslash,
// the common case, which Escape returns as is.
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func writeHexByte(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0xf])
}

// escapeRune reports whether a valid non-ASCII rune must be shown as a
// `\u{XXXX}` escape rather than printed. The explicit ranges are the
// controls a terminal or a bidi-aware viewer acts on; unicode.IsPrint
// already rejects all of them (they are Cc or Cf), they are listed so the
// intent survives any future change of the catch-all.
func escapeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls, e.g. U+009B CSI
		return true
	case r >= 0x200b && r <= 0x200f: // zero-width space and joiners, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // bidi embeddings and overrides
		return true
	case r >= 0x2066 && r <= 0x2069: // bidi isolates
		return true
	case r == 0xfeff: // zero-width no-break space (BOM)
		return true
	}
	return !unicode.IsPrint(r)
}

// appendJSONString appends s as a JSON string literal, quotes included.
//
// Valid UTF-8 is written as is, except that '"' and '\' are escaped, C0
// controls use the short escapes (\n, \t, ...) or \u00XX, and DEL and the
// runes Escape would escape (C1, bidi and other invisible controls) are
// written as \uXXXX (a surrogate pair above the BMP) so that printing the
// JSON on a terminal is harmless too. A byte that is not part of valid
// UTF-8 (always >= 0x80) is written as the lone low surrogate escape
// \udcXX, i.e. code point U+DC00+byte: this is Python's "surrogateescape"
// (PEP 383), so json.loads followed by os.fsencode restores the exact
// bytes, and UnescapeJSONBytes does the same in Go. encoding/json cannot be
// used for these strings: it replaces invalid bytes with U+FFFD, which
// loses them.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		// A run of bytes that stand for themselves, appended at once:
		// most names are nothing else.
		j := i
		for j < len(s) && jsonPlain[s[j]] {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				dst = append(dst, '\\', '"')
			case c == '\\':
				dst = append(dst, '\\', '\\')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c < 0x20 || c == 0x7f:
				dst = appendU16Escape(dst, uint16(c))
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = appendU16Escape(dst, 0xdc00+uint16(c))
		case escapeRune(r):
			if r > 0xffff {
				hi, lo := utf16Pair(r)
				dst = appendU16Escape(dst, hi)
				dst = appendU16Escape(dst, lo)
			} else {
				dst = appendU16Escape(dst, uint16(r))
			}
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

func appendU16Escape(dst []byte, u uint16) []byte {
	return append(dst, '\\', 'u',
		hexDigits[u>>12], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
}

// utf16Pair splits a supplementary-plane rune into its surrogate pair.
func utf16Pair(r rune) (hi, lo uint16) {
	r -= 0x10000
	return uint16(0xd800 + (r>>10)&0x3ff), uint16(0xdc00 + r&0x3ff)
}

// UnescapeJSONBytes decodes one JSON string literal, quotes included, as
// written by JSON, and returns the exact bytes it encodes: escapes
// \udc80–\udcff (surrogateescape) become the single bytes 0x80–0xff, a
// surrogate pair becomes the UTF-8 of the rune it encodes, every other
// escape and character becomes its UTF-8 encoding. It is the Go equivalent
// of Python's os.fsencode(json.loads(raw)); encoding/json cannot do this
// because it turns lone surrogates into U+FFFD. It rejects input that is not
// a single valid JSON string, and lone surrogates outside U+DC80–U+DCFF
// (they encode no byte).
func UnescapeJSONBytes(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, errors.New("report: not a JSON string literal")
	}
	body := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"':
			return nil, fmt.Errorf("report: unescaped quote at offset %d", i+1)
		case c < 0x20:
			return nil, fmt.Errorf("report: raw control byte 0x%02x at offset %d", c, i+1)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, fmt.Errorf("report: invalid UTF-8 at offset %d", i+1)
			}
			out = append(out, body[i:i+size]...)
			i += size
			continue
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		// A backslash escape.
		if i+1 >= len(body) {
			return nil, errors.New("report: truncated escape")
		}
		switch e := body[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			u, ok := parseU16(body[i:])
			if !ok {
				return nil, fmt.Errorf("report: bad \\u escape at offset %d", i+1)
			}
			i += 6
			switch {
			case u >= 0xdc80 && u <= 0xdcff:
				out = append(out, byte(u-0xdc00))
			case u >= 0xd800 && u <= 0xdbff:
				lo, ok := parseU16(body[i:])
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return nil, fmt.Errorf("report: lone high surrogate \\u%04x", u)
				}
				i += 6
				r := 0x10000 + (rune(u)-0xd800)<<10 + (rune(lo) - 0xdc00)
				out = utf8.AppendRune(out, r)
			case u >= 0xdc00 && u <= 0xdfff:
				return nil, fmt.Errorf("report: lone low surrogate \\u%04x encodes no byte", u)
			default:
				out = utf8.AppendRune(out, rune(u))
			}
			continue
		default:
			return nil, fmt.Errorf("report: unknown escape \\%c at offset %d", e, i+1)
		}
		i += 2
	}
	return out, nil
}

// parseU16 parses a `\uXXXX` escape at the start of b.
func parseU16(b []byte) (uint16, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	if err != nil {
		return 0, false
	}
	return uint16(v), true
}

// mdText renders raw bytes from the traced system for inline Markdown
// (table cells, headings): Escape, so no control byte, invalid byte or bidi
// control survives, then mdPunct.
func mdText(s string) string {
	return mdPunct(Escape(s))
}

// mdPunct backslash-escapes, in text that is already terminal-safe, every
// character that Markdown or GitHub would interpret inline: table pipes,
// code spans, emphasis, links and images, raw HTML, entities,
// strikethrough, @mentions and #references, and the backslash itself.
// CommonMark allows a backslash before any ASCII punctuation, so this never
// leaves a visible stray backslash.
func mdPunct(e string) string {
	if !strings.ContainsAny(e, mdSpecial) {
		return e
	}
	var b strings.Builder
	b.Grow(len(e) + 8)
	for i := 0; i < len(e); i++ {
		if strings.IndexByte(mdSpecial, e[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(e[i])
	}
	return b.String()
}

const mdSpecial = "\\`*_<>[]|~&@#!"

// jsonPlain: the bytes appendJSONString writes as they are.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
