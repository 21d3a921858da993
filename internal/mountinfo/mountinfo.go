// Package mountinfo parses /proc/PID/mountinfo (proc(5)): the one parser
// the cgroup readers share (container naming, the memory limit, compare's
// CPU accounting).
package mountinfo

import (
	"strings"
)

// Mount is one line of a mountinfo file.
type Mount struct {
	Root   string // the mounted filesystem's directory at the mount point
	Point  string // where it is mounted, in the reader's mount namespace
	FSType string
	Source string
	// SuperOptions are the filesystem's options ("rw,memory" for a cgroup
	// v1 hierarchy with the memory controller).
	SuperOptions []string
}

// HasOption reports whether o is one of m's SuperOptions.
func (m Mount) HasOption(o string) bool {
	for _, s := range m.SuperOptions {
		if s == o {
			return true
		}
	}
	return false
}

// Parse returns the mounts of a mountinfo text, in its order. A line it
// can't read is left out.
func Parse(text string) []Mount {
	var out []Mount
	for _, line := range strings.Split(text, "\n") {
		// id parent major:minor root point options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := Mount{Root: Unescape(f[3]), Point: Unescape(f[4]), FSType: g[0]}
		if len(g) > 1 {
			m.Source = Unescape(g[1])
		}
		if len(g) > 2 {
			m.SuperOptions = strings.Split(g[2], ",")
		}
		out = append(out, m)
	}
	return out
}

// Unescape undoes mountinfo's octal escapes (\040 space, \011 tab, \012
// newline, \134 backslash).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
