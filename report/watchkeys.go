package report

import (
	"time"
	"unicode/utf8"

	"github.com/oncetool/once/detect"
)

// The keys of the live screen: bytes from a terminal in raw mode decoded
// into keys (KeyDecoder), and what each key does to the view (WatchView,
// a pure state machine: the terminal plumbing stays thin and the keys
// are tested as tables).

// KeyKind is what a key is.
type KeyKind uint8

// The keys the screen knows; a printable one is a KeyRune.
const (
	KeyRune KeyKind = iota + 1
	KeyUp
	KeyDown
	KeyPgUp
	KeyPgDn
	KeyHome
	KeyEnd
	KeyEnter
	KeyEsc
	KeyBackspace
	KeyInterrupt // Ctrl-C, when the terminal sends it as a byte
)

// Key is one key press.
type Key struct {
	Kind KeyKind
	Rune rune // KeyRune's
}

// KeyDecoder turns a terminal's bytes into keys. An escape sequence (an
// arrow, PgUp, Home) can arrive split across reads, so an Esc or a
// rune's first bytes at the end of a read wait for the next; a read with
// nothing new after them says the Esc was a lone key.
type KeyDecoder struct {
	pending []byte
	waited  bool // pending was there at the last Feed already
}

// Feed decodes b, after what was pending; Feed(nil) at every poll lets a
// lone Esc out.
func (d *KeyDecoder) Feed(b []byte) []Key {
	flush := len(b) == 0 && d.waited
	buf := append(d.pending, b...)
	var keys []Key
	for len(buf) > 0 {
		k, n := decodeKey(buf)
		if n == 0 { // incomplete
			if !flush {
				break
			}
			// Nothing came after it: a lone Esc (or a cut rune, dropped).
			if buf[0] == 0x1b {
				keys = append(keys, Key{Kind: KeyEsc})
			}
			n = 1
		}
		if k.Kind != 0 {
			keys = append(keys, k)
		}
		buf = buf[n:]
	}
	d.pending = append(d.pending[:0], buf...)
	d.waited = len(d.pending) > 0
	return keys
}

// csiKeys are the final bytes of ESC [ x and ESC O x; tildeKeys the
// numbers of ESC [ n ~.
var (
	csiKeys   = map[byte]KeyKind{'A': KeyUp, 'B': KeyDown, 'H': KeyHome, 'F': KeyEnd}
	tildeKeys = map[string]KeyKind{"1": KeyHome, "7": KeyHome, "4": KeyEnd, "8": KeyEnd, "5": KeyPgUp, "6": KeyPgDn}
)

// decodeKey decodes the key at the start of b and how many bytes it
// took: 0 when b ends inside it. A key the screen does not use (Ctrl-X,
// F5, an arrow left) is a Key of kind 0 that takes its bytes.
func decodeKey(b []byte) (Key, int) {
	switch c := b[0]; {
	case c == 0x1b:
		if len(b) == 1 {
			return Key{}, 0
		}
		switch b[1] {
		case '[', 'O':
			// A control sequence: parameters, then a final byte.
			for i := 2; i < len(b); i++ {
				f := b[i]
				if f < 0x40 || f > 0x7e {
					continue
				}
				if f == '~' {
					return Key{Kind: tildeKeys[string(b[2:i])]}, i + 1
				}
				return Key{Kind: csiKeys[f]}, i + 1
			}
			if len(b) > 16 { // no final byte in sight: not a sequence
				return Key{Kind: KeyEsc}, 1
			}
			return Key{}, 0
		}
		return Key{Kind: KeyEsc}, 1 // Esc, then the next key on its own
	case c == '\r' || c == '\n':
		return Key{Kind: KeyEnter}, 1
	case c == 0x7f || c == 0x08:
		return Key{Kind: KeyBackspace}, 1
	case c == 0x03:
		return Key{Kind: KeyInterrupt}, 1
	case c < 0x20:
		return Key{}, 1
	case c < utf8.RuneSelf:
		return Key{Kind: KeyRune, Rune: rune(c)}, 1
	}
	if !utf8.FullRune(b) {
		return Key{}, 0
	}
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError {
		return Key{}, n
	}
	return Key{Kind: KeyRune, Rune: r}, n
}

// FadeAfter is how long a row whose processes have all ended stays in
// the live table: shown as ended ("ended 4s") and dimmed, then left out
// (counted below the table; key a shows them again). Ended rows kept
// the top long after the processes were gone; a build's processes end
// within seconds, so ten is enough to see one that just ended.
const FadeAfter = 10 * time.Second

// WatchView is what the live screen shows besides the snapshot: the
// order, the grouping, the scroll position and the selected row, the
// filter, and whether help or a row's detail is open.
type WatchView struct {
	Sort  detect.SortKey
	Group detect.Group
	// Cursor is the selected row, an index in the rows shown (after
	// the filter and the fade); Offset the first row on the screen.
	Cursor, Offset int
	// Filter: the rows shown are those whose name, pid, executable,
	// container or worst waste contains it (case-insensitive).
	Filter string
	// Editing: the filter is being typed (/), Edit the text so far.
	Editing bool
	Edit    string
	Help    bool
	// Detail is the key (RowKey) of the row whose detail is open, ""
	// for none; DetailOffset its first line shown.
	Detail       string
	DetailOffset int
	// AllEnded shows the rows ended over FadeAfter ago too.
	AllEnded bool
	Quit     bool
}

// ViewRoom is what a key needs to know of the screen it moves in: the
// keys of the rows shown, in order; how many rows fit on a page; and the
// lines of the open detail.
type ViewRoom struct {
	Keys        []string
	Page        int
	DetailLines int
}

// groupCycle is the order g steps the grouping through.
var groupCycle = []detect.Group{detect.GroupComm, detect.GroupExe, detect.GroupPid, detect.GroupContainer}

// Key returns the view after k.
func (v WatchView) Key(k Key, room ViewRoom) WatchView {
	page := max(room.Page, 1)
	if k.Kind == KeyInterrupt {
		v.Quit = true
		return v
	}
	if v.Editing {
		switch k.Kind {
		case KeyEnter:
			v.Filter, v.Editing, v.Edit, v.Cursor, v.Offset = v.Edit, false, "", 0, 0
		case KeyEsc:
			v.Filter, v.Editing, v.Edit, v.Cursor, v.Offset = "", false, "", 0, 0
		case KeyBackspace:
			if r := []rune(v.Edit); len(r) > 0 {
				v.Edit = string(r[:len(r)-1])
			}
		case KeyRune:
			if len(v.Edit) < 200 {
				v.Edit += string(k.Rune)
			}
		}
		return v
	}
	if k.Kind == KeyRune {
		switch k.Rune {
		case 'q', 'Q':
			v.Quit = true
			return v
		case '?', 'h':
			v.Help = !v.Help
			return v
		}
	}
	if v.Help {
		if k.Kind == KeyEsc || k.Kind == KeyEnter {
			v.Help = false
		}
		return v
	}
	if v.Detail != "" {
		last := max(room.DetailLines-page, 0)
		switch k.Kind {
		case KeyEsc, KeyEnter, KeyBackspace:
			v.Detail, v.DetailOffset = "", 0
		case KeyUp:
			v.DetailOffset--
		case KeyDown:
			v.DetailOffset++
		case KeyPgUp:
			v.DetailOffset -= page
		case KeyPgDn:
			v.DetailOffset += page
		case KeyHome:
			v.DetailOffset = 0
		case KeyEnd:
			v.DetailOffset = last
		case KeyRune:
			switch k.Rune {
			case 'k':
				v.DetailOffset--
			case 'j':
				v.DetailOffset++
			}
		}
		v.DetailOffset = max(min(v.DetailOffset, last), 0)
		return v
	}
	n := len(room.Keys)
	switch k.Kind {
	case KeyUp:
		v.Cursor--
	case KeyDown:
		v.Cursor++
	case KeyPgUp:
		v.Cursor -= page
		v.Offset -= page
	case KeyPgDn:
		v.Cursor += page
		v.Offset += page
	case KeyHome:
		v.Cursor = 0
	case KeyEnd:
		v.Cursor = n - 1
	case KeyEsc:
		v.Filter = ""
		v.Cursor, v.Offset = 0, 0
	case KeyEnter:
		if v.Cursor >= 0 && v.Cursor < n {
			v.Detail, v.DetailOffset = room.Keys[v.Cursor], 0
		}
	case KeyRune:
		switch k.Rune {
		case 'k':
			v.Cursor--
		case 'j':
			v.Cursor++
		case '/':
			v.Editing, v.Edit = true, v.Filter
		case 'd':
			v.Sort = detect.SortDup
		case 'e':
			v.Sort = detect.SortExec
		case 'l':
			v.Sort = detect.SortLookup
		case 't':
			v.Sort = detect.SortTime
		case 'a':
			v.AllEnded = !v.AllEnded
		case 'g':
			i := 0
			for j, g := range groupCycle {
				if g == v.Group {
					i = j + 1
				}
			}
			v.Group = groupCycle[i%len(groupCycle)]
			v.Cursor, v.Offset = 0, 0
		}
	}
	return v.Clamp(n, page)
}

// Clamp keeps the cursor on one of n rows and on the page of page rows
// that starts at Offset: the table shrinks between ticks, the terminal
// too.
func (v WatchView) Clamp(n, page int) WatchView {
	page = max(page, 1)
	v.Cursor = max(min(v.Cursor, n-1), 0)
	v.Offset = max(min(v.Offset, n-page), 0)
	if v.Cursor < v.Offset {
		v.Offset = v.Cursor
	}
	if v.Cursor >= v.Offset+page {
		v.Offset = v.Cursor - page + 1
	}
	return v
}
