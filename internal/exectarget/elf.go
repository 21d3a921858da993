// Package exectarget writes the smallest useful exec target: a static ELF
// executable that only calls exit_group(0), generated from bytes, so exec
// benchmarks measure exec and not a program's start-up, with no toolchain
// needed at run time.
package exectarget

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
)

// The exec target is generated rather than compiled so that reflaunch needs
// no toolchain at run time, and so that the target is as cheap as a process
// can be: no dynamic loader, no libc start-up, no language runtime. After
// the kernel maps its single segment it makes one system call, exit_group(0).
// Everything the benchmark measures is then fork, exec and wait themselves.

// loadAddr is where the target's only segment is mapped. It is the
// traditional base for static executables, far above vm.mmap_min_addr, and
// aligned to any page size Linux uses (4 KiB to 64 KiB), so file offset 0
// and this address agree modulo the page size as the loader requires.
const loadAddr = 0x400000

// Sizes of the two headers in an ELF64 file; the code follows them.
const (
	ehdrSize = 64
	phdrSize = 56
)

// exitCode returns the machine code of exit_group(0) for goarch, and the ELF
// machine that runs it. The instructions are written out as bytes because
// there is nothing to assemble them with at run time; each is annotated.
func exitCode(goarch string) ([]byte, elf.Machine, error) {
	switch goarch {
	case "amd64":
		return []byte{
			0xb8, 0xe7, 0x00, 0x00, 0x00, // mov eax, 231 (exit_group)
			0x31, 0xff, // xor edi, edi (status 0)
			0x0f, 0x05, // syscall
		}, elf.EM_X86_64, nil
	case "arm64":
		// A64 instructions are little-endian 32-bit words.
		return []byte{
			0xc8, 0x0b, 0x80, 0xd2, // movz x8, #94 (exit_group)
			0x00, 0x00, 0x80, 0xd2, // movz x0, #0 (status 0)
			0x01, 0x00, 0x00, 0xd4, // svc #0
		}, elf.EM_AARCH64, nil
	}
	return nil, elf.EM_NONE, fmt.Errorf("no exec target for GOARCH=%s (only amd64 and arm64 are supported)", goarch)
}

// targetELF returns a complete static executable for goarch that exits 0:
// an ELF header, one PT_LOAD program header covering the whole file, and
// the code right after the headers. There are no sections; the kernel does
// not need them.
func targetELF(goarch string) ([]byte, error) {
	code, machine, err := exitCode(goarch)
	if err != nil {
		return nil, err
	}
	const codeOff = ehdrSize + phdrSize // 120, also 4-byte aligned for arm64
	size := uint64(codeOff + len(code))

	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     loadAddr + codeOff,
		Phoff:     ehdrSize,
		Ehsize:    ehdrSize,
		Phentsize: phdrSize,
		Phnum:     1,
		Shentsize: 64, // the ELF64 section header size, though there are none
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)

	// Mapping the headers along with the code keeps the file one segment
	// long; they are harmless as read-only data in front of the entry point.
	prog := elf.Prog64{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Off:    0,
		Vaddr:  loadAddr,
		Paddr:  loadAddr,
		Filesz: size,
		Memsz:  size,
		Align:  0x1000,
	}

	var buf bytes.Buffer
	// Both header structs have fixed-size fields only, laid out exactly as
	// in the file, so binary.Write cannot fail on them.
	_ = binary.Write(&buf, binary.LittleEndian, &hdr)
	_ = binary.Write(&buf, binary.LittleEndian, &prog)
	buf.Write(code)
	if uint64(buf.Len()) != size {
		panic(fmt.Sprintf("exec target is %d bytes, laid out for %d", buf.Len(), size))
	}
	return buf.Bytes(), nil
}

// Write writes the exec target for this machine's architecture to path,
// executable by all.
func Write(path string) error { return writeTarget(path, runtime.GOARCH) }

// writeTarget writes the exec target for goarch to path, executable by all.
func writeTarget(path, goarch string) error {
	b, err := targetELF(goarch)
	if err != nil {
		return err
	}
	// WriteFile applies the mode only when it creates the file, which it
	// always does here (the directory is fresh); Chmod covers a umask that
	// would strip the execute bits.
	if err := os.WriteFile(path, b, 0o755); err != nil {
		return err
	}
	return os.Chmod(path, 0o755)
}
