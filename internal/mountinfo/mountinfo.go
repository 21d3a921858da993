// Package mountinfo parses /proc/PID/mountinfo (proc(5)): the one parser
// the cgroup readers share (container naming, the memory limit, compare's
// CPU accounting).
package mountinfo

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one line of a mountinfo file.
type Mount struct {
	ID int // the mount's id: unique on the machine, statx's stx_mnt_id
	// Dev is the filesystem's device (major:minor, in st_dev encoding):
	// its superblock's, which /proc/PID/maps gives its files, where stat
	// may give another (btrfs subvolumes, some overlays).
	Dev    uint64
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
		if m, ok := parseLine(line); ok {
			out = append(out, m)
		}
	}
	return out
}

// maxLine bounds a line Find reads whole: four paths of PATH_MAX,
// escaped, and the options. A longer one is skipped.
const maxLine = 80 << 10

// Each calls fn with each mount of the mountinfo text r holds, in its
// order, until fn returns false, reading r a line at a time: memory
// bounded by a line, where the table is the traced user's to grow (a
// hundred thousand mounts of long paths in a namespace of its own are
// hundreds of MB). A line it can't read, or over maxLine, is left out.
func Each(r io.Reader, fn func(Mount) bool) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		}
		if m, ok := parseLine(strings.TrimSuffix(string(line), "\n")); ok && !fn(m) {
			return
		}
		if err != nil {
			return
		}
	}
}

// Find returns the mount of a mountinfo text whose id is id, reading r a
// line at a time (a namespace may hold a hundred thousand mounts).
func Find(r io.Reader, id int) (Mount, bool) {
	br := bufio.NewReaderSize(r, maxLine)
	prefix := strconv.Itoa(id) + " "
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if strings.HasPrefix(string(line), prefix) {
			return parseLine(strings.TrimSuffix(string(line), "\n"))
		}
		if err != nil {
			return Mount{}, false
		}
	}
}

// parseLine reads one mountinfo line.
func parseLine(line string) (Mount, bool) {
	// id parent major:minor root point options [optional...] - fstype source superoptions
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return Mount{}, false
	}
	f, g := strings.Fields(pre), strings.Fields(post)
	if len(f) < 5 || len(g) < 1 {
		return Mount{}, false
	}
	m := Mount{Root: Unescape(f[3]), Point: Unescape(f[4]), FSType: g[0]}
	m.ID, _ = strconv.Atoi(f[0])
	if ma, mi, ok := strings.Cut(f[2], ":"); ok {
		major, err1 := strconv.ParseUint(ma, 10, 32)
		minor, err2 := strconv.ParseUint(mi, 10, 32)
		if err1 == nil && err2 == nil {
			m.Dev = unix.Mkdev(uint32(major), uint32(minor))
		}
	}
	if len(g) > 1 {
		m.Source = Unescape(g[1])
	}
	if len(g) > 2 {
		m.SuperOptions = strings.Split(g[2], ",")
	}
	return m, true
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
