package bpf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// LoadOnceWithoutLines is LoadOnce without the object's line info, the
// source line of each instruction. The verifier needs none of it: it only
// annotates the verifier's log. Decoding it is 40% of decoding the object
// and, per program, marshalling it and the kernel checking it, so a
// loader uses this and asks LoadOnce for the lines of a program the
// verifier rejects.
func LoadOnceWithoutLines() (*ebpf.CollectionSpec, error) {
	raw, err := withoutLineInfo(_OnceBytes)
	if err != nil {
		return nil, err
	}
	return ebpf.LoadCollectionSpecFromReader(bytes.NewReader(raw))
}

// withoutLineInfo is a copy of the ELF object obj whose .BTF.ext says it
// holds no line info: its line_info_len covers the record size alone
// (struct btf_ext_header in the kernel's include/uapi/linux/btf.h; the
// function info and CO-RE relocations it also holds keep their offsets).
func withoutLineInfo(obj []byte) ([]byte, error) {
	f, err := elf.NewFile(bytes.NewReader(obj))
	if err != nil {
		return nil, fmt.Errorf("read BPF object: %w", err)
	}
	sec := f.Section(".BTF.ext")
	if sec == nil {
		return obj, nil
	}
	const (
		magic      = 0xeb9f
		lineLenAt  = 20 // magic, version, flags, hdr_len, func_info_off/len, line_info_off
		minHdrSize = 24
	)
	off := sec.Offset
	if sec.Type != elf.SHT_PROGBITS || sec.Size < minHdrSize || off+minHdrSize > uint64(len(obj)) {
		return nil, errors.New("read BPF object: .BTF.ext too short")
	}
	if binary.LittleEndian.Uint16(obj[off:]) != magic || binary.LittleEndian.Uint32(obj[off+4:]) < minHdrSize {
		return nil, errors.New("read BPF object: .BTF.ext header not understood")
	}
	out := bytes.Clone(obj)
	if binary.LittleEndian.Uint32(out[off+lineLenAt:]) > 4 {
		binary.LittleEndian.PutUint32(out[off+lineLenAt:], 4)
	}
	return out, nil
}
