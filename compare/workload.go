package compare

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// GenerateTree writes files regular files of size bytes under dir (created),
// 100 to a subdirectory, like a source tree of small files. The contents
// differ per file so no filesystem can deduplicate them.
func GenerateTree(dir string, files, size int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	buf := make([]byte, size)
	for i := 0; i < files; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		for j := range buf {
			buf[j] = byte(i*31 + j*7)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d", i)), buf, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LinkTree recreates the tree at src as dst with hard links: a fast,
// untimed way to restore a source that a move consumed.
func LinkTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm())
		}
		return os.Link(p, target)
	})
}

// Substitute replaces {name} placeholders in argv, in one pass: a value
// that itself holds a placeholder (a temporary directory named "{dst}")
// is not substituted again.
func Substitute(argv []string, vars map[string]string) []string {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, "{"+k+"}", vars[k])
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}

// HasPlaceholder reports whether any argument mentions {name}.
func HasPlaceholder(argv []string, name string) bool {
	for _, a := range argv {
		if strings.Contains(a, "{"+name+"}") {
			return true
		}
	}
	return false
}

// SplitWords splits a command line into words the way a shell would for
// plain words, single and double quotes and backslashes, without expanding
// anything: --baseline takes a command, not a script.
func SplitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// freeSpace is the space and the inodes free to an unprivileged user in
// dir (a variable: tests give a small file system). Inodes: the most
// there is when the file system counts none.
var freeSpace = func(dir string) (bytes, inodes uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	inodes = st.Ffree
	if st.Files == 0 {
		inodes = math.MaxUint64
	}
	return st.Bavail * uint64(st.Bsize), inodes, nil
}

// CheckSpace refuses a cp/mv workload of files files of size bytes that
// the file system of dir has no room for: generated, it would fill the
// disk, and whatever else wrote there, until a write failed. A copy
// needs the source and the copy; a move (its source links to the seed)
// the source alone. Not known (statfs failed): nil, left to the writes.
func CheckSpace(dir string, files, size int, move bool) error {
	free, inodes, err := freeSpace(dir)
	if err != nil {
		return nil
	}
	copies, what := uint64(2), "twice: a source and a copy"
	if move {
		copies, what = 1, "once: a source, moved"
	}
	need := copies * uint64(files) * uint64(size)
	// A file each, and a directory per 100, per copy.
	nodes := copies * (uint64(files) + uint64(files)/100 + 1)
	if need > free || nodes > inodes {
		return fmt.Errorf("the cp/mv workload needs %s (--files %d × --size %d, %s) in %s, which has %s free (%d inodes): give fewer or smaller files, or a TMPDIR with room",
			sizeText(need), files, size, what, dir, sizeText(free), inodes)
	}
	return nil
}

// sizeText is n bytes in the largest binary unit that keeps it at 1 or
// more: 80 KiB, 2.0 PiB.
func sizeText(n uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
