package golden

import (
	"fmt"
	"strings"
)

// context is how many unchanged lines a hunk shows around a change.
const context = 3

// maxCells bounds the table of the line matcher; past it the differing
// middle is shown as removed, then added, which is still a correct diff.
const maxCells = 1 << 22

type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

// Diff returns a unified diff turning a (named nameA) into b (nameB), or ""
// when they are equal.
func Diff(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	ops := editScript(splitLines(a), splitLines(b))
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", nameA, nameB)
	// Line numbers before each op, in a and in b.
	na, nb := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, o := range ops {
		na[i+1], nb[i+1] = na[i], nb[i]
		if o.kind != '+' {
			na[i+1]++
		}
		if o.kind != '-' {
			nb[i+1]++
		}
	}
	for _, h := range hunks(ops) {
		ac, bc := na[h[1]]-na[h[0]], nb[h[1]]-nb[h[0]]
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", span(na[h[0]], ac), span(nb[h[0]], bc))
		for _, o := range ops[h[0]:h[1]] {
			sb.WriteByte(o.kind)
			sb.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return sb.String()
}

// span is a hunk header's "start,count": start is 1-based, or the line
// before the hunk when it holds no line of that side.
func span(before, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	return fmt.Sprintf("%d,%d", before+1, count)
}

// hunks returns the [start, end) ranges of ops to show: each change with
// its context, ranges that touch merged.
func hunks(ops []op) [][2]int {
	var out [][2]int
	for i, o := range ops {
		if o.kind == ' ' {
			continue
		}
		s, e := max(i-context, 0), min(i+context+1, len(ops))
		if n := len(out); n > 0 && s <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], e)
			continue
		}
		out = append(out, [2]int{s, e})
	}
	return out
}

// splitLines splits s after each newline; a last line without one is kept.
func splitLines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// editScript is a shortest edit script from a to b: common prefix and
// suffix, and a longest common subsequence of the middle.
func editScript(a, b []string) []op {
	var pre, suf int
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

func middle(a, b []string) []op {
	var ops []op
	n, m := len(a), len(b)
	if n*m > maxCells {
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
		return ops
	}
	// lcs[i][j]: length of a longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	return ops
}
