package refcopy

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Move moves src to exactly dst (Targets works out dst from a command
// line), like mv(1).
//
// On one filesystem that is a single rename(2): the source is not opened at
// all, and an existing dst is replaced atomically. Across filesystems
// (EXDEV) Move copies src, whatever its type, as CopyTree would, opening
// each source file and directory once, into a new temporary name beside
// dst; only when the whole copy succeeded is it renamed over dst and the
// source removed, files before their directories. A copy that fails removes
// the temporary copy and leaves both src and dst as they were; it stops at
// the first failure, which the error reports, followed by a summary line.
// The copy keeps the permission bits, the access and modification times
// and, when allowed, the owner of files and directories, as mv does.
//
// The removal works from the list of what was copied, by path, without
// listing the source directories again, and skips (with an error) any entry
// that was replaced by another file since it was copied. A file added to a
// source directory during the move makes that directory's removal fail;
// the destination is complete either way. Hard links are not preserved.
func Move(src, dst string) error { return move(src, dst, nil) }

// move is Move, given the identity of dst's parent directory when the
// caller knows it (see copier.topParent), nil otherwise.
func move(src, dst string, parent *fileID) error {
	err := retry(func() error { return unix.Renameat(unix.AT_FDCWD, src, unix.AT_FDCWD, dst) })
	switch err {
	case nil:
		return nil
	case unix.EXDEV:
		return moveAcross(src, dst, parent)
	}
	return renameError(src, dst, err)
}

// renameError words a failed rename of src to dst like mv.
func renameError(src, dst string, err error) error {
	switch err {
	case unix.ENOENT:
		// Either side can be missing; only a stat (not an open) tells.
		var st unix.Stat_t
		if unix.Lstat(src, &st) == unix.ENOENT {
			return failf(err, "cannot stat %s", Quote(src))
		}
	case unix.EINVAL:
		// The one thing rename refuses with EINVAL for ordinary names.
		return failf(nil, "cannot move %s to a subdirectory of itself, %s", Quote(src), Quote(dst))
	case unix.EISDIR:
		return failf(nil, "cannot overwrite directory %s with non-directory", Quote(dst))
	}
	return failf(err, "cannot move %s to %s", Quote(src), Quote(dst))
}

// moveAcross moves src to dst on another filesystem: copy, then rename into
// place, then remove the source.
func moveAcross(src, dst string, parent *fileID) error {
	tmp := siblingTemp(dst)
	c := newCopier(true)
	c.topParent = parent
	c.fresh = true
	c.failFast = true
	c.record = true
	// Messages name dst, which is what the user asked for, while the
	// system calls use the temporary name.
	c.top(src, loc{dirfd: unix.AT_FDCWD, name: tmp, path: dst})
	if err := c.err(); err != nil && !c.started {
		// The source could not even be opened (it is missing, say: rename
		// reports EXDEV before it looks the source up): nothing was
		// created, and the open's message says it all, as mv's does.
		return err
	} else if err != nil {
		errs := []error{err}
		if rerr := os.RemoveAll(tmp); rerr != nil {
			errs = append(errs, failf(rerr, "could not remove the partial copy %s", Quote(tmp)))
		}
		errs = append(errs, failf(nil, "cannot move %s to %s: the copy across filesystems failed; %s is unchanged",
			Quote(src), Quote(dst), Quote(src)))
		return errors.Join(errs...)
	}
	if err := retry(func() error { return unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst) }); err != nil {
		os.RemoveAll(tmp)
		return renameError(src, dst, err)
	}
	return removeCopied(c.copied)
}

// removeCopied removes the source entries a successful copy recorded,
// children before their directories. It checks each entry is still the
// file that was copied: removing a file that replaced it would lose data
// that exists nowhere else.
func removeCopied(entries []copiedEntry) error {
	var errs []error
	for _, e := range entries {
		if e.link {
			// readlink, not a stat: the copy read the link the same way
			// and never stat'ed it, so this is no second lookup of it.
			target, err := readlinkat(unix.AT_FDCWD, e.path)
			switch {
			case err == unix.EINVAL:
				errs = append(errs, failf(nil, "not removing %s: it was replaced during the move", Quote(e.path)))
			case err != nil:
				errs = append(errs, failf(err, "cannot remove %s", Quote(e.path)))
			case target != e.target:
				errs = append(errs, failf(nil, "not removing %s: it was replaced during the move", Quote(e.path)))
			default:
				if err := unix.Unlinkat(unix.AT_FDCWD, e.path, 0); err != nil {
					errs = append(errs, failf(err, "cannot remove %s", Quote(e.path)))
				}
			}
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(e.path, &st); err != nil {
			errs = append(errs, failf(err, "cannot remove %s", Quote(e.path)))
			continue
		}
		if idOf(&st) != e.id {
			errs = append(errs, failf(nil, "not removing %s: it was replaced during the move", Quote(e.path)))
			continue
		}
		flags := 0
		if e.dir {
			flags = unix.AT_REMOVEDIR
		}
		if err := unix.Unlinkat(unix.AT_FDCWD, e.path, flags); err != nil {
			errs = append(errs, failf(err, "cannot remove %s", Quote(e.path)))
		}
	}
	return errors.Join(errs...)
}
