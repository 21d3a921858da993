package main

import (
	"flag"
	"fmt"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/cliflag"
	"github.com/oncetool/once/report"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// stackFlags are --stacks and --stack-size: run, check, compare and
// watch take them alike.
type stackFlags struct {
	on   bool
	size int
	// sizeGiven: --stack-size was on the command line, which without
	// --stacks (or a stack format) would change nothing.
	sizeGiven bool
}

// Bounds of --stack-size: below a page the window rarely reaches the
// caller's caller; past 16 KiB the per-CPU copy outgrows what the kernel
// side reserves for it.
const (
	defaultStackSize = 8192
	minStackSize     = 512
	maxStackSize     = collector.MaxStackSize
)

func (s *stackFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.on, "stacks", false, "record the user call stack of each call in a finding (each open of a duplicate, each attempt of a probe chain): its call sites in every format; each ring buffer is then 64 MiB (256 MiB shared past 4 rings) unless --ring-size says otherwise")
	cliflag.IntVar(fs, &s.size, "stack-size", defaultStackSize, 0, fmt.Sprintf("with --stacks: copy `BYTES` of the user stack at each call for unwinding (%d to %d; without --stacks, a usage error)", minStackSize, maxStackSize))
}

// check refuses --stack-size without --stacks (as --wide without
// --events), whatever its value, and one out of range: call it after a
// stack format has turned --stacks on.
func (s *stackFlags) check(cmd string) error {
	if s.sizeGiven && !s.on {
		what := "--stacks"
		if cmd == "run" || cmd == "check" {
			what += " (or --format pprof or folded)"
		}
		return usagef("%s: --stack-size needs %s: without it no stack is copied", cmd, what)
	}
	if s.size < minStackSize || s.size > maxStackSize {
		return usagef("%s: --stack-size %d: want %d to %d bytes", cmd, s.size, minStackSize, maxStackSize)
	}
	return nil
}

// stackRingSize is the ring buffer --stacks gets unless --ring-size says
// otherwise: a record with its snapshot is --stack-size bytes more, and
// unwinding slows the reader, so an exec-heavy burst (a PATH search per
// launch) would fill the default ring and lose events.
const stackRingSize = 64 << 20

// ringSize is the ring buffer to ask for: n as given, or with --stacks
// and no --ring-size, stackRingSize.
func (s *stackFlags) ringSize(n int, given bool) int {
	if s.on && !given {
		return max(n, stackRingSize)
	}
	return n
}

// kernelSize is what the collector is asked to copy: 0 without --stacks.
func (s *stackFlags) kernelSize() int {
	if !s.on {
		return 0
	}
	return s.size
}

// profileFormat says whether format is one of the stack formats, which
// imply --stacks.
func profileFormat(format string) bool { return format == "pprof" || format == "folded" }

// openStacks is session.OpenStacks, its failure a missing capability:
// following the processes root forks (0: every process).
func openStacks(root int) (*session.Stacks, error) {
	s, err := session.OpenStacks(root)
	if err != nil {
		return nil, exitError{exitEnv, err.Error()}
	}
	return s, nil
}

// keptStacks is the collector's KeptStacks: an event stream (--events)
// shows each call's stack as the call is printed, so every snapshot is
// sent with its call; else the kernel keeps first opens' (the default).
func keptStacks(events bool) int {
	if events {
		return -1
	}
	return 0
}

// foldedSummary is the line --format folded writes to stderr: the
// summary line, and what the other formats' header says of a run cut
// short (report.RunCaveats), which folded stacks have no room for either;
// among the stacks (amongStacks) it ends so that flame graph tools skip it.
func foldedSummary(res *trace.Result, amongStacks bool) string {
	line := report.SummaryLine(res)
	if c := report.RunCaveats(res); c != "" {
		line += "; " + c
	}
	if amongStacks {
		line += foldedSummaryEnd
	}
	return line
}

// foldedSummaryEnd ends the summary line written among folded stacks:
// no digit last, so that flamegraph.pl and inferno skip the line.
const foldedSummaryEnd = " (once's summary line, not a stack)"
