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
	// Lookups: a name looked up, not opened (an OpenRecord of one of
	// these is a stat or access; Ret is 0 on success).
	SysNewfstatat
	SysStatx
	SysStat // newstat
	SysLstat
	SysAccess
	SysFaccessat
	SysFaccessat2
	// A directory made (mkdir, mkdirat): not a lookup; the kernel sends
	// one only when it may end a lookup probe chain (EventMade).
	SysMkdir
	SysMkdirat
	// An io_uring IORING_OP_STATX request: a lookup (IsLookup) that is
	// no system call, which syscall tracers miss.
	SysIoUringStatx
)

// IsLookup reports whether s looks a name up without opening it.
func (s Syscall) IsLookup() bool {
	return (s >= SysNewfstatat && s <= SysFaccessat2) || s == SysIoUringStatx
}

// IsMade reports whether s makes a directory.
func (s Syscall) IsMade() bool { return s == SysMkdir || s == SysMkdirat }

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
	case SysNewfstatat:
		return "newfstatat"
	case SysStatx:
		return "statx"
	case SysStat:
		return "stat"
	case SysLstat:
		return "lstat"
	case SysAccess:
		return "access"
	case SysFaccessat:
		return "faccessat"
	case SysFaccessat2:
		return "faccessat2"
	case SysMkdir:
		return "mkdir"
	case SysMkdirat:
		return "mkdirat"
	case SysIoUringStatx:
		return "io_uring_statx"
	}
	return "unknown"
}
