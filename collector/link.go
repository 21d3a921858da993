package collector

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
)

// Linking is resolving what the object leaves to the running kernel: its
// CO-RE relocations (field offsets, kernel type IDs, field existence) and
// its kfunc calls (bpf_rdonly_cast's BTF ID). cilium/ebpf does both while
// loading, by decoding the kernel's BTF (some 150,000 types) and inflating
// task_struct's closure, which was over half of once's start-up. The result depends on nothing but the object and the
// kernel's BTF, so once resolves it itself, with cilium/ebpf's own
// resolver (btf.CORERelocate, COREFixup.Apply), keeps the resolved
// instructions in a small file keyed by both, and hands cilium/ebpf
// programs with nothing left to resolve. A later start on the same kernel
// reads that file instead of the kernel's BTF.
//
// Relocations are resolved against vmlinux and the BTF of the modules in
// linkModules that are loaded (cilium/ebpf would search every module's):
// overlayfs and btrfs are modules in most distributions' kernels, and once
// reads their inodes (bpf/kernel.h). A module loaded after once started
// is not seen: its types stay absent until the next start.

// insFix is one resolved instruction: the program's instruction at Index
// becomes this one.
type insFix struct {
	Index    uint32
	OpCode   asm.OpCode
	Regs     uint8 // Dst | Src<<4
	Offset   int16
	Constant int64
}

// kernelLink is the object linked against one kernel's BTF.
type kernelLink struct {
	// Casts: every kfunc the object calls (bpf_rdonly_cast, for the BTF
	// casts) is in the kernel. The calls to one that is not are poisoned,
	// and the loader must leave them unreachable.
	Casts bool
	Fixes map[string][]insFix // by program name, in instruction order
}

// linkSites lists, per program, the instructions linking resolves: those
// with a CO-RE relocation and the kfunc calls.
func linkSites(spec *ebpf.CollectionSpec) map[string][]int {
	sites := make(map[string][]int, len(spec.Programs))
	for name, p := range spec.Programs {
		for i := range p.Instructions {
			ins := &p.Instructions[i]
			if btf.CORERelocationMetadata(ins) != nil || ins.IsKfuncCall() {
				sites[name] = append(sites[name], i)
			}
		}
	}
	return sites
}

// kfuncPoison is called where a kfunc the kernel lacks was: the verifier
// only rejects it if it is reachable (once guards every kfunc call with a
// constant the loader sets). Like cilium/ebpf's own poison, recognisable
// in a verifier log.
const kfuncPoison = 0xdedc0de

// linkModules are the modules whose types the object reads where the
// kernel has them as modules: overlayfs's inodes and layers, btrfs's
// inodes and subvolumes (bpf/kernel.h). Built in, their types are
// vmlinux's.
var linkModules = []string{"overlay", "btrfs"}

// btfDir holds the kernel's BTF: vmlinux and a file per loaded module.
var btfDir = "/sys/kernel/btf"

// resolveLink resolves every link site of spec against the kernel's BTF
// and the modules' (their types only: kfuncs are vmlinux's).
func resolveLink(spec *ebpf.CollectionSpec, kernel *btf.Spec, modules ...*btf.Spec) (*kernelLink, error) {
	l := &kernelLink{Casts: true, Fixes: map[string][]insFix{}}
	kfuncIDs := map[string]btf.TypeID{}
	for name, sites := range linkSites(spec) {
		p := spec.Programs[name]
		var relos []*btf.CORERelocation
		var reloAt []int
		for _, i := range sites {
			if r := btf.CORERelocationMetadata(&p.Instructions[i]); r != nil {
				relos = append(relos, r)
				reloAt = append(reloAt, i)
			}
		}
		fixed := map[int]asm.Instruction{}
		if len(relos) > 0 {
			bo := p.ByteOrder
			if bo == nil {
				bo = binary.LittleEndian // the object is bpfel only
			}
			fixups, err := btf.CORERelocate(relos, append([]*btf.Spec{kernel}, modules...), bo, func(btf.Type) (btf.TypeID, error) {
				// Only bpf_core_type_id_local needs it, and once has none.
				return 0, errors.New("local type IDs are not supported")
			})
			if err != nil {
				return nil, fmt.Errorf("program %s: CO-RE: %w", name, err)
			}
			for j, f := range fixups {
				ins := p.Instructions[reloAt[j]]
				if err := f.Apply(&ins); err != nil {
					return nil, fmt.Errorf("program %s: CO-RE fixup for %s: %w", name, relos[j], err)
				}
				fixed[reloAt[j]] = ins
			}
		}
		for _, i := range sites {
			ins := p.Instructions[i]
			if !ins.IsKfuncCall() {
				continue
			}
			fn := ins.Reference()
			id, ok := kfuncIDs[fn]
			if !ok {
				var f *btf.Func
				switch err := kernel.TypeByName(fn, &f); {
				case errors.Is(err, btf.ErrNotFound):
				case err != nil:
					return nil, fmt.Errorf("program %s: kfunc %s: %w", name, fn, err)
				default:
					if id, err = kernel.TypeID(f); err != nil {
						return nil, fmt.Errorf("program %s: kfunc %s: %w", name, fn, err)
					}
				}
				kfuncIDs[fn] = id
			}
			if id == 0 {
				l.Casts = false
				fixed[i] = asm.BuiltinFunc(kfuncPoison).Call()
				continue
			}
			ins.Src, ins.Offset, ins.Constant = asm.PseudoKfuncCall, 0, int64(id)
			fixed[i] = ins
		}
		fixes := make([]insFix, 0, len(sites))
		for _, i := range sites {
			ins := fixed[i]
			fixes = append(fixes, insFix{
				Index: uint32(i), OpCode: ins.OpCode, Regs: uint8(ins.Dst) | uint8(ins.Src)<<4,
				Offset: ins.Offset, Constant: ins.Constant,
			})
		}
		l.Fixes[name] = fixes
	}
	return l, nil
}

// apply rewrites spec's link sites as resolved, leaving cilium/ebpf
// nothing to look up in the kernel's BTF. It checks l against spec first:
// a fix for anything but a link site, or a site without a fix, is an
// error and spec is left as it was.
func (l *kernelLink) apply(spec *ebpf.CollectionSpec) error {
	sites := linkSites(spec)
	if len(sites) != len(l.Fixes) {
		return fmt.Errorf("link has %d programs, the object %d", len(l.Fixes), len(sites))
	}
	for name, at := range sites {
		fixes := l.Fixes[name]
		if len(fixes) != len(at) {
			return fmt.Errorf("program %s: link has %d fixes, the object %d sites", name, len(fixes), len(at))
		}
		for j, f := range fixes {
			if int(f.Index) != at[j] {
				return fmt.Errorf("program %s: fix for instruction %d, not a link site", name, f.Index)
			}
		}
	}
	for name, fixes := range l.Fixes {
		insns := slices.Clone(spec.Programs[name].Instructions)
		for _, f := range fixes {
			old := insns[f.Index]
			ins := asm.Instruction{OpCode: f.OpCode, Dst: asm.Register(f.Regs & 0xf), Src: asm.Register(f.Regs >> 4),
				Offset: f.Offset, Constant: f.Constant}
			// Keep what the program's BTF and the verifier log want: the
			// source line, and the function and symbol a subprogram
			// starts with. Not the relocation, nor a kfunc's metadata.
			if src := old.Source(); src != nil {
				ins = ins.WithSource(src)
			}
			if fn := btf.FuncMetadata(&old); fn != nil {
				ins = btf.WithFuncMetadata(ins, fn)
			}
			if sym := old.Symbol(); sym != "" {
				ins = ins.WithSymbol(sym)
			}
			insns[f.Index] = ins
		}
		spec.Programs[name].Instructions = insns
	}
	return nil
}

// linkKey identifies what a link depends on: the object, the kernel's BTF
// (its size and CRC-32C of it mapped; a kernel update changes them) and
// that of each of linkModules loaded (or that it is not), the kernel's
// release and build, and the resolver (cilium/ebpf's version).
func linkKey() ([sha256.Size]byte, error) {
	var key [sha256.Size]byte
	size, sum, err := btfSum(btfPath)
	if err != nil {
		return key, err
	}
	h := sha256.New()
	obj := bpf.ObjectDigest()
	h.Write(obj[:])
	binary.Write(h, binary.LittleEndian, size)
	binary.Write(h, binary.LittleEndian, sum)
	for _, name := range linkModules {
		size, sum, err := btfSum(filepath.Join(btfDir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return key, err
		}
		h.Write([]byte(name))
		binary.Write(h, binary.LittleEndian, size) // 0: not loaded
		binary.Write(h, binary.LittleEndian, sum)
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		h.Write(uts.Release[:])
		h.Write(uts.Version[:])
	}
	h.Write([]byte(resolverVersion()))
	h.Sum(key[:0])
	return key, nil
}

// btfSum gives the size of the BTF file at path and its CRC-32C.
func btfSum(path string) (uint64, uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	if fi.Size() == 0 {
		return 0, 0, fmt.Errorf("%s: empty", path)
	}
	// Mapped, not read: sysfs hands a read out a page at a time.
	raw, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return 0, 0, fmt.Errorf("map %s: %w", path, err)
	}
	sum := crc32.Checksum(raw, crc32.MakeTable(crc32.Castagnoli))
	unix.Munmap(raw)
	return uint64(fi.Size()), sum, nil
}

// loadedModules gives the BTF of each of linkModules that is loaded. One
// whose BTF can't be read is left out: its types are then absent, as
// where it is not loaded.
func loadedModules(kernel *btf.Cache) []*btf.Spec {
	var out []*btf.Spec
	for _, name := range linkModules {
		if _, err := os.Stat(filepath.Join(btfDir, name)); err != nil {
			continue
		}
		if m, err := kernel.Module(name); err == nil {
			out = append(out, m)
		}
	}
	return out
}

func resolverVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "cilium/ebpf unknown"
	}
	for _, m := range info.Deps {
		if m.Path == "github.com/cilium/ebpf" {
			if m.Replace != nil {
				m = m.Replace
			}
			return m.Path + " " + m.Version + " " + m.Sum
		}
	}
	return "cilium/ebpf unknown"
}

// The link cache file: linkMagic, the key, the kernelLink, then the
// SHA-256 of all that. What it holds is loaded into the kernel: a file
// damaged on disk (one flipped bit in a field offset loads fine and reads
// the wrong field) must be caught before, not by a run that sees nothing.
var linkMagic = []byte("once link v2\n")

const (
	linkFilePrefix = "link-"
	maxLinkFile    = 1 << 20
)

func linkFileName(key [sha256.Size]byte) string {
	return fmt.Sprintf("%s%x", linkFilePrefix, key[:12])
}

func (l *kernelLink) marshal(key [sha256.Size]byte) []byte {
	var b bytes.Buffer
	b.Write(linkMagic)
	b.Write(key[:])
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	w(l.Casts)
	names := make([]string, 0, len(l.Fixes))
	for name := range l.Fixes {
		names = append(names, name)
	}
	slices.Sort(names)
	w(uint32(len(names)))
	for _, name := range names {
		w(uint16(len(name)))
		b.WriteString(name)
		w(uint32(len(l.Fixes[name])))
		w(l.Fixes[name])
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func unmarshalLink(data []byte, key [sha256.Size]byte) (*kernelLink, error) {
	if len(data) < sha256.Size {
		return nil, errors.New("not a link file")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if want := sha256.Sum256(body); !bytes.Equal(sum, want[:]) {
		return nil, errors.New("link file: checksum mismatch (damaged)")
	}
	r := bytes.NewReader(body)
	head := make([]byte, len(linkMagic)+len(key))
	if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head[:len(linkMagic)], linkMagic) {
		return nil, errors.New("not a link file")
	}
	if !bytes.Equal(head[len(linkMagic):], key[:]) {
		return nil, errors.New("link file for another object or kernel")
	}
	rd := func(v any) error { return binary.Read(r, binary.LittleEndian, v) }
	l := &kernelLink{Fixes: map[string][]insFix{}}
	var nprogs uint32
	if err := errors.Join(rd(&l.Casts), rd(&nprogs)); err != nil {
		return nil, fmt.Errorf("link file: %w", err)
	}
	for range nprogs {
		var n uint16
		if err := rd(&n); err != nil {
			return nil, fmt.Errorf("link file: %w", err)
		}
		name := make([]byte, n)
		var nfix uint32
		if _, err := io.ReadFull(r, name); err != nil {
			return nil, fmt.Errorf("link file: %w", err)
		}
		if err := rd(&nfix); err != nil {
			return nil, fmt.Errorf("link file: %w", err)
		}
		if int64(nfix)*16 > int64(r.Len()) {
			return nil, errors.New("link file: truncated")
		}
		fixes := make([]insFix, nfix)
		if err := rd(fixes); err != nil {
			return nil, fmt.Errorf("link file: %w", err)
		}
		l.Fixes[string(name)] = fixes
	}
	if r.Len() != 0 {
		return nil, errors.New("link file: trailing bytes")
	}
	return l, nil
}

// readLink returns the cached link for key, or an error saying why there
// is none. Only a file and a directory that no one but this user can
// write are read: what it holds is loaded into the kernel.
func readLink(dir string, key [sha256.Size]byte) (*kernelLink, error) {
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO put in the file's place must not hang the
	// open; fstat of what was opened then refuses anything not regular.
	f, err := os.OpenFile(filepath.Join(dir, linkFileName(key)), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := private(f.Stat()); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLinkFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxLinkFile {
		return nil, fmt.Errorf("%s: too large", f.Name())
	}
	return unmarshalLink(data, key)
}

// writeLink stores l for key. The file appears whole or not at all.
func writeLink(dir string, key [sha256.Size]byte, l *kernelLink) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := privateDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".link-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(l.marshal(key))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	name := linkFileName(key)
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	pruneLinks(dir, name)
	return nil
}

// keptLinks bounds the links kept: one per object and kernel, so a few
// once builds (before and after a change, say) on a few kernels each keep
// theirs instead of evicting each other's on every start.
const keptLinks = 8

// pruneLinks removes all but the keptLinks newest link files, keep always
// among them.
func pruneLinks(dir, keep string) {
	paths, err := filepath.Glob(filepath.Join(dir, linkFilePrefix+"*"))
	if err != nil || len(paths) <= keptLinks {
		return
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && filepath.Base(p) != keep {
			files = append(files, file{p, fi.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	for _, f := range files[min(keptLinks-1, len(files)):] {
		os.Remove(f.path)
	}
}

func privateDir(dir string) error {
	if err := private(os.Lstat(dir)); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// private accepts what this user owns and only it can write.
func private(fi os.FileInfo, err error) error {
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner")
	}
	switch {
	case st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("writable by others (%v)", fi.Mode().Perm())
	case !fi.IsDir() && !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	}
	return nil
}

// linkState says where a Tracer's link came from.
type linkState string

const (
	linkResolved linkState = "resolved"       // from the kernel's BTF, no cache
	linkStored   linkState = "resolved+saved" // from the kernel's BTF, then saved
	linkCached   linkState = "cached"         // from the cache
)

// DiscardCachedLink removes the link cache file this tracer's programs
// were linked with, if they were: called when a run saw nothing from its
// own command, which a wrong link can cause, so that the next start
// resolves from the kernel's BTF and writes it anew. It reports whether
// a file was removed.
func (t *Tracer) DiscardCachedLink() bool {
	if t.link != linkCached || t.linkFile == "" {
		return false
	}
	return os.Remove(t.linkFile) == nil
}

// pendingLink is a link being looked for while the caller parses the
// object: the key (hashing the kernel's BTF) and the cache file, and on a
// miss the kernel's BTF decoded into kernel, all off the caller's path.
type pendingLink struct {
	done   chan struct{}
	dir    string
	kernel *btf.Cache
	key    [sha256.Size]byte
	cached *kernelLink
}

// startLink starts looking for the link in the cache in dir ("" for none).
func startLink(dir string, kernel *btf.Cache) *pendingLink {
	p := &pendingLink{done: make(chan struct{}), dir: dir, kernel: kernel}
	go func() {
		defer close(p.done)
		if p.dir != "" {
			var err error
			if p.key, err = linkKey(); err != nil {
				p.dir = ""
			} else if l, err := readLink(p.dir, p.key); err == nil {
				p.cached = l
				return
			}
		}
		p.kernel.Kernel() // its error is seen again below
	}()
	return p
}

// file is the cache file of the link, "" without a cache.
func (p *pendingLink) file() string {
	if p.dir == "" {
		return ""
	}
	return filepath.Join(p.dir, linkFileName(p.key))
}

// finish links spec: with the cached link when there is one that fits
// spec, else resolved from the kernel's BTF and saved to the cache. A
// cache that cannot be read or written only costs time.
func (p *pendingLink) finish(spec *ebpf.CollectionSpec) (*kernelLink, linkState, error) {
	<-p.done
	if p.cached != nil && p.cached.apply(spec) == nil {
		return p.cached, linkCached, nil
	}
	if p.cached != nil {
		// Readable, but not for this object: replaced below.
		p.cached = nil
	}
	ks, err := p.kernel.Kernel()
	if err != nil {
		return nil, "", fmt.Errorf("load kernel BTF: %w", err)
	}
	l, err := resolveLink(spec, ks, loadedModules(p.kernel)...)
	if err != nil {
		return nil, "", err
	}
	if err := l.apply(spec); err != nil {
		return nil, "", fmt.Errorf("link: %w", err)
	}
	if p.dir != "" && writeLink(p.dir, p.key, l) == nil {
		return l, linkStored, nil
	}
	return l, linkResolved, nil
}
