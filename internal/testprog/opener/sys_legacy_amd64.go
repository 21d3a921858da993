package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The legacy open(2) and creat(2) entry points are separate system calls
// that a tracer must hook on their own, so they are invoked by number; the
// unix package's Open and Creat wrappers would issue openat instead.

func sysOpen(path string, flags int) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	fd, _, errno := unix.Syscall(unix.SYS_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flags), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func sysCreat(path string, mode uint32) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	fd, _, errno := unix.Syscall(unix.SYS_CREAT, uintptr(unsafe.Pointer(p)), uintptr(mode), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
