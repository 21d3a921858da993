// Package stack unwinds and symbolizes user stacks captured at a syscall,
// offline, the way perf's --call-graph dwarf does.
//
// The kernel side captures, for the calls that make a finding only, a
// Snapshot: the user registers at syscall entry, a bounded copy of the
// top of the user stack (from SP upward) and the kernel's frame-pointer
// stack. User space, here, turns it into frames:
//
//   - ReadMaps reads /proc/PID/maps (and each executable file's build-id)
//     while the process lives; Cache.Retain opens those files as the
//     process sees them (/proc/PID/map_files, else its root; never the
//     host's path, which may be a FIFO or, in another mount namespace,
//     another file) and keeps them open, so that a file deleted or
//     replaced later is still the one that ran. Unwind and Symbolize
//     open nothing: a module no Retain opened keeps module and offset.
//     See open.go for the rules every open follows.
//   - Cache.Unwind walks the snapshot with the modules' CFI (.eh_frame,
//     and .debug_frame when present, in the file or a separate debug
//     file), falling back to the frame-pointer chain within the window
//     and, last, to the kernel's frame-pointer stack. It reads memory only
//     from the window and says why it stopped (StopReason).
//   - Cache.Symbolize names each address: DWARF lines and inlined frames,
//     .symtab/.dynsym, Go's .gopclntab; separate debug files found by
//     build-id or .gnu_debuglink, in the debug roots only (not beside
//     the binary, where the traced user may put a FIFO), size-capped. A
//     frame without symbols keeps its module, build-id and file address,
//     for addr2line later. SymbolizeBy stops symbolizing at a deadline.
//
// # CFI: delve's frame package, and what it lacks
//
// .eh_frame and .debug_frame are parsed by github.com/go-delve/delve's
// pkg/dwarf/frame (v1.27.2): frame.Parse(data, order, 0, 8, ehFrameAddr)
// takes .eh_frame when ehFrameAddr (the section's address) is not 0 —
// CIE ids, relative CIE pointers, the 'zR'/'zPLR'/'S' augmentations and
// the pcrel|sdata4 pointer encoding that x86-64 toolchains use — and
// .debug_frame when it is 0; FDEForPC and EstablishFrame give the row
// (CFA rule, register rules, RetAddrReg). It fits, with these gaps,
// handled here:
//   - Parse returns the FDEs in section order, and FDEForPC searches them
//     by address: they are sorted (FrameDescriptionEntries.Append).
//   - It panics on some malformed input (a truncated instruction, a
//     restore_state with nothing remembered): recovered, StopBadCFI.
//   - DW_CFA_restore gives "undefined" (no CIE initial rules are kept):
//     for callee-saved registers, whose CIE rule on x86-64 is none, that
//     is read as same-value; an undefined return address still ends the
//     stack.
//   - DW_CFA_def_cfa_expression and DW_CFA_expression are evaluated with
//     delve's pkg/dwarf/op over the known registers and the window (the
//     PLT's expression among them), the CFA pushed first for register
//     rules as DWARF says.
//   - Not handled (rare, not seen in the test programs): DW_CFA_val_offset
//     is not scaled by the data alignment factor, 64-bit DWARF CFI, pointer
//     encodings other than absolute and pc-relative.
//
// EstablishFrame allocates per call; rows are remembered per address.
//
// # Bounds
//
// A traced file is whatever its owner made it: its headers may claim
// sections far larger than the file (a sparse 16 KB file whose
// .eh_frame says 256 MB), compressed sections may inflate without end,
// names may be megabytes long. Parsing is bounded by caps, not by the
// file's claims. Each section is checked against the file's size (fstat)
// and its cap before a byte is read, read with ReadAt into a buffer of
// its checked size, and a compressed one (SHF_COMPRESSED, .zdebug_*) is
// decompressed no further than its cap or its stated size. Per module:
//   - .eh_frame and .debug_frame: 8 MiB each, 128Ki entries each;
//   - .symtab and .dynsym: 16 MiB each with its string table, read here
//     (debug/elf's Symbols allocates whatever the table claims); the
//     symbols kept, names included, 16 MiB in all;
//   - DWARF: 32 MiB of sections, decompressed; 128Ki line rows and
//     function scopes kept of the units read (past it the units read are
//     forgotten, and read again on need; a unit larger alone keeps no
//     lines or no functions, which .symtab then names);
//   - .gopclntab: 32 MiB;
//   - all of a module's parsed parts: 48 MiB, estimated (a parsed FDE,
//     symbol or row costs some 50-100 bytes besides its bytes);
//   - the ELF section-name table (debug/elf reads it whole): 1 MiB;
//   - the section header table and the program header table (debug/elf
//     reads each whole, and keeps a struct of every entry): 256 KiB each,
//     as the ELF header claims them (entries times entry size);
//   - the notes read looking for a build-id: 1 MiB in all.
//
// Across modules, Options.MaxBytes (64 MiB) bounds the parsed parts and
// the headers debug/elf keeps in all: past it the least recently used modules' are forgotten, their
// files kept open, and parsed again on need.
//
// A part past its cap is not read (or, for DWARF rows, not kept): its
// frames show module+offset (or a name without a line), the module's
// note says which part, and Cache.Losses counts it (Capped). Names —
// symbols', DWARF's, file names — are cut at MaxNameBytes (4 KiB) and
// end in NameCut; a mangled name longer than that is not demangled (the
// demangle package's time grows with the square of its input, and it
// has no option bounding its work, only its output's length, also
// set): its mangled prefix is shown, counted (NamesCut).
//
// # Limits
//
//   - .eh_frame is found by its section header: a file whose section
//     headers were removed has no CFI here (PT_GNU_EH_FRAME is not read).
//   - The vdso, JIT code and anonymous memory have no module: the frame
//     pointer chain or the kernel's stack is all there is, and a stack
//     through them counts as reaching an unknown mapping
//     (callstack.Table), even where the walk goes on past them. Frames
//     in JIT code are named from the process's perf map when it writes
//     one (perfmap.go), not unwound by it.
//   - Signal frames (__restore_rt) are not unwound through.
//   - A stripped Go binary (-s -w) has no .debug_frame: frame pointers
//     unwind it, and a frameless leaf (the syscall stub, Syscall6) hides
//     its caller (RawSyscall6), as it does from the kernel's walk and
//     perf's; its .gopclntab names the functions, and those inlined
//     from Go's inline tree (Go 1.20 on: goinline.go), each at its own
//     line; a binary of Go 1.18 or 1.19 has its functions named with
//     the line of the innermost inlined call.
//   - A frame's Offset is the address itself (for callers, the return
//     address, as gdb shows it); addr2line on Offset-1 gives the call's
//     line.
//
// The package stands alone: it imports nothing of once's, and nothing of
// BPF. x86-64 only.
package stack
