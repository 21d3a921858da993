// Package filegen reads a file's generation (i_generation) as once's
// kernel side records it, for what a user names on once's command line:
// root opens nothing there but the file a stat saw.
package filegen

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// fsIocGetversion is FS_IOC_GETVERSION, _IOR('v', 1, long), which x/sys
// does not define: FS_IOC_GETFLAGS, _IOR('f', 1, long), with its type
// byte 'v' (the kernel writes an int into the long).
const fsIocGetversion = unix.FS_IOC_GETFLAGS&^0xff00 | 'v'<<8

// Read is the generation (i_generation) of the file at name, which
// st says was a regular file or directory, as FS_IOC_GETVERSION gives it
// on the file systems where that is what once records: ext4, xfs, btrfs
// (elsewhere the ioctl fails, or another file system's, an overlay's or
// a FUSE server's, may say something else). false when not known: the
// device and inode number then name the file alone.
//
// The name is resolved once, O_PATH (no driver's open, never a wait),
// and everything after is of that file: its stat checked against st,
// its file system's type, and the open for the ioctl through
// /proc/self/fd. A name in a directory a user can write is theirs to
// change between the stat and the open: a link to a device put there
// would have root open it (a pty allocated, a watchdog armed, a tape
// rewound), a FIFO or a file on FUSE would have it wait.
func Read(name string, st *unix.Stat_t) (uint32, bool) {
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return 0, false
	}
	pfd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(pfd)
	var fst unix.Stat_t
	if unix.Fstat(pfd, &fst) != nil || fst.Dev != st.Dev || fst.Ino != st.Ino || fst.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		return 0, false // replaced in between
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(pfd, &sfs) != nil {
		return 0, false
	}
	switch uint64(sfs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
	default:
		return 0, false
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	gen, err := unix.IoctlGetUint32(fd, fsIocGetversion)
	if err != nil {
		return 0, false
	}
	return gen, true
}
