package stack

import "fmt"

// Regs are the user registers at syscall entry that unwinding can use
// (x86-64). Of the kernel's pt_regs only these are kept: IP, SP and BP,
// and the callee-saved RBX and R12–R15 that a CFI rule may name as a CFA
// base or restore. The caller-saved registers (RAX, RCX, RDX, RSI, RDI,
// R8–R11) are not carried: at a call site compiled code's CFI does not
// refer to them (a hand-written rule that did would stop the walk as
// StopBadCFI). A register the kernel did not capture must be left 0.
type Regs struct {
	IP, SP, BP uint64
	BX         uint64
	R12, R13   uint64
	R14, R15   uint64
}

// Snapshot is what the kernel side captures at one syscall.
type Snapshot struct {
	Regs Regs
	// Stack holds the bytes of user memory from Regs.SP upward: a bounded
	// window (8 KiB by default).
	Stack []byte
	// StackTruncated says the window ended before the stack did.
	StackTruncated bool
	// FP are return addresses from the kernel's frame-pointer walk
	// (bpf_get_stack with BPF_F_USER_STACK), innermost first, the first
	// being the IP. Empty when not captured; garbage where a module keeps
	// no frame pointers. Only a last resort.
	FP []uint64
}

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64 // the address range [Start, End)
	FileOffset uint64 // the file offset mapped at Start
	Perms      string // "r-xp" and the like
	Path       string // the file, or "[stack]", "[vdso]", "" for anonymous memory
	Dev        uint64 // the file's device, as unix.Mkdev(major, minor)
	Inode      uint64 // the file's inode (0 when not file-backed)
	// BuildID is the hex of the file's GNU build-id note, when ReadMaps
	// could read it (file-backed executable mappings only).
	BuildID string
	// Deleted says the maps line ended in " (deleted)": the file was
	// unlinked or replaced after it was mapped.
	Deleted bool
}

// Exec says whether the mapping is executable.
func (m *Mapping) Exec() bool { return len(m.Perms) >= 3 && m.Perms[2] == 'x' }

// FileBacked says whether the mapping maps a file (not anonymous memory,
// nor a pseudo-mapping such as [stack] or [vdso]). A mapping known by its
// build-id alone (its device and inode could not be read) maps a file.
func (m *Mapping) FileBacked() bool {
	return (m.Inode != 0 || m.BuildID != "") && len(m.Path) > 0 && m.Path[0] == '/'
}

// Via says how a frame's return address was found.
type Via uint8

const (
	ViaRegs     Via = iota // the innermost frame: the IP
	ViaCFI                 // the callee's CFI (.eh_frame or .debug_frame)
	ViaFP                  // the frame-pointer chain within the stack window
	ViaKernelFP            // the kernel's frame-pointer stack (Snapshot.FP)
	ViaJIT                 // a JIT's known frame layout (stepPyTrampoline)
)

func (v Via) String() string {
	switch v {
	case ViaRegs:
		return "regs"
	case ViaCFI:
		return "cfi"
	case ViaFP:
		return "fp"
	case ViaKernelFP:
		return "kernel-fp"
	case ViaJIT:
		return "jit"
	}
	return fmt.Sprintf("via(%d)", uint8(v))
}

// StopReason says why unwinding stopped. Each kind is worth a counter.
type StopReason uint8

const (
	// StopEnd: the outermost frame was reached (the CFI leaves the return
	// address undefined, as _start's does, or it is 0).
	StopEnd StopReason = iota
	// StopTruncated: a return address or saved register lies beyond the
	// stack window: the window was too small.
	StopTruncated
	// StopNoUnwindInfo: a module has no CFI for the address and no usable
	// frame-pointer chain.
	StopNoUnwindInfo
	// StopUnknownMapping: an address lies in no file-backed executable
	// mapping (anonymous or JIT code, a library unmapped before the maps
	// were read), or the module's file could not be opened or verified.
	StopUnknownMapping
	// StopBadCFI: the CFI could not be evaluated (malformed, an
	// unsupported expression, a register it needs is unknown) or gave a
	// stack pointer that did not grow, a loop.
	StopBadCFI
	// StopMaxDepth: Options.MaxFrames frames were unwound.
	StopMaxDepth
)

// StopReasons lists every StopReason, for counters.
var StopReasons = []StopReason{StopEnd, StopTruncated, StopNoUnwindInfo, StopUnknownMapping, StopBadCFI, StopMaxDepth}

func (r StopReason) String() string {
	switch r {
	case StopEnd:
		return "end of stack"
	case StopTruncated:
		return "stack window too small"
	case StopNoUnwindInfo:
		return "no CFI and no frame pointer"
	case StopUnknownMapping:
		return "unknown mapping"
	case StopBadCFI:
		return "bad CFI"
	case StopMaxDepth:
		return "too many frames"
	}
	return fmt.Sprintf("stop(%d)", uint8(r))
}

// Key is a short name for the reason, fit for a JSON key or a metric label.
func (r StopReason) Key() string {
	switch r {
	case StopEnd:
		return "end"
	case StopTruncated:
		return "truncated"
	case StopNoUnwindInfo:
		return "no_unwind_info"
	case StopUnknownMapping:
		return "unknown_mapping"
	case StopBadCFI:
		return "bad_cfi"
	case StopMaxDepth:
		return "max_depth"
	}
	return fmt.Sprintf("stop_%d", uint8(r))
}

// PC is one unwound address.
type PC struct {
	Addr uint64 // the IP for the innermost frame, else a return address
	Via  Via
}

// Unwound is a raw stack: addresses only.
type Unwound struct {
	PCs  []PC
	Stop StopReason
	// StopDetail says more about Stop, for a log: the address, the module.
	StopDetail string
}

// Frame is one symbolized frame. One address can give several frames:
// the functions inlined at it, innermost first, then the function that
// holds them.
type Frame struct {
	Addr    uint64 // the address in the process (IP or return address)
	Via     Via
	Module  string // the mapped file's path; "" when the address is in no known mapping
	BuildID string // the module's build-id, hex; "" when it has none
	// Offset is the address in the module's own terms: its ELF virtual
	// address, what addr2line -e Module takes (for a caller frame the
	// return address, as gdb shows it).
	Offset uint64
	Func   string // the function, demangled; "" when the module has no symbol for it
	File   string // the source file; "" without line information
	Line   int
	// Inlined says Func was inlined into the next frame's function at
	// File:Line of this frame's caller (the next frame's File:Line).
	Inlined bool
}

func (f Frame) String() string {
	s := fmt.Sprintf("%#x", f.Addr)
	fn := f.Func
	if fn == "" {
		fn = "??"
	}
	s += " in " + fn
	if f.Inlined {
		s += " (inlined)"
	}
	if f.File != "" {
		s += fmt.Sprintf(" at %s:%d", f.File, f.Line)
	}
	if f.Module != "" {
		s += fmt.Sprintf(" (%s+%#x)", f.Module, f.Offset)
	}
	return s
}

// ModuleNote says what a module that a stack passes through lacks, so
// that every output can say it ("stripped, no -dbgsym").
type ModuleNote struct {
	Path    string
	BuildID string
	// NoUnwindInfo: neither .eh_frame nor .debug_frame.
	NoUnwindInfo bool
	// NoSymbols: no function names at all (.symtab, .dynsym, .gopclntab).
	NoSymbols bool
	// NoLines: no DWARF line table (and no .gopclntab), in the file or a
	// separate debug file.
	NoLines bool
	// Err is why the module could not be read at all ("" when it could).
	Err string
	// Capped says which of its parts were not read, or read in part, at
	// their caps (Losses.Capped): "" when none.
	Capped string
	// DebugLink is the name its .gnu_debuglink gives, when no debug root
	// held a file of that name with its CRC (and it lacks symbols or
	// lines): "" otherwise. Debug files are not looked for beside the
	// binary, where gdb finds them.
	DebugLink string
	// DebugLinkStale: a debug root held a file of DebugLink's name, whose
	// CRC (or build-id) is not this module's: another build's.
	DebugLinkStale bool
	// DWARFErr is why its DWARF could not be read (corrupt), in whole
	// or past its first units: "" when it could, or when there is none.
	DWARFErr string
}

// String is a short human sentence: "stripped, no -dbgsym" and the like.
func (n ModuleNote) String() string {
	switch {
	case n.Err != "":
		return n.Err
	case n.Capped != "":
		return "past its caps: " + n.Capped
	case n.NoSymbols && n.NoLines && n.DWARFErr != "":
		return "no symbols, and its DWARF could not be read (" + n.DWARFErr + ")"
	case n.NoSymbols && n.NoLines && n.DebugLinkStale:
		return "stripped, no symbols, and the debug file " + n.DebugLink + " (.gnu_debuglink) in the debug directory is another build's (its CRC or build-id differs)"
	case n.NoLines && n.DebugLinkStale:
		return "no line information: the debug file " + n.DebugLink + " (.gnu_debuglink) in the debug directory is another build's (its CRC or build-id differs)"
	case n.NoSymbols && n.NoLines && n.DebugLink != "":
		return "stripped, no symbols, and its debug file " + n.DebugLink + " (.gnu_debuglink) is in no debug directory (not looked for beside the binary)"
	case n.NoSymbols && n.NoLines:
		return "stripped, no symbols and no debug file (no -dbgsym)"
	case n.NoLines && n.DWARFErr != "":
		return "no line information: its DWARF could not be read (" + n.DWARFErr + ")"
	case n.NoLines && n.DebugLink != "":
		return "no line information: its debug file " + n.DebugLink + " (.gnu_debuglink) is in no debug directory (not looked for beside the binary)"
	case n.NoLines:
		return "no line information (no -dbgsym)"
	case n.NoSymbols:
		return "no symbols"
	case n.NoUnwindInfo:
		return "no unwind information"
	case n.DWARFErr != "":
		return "its DWARF could be read only in part (" + n.DWARFErr + "): frames past it lack lines"
	}
	return ""
}

// Stack is an unwound and symbolized stack.
type Stack struct {
	Frames     []Frame
	Stop       StopReason
	StopDetail string
	// Notes lists, once each, the modules of this stack that lack unwind
	// information, symbols or lines.
	Notes []ModuleNote
	// Cut counts the frames left with module and offset only because
	// the symbolizing deadline had passed (Cache.SymbolizeBy).
	Cut int
}
