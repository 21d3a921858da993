package stack

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
	"golang.org/x/sys/unix"
)

// openMapped opens a live process's file through map_files, else its
// root, and refuses what is not the file mapped or not a regular file,
// without blocking; a process gone is errGone.
func TestOpenMapped(t *testing.T) {
	data := sleepImage(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "sleeper")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, mp := startMapped(t, exe)
	if mp == nil || mp.BuildID == "" {
		t.Fatalf("no executable mapping of %s with a build-id: %+v", exe, mp)
	}
	pid := cmd.Process.Pid
	moved := func(m Mapping) *Mapping { m.Start += 0x1000; return &m } // no map_files entry: through the root
	open := func(m *Mapping) error {
		f, err := openMapped(pid, m)
		if err == nil {
			f.Close()
		}
		return err
	}
	check := func(name string, m *Mapping, want string) {
		t.Helper()
		start := time.Now()
		err := open(m)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error with %q", name, err, want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", name, d)
		}
	}
	check("map_files", mp, "")
	check("the process's root", moved(*mp), "")
	other := *mp
	other.BuildID = "00ff"
	check("another build-id", &other, "replaced since it was mapped")
	otherIno := moved(*mp)
	otherIno.BuildID, otherIno.Inode = "", mp.Inode+1
	check("another inode, through the root", otherIno, "replaced since it was mapped")

	// A process gone: the file at the path is taken if it is the build
	// mapped, or without a build-id the inode; nothing else.
	const nopid = 1<<22 + 12345
	exited := func(name string, m *Mapping, want string) {
		t.Helper()
		f, err := openMapped(nopid, m)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, errGone)):
			t.Errorf("%s: %v, want errGone with %q", name, err, want)
		}
		if f != nil {
			f.Close()
		}
	}
	exited("exited, the same build at the path", mp, "")
	byIno := *mp
	byIno.BuildID = ""
	exited("exited, no build-id, the same inode", &byIno, "")
	byIno.Inode++
	exited("exited, no build-id, another inode", &byIno, "replaced since it was mapped")
	byIno.Inode = 0
	exited("exited, neither build-id nor inode", &byIno, "exited")
	other.BuildID = "00ff"
	exited("exited, another build at the path", &other, "replaced since it was mapped")

	// The path becomes a symlink to the file, then a FIFO: map_files
	// still gives the very file; the root refuses both.
	if err := os.Rename(exe, exe+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe+".moved", exe); err != nil {
		t.Fatal(err)
	}
	check("map_files, the path a symlink now", mp, "")
	check("the root, the path a symlink", moved(*mp), "symbolic link")
	exited("exited, the path a symlink", mp, "symbolic link")
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(exe, 0o666); err != nil {
		t.Fatal(err)
	}
	check("map_files, the path a FIFO now", mp, "")
	check("the root, the path a FIFO", moved(*mp), "not a regular file")
	exited("exited, the path a FIFO", mp, "not a regular file")

	cmd.Process.Kill()
	cmd.Wait()
	if err := open(mp); !errors.Is(err, errGone) {
		t.Errorf("after the exit: %v, want errGone", err)
	}
	if _, err := openMapped(0, mp); !errors.Is(err, errNotRetained) {
		t.Errorf("no pid: %v, want errNotRetained", err)
	}
}

// SymbolizeBy past its deadline symbolizes nothing: each frame keeps its
// module and offset, and is counted.
func TestSymbolizeDeadline(t *testing.T) {
	c := NewCache(Options{})
	defer c.Close()
	maps := []Mapping{{Start: 0x1000, End: 0x2000, Perms: "r-xp", Path: "/bin/x", Dev: 1, Inode: 2}}
	u := Unwound{PCs: []PC{{0x1100, ViaRegs}, {0x1200, ViaCFI}, {0x9000, ViaCFI}}}
	st := c.SymbolizeBy(u, maps, time.Now().Add(-time.Second))
	if st.Cut != 2 || c.Stats().FramesCut != 2 {
		t.Fatalf("cut %d, stats %+v, want 2 (the third is in no mapping)", st.Cut, c.Stats())
	}
	if f := st.Frames[1]; f.Module != "/bin/x" || f.Offset != 0x200 || f.Func != "" {
		t.Errorf("frame %+v, want /bin/x+0x200 unnamed", f)
	}
	// Without a deadline the module is looked up: never opened, it is
	// said so, and counted as gone.
	st = c.Symbolize(u, maps)
	if st.Cut != 0 || len(st.Notes) != 1 || !strings.Contains(st.Notes[0].Err, "not opened") || c.Stats().ModulesGone != 1 {
		t.Errorf("cut %d, notes %+v, stats %+v", st.Cut, st.Notes, c.Stats())
	}
}

// A zombie has exited: its files are gone with its memory.
func TestExitedZombie(t *testing.T) {
	if exited(os.Getpid()) {
		t.Errorf("this process: exited")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Not reaped yet: a zombie once it has exited.
	ok := false
	for end := time.Now().Add(5 * time.Second); !ok && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		ok = exited(pid)
	}
	if !ok {
		t.Errorf("pid %d, a zombie: not exited", pid)
	}
	cmd.Wait()
	if !exited(pid) {
		t.Errorf("pid %d, reaped: not exited", pid)
	}
}

// A process in the kernel's exit path has lost its memory, and soon its
// root, before it is a zombie: it counts as exited (its files gone), not
// as a file refused.
func TestStatExited(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       bool
	}{
		{"running", "42 (sh) R 1 42 42 0 -1 4194560 100 0", false},
		{"sleeping", "42 (sh) S 1 42 42 0 -1 4194304 100 0", false},
		{"exiting", "42 (sh) R 1 42 42 0 -1 4194308 100 0", true},
		{"zombie", "42 (sh) Z 1 42 42 0 -1 4227084 100 0", true},
		{"dead", "42 (sh) X 1 42 42 0 -1 4194560 100 0", true},
		{"a name with a parenthesis and a state", "42 (a) Z (b) S 1 42 42 0 -1 4194304 100 0", false},
		{"a name with a parenthesis, exiting", "42 (a) S (b) R 1 42 42 0 -1 4194308 100 0", true},
		{"cut short", "42 (sh) R 1 42", true},
		{"no name", "42 sh R 1 42 42 0 -1 4194304", true},
		{"flags not a number", "42 (sh) R 1 42 42 0 -1 x 100 0", true},
	} {
		if got := statExited([]byte(tc.stat)); got != tc.want {
			t.Errorf("%s: %q: exited %v, want %v", tc.name, tc.stat, got, tc.want)
		}
	}
}

// A mapping's device is its superblock's (/proc/PID/maps, perf's MMAP2),
// where fstat gives a btrfs file its subvolume's: a program without a
// build-id on btrfs is still the file mapped, whether opened through
// map_files, the process's root, or its path after the exit.
func TestOpenMappedBtrfs(t *testing.T) {
	data := sleepImage(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	testprog.LoopMount(t, dir, mnt, "btrfs")
	exe := filepath.Join(mnt, "sleeper")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	cmd, mp := startMapped(t, exe)
	if mp == nil {
		t.Fatalf("no executable mapping of %s", exe)
	}
	if mp.Dev == st.Dev || mp.Inode != st.Ino {
		t.Fatalf("maps gives %d:%d, stat %d:%d: want the inode on another device", mp.Dev, mp.Inode, st.Dev, st.Ino)
	}
	m := *mp
	m.BuildID = "" // as a program built without one: checked by device and inode
	moved := m
	moved.Start += 0x1000 // no map_files entry: through the root
	for _, c := range []struct {
		name string
		pid  int
		m    *Mapping
	}{{"map_files", cmd.Process.Pid, &m}, {"the process's root", cmd.Process.Pid, &moved}, {"exited", 1<<22 + 12345, &m}} {
		f, err := openMapped(c.pid, c.m)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		f.Close()
	}
	other := m
	other.Inode++
	if _, err := openMapped(1<<22+12345, &other); err == nil || !strings.Contains(err.Error(), "replaced since it was mapped") {
		t.Errorf("exited, another inode: %v, want replaced", err)
	}
}

// notServed refuses a file on a FUSE mount, told by its device in the
// process's mount table, without asking the filesystem anything: a FUSE
// server that never answers an open left once's thread in D state, and
// once, its report written, never exited (SIGKILL neither).
func TestNotServedFUSE(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	text := "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n" +
		"80 22 0:71 / /mnt/f rw,nosuid,nodev,relatime - fuse.sshfs host:/ rw,user_id=0,group_id=0,allow_other\n" +
		"81 22 0:72 / /mnt/b rw,relatime - fuseblk /dev/sdb1 rw\n" +
		"82 22 0:73 / /mnt/o rw,relatime - overlay overlay rw\n"
	if err := os.WriteFile(mi, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dev    uint64
		refuse bool
	}{
		{unix.Mkdev(0, 71), true},
		{unix.Mkdev(0, 72), true},
		{unix.Mkdev(0, 73), false},
		{unix.Mkdev(254, 0), false},
		{unix.Mkdev(0, 99), false},
		{0, false},
	} {
		err := notServed(mi, c.dev, "", "")
		if got := errors.Is(err, errFUSE); got != c.refuse {
			t.Errorf("dev %d:%d: %v, want refused %v", unix.Major(c.dev), unix.Minor(c.dev), err, c.refuse)
		}
	}
	if err := notServed(filepath.Join(t.TempDir(), "none"), unix.Mkdev(0, 71), "", "/mnt/f/x"); err != nil {
		t.Errorf("no mount table: %v, want nil (nothing known)", err)
	}
}

// notServed refuses a path that crosses a FUSE mount, whatever the file
// at its end is on: resolving the path looks each name up in the
// directory above it, and a lookup in a FUSE directory is a request to
// its server.
func TestNotServedFUSEPath(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	text := "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n" +
		"80 22 0:71 / /mnt/f rw,nosuid,nodev,relatime - fuse.sshfs host:/ rw,user_id=0,group_id=0,allow_other\n" +
		"81 80 0:74 / /mnt/f/t rw,relatime - tmpfs t rw\n" +
		"82 22 0:73 / /mnt/o rw,relatime - overlay overlay rw\n" +
		"83 22 0:75 / /mnt/sp\\040ace rw,relatime - fuse f rw\n"
	if err := os.WriteFile(mi, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ext4 := unix.Mkdev(254, 0)
	for _, c := range []struct {
		path   string
		refuse bool
	}{
		{"/mnt/f/bin/x", true},
		{"/mnt/f/t/x", true}, // a tmpfs file, looked up through the FUSE root
		{"/mnt/f", true},
		{"/mnt/sp ace/x", true},
		{"/mnt/fx/bin/x", false},
		{"/mnt/o/bin/x", false},
		{"/usr/bin/x", false},
		{"", false},
	} {
		err := notServed(mi, ext4, "", c.path)
		if got := errors.Is(err, errFUSE); got != c.refuse {
			t.Errorf("%q: %v, want refused %v", c.path, err, c.refuse)
		}
	}
	root := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(root, []byte("22 1 0:50 / / rw - fuse.fuse-overlayfs fuse-overlayfs rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := notServed(root, ext4, "", "/usr/bin/x"); !errors.Is(err, errFUSE) {
		t.Errorf("a FUSE root: %v, want refused", err)
	}
}

// TestOpenThroughFUSE: a mapped file's path that crosses a FUSE mount
// whose server never answers (the file at its end on another file system:
// a tmpfs mounted over a FUSE directory in the process's own mount
// namespace, where the host's path is the FUSE directory's) is refused at
// once, by the process's root and, the process gone, at the host's path:
// looked up, it left once's thread waiting on the server in the kernel,
// where no signal ends it, and once, its report written, never exited.
func TestOpenThroughFUSE(t *testing.T) {
	testprog.RequireRoot(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testprog.Skipf(t, "no /dev/fuse: %v", err)
	}
	data := sleepImage(t)
	dir := t.TempDir()
	gcc := testprog.NeedTool(t, "gcc")
	srv := filepath.Join(dir, "stallfs")
	if b, err := exec.Command(gcc, "-o", srv, filepath.Join("testdata", "stallfs.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc stallfs.c: %v: %s", err, b)
	}
	mnt := filepath.Join(dir, "fz")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	server := exec.Command(srv, mnt)
	out, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	// Last: the server's end aborts whatever still waits on it.
	t.Cleanup(func() {
		server.Process.Kill()
		server.Wait()
		unix.Unmount(mnt, unix.MNT_DETACH)
	})
	ready := make(chan bool, 1)
	go func() {
		var b [6]byte
		n, _ := out.Read(b[:])
		ready <- string(b[:n]) == "ready\n"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("stallfs did not mount")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stallfs did not mount within 10s")
	}
	exe := filepath.Join(dir, "sleeper")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, mp := startMapped(t, exe)
	if mp == nil {
		t.Fatalf("no executable mapping of %s", exe)
	}
	through := *mp
	through.Path = filepath.Join(mnt, "sub", "sleeper")
	moved := through
	moved.Start += 0x1000 // no map_files entry: through the root
	for _, c := range []struct {
		name string
		open func() (*os.File, error)
	}{
		{"live, through its root", func() (*os.File, error) { return openMapped(cmd.Process.Pid, &moved) }},
		{"exited, at the host's path", func() (*os.File, error) { return openExited(&through) }},
	} {
		start := time.Now()
		f, err := c.open()
		if f != nil {
			f.Close()
		}
		if !errors.Is(err, errFUSE) {
			t.Errorf("%s: %v after %v, want refused as on FUSE", c.name, err, time.Since(start).Round(time.Millisecond))
		}
	}
}

// A live process whose executable's section headers are broken (the
// kernel loads it by its program headers, and read its build-id there):
// through map_files it is the very file mapped, refused as unparsed, not
// taken for a process gone or a file replaced.
func TestOpenMappedBrokenSections(t *testing.T) {
	data := sleepImage(t)
	// e_shnum (offset 0x3c) past what the file holds.
	data[0x3c], data[0x3d] = 0xff, 0xff
	exe := filepath.Join(t.TempDir(), "sleeper")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, mp := startMapped(t, exe)
	if mp == nil {
		t.Fatalf("no executable mapping of %s", exe)
	}
	mp.BuildID = "0123456789abcdef" // as the kernel's MMAP2 record gives it
	f, err := openMapped(cmd.Process.Pid, mp)
	if f != nil {
		f.Close()
	}
	if !errors.Is(err, errUnparsed) || errors.Is(err, errGone) {
		t.Errorf("openMapped: %v, want errUnparsed, not errGone", err)
	}
}

// startMapped starts exe (a copy of sleep) for 30 s, killed when t ends,
// and returns it with its executable mapping once /proc/PID/maps has it,
// nil if it has none within 5 s.
func startMapped(t *testing.T, exe string) (*exec.Cmd, *Mapping) {
	t.Helper()
	cmd := exec.Command(exe, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		maps, _ := ReadMaps(cmd.Process.Pid)
		for i := range maps {
			if maps[i].Path == exe && maps[i].Exec() {
				return cmd, &maps[i]
			}
		}
	}
	return cmd, nil
}

// sleepImage is sleep(1)'s executable, for a test to run a copy of it
// from a file of its own; it needs root (map_files).
func sleepImage(t *testing.T) []byte {
	t.Helper()
	testprog.RequireRoot(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOpenDeviceUnopened: a path a traced process names may hold a
// device whose open acts (a watchdog's arms it, a tape's rewinds on
// close): such a file is refused before it is opened, at the path on
// the host (a process gone) and in a process's root, never opened, as
// inotify's IN_OPEN tells (an O_PATH descriptor raises none).
func TestOpenDeviceUnopened(t *testing.T) {
	testprog.RequireRoot(t)
	dev := filepath.Join(t.TempDir(), "watchdog")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil { // /dev/null's numbers
		testprog.Skipf(t, "mknod: %v", err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, dev, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	m := &Mapping{Path: dev, BuildID: "00ff", Start: 0x1000, End: 0x2000}
	for _, tc := range []struct {
		name string
		open func() (*os.File, error)
	}{
		{"a process gone: the path on the host", func() (*os.File, error) { return openExited(m) }},
		{"the process's root", func() (*os.File, error) { return openInRoot(os.Getpid(), dev) }},
	} {
		f, err := tc.open()
		if f != nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v, want not a regular file", tc.name, err)
		}
		buf := make([]byte, 4096)
		if n, _ := unix.Read(in, buf); n > 0 {
			t.Errorf("%s: the device was opened (IN_OPEN)", tc.name)
		}
	}
}

// TestReadMapsBounded: a process whose /proc/PID/maps is over
// MaxMapsFileBytes (many mappings of a file with a long path, which any
// user can make) is refused, not read whole.
func TestReadMapsBounded(t *testing.T) {
	dir := t.TempDir()
	p := dir
	for range 14 {
		p = filepath.Join(p, strings.Repeat("d", 250))
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(p, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	// Each mapping is of offset 0: adjacent ones do not merge.
	n := MaxMapsFileBytes/len(p) + 100
	var maps [][]byte
	defer func() {
		for _, m := range maps {
			unix.Munmap(m)
		}
	}()
	for range n {
		m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		maps = append(maps, m)
	}
	got, err := ReadMaps(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), "not read") {
		t.Fatalf("ReadMaps of %d mappings of a %d-byte path: %d mappings, err %v; want refused", n, len(p), len(got), err)
	}
}
