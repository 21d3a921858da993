package privdrop

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/internal/testprog"
)

// ptyPair opens a new pseudo-terminal's master and slave, neither the
// test's controlling terminal.
func ptyPair(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testprog.Skipf(t, "no /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func ioctlErr(fd uintptr, req uint, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// TestDropThreadRefusesTerminalInput: a thread that dropped what a command
// could keep (DropThread) and what it starts can't push input into a
// terminal (TIOCSTI) or paste a selection (TIOCLINUX): a command dropped
// to a user from root's shell shares root's terminal, and bytes pushed
// there are read by root's shell after once exits. As root (CAP_SYS_ADMIN
// allows TIOCSTI on any terminal) the push works on an undropped thread,
// so the test can tell. Other ioctls still work.
func TestDropThreadRefusesTerminalInput(t *testing.T) {
	if os.Geteuid() != 0 {
		testprog.Skip(t, "needs root: TIOCSTI on a terminal not the caller's needs CAP_SYS_ADMIN")
	}
	if ioctlCalls() == nil {
		t.Skipf("no ioctl numbers known for %s", runtime.GOARCH)
	}
	_, slave := ptyPair(t)
	c := byte('x')
	if err := ioctlErr(slave.Fd(), unix.TIOCSTI, unsafe.Pointer(&c)); err != nil {
		t.Fatalf("TIOCSTI as root before the drop: %v, want it to work (the test could not tell)", err)
	}
	type result struct{ sti, linux, winsz, drop error }
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the filtered thread goes with the goroutine
		var r result
		if r.drop = DropThread(); r.drop != nil {
			done <- r
			return
		}
		r.sti = ioctlErr(slave.Fd(), unix.TIOCSTI, unsafe.Pointer(&c))
		sub := byte(2) // TIOCL_SETSEL
		r.linux = ioctlErr(slave.Fd(), unix.TIOCLINUX, unsafe.Pointer(&sub))
		_, r.winsz = unix.IoctlGetWinsize(int(slave.Fd()), unix.TIOCGWINSZ)
		done <- r
	}()
	r := <-done
	if r.drop != nil {
		t.Fatalf("DropThread: %v", r.drop)
	}
	if !errors.Is(r.sti, unix.EPERM) {
		t.Errorf("TIOCSTI after DropThread: %v, want EPERM", r.sti)
	}
	if !errors.Is(r.linux, unix.EPERM) {
		t.Errorf("TIOCLINUX after DropThread: %v, want EPERM", r.linux)
	}
	if r.winsz != nil {
		t.Errorf("TIOCGWINSZ after DropThread: %v, want it to work", r.winsz)
	}
}

// TestTTYFilterHighBits: the kernel takes an ioctl's command as an
// unsigned int, so TIOCSTI with bits set above the low 32 is TIOCSTI too.
func TestTTYFilterHighBits(t *testing.T) {
	if os.Geteuid() != 0 {
		testprog.Skip(t, "needs root: TIOCSTI on a terminal not the caller's needs CAP_SYS_ADMIN")
	}
	if ioctlCalls() == nil || unsafe.Sizeof(uintptr(0)) < 8 {
		t.Skip("a 64-bit ABI with known ioctl numbers only")
	}
	_, slave := ptyPair(t)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked
		if err := DropThread(); err != nil {
			done <- err
			return
		}
		c := byte('x')
		high := uint64(1)<<32 | unix.TIOCSTI
		_, _, e := unix.Syscall(unix.SYS_IOCTL, slave.Fd(), uintptr(high), uintptr(unsafe.Pointer(&c)))
		if e == 0 {
			done <- errors.New("worked")
			return
		}
		done <- e
	}()
	if err := <-done; !errors.Is(err, unix.EPERM) {
		t.Errorf("TIOCSTI | 1<<32 after DropThread: %v, want EPERM", err)
	}
}

// TestDropThreadKeepsInheritedFiles: a descriptor once inherited without
// close-on-exec (a root shell's `3<file`) does not reach a command started
// from a dropped thread, as sudo keeps it from; stdin, stdout and stderr
// do.
func TestDropThreadKeepsInheritedFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		testprog.Skip(t, "needs root: DropThread drops capabilities from the bounding set")
	}
	null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(null)
	// Without close-on-exec, as inherited; numbered past any the
	// listing's own ls opens.
	const fd = 100
	if err := unix.Dup3(null, fd, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	list := func() (string, error) {
		out, err := exec.Command("/bin/sh", "-c", "ls /proc/self/fd").Output()
		return string(out), err
	}
	has := func(out string, fd int) bool { return slices.Contains(strings.Fields(out), strconv.Itoa(fd)) }
	before, err := list()
	if err != nil {
		t.Fatal(err)
	}
	if !has(before, fd) {
		t.Fatalf("descriptor %d not inherited before the drop (%q): the test could not tell", fd, before)
	}
	done := make(chan error, 1)
	var after string
	go func() {
		runtime.LockOSThread() // never unlocked: the filtered thread goes with the goroutine
		if err := DropThread(); err != nil {
			done <- err
			return
		}
		var err error
		after, err = list()
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if has(after, fd) {
		t.Errorf("descriptor %d reached the command after DropThread: %q", fd, after)
	}
	for _, std := range []int{0, 1, 2} {
		if !has(after, std) {
			t.Errorf("descriptor %d did not reach the command: %q", std, after)
		}
	}
}
