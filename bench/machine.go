package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

type machine struct {
	Kernel   string `json:"kernel"`
	CPUs     int    `json:"cpus"`
	CPU      string `json:"cpu"`
	MemoryKB int64  `json:"memory_kb"`
	// Virtualized: a hypervisor flag in /proc/cpuinfo. Interrupts and
	// context switches, which tracers cause, cost more in a VM.
	Virtualized bool `json:"virtualized"`
}

func machineFacts() machine {
	var m machine
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = strings.Join([]string{unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]),
			unix.ByteSliceToString(u.Machine[:])}, " ")
	}
	m.CPUs = runtime.NumCPU()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if m.CPU == "" {
					m.CPU = strings.TrimSpace(v)
				}
			case "flags":
				m.Virtualized = m.Virtualized || strings.Contains(" "+v+" ", " hypervisor ")
			}
		}
		f.Close()
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.MemoryKB = int64(si.Totalram) * int64(si.Unit) / 1024
	}
	return m
}

// toolVersions records what each row ran, first line of each tool's
// version output.
func toolVersions(p programs) map[string]string {
	v := map[string]string{"go": runtime.Version()}
	for name, argv := range map[string][]string{
		"once":         {p.once, "version"},
		"bpftrace":     {"bpftrace", "--version"},
		"strace":       {"strace", "-V"},
		"cp":           {p.cp, "--version"},
		"gcc":          {"gcc", "--version"},
		"libbpf-tools": {"dpkg-query", "-W", "-f", "${Version}", "libbpf-tools"},
	} {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			v[name] = "not available"
			continue
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		v[name] = line
	}
	return v
}
