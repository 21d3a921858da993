package refcopy

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Pair is one copy or move to perform: Src to exactly Dst.
type Pair struct {
	Src, Dst string
}

// Targets resolves the operand forms of cp(1) and mv(1) into pairs:
//
//   - SRC DST: if DST is an existing directory (a link to one counts), the
//     destination is DST/basename(SRC); otherwise it is DST itself.
//   - SRC... DIR, with several sources: DIR must be an existing directory,
//     and each source goes to DIR/basename(SRC).
//
// The basename ignores trailing slashes, so "dir/" goes to DST/dir. Only
// DST is examined; the sources are not touched until they are copied.
func Targets(srcs []string, dst string) ([]Pair, error) {
	pairs, _, err := targets(srcs, dst)
	return pairs, err
}

// targets is Targets, and when DST is a directory its identity too (nil
// otherwise), so that the copy need not look it up again: it is the parent
// of every destination, except one named "." or "..".
func targets(srcs []string, dst string) ([]Pair, *fileID, error) {
	var st unix.Stat_t
	err := unix.Stat(dst, &st)
	dstIsDir := err == nil && isDir(&st)
	if len(srcs) > 1 && !dstIsDir {
		if err == nil {
			err = unix.ENOTDIR
		}
		return nil, nil, failf(err, "target %s", Quote(dst))
	}
	var dir *fileID
	if dstIsDir {
		id := idOf(&st)
		dir = &id
	}
	pairs := make([]Pair, 0, len(srcs))
	for _, src := range srcs {
		to := dst
		if dstIsDir {
			to = joinName(dst, filepath.Base(src))
		}
		pairs = append(pairs, Pair{Src: src, Dst: to})
	}
	return pairs, dir, nil
}

// parentOf returns dir, the identity of the directory DST a destination
// was put in by targets, if it is the destination's parent: not for a
// source whose base name is "." or ".." (cp -r d/. DIR copies into DIR).
func parentOf(dst string, dir *fileID) *fileID {
	if dir == nil {
		return nil
	}
	switch filepath.Base(dst) {
	case ".", "..", "/":
		return nil
	}
	return dir
}

// joinName appends name to dir without cleaning the result; see loc.child.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
