package stack

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/mountinfo"
)

// Files a traced process names are opened here, and only here. The
// traced user chooses the paths (its mappings' and its .gnu_debuglink's)
// and what lies at them: a FIFO, whose open blocks until a writer comes;
// a file in its own mount namespace, which is not the host's file at the
// same path; a sparse file of terabytes. So:
//
//   - A mapped file is opened as the process sees it, while it lives:
//     through /proc/PID/map_files/START-END, the kernel's link to the
//     very file mapped; where that entry is gone (the range was unmapped
//     or remapped) through /proc/PID/root with openat2's
//     RESOLVE_IN_ROOT, following no symlink, so that the path is resolved
//     in the process's root and mounts. Not by its path on the host: that
//     may be another file, or a FIFO put there.
//   - Every file is first opened O_PATH (following no symlink but for
//     map_files, whose entries are links the kernel follows to the
//     mapped file), which runs no driver's open and never waits, and
//     fstat: only a regular file is then opened, through /proc/self/fd,
//     O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC (openRegular), never a
//     device whose open acts (a watchdog's arms it). Each open is
//     bounded by openTimeout (one that timed out is not tried again). A file on FUSE is not opened at all,
//     nor a path through a FUSE directory resolved (notServed): its
//     server may never answer, and a thread waiting on it can't be
//     killed, so once could not exit.
//   - The file is checked against the mapping: by build-id when the
//     mapping has one (the file's own identity; the device an overlay
//     file shows differs between /proc/PID/maps and fstat on some
//     kernels), and by device and inode when it has none or was opened
//     by path: the superblock's device, as the mapping has it, where
//     fstat gives another (a btrfs subvolume's, an overlay layer's).
//   - A process that exited before its file was opened: only a file of
//     the very build-id the kernel read when it was mapped is taken, at
//     its path on the host (openExited says why and how); else the
//     module stays unopened and says so (errGone), counted.
//   - Debug files are looked for in the debug roots only (root's own
//     directories, /usr/lib/debug by default): by build-id, then by
//     .gnu_debuglink as ROOT/DIR/NAME. Not beside the binary nor in its
//     .debug/, where gdb also looks: that directory may be the traced
//     user's.
//     They are opened beneath the root (RESOLVE_BENEATH, following the
//     relative links some distributions make under .build-id), regular
//     files only, at most Options.MaxDebugFileSize bytes, which bounds
//     the .gnu_debuglink CRC too; a file over it is refused and counted.
//
// Opening happens in Retain, outside the cache's lock: Unwind, on the
// session's drain path, only looks modules up.

// openTimeout bounds one open. An open that has not returned by then is
// given up, and its file closed whenever it does return.
var openTimeout = time.Second

// DefaultMaxDebugFileSize is Options.MaxDebugFileSize's default: larger
// than any distribution's debug file for one binary.
const DefaultMaxDebugFileSize = 2 << 30

// openFlags are the flags of every open of a file a traced process names.
const openFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

var (
	// errGone: the process exited (or the pid is no longer its own)
	// before its file was opened.
	errGone = errors.New("its process exited before the file was opened")
	// errNotRetained: a module asked for that no Retain opened.
	errNotRetained = errors.New("not opened while its process lived (no Retain)")
	errTimeout     = errors.New("open timed out")
	// errUnparsed: a file whose ELF headers could not be read, to
	// check its build-id (sameFile).
	errUnparsed = errors.New("ELF headers unreadable")
	// errFUSE: a file on FUSE, not opened (notServed).
	errFUSE = errors.New("on a FUSE filesystem, whose server may never answer: not opened")
)

// openStats count what was not opened, for the cache's Stats.
type openStats struct {
	modulesGone, modulesRefused, debugRefused, framesCut atomic.Uint64
	perfMapsRefused, perfMapsCut                         atomic.Uint64
}

// Stats are a cache's counts of what it could not resolve.
type Stats struct {
	// ModulesGone: modules whose process exited before they could be
	// opened: their frames keep module and offset.
	ModulesGone uint64
	// ModulesRefused: modules not opened, or opened and refused: not a
	// regular file, not the file mapped (device, inode, build-id), or
	// the open failed or timed out.
	ModulesRefused uint64
	// DebugRefused: separate debug files found but refused: not a
	// regular file, or over Options.MaxDebugFileSize.
	DebugRefused uint64
	// FramesCut: frames left with module and offset because the
	// symbolizing deadline had passed.
	FramesCut uint64
	// PerfMapsRefused: perf maps (/tmp/perf-PID.map, perfmap.go) found
	// but refused: a symlink, not a regular file, not owned by the
	// process's user nor root, or the open failed or timed out.
	PerfMapsRefused uint64
	// PerfMapsCut: perf maps read in part, at MaxPerfMapBytes or
	// MaxPerfMapEntries: frames in the code of lines past the cap stay
	// unnamed.
	PerfMapsCut uint64
}

// Stats returns the cache's counts.
func (c *Cache) Stats() Stats {
	return Stats{
		ModulesGone: c.stats.modulesGone.Load(), ModulesRefused: c.stats.modulesRefused.Load(),
		DebugRefused: c.stats.debugRefused.Load(), FramesCut: c.stats.framesCut.Load(),
		PerfMapsRefused: c.stats.perfMapsRefused.Load(), PerfMapsCut: c.stats.perfMapsCut.Load(),
	}
}

// timed runs open, giving up after openTimeout.
func timed(open func() (*os.File, error)) (*os.File, error) {
	type res struct {
		f   *os.File
		err error
	}
	ch := make(chan res, 1)
	go func() {
		f, err := open()
		ch <- res{f, err}
	}()
	t := time.NewTimer(openTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.f, r.err
	case <-t.C:
		go func() {
			if r := <-ch; r.f != nil {
				r.f.Close()
			}
		}()
		return nil, errTimeout
	}
}

// regular checks, by fstat, that f is a regular file of at most max
// bytes (max 0: any size), and gives its stat.
func regular(f *os.File, max int64) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return st, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return st, fmt.Errorf("not a regular file (mode %#o)", st.Mode&unix.S_IFMT)
	}
	if max > 0 && st.Size > max {
		return st, fmt.Errorf("%d bytes, over the %d-byte cap", st.Size, max)
	}
	return st, nil
}

// openMapped opens the file that mapping m maps in process pid, as the
// process sees it: /proc/PID/map_files, else the path resolved in
// /proc/PID/root; then checks it is a regular file and the one mapped.
// Its error is errGone (wrapped) when the process is gone.
func openMapped(pid int, m *Mapping) (*os.File, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("%s: %w", m.Path, errNotRetained)
	}
	mapped := fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End)
	if err := notServed(fmt.Sprintf("/proc/%d/mountinfo", pid), m.Dev, mapped, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	f, err := timed(func() (*os.File, error) { return openRegular(unix.AT_FDCWD, mapped, 0, m.Path) })
	viaRoot := false
	if errors.Is(err, unix.ENOENT) && !m.Deleted {
		viaRoot = true
		// The process's mount table names its mounts where its root
		// does: as openInRoot resolves m.Path.
		if err := notServed(fmt.Sprintf("/proc/%d/mountinfo", pid), 0, "", m.Path); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Path, err)
		}
		f, err = timed(func() (*os.File, error) { return openInRoot(pid, m.Path) })
	}
	if err != nil {
		if (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH)) && exited(pid) {
			return openExited(m)
		}
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	st, err := regular(f, 0)
	if err == nil {
		err = sameFile(f, &st, m, viaRoot, pid)
	}
	if err != nil {
		f.Close()
		if !viaRoot && !errors.Is(err, errUnparsed) {
			// map_files names what the range maps now: another file
			// there is the mapping gone (an exec, an munmap and a new
			// mmap since), not a file put in its place.
			return nil, fmt.Errorf("%s: %w: %w", m.Path, errGone, err)
		}
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	return f, nil
}

// notServed refuses a file on a FUSE filesystem: its device dev (or, when
// 0, the device of the file at name, from the attributes the kernel has
// cached: AT_STATX_DONT_SYNC asks the filesystem nothing) is a FUSE
// mount's in the mount table at mountinfo. Such a file is served by a
// process, which may never answer: a thread whose open or read was sent
// to it waits uninterruptibly, and a process with such a thread can't
// exit, not even on SIGKILL. The open's timeout (timed) frees the drain,
// not the thread: once would write its report and never exit. A path
// to be resolved in that table's namespace (path, absolute; "" for none)
// is refused too when it crosses a FUSE mount (one mounted at it or at
// one of its directories), whatever the file at its end is on: each name
// is looked up in the directory above it, and a lookup in a FUSE
// directory is a request to its server (a tmpfs mounted over a FUSE
// directory in a process's own mount namespace, or that namespace's path
// resolved on the host, where a FUSE directory is there). nil when
// neither is on FUSE or when that can't be told.
func notServed(mountinfoPath string, dev uint64, name, path string) error {
	if dev == 0 && name != "" {
		var stx unix.Statx_t
		if unix.Statx(unix.AT_FDCWD, name, unix.AT_STATX_DONT_SYNC, 0, &stx) == nil {
			dev = unix.Mkdev(stx.Dev_major, stx.Dev_minor)
		}
	}
	if dev == 0 && path == "" {
		return nil
	}
	f, err := os.Open(mountinfoPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	// A line at a time: the table is the process's to grow.
	var found error
	mountinfo.Each(f, func(mt mountinfo.Mount) bool {
		switch {
		case !isFUSE(mt.FSType):
		case dev != 0 && mt.Dev == dev:
			found = fmt.Errorf("%w (%s)", errFUSE, mt.FSType)
		case path != "" && crosses(path, mt.Point):
			found = fmt.Errorf("%w (%s mounted at %s, on the path)", errFUSE, mt.FSType, mt.Point)
		}
		return found == nil
	})
	return found
}

// crosses says whether resolving the absolute path path enters the
// mount at point: point is path, or one of its directories.
func crosses(path, point string) bool {
	return point == "/" || path == point || strings.HasPrefix(path, point+"/")
}

// isFUSE says whether a mountinfo filesystem type is FUSE's: fuse,
// fuseblk, or fuse.SUBTYPE (fuse.sshfs).
func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.") || strings.HasPrefix(fstype, "fuseblk.")
}

// exited says whether process pid has exited or is exiting: gone from
// /proc, a zombie, or in the kernel's exit path (PF_EXITING in its
// flags). The last matters: an exiting task drops its memory and then
// its root some time before it turns zombie, and a mapping read in that
// window would otherwise count as refused, though it is only gone.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	return statExited(b)
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h).
const pfExiting = 0x4

// statExited says whether a /proc/PID/stat line is of a process that
// has exited or is exiting. The command name, in parentheses, may hold
// anything, parentheses too: the fields are read after the last ')'.
func statExited(b []byte) bool {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return true
	}
	// state ppid pgrp session tty_nr tpgid flags ...
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 || f[0] == "Z" || f[0] == "X" || f[0] == "x" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err != nil || flags&pfExiting != 0
}

// openExited opens the file of a mapping whose process has exited. Its
// view of the files is gone with it; what is left is the build-id the
// kernel read from the very file it mapped. The host's file at the path
// is taken only if it is that build (and, when the mapping has them, the
// same device and inode): then it is the same program whatever the mount
// namespace, and its symbols are the process's. A mapping without a
// build-id has the device and inode the kernel gave (perf's MMAP2 record
// carries them when it carries no build-id): the file must be that
// inode. The path is resolved without any symlink (the kernel's paths
// have none), opened as every other file is, and must be a regular file;
// anything else leaves the module unopened (errGone).
//
// Why not refuse outright: most commands --stacks is asked about live for
// milliseconds and have exited before their first snapshot is drained.
// A FIFO at the path is refused after a non-blocking open; a file of
// another namespace has another build-id, or is another inode. A
// build-id forged to match a host file's (or an inode number reused
// after the mapped file was deleted) only names the process's own
// frames after that file's symbols.
func openExited(m *Mapping) (*os.File, error) {
	gone := fmt.Errorf("%s: %w", m.Path, errGone)
	if (m.BuildID == "" && m.Inode == 0) || m.Deleted || !filepath.IsAbs(m.Path) {
		return nil, gone
	}
	if err := notServed("/proc/self/mountinfo", m.Dev, "", m.Path); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	f, err := timed(func() (*os.File, error) {
		return openRegular(unix.AT_FDCWD, m.Path, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS, m.Path)
	})
	if err != nil {
		return nil, fmt.Errorf("%w, and the path: %w", gone, err)
	}
	st, err := regular(f, 0)
	if err == nil {
		err = sameFile(f, &st, m, true, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w, and the path: %w", gone, err)
	}
	return f, nil
}

// openInRoot opens path as process pid resolves it, in its root and its
// mount namespace, following no symlink (ELOOP for one, at the last name
// too), a regular file only: the paths the kernel gives (d_path) have
// none, so one there now means the path was changed; a perf map's is
// the process's to make.
func openInRoot(pid int, path string) (*os.File, error) {
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	return openRegular(root, strings.TrimLeft(path, "/"), unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS, path)
}

// openRegular opens name (at dirfd, resolved as resolve says: a symlink
// in it is ELOOP with RESOLVE_NO_SYMLINKS) with openFlags, a regular file
// only, its *os.File named label. The name is the traced process's, and
// what lies there its choice: a device whose open acts (a watchdog's
// arms it, a tape's rewinds it on close), a FIFO. So it is first opened
// O_PATH, which runs no driver's open and never waits, its type checked
// on that descriptor, and only a regular file is opened for reading,
// through /proc/self/fd: the file checked is the file opened.
func openRegular(dirfd int, name string, resolve uint64, label string) (*os.File, error) {
	fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("not a regular file (mode %#o)", st.Mode&unix.S_IFMT)
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), openFlags, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(rfd), label), nil
}

// sameFile checks that f (stat st) is the file of mapping m: by build-id
// when m has one, and by device and inode when it has none or f was
// opened by path. The mapping's device is its superblock's, where fstat
// may give another (superDev): pid is the process whose namespace f was
// opened in (0: once's).
func sameFile(f *os.File, st *unix.Stat_t, m *Mapping, byPath bool, pid int) error {
	if m.BuildID != "" {
		id, err := fileBuildID(f)
		if err != nil {
			// The kernel read the build-id from the program headers it
			// loads; a file whose section headers are broken is still
			// the file mapped, not one put in its place.
			return fmt.Errorf("%w: %w", errUnparsed, err)
		}
		if id != m.BuildID {
			return fmt.Errorf("replaced since it was mapped (build-id %s, mapped %s)", id, m.BuildID)
		}
		if !byPath {
			return nil
		}
	}
	if m.Inode != 0 && (st.Ino != m.Inode || st.Dev != m.Dev && superDev(f, pid) != m.Dev) {
		return fmt.Errorf("replaced since it was mapped (inode %d on %d:%d, mapped %d on %d:%d)",
			st.Ino, unix.Major(st.Dev), unix.Minor(st.Dev), m.Inode, unix.Major(m.Dev), unix.Minor(m.Dev))
	}
	return nil
}

// superDev gives the device of the superblock f's file is on (0 when
// unknown): what /proc/PID/maps and perf's MMAP2 give a mapped file's
// device, where fstat gives another on btrfs (each subvolume's own) and
// on an overlay of several file systems (each layer's). It is the device
// mountinfo gives f's mount (statx's mount id, unique on the machine),
// looked for in pid's mount namespace, where f was opened, then in once's.
func superDev(f *os.File, pid int) uint64 {
	var stx unix.Statx_t
	err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &stx)
	if err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0
	}
	var files []string
	if pid > 0 {
		files = append(files, fmt.Sprintf("/proc/%d/mountinfo", pid))
	}
	for _, name := range append(files, "/proc/self/mountinfo") {
		mi, err := os.Open(name)
		if err != nil {
			continue
		}
		m, ok := mountinfo.Find(mi, int(stx.Mnt_id))
		mi.Close()
		if ok {
			return m.Dev
		}
	}
	return 0
}

// openDebug opens rel beneath the debug root dir: regular files of at
// most max bytes only. A file that is there but refused is counted.
func openDebug(root, rel string, max int64, stats *openStats) *os.File {
	f, err := timed(func() (*os.File, error) {
		dfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		fd, err := unix.Openat2(dfd, rel, &unix.OpenHow{
			Flags:   openFlags,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
	})
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && stats != nil {
			stats.debugRefused.Add(1)
		}
		return nil
	}
	if _, err := regular(f, max); err != nil {
		f.Close()
		if stats != nil {
			stats.debugRefused.Add(1)
		}
		return nil
	}
	return f
}

// findDebugFile looks for the module's separate debug file, in the debug
// roots only: by build-id (ROOT/.build-id/xx/yyyy.debug), then by
// .gnu_debuglink (ROOT/DIR/NAME, DIR the directory of the mapped path),
// the latter checked by the link's CRC. A debug file whose build-id
// differs from the module's is not used.
func (m *module) findDebugFile(roots []string) {
	m.link, m.linkStale = "", false
	stale := false
	max := m.maxDebug
	if max <= 0 {
		max = DefaultMaxDebugFileSize
	}
	try := func(root, rel string, crc *uint32) bool {
		f := openDebug(root, rel, max, m.stats)
		if f == nil {
			return false
		}
		if err := checkHeaders(f, fileSize(f)); err != nil {
			f.Close()
			return false
		}
		ef, err := elf.NewFile(f)
		if err != nil {
			f.Close()
			return false
		}
		if id := elfBuildID(ef); m.buildID != "" && id != "" && id != m.buildID {
			f.Close()
			stale = stale || crc != nil
			return false
		}
		if crc != nil {
			// The size was capped at the open; the reader stops there
			// even if the file grows.
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return false
			}
			h := crc32.NewIEEE()
			if _, err := io.Copy(h, io.NewSectionReader(f, 0, min(fi.Size(), max))); err != nil || h.Sum32() != *crc {
				f.Close()
				stale = stale || err == nil
				return false
			}
		}
		m.debug, m.debugEF, m.dfile = filepath.Join(root, rel), ef, f
		return true
	}
	if len(m.buildID) > 2 {
		for _, r := range roots {
			if try(r, filepath.Join(".build-id", m.buildID[:2], m.buildID[2:]+".debug"), nil) {
				return
			}
		}
	}
	name, crc, ok := debugLink(m.ef, m.file)
	if !ok || !filepath.IsAbs(m.path) {
		return
	}
	rel := filepath.Join(strings.TrimLeft(filepath.Dir(m.path), "/"), name)
	if !filepath.IsLocal(rel) {
		return
	}
	for _, r := range roots {
		if try(r, rel, &crc) {
			return
		}
	}
	m.link, m.linkStale = name, stale
}

// debugLink reads .gnu_debuglink: a file name, padding to 4, a CRC32.
// The section holds a name (at most NAME_MAX), padding and a CRC: one
// claiming more is not read.
func debugLink(ef *elf.File, f *os.File) (string, uint32, bool) {
	s := ef.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size > 512 || s.Flags&elf.SHF_COMPRESSED != 0 ||
		int64(s.Offset+s.Size) > fileSize(f) {
		return "", 0, false
	}
	data := make([]byte, s.Size)
	if _, err := f.ReadAt(data, int64(s.Offset)); err != nil {
		return "", 0, false
	}
	i := bytes.IndexByte(data, 0)
	if i <= 0 {
		return "", 0, false
	}
	off := (i + 4) &^ 3
	if off+4 > len(data) {
		return "", 0, false
	}
	name := string(data[:i])
	if strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return "", 0, false
	}
	return name, ef.ByteOrder.Uint32(data[off:]), true
}
