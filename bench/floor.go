package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// floorArg, as the bench's only argument, makes it the floor row's tracer
// (runFloor) instead of the bench.
const floorArg = "floor-programs"

// floorReady is the line the floor's tracer prints once every program is
// attached.
const floorReady = "floor: attached"

// floorTracepoints returns the syscall tracepoints of the floor: the ones
// bt/floor.bt names, the same 30 once attaches to.
func floorTracepoints(script []byte) ([]string, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(script))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "tracepoint:syscalls:")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, " ")
		names = append(names, name)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("floor.bt names no syscall tracepoint")
	}
	return names, nil
}

// runFloor is the floor row's tracer: a program that returns at once on
// each of the floor's tracepoints, loaded and attached the way once
// attaches its own (a disabled perf event and a BPF link), so that what
// the row adds to a traced call is what any BPF program there costs and
// nothing else. bpftrace's empty programs are not that floor: they return
// 1, and bpftrace enables its perf events, which are bound to CPU 0, so
// every traced call on CPU 0 also writes a perf sample (see
// docs/performance.md). Stops on SIGINT or SIGTERM.
func runFloor(stdout io.Writer) error {
	names, err := floorTracepoints(floorBT)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// The links are left open at the exit, as once leaves its own: the
	// kernel lets go of them after the process is gone (the bench waits
	// for that before its next run), where closing each here would take
	// the kernel's time in turn.
	links, missing, err := attachFloor(names)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %d programs", floorReady, len(links))
	if len(missing) > 0 {
		fmt.Fprintf(stdout, " (not on this kernel: %s)", strings.Join(missing, ", "))
	}
	fmt.Fprintln(stdout)
	<-sig
	return nil
}

// attachFloor attaches a program that returns 0 to each syscall
// tracepoint named, and returns the links and the names this kernel has
// no tracepoint of (open and creat on arm64), which once leaves out too.
func attachFloor(names []string) (links []link.Link, missing []string, err error) {
	defer func() {
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			links = nil
		}
	}()
	for _, name := range names {
		// Named as bpftrace names them, 15 bytes of the tracepoint.
		progName := name
		if len(progName) > 15 {
			progName = progName[:15]
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         progName,
			Type:         ebpf.TracePoint,
			License:      "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		})
		if err != nil {
			return links, nil, fmt.Errorf("loading the program for %s: %w", name, err)
		}
		l, err := link.Tracepoint("syscalls", name, prog, nil)
		// The link holds the program.
		prog.Close()
		switch {
		case errors.Is(err, os.ErrNotExist):
			missing = append(missing, name)
		case err != nil:
			return links, nil, fmt.Errorf("attaching to syscalls:%s: %w", name, err)
		default:
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		return nil, missing, errors.New("this kernel has none of the floor's tracepoints")
	}
	return links, missing, nil
}
