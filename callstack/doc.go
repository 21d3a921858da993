// Package callstack is once's glue between the kernel's stack snapshots
// and package stack: the mappings of every process as they were at each
// call, and the table that unwinds each snapshot as it arrives and
// interns the stacks, bounded in bytes.
package callstack
