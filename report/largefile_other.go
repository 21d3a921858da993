//go:build linux && !(amd64 || riscv64 || loong64 || s390x || arm64)

package report

import "golang.org/x/sys/unix"

// kernelOLargefile is the kernel's O_LARGEFILE bit. On these targets
// x/sys/unix either has the real (non-zero) value or, where it reports 0,
// the bit is left unnamed and printed in hex by OpenFlags.
const kernelOLargefile = unix.O_LARGEFILE
