package callstack

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/trace"
)

// MapSource gives the mappings a process had at a moment: the
// executable ones, sorted by address.
type MapSource interface {
	At(pid int, ns uint64) []stack.Mapping
}

// Resolver is what a session needs of --stacks: each snapshot unwound
// against the mappings of its process at the call, and interned.
type Resolver struct {
	table *Table
	maps  MapSource
	sync  func()
}

// NewResolver returns a resolver over table and maps. sync, when not
// nil, runs before each snapshot is resolved: it brings maps up to date
// (the mapping records of the moment the call was made were written
// before the call's own event, so reading them first is enough).
func NewResolver(table *Table, maps MapSource, sync func()) *Resolver {
	return &Resolver{table: table, maps: maps, sync: sync}
}

// Resolve returns the stack of snap, taken in task's process at ns
// (CLOCK_MONOTONIC).
func (r *Resolver) Resolve(task *trace.Task, ns uint64, snap *trace.StackSnapshot) trace.StackID {
	pid := task.Pid
	if r.sync != nil {
		r.sync()
	}
	maps := r.maps.At(int(pid), ns)
	// The process's files, opened while it lives (most do when their
	// first snapshot comes) and outside every lock Intern takes.
	_ = r.table.Retain(int(pid), maps)
	return r.table.InternIn(stack.Proc{Pid: int(pid), UID: task.UID, Start: monoWall(task.Start)}, snap, maps)
}

// monoWall is the wall-clock time of a CLOCK_MONOTONIC time (ns); zero
// for 0.
func monoWall(ns uint64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		return time.Time{}
	}
	return time.Now().Add(-time.Duration(uint64(now.Nano()) - ns))
}

// Counters adds the table's counters to c.
func (r *Resolver) Counters(c *trace.Counters) { r.table.Counters(c) }

// Export puts the stacks res names in it, symbolized.
func (r *Resolver) Export(res *trace.Result) { r.table.Export(res) }

// Table is the resolver's stack table: a live session's StackSource.
func (r *Resolver) Table() *Table { return r.table }
