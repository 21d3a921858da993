//go:build linux && arm64

package report

// kernelOLargefile is the kernel's O_LARGEFILE bit, which arm64 defines as
// 00400000 instead of the generic value; see largefile_generic.go.
const kernelOLargefile = 0x20000
