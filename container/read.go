package container

import (
	"errors"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxStateFileBytes is the most read of one runtime state file
// (config.json, state.json, status, config.v2.json, containers.json). A
// config.json holds what the pod's author wrote (env, args, annotations):
// a larger one is skipped, not read in part.
const MaxStateFileBytes = 1 << 20

// MaxProcFileBytes is the most read of /proc/PID/cgroup or
// /proc/self/mountinfo.
const MaxProcFileBytes = 256 << 10

var errNotRegular = errors.New("not a regular file")
var errTooLarge = errors.New("file too large")

// beneath is how a state file is resolved below its root: never above
// it ("..", an absolute symlink), through no symlink at all, no procfs
// magic link (openat2, Linux 5.6).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openat2 is unix.Openat2 (a test stands in a kernel without it).
var openat2 = unix.Openat2

// openBeneath opens rel below the directory root (root itself may be
// reached through symlinks: /var/run is one to /run on most systems).
// Where openat2 is missing or a seccomp profile refuses it (ENOSYS,
// EPERM) it walks the components itself, each O_NOFOLLOW.
func openBeneath(root, rel string, flags int) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	if rel == "" {
		rel = "."
	}
	fd, err := openat2(rfd, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOCTTY), Resolve: beneath})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return openNoSymlinks(rfd, rel, flags)
	}
	return fd, err
}

// openNoSymlinks opens rel below the directory rfd one component at a
// time, each with O_NOFOLLOW: what openat2's RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS give, for a path of plain names ("..", empty and
// "." components refused).
func openNoSymlinks(rfd int, rel string, flags int) (int, error) {
	comps := strings.Split(rel, "/")
	dfd := rfd
	defer func() {
		if dfd != rfd {
			unix.Close(dfd)
		}
	}()
	for i, c := range comps {
		if c == "" || c == ".." || (c == "." && len(comps) > 1) {
			return -1, unix.EXDEV
		}
		if i == len(comps)-1 {
			return unix.Openat(dfd, c, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		}
		next, err := unix.Openat(dfd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if dfd != rfd {
			unix.Close(dfd)
		}
		dfd = next
	}
	return -1, unix.ENOENT
}

// readBeneath reads the regular file rel below root, as readBounded.
func readBeneath(root, rel string, max int64) ([]byte, error) {
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	return readFD(fd, rel, max)
}

// openDirBeneath opens the directory rel below root for listing.
func openDirBeneath(root, rel string) (*os.File, error) {
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// readBounded reads a whole regular file of at most max bytes (procfs:
// PID/cgroup, self/mountinfo). It opens with O_NONBLOCK (a FIFO put in a
// file's place must not hang the tracer: the open returns at once and
// fstat refuses it) and O_NOFOLLOW (the last component is not followed),
// checks the open file is regular, and refuses a larger one. procfs files
// say size 0: for them the read itself stops at max+1 bytes.
func readBounded(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return readFD(fd, path, max)
}

// readFD reads the open fd, a regular file of at most max bytes, and
// closes it.
func readFD(fd int, name string, max int64) ([]byte, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errNotRegular
	}
	if st.Size > max {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}
