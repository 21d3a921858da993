package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The cold actions pass the kernel strings whose page is not mapped in the
// process's page tables when the system call starts: the first access to
// them is the kernel's own copy (getname, copy_strings), which takes the
// page fault. A tracer that reads the strings with a non-faulting read at
// syscall entry (bpf_probe_read_user) fails there, and must recover the name
// elsewhere. The Go code never reads or writes the mapping; it only computes
// addresses inside it.

// coldOffset is where the first string starts: inside the mapping's second
// page rather than at its base address. The strings follow one another
// without gaps, so a short filename and argv share one page.
var coldOffset = uintptr(os.Getpagesize() + 64)

// coldMap is a private, read-only mapping of a scratch file holding
// NUL-terminated strings.
type coldMap struct {
	base       unsafe.Pointer
	size       uintptr
	ptrs       []uintptr // address of each string, in order
	start, end uintptr   // the bytes the strings occupy, NULs included
	cached     int       // pages still in the page cache after dropping them (-v only)
}

// newColdMap writes strs into a fresh scratch file from coldOffset on,
// drops the file's pages from the page cache where the filesystem allows,
// and maps it without touching the mapping. The scratch file has no name
// (O_TMPFILE) or is removed at once, so nothing is left behind; creating it
// is one open-family call that a tracer sees.
func newColdMap(strs []string) (*coldMap, error) {
	var data []byte
	for _, s := range strs {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return nil, fmt.Errorf("string %q contains a NUL byte", s)
			}
		}
		data = append(data, s...)
		data = append(data, 0)
	}
	fd, err := scratchFile()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if _, err := unix.Pwrite(fd, data, int64(coldOffset)); err != nil {
		return nil, fmt.Errorf("write scratch file: %w", err)
	}
	// Clean pages can be dropped from the page cache; on tmpfs they are
	// the only copy and stay. Either way what matters is that no page
	// table entry maps them, which check() verifies.
	if err := unix.Fsync(fd); err != nil {
		return nil, fmt.Errorf("fsync scratch file: %w", err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return nil, fmt.Errorf("posix_fadvise(DONTNEED): %w", err)
	}
	page := uintptr(os.Getpagesize())
	size := (coldOffset + uintptr(len(data)) + page - 1) &^ (page - 1)
	p, err := unix.MmapPtr(fd, 0, nil, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap scratch file: %w", err)
	}
	m := &coldMap{base: p, size: size}
	m.start = uintptr(p) + coldOffset
	m.end = m.start + uintptr(len(data))
	at := m.start
	for _, s := range strs {
		m.ptrs = append(m.ptrs, at)
		at += uintptr(len(s)) + 1
	}
	m.cached = m.residentInCache()
	return m, nil
}

// scratchFile returns a read-write descriptor of a new, empty, unnamed file
// in the temporary directory.
func scratchFile() (int, error) {
	dir := os.TempDir()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return fd, nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return -1, fmt.Errorf("scratch file in %s: %w", dir, err)
	}
	// No O_TMPFILE on this filesystem: a named file, removed at once.
	f, err := os.CreateTemp(dir, "opener-cold-")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	os.Remove(f.Name())
	fd, err = unix.Dup(int(f.Fd()))
	if err != nil {
		return -1, fmt.Errorf("dup scratch file: %w", err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// residentInCache counts the string pages mincore(2) reports as resident.
// For a file mapping that is the page cache, not this process's page
// tables, so it is only reported (with -v), never required.
func (m *coldMap) residentInCache() int {
	page := uintptr(os.Getpagesize())
	first := m.start &^ (page - 1)
	n := (m.end - first + page - 1) / page
	vec := make([]byte, n)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, first, n*page, uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return -1
	}
	r := 0
	for _, v := range vec {
		r += int(v & 1)
	}
	return r
}

// pagemap reads /proc/self/pagemap, which tells per virtual page whether a
// page table entry maps it: exactly the property the cold actions need.
type pagemap struct{ fd int }

func openPagemap() (*pagemap, error) {
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /proc/self/pagemap: %w", err)
	}
	return &pagemap{fd}, nil
}

func (pm *pagemap) close() { unix.Close(pm.fd) }

// mapped returns the addresses of the pages in [start, end) that are present
// (or swapped out) in this process's page tables.
func (pm *pagemap) mapped(start, end uintptr) ([]uintptr, error) {
	page := uintptr(os.Getpagesize())
	var out []uintptr
	var buf [8]byte
	for va := start &^ (page - 1); va < end; va += page {
		n, err := unix.Pread(pm.fd, buf[:], int64(va/page*8))
		if err != nil || n != 8 {
			return nil, fmt.Errorf("read /proc/self/pagemap at %#x: %d bytes, %v", va, n, err)
		}
		// Bit 63: present; bit 62: swapped.
		if binary.NativeEndian.Uint64(buf[:])>>62 != 0 {
			out = append(out, va)
		}
	}
	return out, nil
}

// requireCold fails unless no page holding the strings is mapped, so that
// a test cannot pass because the premise silently did not hold.
func (m *coldMap) requireCold(pm *pagemap) error {
	hot, err := pm.mapped(m.start, m.end)
	if err != nil {
		return err
	}
	if len(hot) != 0 {
		return fmt.Errorf("string pages %#x already mapped before the call", hot)
	}
	return nil
}

// ready opens /proc/self/pagemap and requires the strings' pages cold:
// what every cold action checks right before its call. The caller closes
// the pagemap once the call has returned (logAfter reads it).
func (m *coldMap) ready() (*pagemap, error) {
	pm, err := openPagemap()
	if err != nil {
		return nil, err
	}
	if err := m.requireCold(pm); err != nil {
		pm.close()
		return nil, err
	}
	return pm, nil
}

// logAfter reports (with -v) whether the kernel faulted the pages in.
func (m *coldMap) logAfter(pm *pagemap, what string) {
	if !verbose {
		return
	}
	hot, err := pm.mapped(m.start, m.end)
	page := uintptr(os.Getpagesize())
	total := (m.end - (m.start &^ (page - 1)) + page - 1) / page
	logf("%s: %d string page(s) at %#x, %d in page cache before, unmapped before, %d mapped after (%v)",
		what, total, m.start, m.cached, len(hot), err)
}

func (m *coldMap) unmap() {
	unix.MunmapPtr(m.base, m.size)
}

// coldOpenAct is openat(AT_FDCWD, name, O_RDONLY|O_CLOEXEC) with the name in
// a cold page.
type coldOpenAct struct {
	path, spec string
}

func (coldOpenAct) replacesProcess() bool { return false }

func (a coldOpenAct) run() error {
	m, err := newColdMap([]string{a.path})
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer m.unmap()
	pm, err := m.ready()
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer pm.close()
	dirfd := unix.AT_FDCWD
	r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), m.ptrs[0],
		unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	m.logAfter(pm, "coldopen")
	if errno != 0 {
		return fmt.Errorf("%q: %w", a.spec, errno)
	}
	fd := int(r)
	logf("coldopen %q = %d", a.path, fd)
	return closeFD(a.spec, fd)
}

// coldExecveatAct execs by execveat with the name in a cold page: the empty
// name with AT_EMPTY_PATH on a descriptor of path (dir unset), or name
// relative to a descriptor of dir. The kernel's own copy of such a name is
// not the name passed but "/dev/fd/N" or "/dev/fd/N/NAME" (alloc_bprm).
// argv is [path or name], in ordinary memory. Only returns on failure.
type coldExecveatAct struct {
	dir, name, path, spec string
}

func (coldExecveatAct) replacesProcess() bool { return true }

func (a coldExecveatAct) run() error {
	open, flags := a.path, unix.AT_EMPTY_PATH
	oflags := unix.O_RDONLY | unix.O_CLOEXEC
	if a.dir != "" {
		open, flags = a.dir, 0
		oflags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat(unix.AT_FDCWD, open, oflags, 0)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	m, err := newColdMap([]string{a.name})
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer m.unmap()
	argv0 := a.name
	if a.dir == "" {
		argv0 = a.path
	}
	av, err := cStrings([]string{argv0})
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	env, err := cStrings(os.Environ())
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	pm, err := m.ready()
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer pm.close()
	logf("coldexecveat(%d, %q) flags %#x", fd, a.name, flags)
	_, _, errno := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), m.ptrs[0],
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&env[0])), uintptr(flags), 0)
	runtime.KeepAlive(av)
	runtime.KeepAlive(env)
	m.logAfter(pm, "coldexecveat")
	return fmt.Errorf("%q: %w", a.spec, errno)
}

// coldFstatAct opens path, then stats the descriptor as glibc's fstat
// does, by newfstatat(fd, "", buf, AT_EMPTY_PATH) or statx(fd, "",
// AT_EMPTY_PATH, STATX_BASIC_STATS, buf), the empty name in a cold page.
// The call names no file: a tracer that takes an unreadable name for a
// name counts a lookup that is none.
type coldFstatAct struct {
	call, path, spec string
}

func (coldFstatAct) replacesProcess() bool { return false }

func (a coldFstatAct) run() error {
	fd, err := unix.Open(a.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	m, err := newColdMap([]string{""})
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer m.unmap()
	pm, err := m.ready()
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer pm.close()
	var errno unix.Errno
	if a.call == "statx" {
		var stx unix.Statx_t
		_, _, errno = unix.Syscall6(unix.SYS_STATX, uintptr(fd), m.ptrs[0], unix.AT_EMPTY_PATH,
			unix.STATX_BASIC_STATS, uintptr(unsafe.Pointer(&stx)), 0)
	} else {
		var st unix.Stat_t
		_, _, errno = unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fd), m.ptrs[0],
			uintptr(unsafe.Pointer(&st)), unix.AT_EMPTY_PATH, 0, 0)
	}
	m.logAfter(pm, "coldfstat")
	if errno != 0 {
		unix.Close(fd)
		return fmt.Errorf("%q: %s: %w", a.spec, a.call, errno)
	}
	logf("coldfstat %s(%d, \"\", AT_EMPTY_PATH) = 0", a.call, fd)
	return closeFD(a.spec, fd)
}

// coldExecAct is execve(path, [path, args...], environ) with the filename
// and every argv string in cold pages (argv[0] a separate copy of path).
// The pointer array and the environment are ordinary, resident memory.
// With fail set the exec must fail with ENOENT and the helper carries on.
type coldExecAct struct {
	path string
	argv []string
	fail bool
	spec string
}

func (a coldExecAct) replacesProcess() bool { return !a.fail }

func (a coldExecAct) run() error {
	if a.fail {
		// Refuse to run something by accident: the exec must fail.
		if _, err := os.Stat(a.path); err == nil {
			return fmt.Errorf("%q: %s exists, but the exec is meant to fail", a.spec, a.path)
		}
	}
	m, err := newColdMap(append([]string{a.path}, a.argv...))
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer m.unmap()
	// Pointers into the mapping, as plain integers: the GC ignores them,
	// and building the array reads nothing from the mapping.
	av := make([]uintptr, len(a.argv)+1)
	copy(av, m.ptrs[1:])
	env, err := cStrings(os.Environ())
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	pm, err := m.ready()
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	defer pm.close()
	if !a.fail {
		logf("coldexec %q %q", a.path, a.argv)
	}
	_, _, errno := unix.Syscall(unix.SYS_EXECVE, m.ptrs[0],
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&env[0])))
	runtime.KeepAlive(av)
	runtime.KeepAlive(env)
	if a.fail {
		m.logAfter(pm, "coldexecfail")
	} else {
		m.logAfter(pm, "coldexec") // only reached if the exec failed
	}
	if !a.fail {
		return fmt.Errorf("%q: %w", a.spec, errno)
	}
	if errno != unix.ENOENT {
		return fmt.Errorf("%q: exec failed with %v, want ENOENT", a.spec, errno)
	}
	logf("coldexecfail %q = %s", a.path, errnoName(errno))
	return nil
}
