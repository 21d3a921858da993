package session

import (
	"fmt"

	"github.com/oncetool/once/callstack"
	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/stack"
	"github.com/oncetool/once/trace"
)

// Byte budgets of --stacks: the stacks kept (each distinct stack once,
// with the mappings its frames are in), and the mappings of the
// processes whose stacks may still come.
const (
	stackTableBudget = 32 << 20
	stackMapsBudget  = callstack.DefaultMapsBudget
)

// Stacks is what --stacks runs beside the tracer: the mapping records of
// every process (perf MMAP2, read before each snapshot is unwound) and
// the stack table. It is the session's StackResolver.
type Stacks struct {
	*callstack.Resolver
	reader *collector.MapsReader
	maps   *callstack.Maps
	table  *callstack.Table
}

// OpenStacks starts the mapping reader; open it before the command
// starts, so that the command's own mappings are all seen. With root
// set (once's own pid, which forks the command), only root and what it
// and they fork are followed (callstack.Maps.FollowFrom); 0: every
// process (watch).
func OpenStacks(root int) (*Stacks, error) {
	r, err := collector.OpenMaps(collector.MapsOptions{})
	if err != nil {
		return nil, fmt.Errorf("--stacks: %w", err)
	}
	s := &Stacks{reader: r, maps: callstack.NewMaps(stackMapsBudget),
		table: callstack.NewTable(stack.NewCache(stack.Options{}), stackTableBudget)}
	if root > 0 {
		s.maps.FollowFrom(root)
	}
	s.Resolver = callstack.NewResolver(s.table, s.maps, s.sync)
	return s, nil
}

func (s *Stacks) sync() { _, _ = s.reader.Drain(s.maps) }

// Counters adds the table's counters and the mapping records lost.
func (s *Stacks) Counters(c *trace.Counters) {
	s.Resolver.Counters(c)
	c.StacksMapsLost = s.reader.Lost()
	c.StacksMapsEvicted = s.maps.Stats().Evicted
}

// Close stops the reader and releases the files the table holds.
func (s *Stacks) Close() {
	s.reader.Close()
	s.table.Close()
}
