// Package stacktest captures real stack snapshots without BPF, and gdb's
// view of the same calls, to test package stack against a debugger.
//
// Capture runs a program under ptrace and, at the entry of each openat of
// a given path, takes exactly what the kernel side will: the registers,
// a window of the stack from RSP upward, the frame-pointer chain as the
// kernel's user stack walk would see it, and /proc/PID/maps. GDB runs the
// same program under gdb and reads its backtrace at the same calls.
package stacktest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/oncetool/once/stack"
	"golang.org/x/sys/unix"
)

const addrNoRandomize = 0x0040000 // ADDR_NO_RANDOMIZE, of <sys/personality.h>

// DefaultWindow is the stack window the kernel side captures by default.
const DefaultWindow = 8 << 10

// Capture is one snapshot with the mappings read at the same stop.
type Capture struct {
	Path     string // the path the openat was given
	Snapshot stack.Snapshot
	Maps     []stack.Mapping
	Pid      int
}

// Config says what to run and what to capture.
type Config struct {
	Argv []string
	Dir  string
	Env  []string // nil: the test's environment
	// Path is the openat path to stop at (exactly as the program passes it).
	Path string
	// Window is the stack window in bytes; DefaultWindow when 0.
	Window int
	// ASLR leaves address randomization on (by default it is off, as
	// under gdb).
	ASLR bool
	// Cache, when set, retains the mapped files at each stop
	// (Cache.Retain), as the tool would.
	Cache *stack.Cache
}

// Result is a run's captures and output.
type Result struct {
	Captures []Capture
	Stdout   []byte
	Stderr   []byte
	Exit     int
}

// Run runs the program under ptrace and captures a snapshot at the entry
// of each openat of cfg.Path. All ptrace requests come from one locked OS
// thread, as ptrace wants.
func Run(cfg Config) (*Result, error) {
	type out struct {
		r   *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := run(cfg)
		ch <- out{r, err}
	}()
	o := <-ch
	return o.r, o.err
}

func run(cfg Config) (*Result, error) {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	// Files, not buffers: no copying goroutine that only cmd.Wait would
	// join, and the process is reaped here, not by cmd.Wait.
	stdout, err := os.CreateTemp("", "stacktest-out")
	if err != nil {
		return nil, err
	}
	defer os.Remove(stdout.Name())
	defer stdout.Close()
	stderr, err := os.CreateTemp("", "stacktest-err")
	if err != nil {
		return nil, err
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	// No address randomization, as under gdb, so that addresses compare
	// with gdb's. The personality is the thread's, inherited by the child
	// forked from it; this thread is locked, and it is put back.
	if !cfg.ASLR {
		if old, _, errno := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0); errno == 0 {
			unix.RawSyscall(unix.SYS_PERSONALITY, old|addrNoRandomize, 0, 0)
			defer unix.RawSyscall(unix.SYS_PERSONALITY, old, 0, 0)
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	res := &Result{}
	defer func() {
		res.Stdout, _ = os.ReadFile(stdout.Name())
		res.Stderr, _ = os.ReadFile(stderr.Name())
	}()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return nil, err
	}
	if !ws.Stopped() {
		return nil, fmt.Errorf("%s: not stopped at exec: %v", cfg.Argv[0], ws)
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_EXITKILL); err != nil {
		return nil, err
	}
	sig := 0
	for {
		if err := unix.PtraceSyscall(pid, sig); err != nil {
			return nil, err
		}
		sig = 0
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			return nil, err
		}
		if ws.Exited() {
			res.Exit = ws.ExitStatus()
			cmd.Process.Release()
			// Reap cmd's bookkeeping: the process is gone already.
			return res, nil
		}
		if ws.Signaled() {
			return res, fmt.Errorf("%s: killed by %v", cfg.Argv[0], ws.Signal())
		}
		if !ws.Stopped() {
			continue
		}
		if ws.StopSignal() != unix.SIGTRAP|0x80 {
			if ws.StopSignal() != unix.SIGTRAP {
				sig = int(ws.StopSignal())
			}
			continue
		}
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(pid, &regs); err != nil {
			return nil, err
		}
		// At a syscall-entry stop RAX holds -ENOSYS; at the exit, the
		// result.
		if regs.Orig_rax != unix.SYS_OPENAT || int64(regs.Rax) != -int64(unix.ENOSYS) {
			continue
		}
		path, err := readString(pid, regs.Rsi)
		if err != nil || path != cfg.Path {
			continue
		}
		c, err := capture(pid, &regs, cfg)
		if err != nil {
			return nil, err
		}
		c.Path = path
		res.Captures = append(res.Captures, c)
	}
}

func capture(pid int, regs *unix.PtraceRegs, cfg Config) (Capture, error) {
	c := Capture{Pid: pid}
	maps, err := stack.ReadMaps(pid)
	if err != nil {
		return c, err
	}
	c.Maps = maps
	if cfg.Cache != nil {
		if err := cfg.Cache.Retain(pid, maps); err != nil {
			return c, err
		}
	}
	s := &c.Snapshot
	s.Regs = stack.Regs{
		IP: regs.Rip, SP: regs.Rsp, BP: regs.Rbp, BX: regs.Rbx,
		R12: regs.R12, R13: regs.R13, R14: regs.R14, R15: regs.R15,
	}
	var end uint64
	for _, m := range maps {
		if m.Start <= regs.Rsp && regs.Rsp < m.End {
			end = m.End
		}
	}
	if end == 0 {
		return c, fmt.Errorf("RSP %#x in no mapping", regs.Rsp)
	}
	n := end - regs.Rsp
	if n > uint64(cfg.Window) {
		n = uint64(cfg.Window)
		s.StackTruncated = true
	}
	s.Stack = make([]byte, n)
	if err := readMem(pid, regs.Rsp, s.Stack); err != nil {
		return c, err
	}
	s.FP = kernelFP(pid, regs.Rip, regs.Rbp)
	return c, nil
}

// kernelFP walks the frame-pointer chain as the kernel's user stack walk
// (bpf_get_stack with BPF_F_USER_STACK) does: the IP, then [BP+8] while
// BP reads, up to 127 entries.
func kernelFP(pid int, ip, bp uint64) []uint64 {
	out := []uint64{ip}
	buf := make([]byte, 16)
	for len(out) < 127 && bp != 0 && bp&7 == 0 {
		if readMem(pid, bp, buf) != nil {
			break
		}
		next := le64(buf)
		ret := le64(buf[8:])
		if ret == 0 {
			break
		}
		out = append(out, ret)
		if next <= bp {
			break
		}
		bp = next
	}
	return out
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func readMem(pid int, addr uint64, buf []byte) error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := f.ReadAt(buf, int64(addr))
	if n == len(buf) {
		return nil
	}
	if err == nil {
		err = errors.New("short read")
	}
	return err
}

func readString(pid int, addr uint64) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var out []byte
	buf := make([]byte, 256)
	for len(out) < 4096 {
		n, err := f.ReadAt(buf, int64(addr)+int64(len(out)))
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:n]...)
		if err != nil || n == 0 {
			return "", fmt.Errorf("reading a string at %#x: %v", addr, err)
		}
	}
	return "", errors.New("string too long")
}
