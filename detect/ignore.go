package detect

import (
	"fmt"

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
	}
	return Ignore{globs: append([]string(nil), globs...)}, nil
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
