package exectarget

import (
	"bytes"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTargetRuns executes the generated target for this machine directly,
// which proves the hand-assembled headers and code are accepted by the
// kernel and that the program exits 0.
func TestTargetRuns(t *testing.T) {
	if _, _, err := exitCode(runtime.GOARCH); err != nil {
		t.Skipf("no exec target for this machine: %v", err)
	}
	path := filepath.Join(t.TempDir(), "oncetarget")
	if err := writeTarget(path, runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(path, "ignored", "arguments")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("running the target: %v (output %q)", err, out.String())
	}
	if out.Len() != 0 {
		t.Errorf("target printed %q, want nothing", out.String())
	}
	b, _ := targetELF(runtime.GOARCH)
	if len(b) >= 512 {
		t.Errorf("target is %d bytes, want < 512", len(b))
	}
}

// TestTargetStructure checks the ELF of every supported architecture with
// an independent parser, including the one this machine cannot run.
func TestTargetStructure(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		t.Run(arch, func(t *testing.T) {
			b, err := targetELF(arch)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) >= 512 {
				t.Errorf("%d bytes, want < 512", len(b))
			}
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("debug/elf rejects it: %v", err)
			}
			if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Type != elf.ET_EXEC || f.Machine != machine {
				t.Errorf("header: class %v data %v type %v machine %v", f.Class, f.Data, f.Type, f.Machine)
			}
			if len(f.Progs) != 1 {
				t.Fatalf("%d program headers, want 1", len(f.Progs))
			}
			p := f.Progs[0]
			if p.Type != elf.PT_LOAD || p.Flags != elf.PF_R|elf.PF_X || p.Off != 0 || p.Filesz != uint64(len(b)) || p.Memsz != p.Filesz {
				t.Errorf("program header %+v does not load the whole file read+execute", p.ProgHeader)
			}
			if p.Vaddr%p.Align != p.Off%p.Align {
				t.Errorf("vaddr %#x and offset %#x disagree modulo align %#x", p.Vaddr, p.Off, p.Align)
			}
			code, _, _ := exitCode(arch)
			entry := f.Entry - p.Vaddr
			if f.Entry < p.Vaddr || entry+uint64(len(code)) != p.Filesz || !bytes.Equal(b[entry:], code) {
				t.Errorf("entry %#x does not point at the code at the end of the segment", f.Entry)
			}
			if arch == "arm64" && entry%4 != 0 {
				t.Errorf("arm64 entry offset %#x is not 4-byte aligned", entry)
			}
		})
	}
}

func TestTargetUnsupportedArch(t *testing.T) {
	_, err := targetELF("riscv64")
	if err == nil || !strings.Contains(err.Error(), "GOARCH=riscv64") {
		t.Fatalf("got %v, want an error naming GOARCH=riscv64", err)
	}
}
