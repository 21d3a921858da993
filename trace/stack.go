package trace

// StackID names one distinct user call stack in a run's stack table
// (Result.Stacks; a watch session's table). 0 is no stack: none was
// asked for, or none could be captured for the call.
type StackID uint32

// StackNotKept stands for a stack that was unwound but not kept: the
// table's byte budget was spent (Counters.StacksNotKept). Calls still
// count towards their call sites under it.
const StackNotKept StackID = ^StackID(0)

// StackSnapshot is what the kernel captured of the user side at one
// open or exec (--stacks): the registers that unwinding can use, the top
// of the user stack, and the kernel's own frame-pointer walk.
type StackSnapshot struct {
	IP, SP, BP uint64
	BX         uint64
	R12, R13   uint64
	R14, R15   uint64
	// Window is user memory from SP upward, at most --stack-size bytes.
	// It aliases the ring record: valid until the next event is read.
	Window []byte
	// WindowCut: the window was cut at --stack-size while the stack
	// went on (unwinding may stop short: StacksTruncated).
	WindowCut bool
	// FP are the return addresses of the kernel's frame-pointer walk
	// (bpf_get_stack, BPF_F_USER_STACK), innermost first. Garbage where
	// a binary keeps no frame pointers: only a last resort.
	FP []uint64
}

// Frame is one symbolized frame of a call stack. One return address can
// give several frames: the functions inlined at it, innermost first.
type Frame struct {
	Addr    uint64 // in the process: the IP, or a return address
	Module  string // the mapped file; "" for an address in no known mapping
	BuildID string // hex; "" when the module has none
	// Offset is Addr in the module's own terms (its ELF address): what
	// addr2line -e Module takes, symbols or not.
	Offset  uint64
	Func    string // demangled; "" when the module has no symbol for it
	File    string // "" without line information
	Line    int
	Inlined bool // Func was inlined into the next frame's function
}

// Stack is one distinct call stack, innermost frame first.
type Stack struct {
	ID     StackID
	Frames []Frame
	// Stop says why unwinding ended before the outermost frame: "" when
	// it reached it, else a key (truncated, no_unwind_info,
	// unknown_mapping, bad_cfi, max_depth).
	Stop string
	// Notes say, once per module of the stack, what it lacks: "stripped,
	// no symbols and no debug file (no -dbgsym)" and the like.
	Notes []ModuleNote
}

// ModuleNote says what a module that stacks pass through lacks.
type ModuleNote struct {
	Module  string
	BuildID string
	Note    string
	// Unread: the module could not be read at all (gone, refused,
	// not an ELF file; Note says why), not merely without symbols.
	Unread bool
}

// CallSite is how many of a finding's (or a file's) calls were made
// from one stack: exact even where the calls kept are capped.
type CallSite struct {
	Stack StackID
	Count int
}

// StackSource gives the stacks a finding's call sites name: a run's
// table or a live session's.
type StackSource interface {
	Stack(StackID) *Stack
}
