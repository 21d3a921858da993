package privdrop

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A command dropped to a user from root's terminal shares that terminal:
// TIOCSTI pushes bytes into its input queue, which root's shell reads as
// typed once once exits (the attack su and runuser are known for, and
// sudo's use_pty defends against), and TIOCLINUX's selection paste does
// the same on a virtual console. Where dev.tty.legacy_tiocsti is 1 (the
// kernel's default before 6.2 and many distributions' since) the kernel
// lets any process do it on its controlling terminal. So the thread that
// starts the command (DropThread) installs a seccomp filter, inherited by
// the command and all it runs, that fails both ioctls with EPERM, as
// Flatpak and bubblewrap do; every other call is left alone.

// ioctlCall is the ioctl system call's number for one audit architecture.
type ioctlCall struct{ arch, nr uint32 }

// ioctlCalls are the ioctl numbers of every ABI a program may use on this
// architecture (x86-64's x32 and i386 calls too), or nil where once knows
// none: there no filter is installed.
func ioctlCalls() []ioctlCall {
	switch runtime.GOARCH {
	case "amd64":
		const x32 = 0x40000000 // __X32_SYSCALL_BIT
		return []ioctlCall{{unix.AUDIT_ARCH_X86_64, 16}, {unix.AUDIT_ARCH_X86_64, x32 | 514}, {unix.AUDIT_ARCH_I386, 54}}
	case "arm64":
		return []ioctlCall{{unix.AUDIT_ARCH_AARCH64, 29}, {unix.AUDIT_ARCH_ARM, 54}}
	}
	return nil
}

// Offsets in struct seccomp_data.
const (
	seccompNr   = 0
	seccompArch = 4
	// The low 32 bits of args[1] (little endian): the kernel takes an
	// ioctl's command as an unsigned int, so the high ones must not
	// matter here either.
	seccompCmd = 24
)

// ttyFilter is the classic BPF program that fails ioctl(fd, TIOCSTI) and
// ioctl(fd, TIOCLINUX) with EPERM in every ABI of calls and allows the
// rest. Each call's block is five instructions: a call that is not it
// goes on to the next block, then to the allow after the last; one that
// is jumps past them to the command's check.
func ttyFilter(calls []ioctlCall) []unix.SockFilter {
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jt, Jf: jf, K: k}
	}
	const load = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	var p []unix.SockFilter
	for i, c := range calls {
		later := uint32(len(calls)-1-i) * 5
		p = append(p,
			stmt(load, seccompArch),
			jeq(c.arch, 0, 3),
			stmt(load, seccompNr),
			jeq(c.nr, 0, 1),
			stmt(unix.BPF_JMP|unix.BPF_JA, later+1),
		)
	}
	p = append(p,
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(load, seccompCmd),
		jeq(unix.TIOCSTI, 2, 0),
		jeq(unix.TIOCLINUX, 1, 0),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)),
	)
	return p
}

// refuseTerminalInput installs ttyFilter on the calling thread, which
// must have no_new_privs set.
func refuseTerminalInput() error {
	calls := ioctlCalls()
	if calls == nil {
		return nil
	}
	f := ttyFilter(calls)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
	runtime.KeepAlive(f)
	if err != nil {
		return fmt.Errorf("refuse TIOCSTI and TIOCLINUX to the command (seccomp filter): %w", err)
	}
	return nil
}
