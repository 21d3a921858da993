//go:build !amd64

package main

import (
	"fmt"
	"runtime"
)

// Newer architectures such as arm64 only have openat; there is no open(2)
// or creat(2) system call to exercise, so these actions fail loudly rather
// than quietly issuing a different syscall.

func sysOpen(string, int) (int, error) {
	return -1, fmt.Errorf("open(2) does not exist on %s", runtime.GOARCH)
}

func sysCreat(string, uint32) (int, error) {
	return -1, fmt.Errorf("creat(2) does not exist on %s", runtime.GOARCH)
}
