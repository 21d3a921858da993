package detect

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Ignore is the --ignore rules: globs over absolute paths, with `**`
// matching any number of directories (doublestar's syntax), so that
// '/usr/lib/**' leaves out every file below /usr/lib. The zero value
// ignores nothing.
type Ignore struct {
	globs []string
}

// NewIgnore checks and keeps the globs.
func NewIgnore(globs []string) (Ignore, error) {
	for _, g := range globs {
		if !doublestar.ValidatePattern(g) {
			return Ignore{}, fmt.Errorf("%q", g)
		}
		if !matchesAbsolute(g) {
			// A rule that can match no absolute path would leave
			// nothing out, silently: a name as a user may think of it
			// (f.txt, *.pyc) is not a path.
			like := "**/" + g
			if strings.HasPrefix(g, "**") {
				like = "**/*" + strings.TrimLeft(g, "*")
			}
			return Ignore{}, fmt.Errorf("%q can match no file: a rule matches absolute paths, so start it with / or **/ (%s)", g, like)
		}
	}
	return Ignore{globs: append([]string(nil), globs...)}, nil
}

// matchesAbsolute reports whether glob g can match some absolute path:
// the path's first component, before its first '/', is empty, so g's must
// be able to match nothing: g starts with '/', or its first component is
// only stars and a '/' follows it (*/x, **/x), or g is "**". A brace or a
// class at the start, which may hold a '/', is given the benefit, and so
// is a name with a colon: an internal mount's files are named pipe:[INO].
func matchesAbsolute(g string) bool {
	if g == "" {
		return false
	}
	switch g[0] {
	case '/', '{', '[', '\\':
		return true
	}
	first, _, slash := strings.Cut(g, "/")
	if strings.Contains(first, ":") {
		// A file of an internal mount is named as /proc/PID/fd names
		// it: pipe:[INO], anon_inode:[eventfd].
		return true
	}
	if strings.Trim(first, "*") != "" {
		return false
	}
	return slash || first == "**"
}

// Empty reports whether no rule is set.
func (ig Ignore) Empty() bool { return len(ig.globs) == 0 }

// Match reports whether any of the paths matches any rule. A file is left
// out of findings when any of its names matches: the rules name files, and
// a file reached through an ignored name is that file.
func (ig Ignore) Match(paths ...string) bool {
	for _, g := range ig.globs {
		for _, p := range paths {
			if ok, _ := doublestar.Match(g, p); ok {
				return true
			}
		}
	}
	return false
}

// matchAll reports whether every path matches a rule: a probe chain is
// left out when everything it tried is ignored.
func (ig Ignore) matchAll(paths []string) bool {
	if len(ig.globs) == 0 || len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !ig.Match(p) {
			return false
		}
	}
	return true
}
