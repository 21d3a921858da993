package report

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"/usr/bin/true", "/usr/bin/true"},
		{"a b~!@#$%^&*()[]{}|;:'\",.<>/?`", "a b~!@#$%^&*()[]{}|;:'\",.<>/?`"},
		{`a\b`, `a\\b`},
		{`\x41`, `\\x41`}, // a literal backslash sequence stays distinguishable
		{"a\nb", `a\nb`},
		{"a\rb", `a\rb`},
		{"a\tb", `a\tb`},
		{"\x00", `\x00`},
		{"\x07\x08\x0b\x0c", `\x07\x08\x0b\x0c`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1f", `\x1f`},
		{"\x7f", `\x7f`},
		{"\xff\xfe", `\xff\xfe`},
		{"\x80", `\x80`},
		{"ab\xc3", `ab\xc3`},                     // truncated 2-byte sequence
		{"\xc0\xaf", `\xc0\xaf`},                 // overlong '/'
		{"\xed\xa0\x80", `\xed\xa0\x80`},         // UTF-8-encoded surrogate
		{"\xf4\x90\x80\x80", `\xf4\x90\x80\x80`}, // beyond U+10FFFF
		{"é日本😀", "é日本😀"},
		{"\uFFFD", "\uFFFD"}, // a real U+FFFD is valid UTF-8 and printable
		{"\u0085", `\u{0085}`},
		{"\u009b31m", `\u{009B}31m`}, // C1 CSI
		{"\u0080\u009f", `\u{0080}\u{009F}`},
		{"\u200b", `\u{200B}`},
		{"\u200c\u200d", `\u{200C}\u{200D}`},
		{"\u200e\u200f", `\u{200E}\u{200F}`},
		{"\u202a\u202b\u202c\u202d", `\u{202A}\u{202B}\u{202C}\u{202D}`},
		{"txt.\u202eexe", `txt.\u{202E}exe`},
		{"\u2066\u2067\u2068\u2069", `\u{2066}\u{2067}\u{2068}\u{2069}`},
		{"\ufeffx", `\u{FEFF}x`},
		{"a\u2028b\u2029", `a\u{2028}b\u{2029}`}, // line/paragraph separators
		{"\u00a0", `\u{00A0}`},                   // no-break space
		{"\u00ad", `\u{00AD}`},                   // soft hyphen
		{"\U000E0041", `\u{E0041}`},              // tag character
		{"x\u0301", "x\u0301"},                   // combining mark is printable
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkInert reports why s is not safe to print, or "" if it is.
func checkInert(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || escapeRune(r) {
			return fmt.Sprintf("rune %U at %d", r, i)
		}
	}
	return ""
}

// unescapeText inverts Escape. It exists to prove Escape is injective:
// distinct inputs can never render the same.
func unescapeText(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("dangling backslash")
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			if i+2 >= len(s) {
				return "", fmt.Errorf("short \\x")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", err
			}
			b.WriteByte(byte(v))
			i += 2
		case 'u':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 || s[i+1] != '{' {
				return "", fmt.Errorf("bad \\u{")
			}
			v, err := strconv.ParseUint(s[i+2:i+end], 16, 32)
			if err != nil {
				return "", err
			}
			b.WriteRune(rune(v))
			i += end
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

func TestEscapeRandomBytesInertAndReversible(t *testing.T) {
	f := func(in []byte) bool {
		out := Escape(string(in))
		if why := checkInert(out); why != "" {
			t.Logf("Escape(%q) = %q: %s", in, out, why)
			return false
		}
		back, err := unescapeText(out)
		if err != nil || back != string(in) {
			t.Logf("unescape(Escape(%q)) = %q, %v", in, back, err)
			return false
		}
		return true
	}
	cfg := &quick.Config{
		MaxCount: 5000,
		// Bias towards the interesting bytes: controls, high bytes and
		// fragments of the multi-byte controls.
		Values: func(v []reflect.Value, r *rand.Rand) {
			v[0] = reflect.ValueOf(randomHostileBytes(r))
		},
	}
	if err := quick.Check(f, cfg); err != nil {
		t.Error(err)
	}
}

// randomHostileBytes returns up to 64 bytes mixing random bytes with
// pieces of escape sequences and Unicode controls.
func randomHostileBytes(r *rand.Rand) []byte {
	pieces := []string{"\x1b[31m", "\n", "\\", "\u202e", "\u009b", "\xff", "\xe2\x80", "é", "`", "\"", "\x00", "a"}
	var b bytes.Buffer
	for n := r.Intn(16); n > 0; n-- {
		if r.Intn(2) == 0 {
			b.WriteString(pieces[r.Intn(len(pieces))])
		} else {
			b.WriteByte(byte(r.Intn(256)))
		}
	}
	return b.Bytes()
}

func TestMarkdownEscapes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/true", "/usr/bin/true"},
		{"a|b", `a\|b`},
		{"`x`", "\\`x\\`"},
		{"*b* _i_", `\*b\* \_i\_`},
		{"<script>", `\<script\>`},
		{"[l](u)", `\[l\](u)`},
		{"![i](u)", `\!\[i\](u)`},
		{`a\b`, `a\\\\b`},        // Escape's \\ shown as \\ after Markdown
		{"a\nb", `a\\nb`},        // newline cannot break the table row
		{"\x1b[1m", `\\x1b\[1m`}, // nor can ESC reach the reader
		{"@user #12 ~s~ &amp;", `\@user \#12 \~s\~ \&amp;`},
	} {
		if got := mdText(tc.in); got != tc.want {
			t.Errorf("mdText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCodeFence(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "```"},
		{"a ` b `` c", "```"},
		{"```", "````"},
		{"x\n`````\ny", "``````"},
	} {
		if got := codeFence(tc.in); got != tc.want {
			t.Errorf("codeFence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestInert(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain message", "plain message"},
		{`already quoted "a\x1b"`, `already quoted "a\x1b"`},
		{"raw \x1b[31mred\n", `raw \x1b[31mred\n`},
		{"bidi \u202e here", `bidi \u{202E} here`},
		{"bad \xff byte \\ kept", `bad \xff byte \ kept`},
	} {
		if got := Inert(tc.in); got != tc.want {
			t.Errorf("Inert(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestInertNUL(t *testing.T) {
	if got := Inert("a\x00b\\c"); got != `a\x00b\c` {
		t.Errorf("got %q", got)
	}
}
