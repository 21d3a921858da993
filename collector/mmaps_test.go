package collector

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/callstack"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/stack"
)

// record builds a perf record: header, body, sample_id (pid, tid, time).
func perfRecord(typ uint32, misc uint16, body []byte, pid uint32, t uint64) []byte {
	le := binary.NativeEndian
	var b []byte
	b = le.AppendUint32(b, typ)
	b = le.AppendUint16(b, misc)
	b = le.AppendUint16(b, uint16(8+len(body)+16))
	b = append(b, body...)
	b = le.AppendUint32(b, pid)
	b = le.AppendUint32(b, pid)
	return le.AppendUint64(b, t)
}

// mmap2Body is a MMAP2 body; id nil gives the device-and-inode layout.
func mmap2Body(pid uint32, addr, n, pgoff uint64, id []byte, prot, flags uint32, name string) []byte {
	le := binary.NativeEndian
	var b []byte
	b = le.AppendUint32(b, pid)
	b = le.AppendUint32(b, pid)
	b = le.AppendUint64(b, addr)
	b = le.AppendUint64(b, n)
	b = le.AppendUint64(b, pgoff)
	if id == nil {
		b = le.AppendUint32(b, 8)
		b = le.AppendUint32(b, 1)
		b = le.AppendUint64(b, 4242)
		b = le.AppendUint64(b, 7)
	} else {
		b = append(b, byte(len(id)), 0, 0, 0)
		b = append(b, id...)
		b = append(b, make([]byte, 20-len(id))...)
	}
	b = le.AppendUint32(b, prot)
	b = le.AppendUint32(b, flags)
	b = append(b, name...)
	return append(b, make([]byte, 8-len(name)%8)...)
}

func TestMapsParseRecords(t *testing.T) {
	le := binary.NativeEndian
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	task := func(pid, ppid, tid uint32) []byte {
		var b []byte
		for _, v := range []uint32{pid, ppid, tid, ppid} {
			b = le.AppendUint32(b, v)
		}
		return le.AppendUint64(b, 0)
	}
	lostBody := le.AppendUint64(le.AppendUint64(nil, 1), 17)
	rx := uint32(unix.PROT_READ | unix.PROT_EXEC)
	// One of this process's own executable mappings, for a record whose
	// file is read through /proc/PID/map_files.
	var self stack.Mapping
	if os.Geteuid() == 0 {
		own, err := stack.ReadMaps(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range own {
			if m.Exec() && m.FileBacked() {
				self = m
				break
			}
		}
	}
	tests := []struct {
		name string
		rec  []byte
		ok   bool
		want mapsRecord
	}{
		{"mmap2, device and inode", perfRecord(unix.PERF_RECORD_MMAP2, 2, mmap2Body(5, 0x1000, 0x2000, 0x3000, nil, rx, unix.MAP_PRIVATE, "/usr/lib/libx.so"), 5, 99), true,
			mapsRecord{kind: unix.PERF_RECORD_MMAP2, t: 99, pid: 5, m: stack.Mapping{Start: 0x1000, End: 0x3000, FileOffset: 0x3000, Perms: "r-xp",
				Path: "/usr/lib/libx.so", Dev: unix.Mkdev(8, 1), Inode: 4242}}},
		{"mmap2, build-id (a file gone: no inode)", perfRecord(unix.PERF_RECORD_MMAP2, 2|unix.PERF_RECORD_MISC_MMAP_BUILD_ID,
			mmap2Body(5, 0x1000, 0x1000, 0, id, rx|unix.PROT_WRITE, unix.MAP_SHARED, "/nonexistent/lib (deleted)"), 5, 100), true,
			mapsRecord{kind: unix.PERF_RECORD_MMAP2, t: 100, pid: 5, m: stack.Mapping{Start: 0x1000, End: 0x2000, Perms: "rwxs",
				Path: "/nonexistent/lib", Deleted: true, BuildID: hex.EncodeToString(id)}}},
		{"mmap2, build-id, the mapping gone: no device and inode, not the host path's", perfRecord(unix.PERF_RECORD_MMAP2, 2|unix.PERF_RECORD_MISC_MMAP_BUILD_ID,
			mmap2Body(5, 0x1000, 0x1000, 0, id[:4], rx, unix.MAP_PRIVATE, "/"), 5, 100), true,
			mapsRecord{kind: unix.PERF_RECORD_MMAP2, t: 100, pid: 5, m: stack.Mapping{Start: 0x1000, End: 0x2000, Perms: "r-xp",
				Path: "/", BuildID: "deadbeef"}}},
		{"mmap2, build-id of a live mapping: its device and inode, through map_files", perfRecord(unix.PERF_RECORD_MMAP2, 2|unix.PERF_RECORD_MISC_MMAP_BUILD_ID,
			mmap2Body(uint32(os.Getpid()), self.Start, self.End-self.Start, 0, id[:4], rx, unix.MAP_PRIVATE, "/"), 5, 100), true,
			mapsRecord{kind: unix.PERF_RECORD_MMAP2, t: 100, pid: os.Getpid(), m: stack.Mapping{Start: self.Start, End: self.End, Perms: "r-xp",
				Path: "/", BuildID: "deadbeef", Dev: self.Dev, Inode: self.Inode}}},
		{"mmap2, anonymous", perfRecord(unix.PERF_RECORD_MMAP2, 2, mmap2Body(5, 0x1000, 0x1000, 0, nil, rx, unix.MAP_PRIVATE, "//anon"), 5, 1), true,
			mapsRecord{kind: unix.PERF_RECORD_MMAP2, t: 1, pid: 5, m: stack.Mapping{Start: 0x1000, End: 0x2000, Perms: "r-xp", Dev: unix.Mkdev(8, 1), Inode: 4242}}},
		{"mmap2, truncated", perfRecord(unix.PERF_RECORD_MMAP2, 2, make([]byte, 40), 5, 1), false, mapsRecord{}},
		{"comm exec", perfRecord(unix.PERF_RECORD_COMM, unix.PERF_RECORD_MISC_COMM_EXEC, append(le.AppendUint32(le.AppendUint32(nil, 6), 6), "true\x00\x00\x00\x00"...), 6, 7), true,
			mapsRecord{kind: unix.PERF_RECORD_COMM, t: 7, pid: 6}},
		{"comm rename", perfRecord(unix.PERF_RECORD_COMM, 0, append(le.AppendUint32(le.AppendUint32(nil, 6), 6), "name\x00\x00\x00\x00"...), 6, 7), false, mapsRecord{}},
		{"fork", perfRecord(unix.PERF_RECORD_FORK, 0, task(8, 6, 8), 8, 9), true, mapsRecord{kind: unix.PERF_RECORD_FORK, t: 9, pid: 8, ppid: 6}},
		{"thread", perfRecord(unix.PERF_RECORD_FORK, 0, task(6, 6, 9), 6, 9), false, mapsRecord{}},
		{"exit", perfRecord(unix.PERF_RECORD_EXIT, 0, task(8, 6, 8), 8, 10), true, mapsRecord{kind: unix.PERF_RECORD_EXIT, t: 10, pid: 8, ppid: 0}},
		{"thread exit", perfRecord(unix.PERF_RECORD_EXIT, 0, task(8, 6, 11), 8, 10), false, mapsRecord{}},
		{"lost", perfRecord(unix.PERF_RECORD_LOST, 0, lostBody, 0, 10), false, mapsRecord{}},
	}
	r := &MapsReader{}
	for _, tc := range tests {
		got, ok := r.parse(tc.rec)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if r.Lost() != 17 {
		t.Errorf("lost %d, want 17", r.Lost())
	}
}

func mapsStat(t *testing.T, path string) unix.Stat_t {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMapsRingWrap: records that wrap around the ring's end come out
// whole, in order, and the tail is advanced to the head.
func TestMapsRingWrap(t *testing.T) {
	meta := new(unix.PerfEventMmapPage)
	rg := &perfRing{meta: meta, data: make([]byte, 64)}
	recs := [][]byte{
		perfRecord(unix.PERF_RECORD_EXIT, 0, make([]byte, 24), 1, 1), // 48 bytes
		perfRecord(unix.PERF_RECORD_EXIT, 0, make([]byte, 24), 2, 2), // wraps at 64
	}
	pos := uint64(0)
	write := func(b []byte) {
		for _, c := range b {
			rg.data[pos%64] = c
			pos++
		}
	}
	write(recs[0])
	meta.Data_head = pos
	var got [][]byte
	collect := func(rec []byte) { got = append(got, bytes.Clone(rec)) }
	rg.read(collect)
	write(recs[1])
	meta.Data_head = pos
	rg.read(collect)
	if len(got) != 2 || !bytes.Equal(got[0], recs[0]) || !bytes.Equal(got[1], recs[1]) || meta.Data_tail != 96 {
		t.Fatalf("got %x, tail %d", got, meta.Data_tail)
	}
}

func TestMapsParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-3": {0, 1, 2, 3}, "0-1,4,6-7": {0, 1, 4, 6, 7}} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "a", "3-1", "0-"} {
		if _, err := parseCPUList(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestMapsDrainOrder: records from several CPUs reach the sink in time
// order, LOST records count and reach it not.
func TestMapsDrainOrder(t *testing.T) {
	le := binary.NativeEndian
	exit := func(pid uint32, tm uint64) []byte {
		var b []byte
		for _, v := range []uint32{pid, 1, pid, 1} {
			b = le.AppendUint32(b, v)
		}
		return perfRecord(unix.PERF_RECORD_EXIT, 0, le.AppendUint64(b, tm), pid, tm)
	}
	ring := func(recs ...[]byte) *perfRing {
		rg := &perfRing{meta: new(unix.PerfEventMmapPage), data: make([]byte, 4096)}
		n := 0
		for _, r := range recs {
			n += copy(rg.data[n:], r)
		}
		rg.meta.Data_head = uint64(n)
		return rg
	}
	r := &MapsReader{rings: []*perfRing{
		ring(exit(10, 5), exit(11, 30)),
		ring(exit(12, 10), perfRecord(unix.PERF_RECORD_LOST, 0, le.AppendUint64(le.AppendUint64(nil, 0), 3), 0, 11), exit(13, 20)),
	}}
	var got []string
	n, err := r.Drain(&orderSink{log: &got})
	if err != nil || n != 4 {
		t.Fatalf("drained %d, %v", n, err)
	}
	if want := []string{"exit 10 @5", "exit 12 @10", "exit 13 @20", "exit 11 @30"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if r.Lost() != 3 {
		t.Errorf("lost %d", r.Lost())
	}
	for _, rg := range r.rings {
		if rg.meta.Data_tail != rg.meta.Data_head {
			t.Errorf("tail %d, head %d", rg.meta.Data_tail, rg.meta.Data_head)
		}
	}
}

type orderSink struct{ log *[]string }

func (s *orderSink) add(f string, a ...any)                  { *s.log = append(*s.log, fmt.Sprintf(f, a...)) }
func (s *orderSink) Mmap(pid int, t uint64, m stack.Mapping) { s.add("mmap %d @%d", pid, t) }
func (s *orderSink) Exec(pid int, t uint64)                  { s.add("exec %d @%d", pid, t) }
func (s *orderSink) Fork(parent, child int, t uint64)        { s.add("fork %d %d @%d", parent, child, t) }
func (s *orderSink) Exit(pid int, t uint64)                  { s.add("exit %d @%d", pid, t) }

// mapsTee records the events of some pids on their way to the store.
type mapsTee struct {
	*callstack.Maps
	watch map[int]bool
	forks map[int]forkAt
	execs map[int]uint64
	execN map[int]int
	exits map[int]uint64
	mmaps map[int][]timedMapping
}

type forkAt struct {
	parent int
	t      uint64
}

type timedMapping struct {
	t uint64
	m stack.Mapping
}

func (s *mapsTee) Mmap(pid int, t uint64, m stack.Mapping) {
	if s.watch[pid] {
		s.mmaps[pid] = append(s.mmaps[pid], timedMapping{t, m})
	}
	s.Maps.Mmap(pid, t, m)
}

func (s *mapsTee) Exec(pid int, t uint64) {
	if s.watch[pid] {
		s.execs[pid] = t
		s.execN[pid]++
	}
	s.Maps.Exec(pid, t)
}

func (s *mapsTee) Fork(parent, child int, t uint64) {
	if s.watch[child] {
		s.forks[child] = forkAt{parent, t}
	}
	s.Maps.Fork(parent, child, t)
}

func (s *mapsTee) Exit(pid int, t uint64) {
	if s.watch[pid] {
		s.exits[pid] = t
	}
	s.Maps.Exit(pid, t)
}

func monoNow(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// buildID reads a file's GNU build-id note.
func elfNoteBuildID(t *testing.T, path string) string {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s has no build-id", path)
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		t.Fatalf("%s: build-id note: %v", path, err)
	}
	return hex.EncodeToString(d[16:])
}

// modules lists an ELF executable's own file, its interpreter and the
// libraries it needs, by base name: the files a run of it maps.
func elfModules(t *testing.T, path string) []string {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	want := []string{filepath.Base(path)}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			p.ReadAt(b, 0)
			want = append(want, filepath.Base(strings.TrimRight(string(b), "\x00")))
		}
	}
	libs, _ := ef.ImportedLibraries()
	for _, l := range libs {
		want = append(want, filepath.Base(l))
	}
	sort.Strings(want)
	return want
}

func fileBackedMaps(ms []stack.Mapping) []stack.Mapping {
	return slices.DeleteFunc(slices.Clone(ms), func(m stack.Mapping) bool { return !m.FileBacked() })
}

func mapsBaseNames(ms []stack.Mapping) []string {
	var names []string
	for _, m := range fileBackedMaps(ms) {
		names = append(names, filepath.Base(m.Path))
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// TestMapsReaderExec runs short-lived programs (a dynamic one from the
// system, one of ours that dlopens a library after its start, a static
// one without libc) and checks what the store says of each: before its
// exec, the mappings of its parent (this test binary); after, exactly its
// own files, each with its build-id, device and inode; a library
// dlopen'd from the moment it was mapped.
func TestMapsReaderExec(t *testing.T) {
	testprog.RequireRoot(t)
	testprog.NeedTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "dl.c")
	// dl maps libm after its start, then renames itself (a COMM record
	// without the exec bit, which must not end its mappings).
	if err := os.WriteFile(src, []byte(`#include <dlfcn.h>
#include <sys/prctl.h>
int main(void)
{
	if (!dlopen("libm.so.6", RTLD_NOW))
		return 1;
	return prctl(PR_SET_NAME, "renamed") != 0;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(dir, "dl")
	if out, err := exec.Command("gcc", "-O2", "-Wl,--build-id", "-o", dl, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	trueBin, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	static := testprog.Build(t, testprog.Exitonly)

	self, err := stack.ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self = slices.DeleteFunc(self, func(m stack.Mapping) bool { return !m.Exec() })
	exe, _ := os.Executable()

	// The rings are system-wide: 1 MiB each, drained after each run,
	// holds what the rest of the machine maps meanwhile, so nothing may
	// be lost.
	r, err := OpenMaps(MapsOptions{Pages: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.BuildIDs() {
		t.Fatal("kernel 5.12 or later gives build-ids; this one does not")
	}
	sink := &mapsTee{Maps: callstack.NewMaps(0), watch: map[int]bool{}, forks: map[int]forkAt{},
		execs: map[int]uint64{}, execN: map[int]int{}, exits: map[int]uint64{}, mmaps: map[int][]timedMapping{}}

	t0 := monoNow(t)
	progs := []string{trueBin, dl, static}
	pids := map[string]int{}
	for _, p := range progs {
		cmd := exec.Command(p)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", p, err, out)
		}
		pids[p] = cmd.Process.Pid
		sink.watch[cmd.Process.Pid] = true
		if _, err := r.Drain(sink); err != nil {
			t.Fatal(err)
		}
	}
	t1 := monoNow(t)
	// The records of a pid may come in the drain before the pid is
	// watched: the store has them all the same, only the mapsTee misses them,
	// so watch first and drain after each run.
	deadline := time.Now().Add(10 * time.Second)
	for len(sink.exits) < len(progs) && time.Now().Before(deadline) {
		if _, err := r.Drain(sink); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.Lost(); n != 0 {
		t.Fatalf("%d records lost, want 0", n)
	}

	for _, p := range progs {
		pid := pids[p]
		f, ok := sink.forks[pid]
		te, okE := sink.execs[pid]
		tx, okX := sink.exits[pid]
		if !ok || !okE || !okX {
			t.Fatalf("%s (pid %d): fork %v exec %v exit %v", p, pid, ok, okE, okX)
		}
		if f.parent != os.Getpid() || !(t0 < f.t && f.t < te && te < tx && tx < t1) {
			t.Errorf("%s: fork from %d at %d, exec at %d, exit at %d: not in order within [%d, %d]", p, f.parent, f.t, te, tx, t0, t1)
		}
		// Before the exec: this test binary's mappings, inherited.
		before := sink.At(pid, te-1)
		if showMaps(before) != showMaps(self) {
			t.Errorf("%s before exec:\n%s\nwant the parent's:\n%s", p, showMaps(before), showMaps(self))
		}
		// After: its own files only, each the very file, with its build-id.
		after := sink.At(pid, tx)
		want := elfModules(t, p)
		if p == dl {
			want = append(want, "libm.so.6") // dlopen'd
			sort.Strings(want)
		}
		if got := mapsBaseNames(after); !slices.Equal(got, want) {
			t.Errorf("%s after exec: files %v, want %v (%s)", p, got, want, showMaps(after))
		}
		if !slices.ContainsFunc(after, func(m stack.Mapping) bool { return m.Path == "[vdso]" }) {
			t.Errorf("%s: no [vdso]", p)
		}
		for _, m := range fileBackedMaps(after) {
			if m.Path == exe {
				t.Errorf("%s after exec still has the parent's %s", p, exe)
			}
			// Device and inode when the mapping could be read through
			// map_files before the process exited, else none.
			st := mapsStat(t, m.Path)
			if (m.Inode != 0 && (m.Dev != st.Dev || m.Inode != st.Ino)) || m.BuildID != elfNoteBuildID(t, m.Path) || m.Deleted {
				t.Errorf("%s: mapping %+v is not the file %s (dev %d ino %d build-id %s)", p, m, m.Path, st.Dev, st.Ino, elfNoteBuildID(t, m.Path))
			}
		}
		if sink.At(pid, f.t-1) != nil {
			t.Errorf("%s: mappings before its fork", p)
		}
	}

	// The dlopen'd libm: from its mmap on, not before.
	var tm uint64
	for _, e := range sink.mmaps[pids[dl]] {
		if strings.HasPrefix(filepath.Base(e.m.Path), "libm.so") {
			tm = e.t
			break
		}
	}
	if tm == 0 {
		t.Fatalf("no mmap of libm by %s", dl)
	}
	has := func(ms []stack.Mapping) bool {
		return slices.ContainsFunc(ms, func(m stack.Mapping) bool { return strings.HasPrefix(filepath.Base(m.Path), "libm.so") })
	}
	if has(sink.At(pids[dl], tm-1)) || !has(sink.At(pids[dl], tm)) {
		t.Errorf("libm: at %d-1 %v, at %d %v", tm, has(sink.At(pids[dl], tm-1)), tm, has(sink.At(pids[dl], tm)))
	}
}

func showMaps(ms []stack.Mapping) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%x-%x %s %x %s\n", m.Start, m.End, m.Perms, m.FileOffset, m.Path)
	}
	return b.String()
}

// TestMapsReaderThreadExec: a multi-threaded Go program execs /bin/true
// from a thread that is not its leader (the kernel then ends the leader,
// an EXIT record for the pid, and the exec'ing thread takes the pid
// over). Before that exec the process has the Go program's one file;
// after it, /bin/true's, and it exits once more.
func TestMapsReaderThreadExec(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(`package main

import (
	"os"
	"runtime"
	"syscall"
)

func main() {
	runtime.LockOSThread() // the leader is busy: the goroutine below runs on another thread
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() == os.Getpid() {
			done <- 3
		}
		syscall.Exec("/bin/true", []string{"true"}, nil)
		done <- 4
	}()
	os.Exit(<-done)
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "threadexec")
	build := exec.Command("go", "build", "-o", prog, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	trueBin, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Fatal(err)
	}

	r, err := OpenMaps(MapsOptions{Pages: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sink := &mapsTee{Maps: callstack.NewMaps(0), watch: map[int]bool{}, forks: map[int]forkAt{},
		execs: map[int]uint64{}, execN: map[int]int{}, exits: map[int]uint64{}, mmaps: map[int][]timedMapping{}}
	cmd := exec.Command(prog)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", prog, err, out)
	}
	pid := cmd.Process.Pid
	sink.watch[pid] = true
	if _, err := r.Drain(sink); err != nil {
		t.Fatal(err)
	}
	te, tx := sink.execs[pid], sink.exits[pid]
	if sink.execN[pid] != 2 || tx <= te {
		t.Fatalf("%d execs, the last at %d, exit at %d", sink.execN[pid], te, tx)
	}
	if got := mapsBaseNames(sink.At(pid, te-1)); !slices.Equal(got, []string{"threadexec"}) {
		t.Errorf("before the thread's exec: %v, want [threadexec]", got)
	}
	if got, want := mapsBaseNames(sink.At(pid, tx)), elfModules(t, trueBin); !slices.Equal(got, want) {
		t.Errorf("after the thread's exec: %v, want %v", got, want)
	}
}

// TestMapsOpenUnprivileged: without CAP_PERFMON, under a paranoid
// kernel, OpenMaps says what it needs (this test binary, run again as
// nobody, opens the reader).
func TestMapsOpenUnprivileged(t *testing.T) {
	if os.Getenv("ONCE_MAPS_UNPRIVILEGED") == "1" {
		_, err := OpenMaps(MapsOptions{})
		fmt.Printf("error: %v\n", err)
		return
	}
	testprog.RequireRoot(t)
	if p := paranoid(); p != "1" && p != "2" && p != "3" && p != "4" {
		t.Skipf("kernel.perf_event_paranoid is %s: anyone may open system-wide events", p)
	}
	dir, err := os.MkdirTemp("", "once-maps-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "collector.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestMapsOpenUnprivileged$")
	cmd.Env = append(os.Environ(), "ONCE_MAPS_UNPRIVILEGED=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "error: maps reader: perf_event_open on CPU 0: permission denied: a system-wide perf event needs CAP_PERFMON") ||
		!strings.Contains(string(out), "kernel.perf_event_paranoid at most 0 (it is "+paranoid()+")") {
		t.Errorf("unprivileged OpenMaps said:\n%s", out)
	}
}

// The store the session feeds is a sink.
var _ MapsSink = (*callstack.Maps)(nil)
