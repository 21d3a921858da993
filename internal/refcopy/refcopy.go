// Package refcopy is the copy engine behind the reference programs refcp
// and refmv: copies that open every source file exactly once.
//
// The once tracer counts how often each file is opened, and redundant opens
// are a real cost: uutils cp used to open every source file three times (a
// probe for data, a probe for holes, then the copy), and threading a single
// descriptor through all three cut its system time by 15%. This package
// shows the pattern, with the system calls spelled out through
// golang.org/x/sys/unix rather than hidden behind os.Open and io.Copy:
//
//   - a source file is opened once, by path or relative to its parent's
//     descriptor, and everything else uses that descriptor: fstat for the
//     type, size and mode, lseek SEEK_DATA/SEEK_HOLE to find the data, and
//     copy_file_range (or sendfile, or pread/pwrite) to copy it;
//   - a source directory is opened once and listed with getdents on that
//     descriptor; its entries are opened, read as links or stat'ed
//     relative to it, never by a path built from its name;
//   - a destination file is created once, and removed again if the copy
//     fails, so no truncated file is left behind silently;
//   - Move renames without opening anything and copies only across
//     filesystems.
//
// Messages follow cp(1) and mv(1); see Error.
package refcopy

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// Options adjust CopyFile. The zero value copies like cp without options.
type Options struct {
	// Recursive copies directories with their contents, like cp -r. As with
	// cp -r, symbolic links are then copied as links, including one named
	// as the source, instead of being followed.
	Recursive bool
	// Probe opens each regular source twice more before copying it, by
	// name, the way uutils cp 0.x did: once to see whether it holds data
	// and once to look for holes. It exists for cmd/dupcopy, the bundled
	// example of the waste once reports; a real copy leaves it off.
	Probe bool
}

// CopyFile copies src to exactly dst (Targets works out dst from a command
// line). Without opts.Recursive, src is opened following symbolic links and
// must not be a directory; a FIFO or device is read to its end, as cp does.
// With it, CopyFile is CopyTree.
//
// The destination gets the source's permission bits. A new destination
// that cannot be completed is removed; an existing one that was already
// truncated is reported as such in the error.
//
// CopyFile keeps going after a failure inside a tree and returns all of
// them, joined with errors.Join (see Flatten); each is an *Error.
func CopyFile(src, dst string, opts Options) error {
	c := newCopier(opts.Recursive)
	c.probe = opts.Probe
	c.top(src, loc{dirfd: unix.AT_FDCWD, name: dst, path: dst})
	return c.err()
}

// CopyTree copies src, which may be a directory, a symbolic link or a
// file, to dst, like cp -r. A directory is created at dst, or merged into
// the directory already there; the directories it creates get the source's
// permission bits once their contents are in place, while an existing
// directory keeps its own. Symbolic links are recreated with the same
// target, an existing non-directory at their place is replaced atomically.
// FIFOs, sockets and devices are skipped with an error. Hard links are not
// preserved: each name becomes its own copy.
//
// Each source file is opened once, relative to its parent directory's
// descriptor, and each source directory is opened once.
func CopyTree(src, dst string) error {
	return CopyFile(src, dst, Options{Recursive: true})
}

// loc is a file named relative to a directory descriptor.
type loc struct {
	dirfd int    // the directory name is relative to, or AT_FDCWD
	name  string // what the *at system calls are given
	path  string // what messages show: the path the user would recognise
	// fresh: dirfd is a directory this copy created, still private to it
	// (mode 0700), so name is free: a destination is then created with
	// O_EXCL without being looked up first, as cp does in a directory it
	// made (one failed stat per file would be a wasted lookup).
	fresh bool
	// looked: what the command line found at name already (the top
	// destination, when it is the DST operand), or nil.
	looked *dstLookup
}

// child returns the entry name of the directory open as dirfd, which is l.
func (l loc) child(dirfd int, name string) loc {
	// Not filepath.Join: cleaning "link/../x" would change which file it
	// names when link is a symbolic link, and refmv removes files by path.
	p := l.path
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return loc{dirfd: dirfd, name: name, path: p + name}
}

// readFlags open a source for reading. O_NOCTTY keeps a terminal named as a
// source from becoming our controlling terminal.
const readFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY

// treeReadFlags add, for recursive copies: O_NOFOLLOW, because links are
// copied as links (so a link met where a file was expected fails instead of
// being followed out of the tree), and O_NONBLOCK, so that a FIFO swapped in
// for a file cannot block the open; it is then skipped as a special file.
// O_NONBLOCK does not affect regular files or directories.
const treeReadFlags = readFlags | unix.O_NOFOLLOW | unix.O_NONBLOCK

// copier carries the state of one CopyFile, CopyTree or cross-device Move.
type copier struct {
	recursive bool
	probe     bool // Options.Probe
	// fresh requires every destination to be new: Move copies into a
	// temporary name that nothing else should exist under, so anything
	// found there is an error rather than something to merge or overwrite.
	fresh bool
	// dstDirs holds the destination directories written into so far. A
	// source directory among them is the copy itself, met again because
	// the destination lies inside the source; copying it would never end.
	dstDirs map[fileID]bool
	// failFast stops the copy at the first failure instead of carrying on
	// with the other entries: a move is abandoned after any failure, so
	// copying the rest would be wasted.
	failFast bool
	// record makes the copier list in copied, children before their
	// directory, every source entry it copied completely, for Move to
	// remove afterwards without listing (opening) the directories again.
	record bool
	// topParent is the identity of the directory the top destination is
	// created in, when the command line looked it up already (DST was
	// that directory): the into-itself check then does not stat it again.
	topParent *fileID
	// started: the top source was opened (or read as a link), so the
	// copy began; a move that fails before that has nothing to undo.
	started bool
	copied  []copiedEntry
	errs    []error
}

// copiedEntry is a source entry that was copied, with its identity at the
// time so that Move does not remove a file that replaced it meanwhile.
type copiedEntry struct {
	path string
	id   fileID
	dir  bool
	// link: a symbolic link, whose identity is its target instead of id:
	// the copy read the link without a stat, and a link with the same
	// target is the same link as far as the data goes.
	link   bool
	target string
}

func newCopier(recursive bool) *copier {
	return &copier{recursive: recursive, dstDirs: map[fileID]bool{}}
}

func (c *copier) fail(err error) { c.errs = append(c.errs, err) }

func (c *copier) err() error { return errors.Join(c.errs...) }

// stopped reports whether the copy should not go on.
func (c *copier) stopped() bool { return c.failFast && len(c.errs) > 0 }

func (c *copier) recordCopy(path string, id fileID, dir bool) {
	if c.record {
		c.copied = append(c.copied, copiedEntry{path: path, id: id, dir: dir})
	}
}

func (c *copier) recordLink(path, target string) {
	if c.record {
		c.copied = append(c.copied, copiedEntry{path: path, link: true, target: target})
	}
}

// top copies the source named src on the command line to dst.
func (c *copier) top(src string, dst loc) {
	flags := readFlags
	if c.recursive {
		flags = treeReadFlags
	}
	srcLoc := loc{dirfd: unix.AT_FDCWD, name: src, path: src}
	fd, err := openat(unix.AT_FDCWD, src, flags, 0)
	if err == unix.ELOOP && c.recursive {
		// With O_NOFOLLOW, ELOOP means the last component is a symbolic
		// link (or the path loops, and then readlink fails too).
		if target, lerr := readlinkat(unix.AT_FDCWD, src); lerr == nil {
			c.started = true
			c.copySymlink(target, srcLoc, dst)
			return
		}
	}
	if err != nil {
		c.fail(openError(src, err))
		return
	}
	defer closeFD(fd)
	c.started = true
	c.copyOpen(fd, srcLoc, dst)
}

// openError words a failed open of a source the way cp words the stat or
// open that failed for it.
func openError(path string, err error) error {
	switch err {
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.ENAMETOOLONG:
		return failf(err, "cannot stat %s", Quote(path))
	}
	return failf(err, "cannot open %s for reading", Quote(path))
}

// copyOpen copies the source open as fd, by its type.
func (c *copier) copyOpen(fd int, src, dst loc) {
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		c.fail(failf(err, "cannot stat %s", Quote(src.path)))
		return
	}
	switch {
	case isReg(&st):
		c.copyFile(fd, &st, src, dst)
	case isDir(&st):
		if !c.recursive {
			c.fail(failf(nil, "-r not specified; omitting directory %s", Quote(src.path)))
			return
		}
		c.copyDir(fd, &st, src, dst)
	case c.recursive:
		// cp -r would recreate the node with mknod; a reference program
		// about opens has no use for that, and opening one is not safe.
		c.fail(failf(nil, "skipping special file %s", Quote(src.path)))
	default:
		// Without -r, cp copies what a FIFO or device yields into a
		// regular file; so does copyData.
		c.copyFile(fd, &st, src, dst)
	}
}

// copyFile copies the contents of the source open as fd, with fstat result
// st, into a regular file at dst, creating dst once.
func (c *copier) copyFile(fd int, st *unix.Stat_t, src, dst loc) {
	existed, err := c.checkDst(st, src, dst)
	if err != nil {
		c.fail(err)
		return
	}
	if c.probe && isReg(st) {
		probeData(src)
		probeHoles(src)
	}
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC
	if !existed {
		// The file is meant to be new. O_EXCL makes sure it is ours, so
		// that removing it after a failure cannot remove someone else's.
		flags |= unix.O_EXCL
	}
	// The mode is the final one, less the umask; preserveMode sets it
	// exactly once the data is in.
	dfd, err := openat(dst.dirfd, dst.name, flags, st.Mode&0o777)
	if err != nil {
		c.fail(failf(err, "cannot create regular file %s", Quote(dst.path)))
		return
	}
	err = copyData(fd, dfd, st, Quote(src.path), Quote(dst.path))
	if err == nil {
		// After the data: writing clears set-user-ID and set-group-ID bits.
		err = c.preserve(dfd, st, dst.path)
	}
	// close can report a deferred write error (NFS, quotas).
	if cerr := closeFD(dfd); err == nil && cerr != nil {
		err = failf(cerr, "error writing %s", Quote(dst.path))
	}
	if err != nil {
		c.fail(discard(err, dst, existed))
		return
	}
	c.recordCopy(src.path, idOf(st), false)
}

// checkDst looks at what is at dst before it is created with O_TRUNC, which
// would destroy the source if they were the same file. It reports whether
// dst exists.
func (c *copier) checkDst(st *unix.Stat_t, src, dst loc) (existed bool, err error) {
	if c.fresh || dst.fresh {
		return false, nil // O_EXCL reports anything that is there
	}
	// The name itself first (lookDst): missing, as it nearly always is,
	// it is looked up once (a stat that follows links, then a lstat to
	// tell a dangling link from nothing, missed it twice). The command
	// line may have looked already: not again.
	d := dst.looked
	if d == nil {
		d = lookDst(dst.dirfd, dst.name)
	}
	if d.lerr != nil {
		// Missing, or not even stat-able: the create says why if it fails.
		return false, nil
	}
	dstSt := d.lst
	if d.followed {
		// What the create would write through.
		switch err := d.serr; err {
		case nil:
			dstSt = d.st
		case unix.ENOENT:
			// A dangling link: creating through it would put the file
			// where the link points, which is rarely what was meant; cp
			// refuses too.
			return false, failf(nil, "not writing through dangling symlink %s", Quote(dst.path))
		default:
			return false, nil // a loop, or no permission: the create says why
		}
	}
	if isDir(&dstSt) {
		return true, failf(nil, "cannot overwrite directory %s with non-directory", Quote(dst.path))
	}
	if idOf(&dstSt) == idOf(st) {
		return true, failf(nil, "%s and %s are the same file", Quote(src.path), Quote(dst.path))
	}
	return true, nil
}

// discard handles a destination whose copy failed: a new one is removed, so
// that nothing half-copied remains; an existing one was truncated already,
// and the error says so.
func discard(err error, dst loc, existed bool) error {
	var e *Error
	if !errors.As(err, &e) {
		e = failf(err, "error writing %s", Quote(dst.path))
	}
	if existed {
		e.Note = Quote(dst.path) + " was truncated and left incomplete"
		return e
	}
	if uerr := unix.Unlinkat(dst.dirfd, dst.name, 0); uerr != nil {
		e.Note = "could not remove the incomplete " + Quote(dst.path) + ": " + describe(uerr)
	}
	return e
}

// preserve gives the destination open as fd what the copy keeps of the
// source, whose fstat result is st: the permission bits, and for a move
// (c.record) also the owner and the access and modification times, as
// mv keeps them across filesystems. Called once the data is in, since
// writing would change the times again.
func (c *copier) preserve(fd int, st *unix.Stat_t, path string) error {
	if c.record {
		// Before the mode: chown clears set-user-ID and set-group-ID.
		// Refused (not root, not the owner), it is left out silently,
		// as mv does; the file is then its mover's.
		switch err := retry(func() error { return unix.Fchown(fd, int(st.Uid), int(st.Gid)) }); err {
		case nil, unix.EPERM, unix.EINVAL:
		default:
			return failf(err, "preserving ownership for %s", Quote(path))
		}
	}
	if err := preserveMode(fd, st, path); err != nil {
		return err
	}
	if c.record {
		ts := []unix.Timespec{st.Atim, st.Mtim}
		if err := retry(func() error { return unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH) }); err != nil {
			return failf(err, "preserving times for %s", Quote(path))
		}
	}
	return nil
}

// preserveMode gives the destination open as fd the permission bits of the
// source. Set-user-ID and set-group-ID are kept only when the destination
// has the same owner or group as the source: the copy is owned by whoever
// runs refcp, and a set-ID bit would otherwise grant that identity.
func preserveMode(fd int, st *unix.Stat_t, path string) error {
	var dstSt unix.Stat_t
	if err := fstat(fd, &dstSt); err != nil {
		return failf(err, "preserving permissions for %s", Quote(path))
	}
	mode := st.Mode & 0o7777
	if dstSt.Uid != st.Uid {
		mode &^= unix.S_ISUID
	}
	if dstSt.Gid != st.Gid {
		mode &^= unix.S_ISGID
	}
	if err := retry(func() error { return unix.Fchmod(fd, mode) }); err != nil {
		return failf(err, "preserving permissions for %s", Quote(path))
	}
	return nil
}

// probeData and probeHoles are Options.Probe's two extra opens of a
// source, each from a function of its own so that once run --stacks
// tells the three call sites apart. Their answers are not used: the copy
// finds data and holes on its own descriptor.
//
//go:noinline
func probeData(src loc) {
	fd, err := openat(src.dirfd, src.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Seek(fd, 0, unix.SEEK_DATA)
	closeFD(fd)
}

//go:noinline
func probeHoles(src loc) {
	fd, err := openat(src.dirfd, src.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Seek(fd, 0, unix.SEEK_HOLE)
	closeFD(fd)
}
