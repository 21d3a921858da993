package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The /proc readings the bench takes of the tracers it runs.

// userHZ is the unit of utime and stime in /proc/PID/stat. It is fixed at
// 100 on every Linux architecture the kernel exports to user space, whatever
// the kernel's internal HZ.
const userHZ = 100

// memKB returns a process's VmHWM (peak resident set) and VmRSS, in KiB.
func memKB(pid int) (hwm, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			hwm = n
		case "VmRSS":
			rss = n
		}
	}
	return hwm, rss, nil
}

// cpuTime is the CPU time of a whole process: the sum of its threads'
// run time in /proc/PID/task/*/schedstat (ns), or, without schedstats,
// utime+stime from /proc/PID/stat at 10 ms granularity. Threads that
// already exited are not in the sum; the tracers measured keep theirs.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			return cpuTimeStat(pid)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return cpuTimeStat(pid)
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum, nil
}

func cpuTimeStat(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// comm, field 2, may hold spaces and parentheses: the fields after it
	// start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// cpuTimeAll sums cpuTime over processes; ones that are gone count 0.
func cpuTimeAll(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		if d, err := cpuTime(p); err == nil {
			sum += d
		}
	}
	return sum
}

// attachFDs counts a process's perf-event and BPF-link descriptors: a
// tracepoint attachment holds one or both, so once the count stops moving
// the tracer has finished attaching, whatever it prints (or buffers).
func attachFDs(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if l == "anon_inode:[perf_event]" || l == "anon_inode:bpf_link" {
			n++
		}
	}
	return n, nil
}

// irqWork returns the IRQ-work interrupts taken so far, summed over CPUs
// (the IWI line of /proc/interrupts). A BPF ring or perf buffer that wakes
// its reader does it through IRQ work, so the count per traced event shows
// how often a tracer's consumer is woken: a cost the traced program pays.
func irqWork() uint64 {
	f, err := os.Open("/proc/interrupts")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "IWI:" {
			continue
		}
		var sum uint64
		for _, s := range fields[1:] {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				break // the description text
			}
			sum += n
		}
		return sum
	}
	return 0
}

// foreignTracers lists processes other than the bench's own that hold
// perf-event or BPF-link descriptors: someone else's tracer, whose probes
// would slow every row alike and blur the comparison.
func foreignTracers(ours map[int]bool) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || ours[pid] {
			continue
		}
		if n, err := attachFDs(pid); err == nil && n > 0 {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			out = append(out, fmt.Sprintf("%s(%d)", strings.TrimSpace(string(comm)), pid))
		}
	}
	sort.Strings(out)
	return out
}

// alive reports whether pid still exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
