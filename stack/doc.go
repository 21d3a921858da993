// Package stack unwinds and symbolizes user stacks captured at a syscall,
// offline, the way perf's --call-graph dwarf does.
//
// The kernel side captures, for the calls that make a finding only, a
// Snapshot: the user registers at syscall entry, a bounded copy of the
// top of the user stack (from SP upward) and the kernel's frame-pointer
// stack. User space, here, turns it into frames:
//
//   - ReadMaps reads /proc/PID/maps (and each executable file's build-id)
//     while the process lives; Cache.Retain keeps those files open, so
//     that a file deleted or replaced later is still the one that ran.
//   - Cache.Unwind walks the snapshot with the modules' CFI (.eh_frame,
//     and .debug_frame when present, in the file or a separate debug
//     file), falling back to the frame-pointer chain within the window
//     and, last, to the kernel's frame-pointer stack. It reads memory only
//     from the window and says why it stopped (StopReason).
//   - Cache.Symbolize names each address: DWARF lines and inlined frames,
//     .symtab/.dynsym, Go's .gopclntab; separate debug files found by
//     build-id or .gnu_debuglink. A frame without symbols keeps its module,
//     build-id and file address, for addr2line later.
//
// The package stands alone: it imports nothing of once's, and nothing of
// BPF. x86-64 only.
package stack
