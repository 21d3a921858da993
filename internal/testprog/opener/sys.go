package main

import (
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

// sysExecveatEmpty calls execveat(fd, "", argv, env, AT_EMPTY_PATH). It only
// returns on failure.
func sysExecveatEmpty(fd int, argv, env []string) error {
	empty, err := unix.BytePtrFromString("")
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
		uintptr(fd),
		uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&av[0])),
		uintptr(unsafe.Pointer(&ev[0])),
		unix.AT_EMPTY_PATH, 0)
	return errno
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
