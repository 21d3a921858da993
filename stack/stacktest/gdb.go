package stacktest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// GDBFrame is one line of gdb's backtrace.
type GDBFrame struct {
	Num  int
	Addr uint64 // 0 when gdb shows none (frame 0 at a line's start, inlined frames)
	Func string // "??" when gdb has no name
	File string // "" when gdb shows no source
	Line int
	From string // the library gdb names when it has no source ("from /lib/...")
	Text string // the line as gdb printed it
}

// GDBStop is gdb's backtrace at the entry of one openat of the path.
type GDBStop struct {
	Frames []GDBFrame
}

// GDB runs argv under gdb, stops at the entry of each openat of path
// (catch syscall openat), and returns the backtraces there, taken with
// `set backtrace past-main on` so that they go as far as gdb can.
// extra are gdb commands run first (set debug-file-directory DIR, say).
func GDB(argv []string, path, dir string, extra ...string) ([]GDBStop, string, error) {
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		return nil, "", err
	}
	script := `set pagination off
set confirm off
set width 0
set height 0
set print frame-arguments none
set print entry-values no
set backtrace past-main on
set debuginfod enabled off
catch syscall openat
commands
x/s $rsi
bt
continue
end
run
`
	script = strings.Join(extra, "\n") + "\n" + script
	sf, err := os.CreateTemp("", "stacktest-*.gdb")
	if err != nil {
		return nil, "", err
	}
	defer os.Remove(sf.Name())
	if _, err := sf.WriteString(script); err != nil {
		return nil, "", err
	}
	sf.Close()
	args := append([]string{"-batch", "-nx", "-x", sf.Name(), "--args"}, argv...)
	cmd := exec.Command(gdb, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, string(out), fmt.Errorf("gdb: %v", err)
	}
	return ParseGDB(out, path), string(out), nil
}

var (
	catchRe = regexp.MustCompile(`^(?:Thread .* hit )?Catchpoint \d+ \((call to|returned from) syscall openat\)`)
	xsRe    = regexp.MustCompile(`^0x[0-9a-f]+(?: <[^>]*>)?:\s+"(.*)"$`)
	frameRe = regexp.MustCompile(`^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.*)$`)
	atRe    = regexp.MustCompile(` at (\S+):(\d+)$`)
	fromRe  = regexp.MustCompile(` from (\S+)$`)
)

// ParseGDB reads the output of the script GDB runs: for each "call to"
// stop whose x/s of RSI shows path, the frames of the bt that follows.
func ParseGDB(out []byte, path string) []GDBStop {
	var stops []GDBStop
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	entry, match, inBT := false, false, false
	var cur *GDBStop
	for sc.Scan() {
		line := sc.Text()
		if m := catchRe.FindStringSubmatch(line); m != nil {
			entry, match, inBT, cur = m[1] == "call to", false, false, nil
			continue
		}
		if m := xsRe.FindStringSubmatch(line); m != nil && entry && !inBT {
			match = m[1] == path
			if match {
				stops = append(stops, GDBStop{})
				cur = &stops[len(stops)-1]
			}
			continue
		}
		m := frameRe.FindStringSubmatch(line)
		if m == nil || !match || cur == nil {
			continue
		}
		inBT = true
		f := GDBFrame{Text: line}
		f.Num, _ = strconv.Atoi(m[1])
		if m[2] != "" {
			f.Addr, _ = strconv.ParseUint(m[2][2:], 16, 64)
		}
		rest := m[3]
		if a := atRe.FindStringSubmatch(rest); a != nil {
			f.File = a[1]
			f.Line, _ = strconv.Atoi(a[2])
			rest = strings.TrimSuffix(rest, a[0])
		} else if a := fromRe.FindStringSubmatch(rest); a != nil {
			f.From = a[1]
			rest = strings.TrimSuffix(rest, a[0])
		}
		f.Func = stripArgs(rest)
		cur.Frames = append(cur.Frames, f)
	}
	return stops
}

// Base is a file name's last element, for comparing gdb's file names
// (as the line table spells them) with the symbolizer's.
func Base(p string) string { return filepath.Base(p) }

// stripArgs drops the argument list, the last parenthesized group, from
// "name (args)": the name may hold parentheses of its own
// (call_once<fn(), ()>).
func stripArgs(s string) string {
	if !strings.HasSuffix(s, ")") {
		return s
	}
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return strings.TrimRight(s[:i], " ")
			}
		}
	}
	return s
}
