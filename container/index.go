package container

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Limits of the cgroup v2 index, the map from id to path made by walking
// the cgroup2 mount (when file handles are not available).
const (
	// MaxIndexedCgroups is the most cgroups one walk records; a node
	// with more (or a user who made that many in a delegated subtree)
	// leaves the rest to file handles and /proc.
	MaxIndexedCgroups = 32768
	// MaxIndexBytes bounds the path text one walk keeps.
	MaxIndexBytes = 8 << 20
	// MaxWalkDepth is the deepest level walked below the mount.
	MaxWalkDepth = 64
	// MaxCachedPathLen: a longer cgroup path is kept cut at a '/' before
	// this length and ended with "/…" (the full path was parsed first).
	MaxCachedPathLen = 512
)

// cgroup2SuperMagic is CGROUP2_SUPER_MAGIC, statfs's f_type on cgroup2.
const cgroup2SuperMagic = 0x63677270

// fileidKernfs is FILEID_KERNFS: a cgroup2 file handle is this type and
// the 8 bytes of the cgroup's id (its kernfs node id, which is also the
// directory's inode number on 64-bit), Linux 5.5+.
const fileidKernfs = 0xfe

// capPath cuts an overlong path at a segment boundary and marks it.
func capPath(p string) string {
	if len(p) <= MaxCachedPathLen {
		return p
	}
	cut := strings.LastIndexByte(p[:MaxCachedPathLen-4], '/')
	if cut < 0 {
		cut = 0
	}
	return p[:cut] + "/…"
}

// joinRel joins a mount-relative path ("" or "/a/b") to a prefix.
func joinRel(prefix, rel string) string {
	if rel == "" {
		rel = "/"
	}
	if prefix == "" || prefix == "/" {
		return rel
	}
	if rel == "/" {
		return prefix
	}
	return prefix + rel
}

// walkIndex walks the cgroup2 mount at point and returns id → path
// (prefix, the mount root's place in the hierarchy, before each), within
// the limits above. Directories are opened relative to their parent
// (openat, O_NOFOLLOW): the walk never leaves the mount. Ids are the
// d_ino of each directory entry, which kernfs sets to the node's id.
func walkIndex(point, prefix string) map[uint64]string {
	idx := map[uint64]string{}
	fd, err := unix.Open(point, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return idx
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return idx
	}
	w := walker{idx: idx, prefix: prefix, buf: make([]byte, 32<<10)}
	w.add(st.Ino, "")
	w.dir(fd, "", 0)
	return idx
}

type walker struct {
	idx    map[uint64]string
	prefix string
	bytes  int
	buf    []byte
}

func (w *walker) full() bool { return len(w.idx) >= MaxIndexedCgroups || w.bytes >= MaxIndexBytes }

func (w *walker) add(ino uint64, rel string) {
	p := capPath(joinRel(w.prefix, rel))
	w.idx[ino] = p
	w.bytes += len(p) + 32
}

func (w *walker) dir(fd int, rel string, depth int) {
	type sub struct {
		ino  uint64
		name string
	}
	var subs []sub
	for !w.full() {
		n, err := unix.ReadDirent(fd, w.buf)
		if err != nil || n <= 0 {
			break
		}
		for b := w.buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino := binary.NativeEndian.Uint64(b[0:8])
			typ := b[18]
			name := b[19:reclen]
			if i := indexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if typ != unix.DT_DIR || string(name) == "." || string(name) == ".." {
				continue
			}
			subs = append(subs, sub{ino, string(name)})
		}
	}
	for _, s := range subs {
		if w.full() {
			return
		}
		r := rel + "/" + s.name
		if len(r) > MaxPathLen {
			continue
		}
		w.add(s.ino, r)
		if depth+1 >= MaxWalkDepth {
			continue
		}
		cfd, err := unix.Openat(fd, s.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		w.dir(cfd, r, depth+1)
		unix.Close(cfd)
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// errHandlesUnavailable: open_by_handle_at cannot work here (no
// CAP_DAC_READ_SEARCH, or the filesystem or kernel does not do it).
var errHandlesUnavailable = errors.New("cgroup file handles unavailable")

// byHandle opens the cgroup with this id by its kernfs file handle and
// returns its path (prefix before it). ok false: no such live cgroup; err
// errHandlesUnavailable: stop trying.
func byHandle(point, prefix string, id uint64) (path string, ok bool, err error) {
	mfd, err := unix.Open(point, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", false, nil
	}
	defer unix.Close(mfd)
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], id)
	fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(fileidKernfs, b[:]), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		return "", false, errHandlesUnavailable
	case err != nil:
		return "", false, nil // ESTALE, ENOENT: not a live cgroup
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != id {
		return "", false, nil
	}
	var lb [MaxPathLen + 1]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), lb[:])
	if err != nil || n > MaxPathLen {
		return "", false, nil
	}
	link := string(lb[:n])
	mp := strings.TrimSuffix(point, "/")
	var rel string
	switch {
	case link == point || link == mp:
		rel = ""
	case strings.HasPrefix(link, mp+"/"):
		rel = link[len(mp):]
	default:
		return "", false, nil // outside the mount we asked through
	}
	// A cgroup removed while something still holds it opens too, and
	// reads back as "path (deleted)": its path is still the one it had
	// (ids are not reused). A live cgroup may be named so: then the name
	// is there, with this id.
	if cut, found := strings.CutSuffix(rel, deletedMark); found {
		if got, ok := statID(point, rel); !ok || got != id {
			rel = cut
		}
	}
	return capPath(joinRel(prefix, rel)), true, nil
}

// statID returns the id of the cgroup at point + rel (rel absolute, no
// "..": cleanPath), by lstat: its inode number.
func statID(point, rel string) (uint64, bool) {
	var st unix.Stat_t
	if unix.Lstat(strings.TrimSuffix(point, "/")+rel, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, false
	}
	return st.Ino, true
}

// isCgroup2 says whether dir is on a cgroup2 filesystem.
func isCgroup2(dir string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(dir, &fs) == nil && fs.Type == cgroup2SuperMagic
}
