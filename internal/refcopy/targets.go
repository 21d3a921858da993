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

// known is what the command line learnt about a pair's destination while
// working it out, so that the copy need not look it up again (once would
// report a second stat of one file as a duplicate, a second miss as a
// repeated one).
type known struct {
	// parent is the identity of the directory the destination is in,
	// when DST was that directory; nil otherwise.
	parent *fileID
	// dst is the lookup of the destination itself, when it is DST (not
	// a directory); nil otherwise.
	dst *dstLookup
}

// targets is Targets, and what it learnt about each pair's destination.
// DST is the parent of every destination when it is a directory, except
// of one named "." or ".." (cp -r d/. DIR copies into DIR).
func targets(srcs []string, dst string) ([]Pair, []known, error) {
	look := lookDst(unix.AT_FDCWD, dst)
	st, err := look.final()
	dstIsDir := err == nil && isDir(st)
	if len(srcs) > 1 && !dstIsDir {
		if err == nil {
			err = unix.ENOTDIR
		}
		return nil, nil, failf(err, "target %s", Quote(dst))
	}
	var dir *fileID
	if dstIsDir {
		id := idOf(st)
		dir = &id
	}
	ks := make([]known, 0, len(srcs))
	pairs := make([]Pair, 0, len(srcs))
	for _, src := range srcs {
		to := dst
		if dstIsDir {
			to = joinName(dst, filepath.Base(src))
		}
		pairs = append(pairs, Pair{Src: src, Dst: to})
		var k known
		switch {
		case !dstIsDir:
			k.dst = look
		case filepath.Base(to) != "." && filepath.Base(to) != ".." && filepath.Base(to) != "/":
			k.parent = dir
		}
		ks = append(ks, k)
	}
	return pairs, ks, nil
}

// dstLookup is what is at a destination name: its lstat, and when it is
// a symbolic link the stat of what it points to.
type dstLookup struct {
	lerr     error
	lst      unix.Stat_t
	followed bool // lst is a link, and serr and st are its target's
	serr     error
	st       unix.Stat_t
}

// lookDst looks name up relative to dirfd: once itself, and once more
// through it if it is a symbolic link. A missing name, as a new
// destination's nearly always is, is one miss.
func lookDst(dirfd int, name string) *dstLookup {
	d := &dstLookup{}
	d.lerr = fstatat(dirfd, name, &d.lst, unix.AT_SYMLINK_NOFOLLOW)
	if d.lerr == nil && d.lst.Mode&unix.S_IFMT == unix.S_IFLNK {
		d.followed = true
		d.serr = fstatat(dirfd, name, &d.st, 0)
	}
	return d
}

// final is what stat(2), following links, says of the name.
func (d *dstLookup) final() (*unix.Stat_t, error) {
	switch {
	case d.lerr != nil:
		return nil, d.lerr
	case !d.followed:
		return &d.lst, nil
	case d.serr != nil:
		return nil, d.serr
	}
	return &d.st, nil
}

// joinName appends name to dir without cleaning the result; see loc.child.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
