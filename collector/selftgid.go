package collector

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// kernelTgid is this process's tgid as the kernel side sees it
// (bpf_get_current_pid_tgid: the pid in the initial pid namespace), which
// is what the programs leave out as once itself (self_tgid). getpid gives
// it only in the initial namespace: in one of its own (a container
// without hostPID, unshare -p) it is once's pid there, 1 as often as not,
// and /proc/self/status's NSpid shows the host's only when /proc is the
// host's. So the kernel says: a three-instruction raw tracepoint program,
// run with BPF_PROG_TEST_RUN, which runs it in the calling task, returns
// the upper half of bpf_get_current_pid_tgid. A raw tracepoint runs
// there since 5.10, before once's 5.17 floor.
func kernelTgid() (uint32, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "once_self_tgid",
		Type: ebpf.RawTracepoint,
		Instructions: asm.Instructions{
			asm.FnGetCurrentPidTgid.Call(),
			asm.RSh.Imm(asm.R0, 32),
			asm.Return(),
		},
		License: "GPL",
	})
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	// No Repeat: a raw tracepoint's test run takes none.
	tgid, err := prog.Run(&ebpf.RunOptions{})
	if err != nil {
		return 0, err
	}
	if tgid == 0 {
		return 0, fmt.Errorf("run: tgid 0")
	}
	return tgid, nil
}

// selfTgid is the tgid the programs leave out as once's own: the
// kernel's (kernelTgid), or getpid's where the kernel can't be asked,
// with known false when that may not be the kernel's (in a pid namespace
// of its own).
func selfTgid() (tgid uint32, known bool) {
	if t, err := kernelTgid(); err == nil {
		return t, true
	}
	return uint32(os.Getpid()), checkPidNamespace() == nil
}
