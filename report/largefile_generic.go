//go:build linux && (amd64 || riscv64 || loong64 || s390x)

package report

// kernelOLargefile is the kernel's O_LARGEFILE bit. x/sys/unix defines
// O_LARGEFILE as 0 on 64-bit targets because libc never needs to pass it
// there, but the kernel still has the bit (asm-generic value 00100000) and
// a raw syscall or a 32-bit caller can set it.
const kernelOLargefile = 0x8000
