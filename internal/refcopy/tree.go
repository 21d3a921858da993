package refcopy

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// copyDir copies the directory open as fd, with fstat result st, to dst:
// it creates dst (or merges into the directory there), opens it once, and
// copies each entry relative to the two descriptors.
func (c *copier) copyDir(fd int, st *unix.Stat_t, src, dst loc) {
	if c.dstDirs[idOf(st)] {
		c.fail(failf(nil, "cannot copy a directory, %s, into itself, %s", Quote(src.path), Quote(dst.path)))
		return
	}
	// Created private and opened up at the end: nobody gets to see or
	// write into the copy while it is incomplete, and a read-only source
	// directory does not make the copy unwritable before it is filled.
	created := true
	if err := retry(func() error { return unix.Mkdirat(dst.dirfd, dst.name, 0o700) }); err != nil {
		if err != unix.EEXIST || c.fresh || dst.fresh {
			c.fail(failf(err, "cannot create directory %s", Quote(dst.path)))
			return
		}
		created = false
	}
	// O_NOFOLLOW: an existing link in the destination is not a directory
	// to merge into, and a directory we just created cannot have been
	// swapped for a link pointing elsewhere.
	dfd, err := openat(dst.dirfd, dst.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if !created && (err == unix.ENOTDIR || err == unix.ELOOP) {
			c.fail(failf(nil, "cannot overwrite non-directory %s with directory %s", Quote(dst.path), Quote(src.path)))
		} else {
			c.fail(failf(err, "cannot open directory %s", Quote(dst.path)))
		}
		if created {
			unix.Unlinkat(dst.dirfd, dst.name, unix.AT_REMOVEDIR) // still empty; best effort
		}
		return
	}
	defer closeFD(dfd)
	var dstSt unix.Stat_t
	if err := fstat(dfd, &dstSt); err != nil {
		c.fail(failf(err, "cannot stat %s", Quote(dst.path)))
		return
	}
	// For the top of the copy, refuse a destination inside the source (cp
	// -r a a/b) before copying anything; below it, dstDirs catches the
	// copy when the walk meets it.
	if (len(c.dstDirs) == 0 && below(dfd, idOf(&dstSt), c.topParent, idOf(st))) || idOf(&dstSt) == idOf(st) {
		c.fail(failf(nil, "cannot copy a directory, %s, into itself, %s", Quote(src.path), Quote(dst.path)))
		if created {
			unix.Unlinkat(dst.dirfd, dst.name, unix.AT_REMOVEDIR) // still empty; best effort
		}
		return
	}
	c.dstDirs[idOf(&dstSt)] = true

	failures := len(c.errs)
	entries, err := readDir(fd)
	if err != nil {
		c.fail(failf(err, "cannot read directory %s", Quote(src.path)))
	}
	for _, e := range entries {
		if c.stopped() {
			break
		}
		to := dst.child(dfd, e.name)
		to.fresh = created
		c.copyEntry(e, src.child(fd, e.name), to)
	}
	if created {
		if err := c.preserve(dfd, st, dst.path); err != nil {
			c.fail(err)
		}
	}
	if len(c.errs) == failures {
		c.recordCopy(src.path, idOf(st), true)
	}
}

// below reports whether the directory open as fd, whose identity is self,
// is the directory id or lies somewhere beneath it. It climbs with fstatat
// on "..", "../..", ... relative to fd, which opens nothing, up to the
// root, each directory looked up once: the kernel's name for fd
// (/proc/self/fd/N, read with readlink, which is no lookup) says how many
// levels there are, so the root is not looked up a second time to find
// that its ".." is itself, which once would report as a duplicate stat.
// Without that name it climbs until a ".." is the directory it came from.
// parent, when not nil, is the identity of ".." known already.
func below(fd int, self fileID, parent *fileID, id fileID) bool {
	if self == id {
		return true
	}
	levels := -1 // unknown
	if p, err := readlinkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd)); err == nil && strings.HasPrefix(p, "/") {
		levels = 0
		if p = strings.Trim(p, "/"); p != "" {
			levels = strings.Count(p, "/") + 1
		}
	}
	prev := self
	rel := ".."
	for depth := 1; len(rel) < unix.PathMax && (levels < 0 || depth <= levels); depth++ {
		var cur fileID
		if depth == 1 && parent != nil {
			cur = *parent
		} else {
			var st unix.Stat_t
			if fstatat(fd, rel, &st, 0) != nil {
				return false // cannot tell; the walk's dstDirs check remains
			}
			cur = idOf(&st)
		}
		if cur == id {
			return true
		}
		if cur == prev {
			return false // the root, whose ".." is itself
		}
		prev = cur
		rel += "/.."
	}
	return false
}

// copyEntry copies one directory entry, whose type getdents reported.
func (c *copier) copyEntry(e dirent, src, dst loc) {
	typ := e.typ
	if typ == unix.DT_UNKNOWN {
		// Some filesystems do not fill in d_type; ask without opening.
		var st unix.Stat_t
		if err := fstatat(src.dirfd, src.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			c.fail(failf(err, "cannot stat %s", Quote(src.path)))
			return
		}
		typ = typeOfMode(st.Mode)
	}
	switch typ {
	case unix.DT_LNK:
		target, err := readlinkat(src.dirfd, src.name)
		if err != nil {
			c.fail(failf(err, "cannot read symbolic link %s", Quote(src.path)))
			return
		}
		c.copySymlink(target, src, dst)
	case unix.DT_REG, unix.DT_DIR:
		// The one open of this file or directory, relative to its parent.
		flags := treeReadFlags
		if typ == unix.DT_DIR {
			flags |= unix.O_DIRECTORY // and it must still be one
		}
		fd, err := openat(src.dirfd, src.name, flags, 0)
		if err != nil {
			c.fail(openError(src.path, err))
			return
		}
		defer closeFD(fd)
		c.copyOpen(fd, src, dst) // fstat decides, in case the entry changed type
	default:
		// Not even opened: opening a device can have side effects.
		c.fail(failf(nil, "skipping special file %s", Quote(src.path)))
	}
}

// typeOfMode converts a stat mode to the matching getdents type.
func typeOfMode(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	}
	return unix.DT_UNKNOWN // anything else is special, and treated alike
}

// copySymlink creates at dst a symbolic link to target, the target of the
// link src.
func (c *copier) copySymlink(target string, src, dst loc) {
	err := retry(func() error { return unix.Symlinkat(target, dst.dirfd, dst.name) })
	if err == unix.EEXIST && !c.fresh && !dst.fresh {
		err = replaceWithSymlink(target, dst)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = failf(err, "cannot create symbolic link %s to %s", Quote(dst.path), Quote(target))
		}
		c.fail(e)
		return
	}
	c.recordLink(src.path, target) // Move checks the target before removing the link
}

// replaceWithSymlink replaces the non-directory at dst with a link to
// target. The link is made under a temporary name in the same directory and
// renamed over dst, so dst is never missing and a failure leaves it as it
// was.
func replaceWithSymlink(target string, dst loc) error {
	var st unix.Stat_t
	if err := fstatat(dst.dirfd, dst.name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && isDir(&st) {
		return failf(nil, "cannot overwrite directory %s with non-directory", Quote(dst.path))
	}
	tmp := siblingTemp(dst.name)
	if err := unix.Symlinkat(target, dst.dirfd, tmp); err != nil {
		return err
	}
	if err := unix.Renameat(dst.dirfd, tmp, dst.dirfd, dst.name); err != nil {
		unix.Unlinkat(dst.dirfd, tmp, 0)
		return err
	}
	return nil
}

// siblingTemp returns an unused-looking name in the same directory as
// name: a hidden name with random letters. Callers create it exclusively
// (symlink, mkdir, O_EXCL), so a collision fails rather than clobbers.
func siblingTemp(name string) string {
	dir := strings.TrimRight(name, "/")
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		dir = dir[:i+1]
	} else {
		dir = ""
	}
	var b [6]byte
	rand.Read(b[:]) // never fails on Linux
	return dir + ".refcopy-" + hex.EncodeToString(b[:])
}

// dirent is one entry of a directory listing.
type dirent struct {
	name string
	typ  uint8 // a unix.DT_* value
}

// readDir lists the directory open as fd with getdents64, through that
// descriptor (os.ReadDir would open the directory by name again), and
// returns its entries other than "." and "..", sorted by name so that
// copies, and messages about them, come out in a stable order.
func readDir(fd int) ([]dirent, error) {
	var entries []dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := retryN(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			return entries, err
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
		// d_type u8, then d_name, NUL-terminated and padded to reclen.
		for b := buf[:n]; len(b) > 0; {
			if len(b) < 19 {
				return entries, unix.EIO
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return entries, unix.EIO // a malformed record: do not guess
			}
			name := b[19:reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				entries = append(entries, dirent{name: s, typ: b[18]})
			}
			b = b[reclen:]
		}
	}
	slices.SortFunc(entries, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return entries, nil
}
