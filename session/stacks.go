package session

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

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
// the traced processes (perf MMAP2, read before each snapshot is unwound)
// and the stack table. It is the session's StackResolver.
type Stacks struct {
	*callstack.Resolver
	reader *collector.MapsReader
	maps   *callstack.Maps
	table  *callstack.Table

	// With a root: the thread whose perf events the command inherits,
	// waiting for the start to run on it (Launch).
	launch   chan func() error
	launched chan error
	closing  sync.Once
}

// OpenStacks starts the mapping reader; open it before the command
// starts, so that the command's own mappings are all seen. With root
// set (once's own pid, which forks the command), the records are those
// of a thread of once's that the command must be forked from (Launch),
// and of what it forks: another process's mappings, a JIT's stream of
// them, neither cost the run nor push the command's out of the rings;
// only root's descendants are followed (callstack.Maps.FollowFrom). 0:
// every process's (watch).
func OpenStacks(root int) (*Stacks, error) {
	s := &Stacks{maps: callstack.NewMaps(stackMapsBudget),
		table: callstack.NewTable(stack.NewCache(stack.Options{}), stackTableBudget)}
	var err error
	if root > 0 {
		err = s.openLauncher()
	} else {
		s.reader, err = collector.OpenMaps(collector.MapsOptions{})
	}
	if err != nil {
		s.table.Close()
		return nil, fmt.Errorf("--stacks: %w", err)
	}
	if root > 0 {
		s.maps.FollowFrom(root)
	}
	s.Resolver = callstack.NewResolver(s.table, s.maps, s.sync)
	return s, nil
}

// openLauncher opens the reader's inherited events on a thread of their
// own, locked and never unlocked (the runtime ends it with its
// goroutine), which then waits for the command's start (Launch): the
// Go runtime makes no thread of its own from a locked one, so the
// command is the only thing it forks.
func (s *Stacks) openLauncher() error {
	s.launch = make(chan func() error)
	s.launched = make(chan error, 1)
	opened := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		r, err := collector.OpenMaps(collector.MapsOptions{Inherited: true})
		s.reader = r
		opened <- err
		if err != nil {
			return
		}
		if start, ok := <-s.launch; ok {
			s.launched <- start()
		}
	}()
	return <-opened
}

// Launch runs start, which forks the command, where the command inherits
// the reader's events: on the launcher thread (once: a second start
// runs where it is called, its mappings not recorded). start may drop the
// thread's privileges first: the thread is not used again.
func (s *Stacks) Launch(start func() error) error {
	if s.launch == nil {
		return onSpentThread(start)
	}
	sent := false
	s.closing.Do(func() {
		s.launch <- start
		close(s.launch)
		sent = true
	})
	if !sent {
		return onSpentThread(start)
	}
	return <-s.launched
}

// onSpentThread runs start on a thread of its own, locked and never
// unlocked, which the runtime then ends: start may drop the thread's
// privileges before it forks (startCommand), and on the caller's thread
// the drop would neither be sure to hold where the fork is made nor end
// with it, leaving a thread of once's unprivileged in the runtime's pool.
func onSpentThread(start func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		done <- start()
	}()
	return <-done
}

// SeedRunning reads now the mappings of each running process (but
// once's own) that keep selects by pid and comm (callstack.Maps.Seed):
// a process that mapped its files before the mapping records began and
// exits right after its calls would otherwise have its frames at an
// unknown mapping. For the processes a filter names, not every one:
// each mapped file is opened for its build-id. It returns how many it
// seeded.
func (s *Stacks) SeedRunning(keep func(pid int, comm string) bool) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self, n := os.Getpid(), 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || !keep(pid, strings.TrimSuffix(string(b), "\n")) {
			continue
		}
		s.maps.Seed(pid)
		n++
	}
	return n
}

func (s *Stacks) sync() { _, _ = s.reader.Drain(s.maps) }

// Counters adds the table's counters and the mapping records lost, the
// rings drained first: a loss is known only from the record that says
// so, which a run whose last stacks came before it would leave unread.
func (s *Stacks) Counters(c *trace.Counters) {
	s.sync()
	s.Resolver.Counters(c)
	c.StacksMapsLost = s.reader.Lost()
	c.StacksMapsEvicted = s.maps.Stats().Evicted
}

// Close stops the reader and releases the files the table holds; a
// launcher thread still waiting ends.
func (s *Stacks) Close() {
	if s.launch != nil {
		s.closing.Do(func() { close(s.launch) })
	}
	s.reader.Close()
	s.table.Close()
}
