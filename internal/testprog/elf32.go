package testprog

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Open32 writes, in a temporary directory, a static 32-bit x86 program that
// opens target n times with the i386 open(2) (int 0x80, leaving each fd
// open) and exits 0, and returns its path. It is made here, byte by byte,
// because building one needs a 32-bit toolchain that few machines have;
// running it needs only a kernel with IA32 emulation. It is run once here:
// on a kernel without (CONFIG_IA32_EMULATION off, or ia32_emulation=0 on
// the command line) the test is skipped, or fails when CI=true.
func Open32(t testing.TB, target string, n int) string {
	t.Helper()
	const base = 0x08048000
	const hdrs = 52 + 32 // ELF header, one program header
	var code []byte
	imm32 := func(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
	// The name follows the code; its address is only known at the end.
	var fixups []int
	for range n {
		code = append(code, 0xb8) // mov eax, 5 (open)
		code = imm32(code, 5)
		code = append(code, 0xbb) // mov ebx, name
		fixups = append(fixups, len(code))
		code = imm32(code, 0)
		code = append(code, 0x31, 0xc9) // xor ecx, ecx (O_RDONLY)
		code = append(code, 0xcd, 0x80) // int 0x80
	}
	code = append(code, 0xb8) // mov eax, 1 (exit)
	code = imm32(code, 1)
	code = append(code, 0x31, 0xdb) // xor ebx, ebx
	code = append(code, 0xcd, 0x80) // int 0x80
	name := uint32(base + hdrs + len(code))
	for _, at := range fixups {
		binary.LittleEndian.PutUint32(code[at:], name)
	}
	code = append(code, target...)
	code = append(code, 0)
	size := uint32(hdrs + len(code))

	le := binary.LittleEndian
	b := []byte{0x7f, 'E', 'L', 'F', 1 /* 32-bit */, 1 /* LE */, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	b = le.AppendUint16(b, 2)         // e_type: EXEC
	b = le.AppendUint16(b, 3)         // e_machine: EM_386
	b = le.AppendUint32(b, 1)         // e_version
	b = le.AppendUint32(b, base+hdrs) // e_entry
	b = le.AppendUint32(b, 52)        // e_phoff
	b = le.AppendUint32(b, 0)         // e_shoff
	b = le.AppendUint32(b, 0)         // e_flags
	b = le.AppendUint16(b, 52)        // e_ehsize
	b = le.AppendUint16(b, 32)        // e_phentsize
	b = le.AppendUint16(b, 1)         // e_phnum
	b = le.AppendUint16(b, 40)        // e_shentsize
	b = le.AppendUint16(b, 0)         // e_shnum
	b = le.AppendUint16(b, 0)         // e_shstrndx
	b = le.AppendUint32(b, 1)         // p_type: PT_LOAD
	b = le.AppendUint32(b, 0)         // p_offset
	b = le.AppendUint32(b, base)      // p_vaddr
	b = le.AppendUint32(b, base)      // p_paddr
	b = le.AppendUint32(b, size)      // p_filesz
	b = le.AppendUint32(b, size)      // p_memsz
	b = le.AppendUint32(b, 5)         // p_flags: R+X
	b = le.AppendUint32(b, 0x1000)    // p_align
	b = append(b, code...)

	p := filepath.Join(t.TempDir(), "open32")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	if err := exec.Command(p).Run(); err != nil {
		if errors.Is(err, syscall.ENOEXEC) {
			Skipf(t, "this kernel does not run 32-bit programs: %v", err)
		}
		t.Fatalf("run %s: %v", p, err)
	}
	return p
}
