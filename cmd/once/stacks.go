package main

import (
	"flag"
	"fmt"

	"github.com/oncetool/once/callstack"
	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/trace"
)

// stackFlags are --stacks and --stack-size: run, check, compare and
// watch take them alike.
type stackFlags struct {
	on   bool
	size int
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
	fs.BoolVar(&s.on, "stacks", false, "record the user call stack of each call in a finding (each open of a duplicate, each attempt of a probe chain): its call sites in every format; the ring buffer is then 64 MiB unless --ring-size says otherwise")
	intFlag(fs, &s.size, "stack-size", defaultStackSize, 0, fmt.Sprintf("with --stacks: copy `BYTES` of the user stack at each call for unwinding (%d to %d)", minStackSize, maxStackSize))
}

func (s *stackFlags) check(cmd string) error {
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

// Byte budgets of --stacks: the stacks kept (each distinct stack once,
// with the mappings its frames are in), and the mappings of the
// processes whose stacks may still come.
const (
	stackTableBudget = 32 << 20
	stackMapsBudget  = callstack.DefaultMapsBudget
)

// stackSession is what --stacks runs beside the tracer: the mapping
// records of every process (perf MMAP2, read before each snapshot is
// unwound) and the stack table.
type stackSession struct {
	*callstack.Resolver
	reader *collector.MapsReader
	maps   *callstack.Maps
	table  *callstack.Table
}

// openStacks starts the mapping reader; the caller opens it before the
// command starts, so that the command's own mappings are all seen.
func openStacks() (*stackSession, error) {
	r, err := collector.OpenMaps(collector.MapsOptions{})
	if err != nil {
		return nil, exitError{exitEnv, "--stacks: " + err.Error()}
	}
	s := &stackSession{reader: r, maps: callstack.NewMaps(stackMapsBudget),
		table: callstack.NewTable(stack.NewCache(stack.Options{}), stackTableBudget)}
	s.Resolver = callstack.NewResolver(s.table, s.maps, s.sync)
	return s, nil
}

func (s *stackSession) sync() { _, _ = s.reader.Drain(s.maps) }

// Counters adds the table's counters and the mapping records lost.
func (s *stackSession) Counters(c *trace.Counters) {
	s.Resolver.Counters(c)
	c.StacksMapsLost = s.reader.Lost()
	c.StacksMapsEvicted = s.maps.Stats().Evicted
}

// Close stops the reader and releases the files the table holds.
func (s *stackSession) Close() {
	s.reader.Close()
	s.table.Close()
}
