package report

import (
	"strings"
	"testing"
)

// TestCutsKeepEscapesWhole: fit and cutMiddle cut escaped names between
// two escapes, never inside one: a cut `\x1b` leaves a lone backslash
// that reads as a literal one (`ev\…`), or a tail that begins "b\x07"
// reads as a name with a b in it.
func TestCutsKeepEscapesWhole(t *testing.T) {
	evil := Escape("ev\x1b[31mil\nx\x07") // ev\x1b[31mil\nx\x07, 19 columns
	tests := []struct {
		name string
		cut  func() string
		want string
	}{
		{"fit: a whole line", func() string { return fit(evil, 19) }, evil},
		{"fit: inside \\x07", func() string { return fit(evil, 16) }, `ev\x1b[31mil\nx…`},
		{"fit: inside \\x1b", func() string { return fit(evil, 5) }, `ev…`},
		{"fit: after \\x1b", func() string { return fit(evil, 8) }, `ev\x1b[…`},
		{"fit: inside \\n", func() string { return fit(evil, 14) }, `ev\x1b[31mil…`},
		{"fit: inside \\\\", func() string { return fit(Escape(`a\bcdef`), 3) }, `a…`},
		{"fit: inside \\u{202E}", func() string { return fit(Escape("x\u202eyzzzzz"), 6) }, `x…`},
		{"fit: inside %q's \\\"", func() string { return fit(`"a\"bcdef"`, 4) }, `"a…`},
		{"fit: plain text as before", func() string { return fit("abcdefgh", 5) }, "abcd…"},
		{"cutMiddle: tail inside \\x1b", func() string {
			return cutMiddle(strings.Repeat("a", 100)+strings.Repeat(`\x1b`, 4), 20)
		}, `aaaaaa…\x1b\x1b\x1b`},
		{"cutMiddle: head inside \\x1b", func() string {
			return cutMiddle(`abcd\x1b`+strings.Repeat("z", 100), 20)
		}, `abcd…` + strings.Repeat("z", 15)},
		{"cutMiddle: plain as before", func() string {
			return cutMiddle(strings.Repeat("a", 50)+strings.Repeat("b", 50), 20)
		}, "aaaaaa…" + strings.Repeat("b", 13)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cut(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestShortenKeepsEscapesWhole: the compare plot's labels are cut
// between escapes too.
func TestShortenKeepsEscapesWhole(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 4, "abc…"},
		{Escape(`ab\cdef`), 4, `ab…`},
		{Escape("ab\x1bcdef"), 5, `ab…`},
		{Escape("ab\x1bcdef"), 7, `ab\x1b…`},
		{"short", 9, "short"},
	} {
		if got := shorten(tc.s, tc.n); got != tc.want {
			t.Errorf("shorten(%s, %d) = %s, want %s", tc.s, tc.n, got, tc.want)
		}
	}
}
