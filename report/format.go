package report

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/trace"
)

// openFlag names one flag bit (or bit group) of open(2).
type openFlag struct {
	bits uint64
	name string
}

// openFlags is every flag OpenFlags names, in print order. O_SYNC and
// O_TMPFILE are bit groups that contain another flag (O_DSYNC and
// O_DIRECTORY): OpenFlags prints the group name and suppresses the member.
// Values come from x/sys/unix because several differ between
// architectures (O_DIRECT, O_DIRECTORY, O_NOFOLLOW on arm64).
var openFlags = []openFlag{
	{unix.O_CREAT, "O_CREAT"},
	{unix.O_EXCL, "O_EXCL"},
	{unix.O_NOCTTY, "O_NOCTTY"},
	{unix.O_TRUNC, "O_TRUNC"},
	{unix.O_APPEND, "O_APPEND"},
	{unix.O_NONBLOCK, "O_NONBLOCK"},
	{unix.O_DSYNC, "O_DSYNC"},
	{unix.O_DIRECT, "O_DIRECT"},
	{kernelOLargefile, "O_LARGEFILE"},
	{unix.O_DIRECTORY, "O_DIRECTORY"},
	{unix.O_NOFOLLOW, "O_NOFOLLOW"},
	{unix.O_NOATIME, "O_NOATIME"},
	{unix.O_CLOEXEC, "O_CLOEXEC"},
	{unix.O_SYNC, "O_SYNC"},
	{unix.O_PATH, "O_PATH"},
	{unix.O_TMPFILE, "O_TMPFILE"},
}

// OpenFlags renders open(2) flags the way strace does: the access mode
// first (O_RDONLY, O_WRONLY or O_RDWR), then each set flag, then any bits
// left over in hex, joined by '|'. For example 0x80000 is
// "O_RDONLY|O_CLOEXEC".
func OpenFlags(flags uint64) string {
	var parts []string
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		parts = append(parts, "O_RDONLY")
	case unix.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	case unix.O_RDWR:
		parts = append(parts, "O_RDWR")
	default:
		// Access mode 3 has no name (the kernel reads it as "neither read
		// nor write, ioctl only"); print it as a number, still first.
		parts = append(parts, "0x"+strconv.FormatUint(flags&unix.O_ACCMODE, 16))
	}
	rest := flags &^ unix.O_ACCMODE
	// Bits claimed by a group that is fully set.
	var grouped uint64
	if flags&unix.O_SYNC == unix.O_SYNC {
		grouped |= unix.O_DSYNC
	}
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		grouped |= unix.O_DIRECTORY
	}
	for _, f := range openFlags {
		if f.bits == 0 || flags&f.bits != f.bits {
			continue
		}
		if f.bits&grouped == f.bits {
			continue // O_DSYNC or O_DIRECTORY inside O_SYNC or O_TMPFILE
		}
		parts = append(parts, f.name)
		rest &^= f.bits
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(rest, 16))
	}
	return strings.Join(parts, "|")
}

// ErrnoName returns the symbolic name of a positive errno value, such as
// "ENOENT" for 2, or "E<n>" when the value has no name.
func ErrnoName(errno int32) string { return trace.ErrnoName(errno) }

// DevString renders a device number in the userspace st_dev encoding as
// "major:minor".
func DevString(dev uint64) string {
	return strconv.FormatUint(uint64(unix.Major(dev)), 10) + ":" +
		strconv.FormatUint(uint64(unix.Minor(dev)), 10)
}

// Duration renders a nanosecond count compactly with at most three
// significant digits: "850ns", "1.2µs", "35µs", "350ms", "2.5s", "125s".
// Values below ten units keep one decimal (dropped when it is zero).
func Duration(ns uint64) string {
	if ns < 1000 {
		return strconv.FormatUint(ns, 10) + "ns"
	}
	units := []struct {
		div  uint64
		name string
	}{{1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}}
	for i, u := range units {
		tenths := roundDiv(ns, u.div/10)
		if tenths < 100 {
			s := strconv.FormatUint(tenths/10, 10)
			if tenths%10 != 0 {
				s += "." + strconv.FormatUint(tenths%10, 10)
			}
			return s + u.name
		}
		whole := roundDiv(ns, u.div)
		if whole < 1000 || i == len(units)-1 {
			return strconv.FormatUint(whole, 10) + u.name
		}
	}
	panic("unreachable")
}

// roundDiv is n/d rounded half up, without overflowing for any n.
func roundDiv(n, d uint64) uint64 {
	q, r := n/d, n%d
	if r >= d-d/2 {
		q++
	}
	return q
}

// atFlagNames are the AT_* flags a lookup takes (fstatat, statx,
// faccessat2), in the order they are shown.
var atFlagNames = []flagName{
	{unix.AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
	{unix.AT_EACCESS, "AT_EACCESS"},
	{unix.AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"},
	{unix.AT_EMPTY_PATH, "AT_EMPTY_PATH"},
	{unix.AT_STATX_FORCE_SYNC, "AT_STATX_FORCE_SYNC"},
	{unix.AT_STATX_DONT_SYNC, "AT_STATX_DONT_SYNC"},
}

// AtFlags renders a lookup's AT_* flags: "AT_SYMLINK_NOFOLLOW", "0" for
// none, unknown bits in hex.
func AtFlags(flags uint64) string {
	return flagNames(flags, atFlagNames)
}

// flagNames renders the bits of flags by their names, "|"-joined in the
// names' order: "0" for none, bits without a name in hex.
func flagNames(flags uint64, names []flagName) string {
	var parts []string
	for _, f := range names {
		if flags&f.flag != 0 {
			parts = append(parts, f.name)
			flags &^= f.flag
		}
	}
	if flags != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(flags, 16))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}

// flagName is a flag's bit and its name.
type flagName struct {
	flag uint64
	name string
}

// resolveNames are openat2's RESOLVE_* flags, in strace's order.
var resolveNames = []flagName{
	{unix.RESOLVE_NO_XDEV, "RESOLVE_NO_XDEV"},
	{unix.RESOLVE_NO_MAGICLINKS, "RESOLVE_NO_MAGICLINKS"},
	{unix.RESOLVE_NO_SYMLINKS, "RESOLVE_NO_SYMLINKS"},
	{unix.RESOLVE_BENEATH, "RESOLVE_BENEATH"},
	{unix.RESOLVE_IN_ROOT, "RESOLVE_IN_ROOT"},
	{0x20, "RESOLVE_CACHED"}, // not in x/sys/unix
}

// ResolveFlags renders openat2's how.resolve as strace does:
// "RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH", "0" for none, unknown bits in
// hex.
func ResolveFlags(resolve uint64) string {
	return flagNames(resolve, resolveNames)
}

// CallFlags renders the flags of a call of sc: open flags, or a lookup's
// AT_* flags.
func CallFlags(sc trace.Syscall, flags uint64) string {
	if sc.IsLookup() {
		return AtFlags(flags)
	}
	return OpenFlags(flags)
}

// AccessMode renders access(2)'s mode as strace does: "F_OK" for none,
// else "R_OK|W_OK|X_OK" in that order, unknown bits in hex.
func AccessMode(mode uint64) string {
	if mode == unix.F_OK {
		return "F_OK"
	}
	var parts []string
	for _, m := range []struct {
		bit  uint64
		name string
	}{{unix.R_OK, "R_OK"}, {unix.W_OK, "W_OK"}, {unix.X_OK, "X_OK"}} {
		if mode&m.bit != 0 {
			parts = append(parts, m.name)
			mode &^= m.bit
		}
	}
	if mode != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(mode, 16))
	}
	return strings.Join(parts, "|")
}
