package main

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysExecve calls execve(2) directly. syscall.Exec would also do, but the
// raw call keeps the helper's behaviour independent of runtime details.
// It only returns on failure.
func sysExecve(path string, argv, env []string) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	av, err := cStrings(argv)
	if err != nil {
		return err
	}
	ev, err := cStrings(env)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_EXECVE,
		uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&av[0])),
		uintptr(unsafe.Pointer(&ev[0])))
	return errno
}

// sysExecveat calls execveat(dirfd, name, argv, env, flags). It only
// returns on failure.
func sysExecveat(dirfd int, name string, argv, env []string, flags int) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	av, err := cStrings(argv)
	if err != nil {
		return err
	}
	ev, err := cStrings(env)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall6(unix.SYS_EXECVEAT,
		uintptr(dirfd),
		uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&av[0])),
		uintptr(unsafe.Pointer(&ev[0])),
		uintptr(flags), 0)
	return errno
}

// sysExecveatEmpty calls execveat(fd, "", argv, env, AT_EMPTY_PATH). It only
// returns on failure.
func sysExecveatEmpty(fd int, argv, env []string) error {
	return sysExecveat(fd, "", argv, env, unix.AT_EMPTY_PATH)
}

// cStrings builds the NULL-terminated char* array that execve expects.
func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// nameBuf is the one buffer sysOpenatBuf passes names from: every call
// gives the kernel the same address, as a C program reusing a path buffer
// does (unix.Openat allocates a new copy each time).
var nameBuf [4096]byte

// atFDCWD as a variable: the constant, negative, cannot be converted to
// uintptr.
var atFDCWD = unix.AT_FDCWD

// sysNewfstatat is newfstatat(AT_FDCWD, name, st, 0), name passed as is.
func sysNewfstatat(name *byte, st *unix.Stat_t) unix.Errno {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	return errno
}

// sysOpenatPtr is openat(AT_FDCWD, name, flags), name passed as is.
func sysOpenatPtr(name *byte, flags int) (int, unix.Errno) {
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(name)), uintptr(flags), 0, 0, 0)
	return int(fd), errno
}

// sysOpenatBuf is openat(AT_FDCWD, path, flags) with path copied into
// nameBuf.
func sysOpenatBuf(path string, flags int) (int, error) {
	if len(path) >= len(nameBuf) || strings.IndexByte(path, 0) >= 0 {
		return -1, unix.EINVAL
	}
	n := copy(nameBuf[:], path)
	nameBuf[n] = 0
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&nameBuf[0])), uintptr(flags), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
