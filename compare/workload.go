package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
