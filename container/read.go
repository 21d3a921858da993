package container

import (
	"errors"
	"io"
	"os"

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

// readBounded reads a whole regular file of at most max bytes. It opens
// with O_NONBLOCK (a FIFO put in a file's place must not hang the
// tracer: the open returns at once and fstat refuses it) and O_NOFOLLOW
// (the last component is not followed: a state file is never a symlink),
// checks the open file is regular, and refuses a larger one. procfs files
// say size 0: for them the read itself stops at max+1 bytes.
func readBounded(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
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
