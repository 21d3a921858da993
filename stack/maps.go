package stack

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadMaps reads the mappings of process pid from /proc/PID/maps and the
// build-id of each file-backed executable mapping (from the ELF notes of
// the file as mapped, through /proc/PID/map_files or the process's root,
// never by its path on the host: see open.go).
//
// Why /proc/PID/maps: it is exact at the moment it is read, needs no
// perf events (the MMAP2 records that perf relies on need a perf event
// per CPU and a buffer to drain), and costs nothing until a finding asks
// for it. Its limits: it is a moment's picture, so read it at exec and at
// each finding's call; a library dlopen'd and dlclose'd between two reads
// is never seen, and its frames come out as StopUnknownMapping; a path
// may have been replaced since it was mapped (hence the inode and the
// build-id, which Cache.Retain verifies).
//
// The file is the process's to grow: 65,530 mappings (vm.max_map_count)
// of a file with a path of 4,000 bytes make 260 MB, which the kernel
// builds while once reads it. One over MaxMapsFileBytes is not read.
func ReadMaps(pid int) ([]Mapping, error) {
	name := fmt.Sprintf("/proc/%d/maps", pid)
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	lr := &io.LimitedReader{R: f, N: MaxMapsFileBytes + 1}
	maps, err := ParseMaps(lr)
	f.Close()
	if lr.N <= 0 {
		err = fmt.Errorf("%s: over %d bytes, not read", name, MaxMapsFileBytes)
	}
	if err != nil {
		return nil, err
	}
	seen := map[[2]uint64]string{}
	for i := range maps {
		m := &maps[i]
		if !m.FileBacked() || !m.Exec() {
			continue
		}
		key := [2]uint64{m.Dev, m.Inode}
		if id, ok := seen[key]; ok {
			m.BuildID = id
			continue
		}
		if file, err := openMapped(pid, m); err == nil {
			m.BuildID, _ = fileBuildID(file)
			file.Close()
		}
		seen[key] = m.BuildID
	}
	return maps, nil
}

// MaxMapsFileBytes is the most of a /proc/PID/maps file ReadMaps reads:
// some 100,000 mappings of files with paths of 100 bytes.
const MaxMapsFileBytes = 16 << 20

// ParseMaps parses the text of a /proc/PID/maps file.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var maps []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		m, err := parseMapsLine(line)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	return maps, sc.Err()
}

// parseMapsLine parses "start-end perms offset major:minor inode   path".
// The path is the rest of the line after the inode and its padding; it
// may hold spaces, and ends in " (deleted)" for an unlinked file.
func parseMapsLine(line string) (Mapping, error) {
	var m Mapping
	bad := func() (Mapping, error) { return Mapping{}, fmt.Errorf("maps: bad line %q", line) }
	rest := line
	field := func() string {
		rest = strings.TrimLeft(rest, " ")
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			f := rest
			rest = ""
			return f
		}
		f := rest[:i]
		rest = rest[i+1:]
		return f
	}
	rng, perms, off, dev, ino := field(), field(), field(), field(), field()
	lo, hi, ok := strings.Cut(rng, "-")
	if !ok {
		return bad()
	}
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return bad()
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return bad()
	}
	if m.FileOffset, err = strconv.ParseUint(off, 16, 64); err != nil {
		return bad()
	}
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return bad()
	}
	ma, err1 := strconv.ParseUint(maj, 16, 32)
	mi, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return bad()
	}
	m.Dev = unix.Mkdev(uint32(ma), uint32(mi))
	if m.Inode, err = strconv.ParseUint(ino, 10, 64); err != nil {
		return bad()
	}
	m.Perms = perms
	m.Path = strings.TrimLeft(rest, " ")
	if m.Inode != 0 {
		if p, ok := strings.CutSuffix(m.Path, " (deleted)"); ok {
			m.Path, m.Deleted = p, true
		}
	}
	return m, nil
}

// fileBuildID reads the GNU build-id of an ELF file, "" if it has none.
func fileBuildID(r io.ReaderAt) (string, error) {
	// Its section headers are checked first: debug/elf reads the
	// section-name table whole, at the size the file claims.
	if f, ok := r.(*os.File); ok {
		if err := checkHeaders(f, fileSize(f)); err != nil {
			return "", err
		}
	}
	ef, err := elf.NewFile(r)
	if err != nil {
		return "", err
	}
	return elfBuildID(ef), nil
}

// maxNoteBytes bounds what elfBuildID reads of notes, in all: a file's
// headers may name the same megabyte as a note 16,000 times over (a
// module without a build-id then took 9 s of once's CPU to read); a
// program's notes are a few hundred bytes.
const maxNoteBytes = 1 << 20

// elfBuildID finds the NT_GNU_BUILD_ID note in the PT_NOTE segments, or
// in the note sections (a separate debug file has no loaded notes),
// reading maxNoteBytes of notes at most.
func elfBuildID(ef *elf.File) string {
	budget := uint64(maxNoteBytes)
	for _, p := range ef.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > budget {
			continue
		}
		budget -= p.Filesz
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := noteBuildID(data, ef.ByteOrder, p.Align); id != "" {
			return id
		}
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > budget {
			continue
		}
		budget -= s.Size
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := noteBuildID(data, ef.ByteOrder, s.Addralign); id != "" {
			return id
		}
	}
	return ""
}

// noteBuildID walks ELF notes for a GNU build-id.
func noteBuildID(data []byte, order binary.ByteOrder, align uint64) string {
	al := uint32(4)
	if align == 8 {
		al = 8
	}
	up := func(n uint32) uint32 { return (n + al - 1) &^ (al - 1) }
	for len(data) >= 12 {
		namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		data = data[12:]
		nlen, dlen := up(namesz), up(descsz)
		if uint64(nlen)+uint64(descsz) > uint64(len(data)) {
			return ""
		}
		name := data[:namesz]
		desc := data[nlen : nlen+descsz]
		if typ == ntGNUBuildID && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) {
			return hex.EncodeToString(desc)
		}
		if uint64(nlen)+uint64(dlen) > uint64(len(data)) {
			return ""
		}
		data = data[nlen+dlen:]
	}
	return ""
}

const ntGNUBuildID = 3 // NT_GNU_BUILD_ID
