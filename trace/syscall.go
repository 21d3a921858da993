package trace

// Syscall identifies the hooked system call an event came from. The values
// are those of enum syscall_kind in bpf/once.h.
type Syscall uint8

const (
	SysUnknown Syscall = iota
	SysOpen
	SysOpenat
	SysOpenat2
	SysCreat
	SysExecve
	SysExecveat
	// io_uring requests (IORING_OP_OPENAT, IORING_OP_OPENAT2): opens
	// that are not system calls, which syscall tracers miss.
	SysIoUringOpenat
	SysIoUringOpenat2
)

func (s Syscall) String() string {
	switch s {
	case SysOpen:
		return "open"
	case SysOpenat:
		return "openat"
	case SysOpenat2:
		return "openat2"
	case SysCreat:
		return "creat"
	case SysExecve:
		return "execve"
	case SysExecveat:
		return "execveat"
	case SysIoUringOpenat:
		return "io_uring_openat"
	case SysIoUringOpenat2:
		return "io_uring_openat2"
	}
	return "unknown"
}
