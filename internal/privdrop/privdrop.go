// Package privdrop picks the user a traced command runs as, and drops to
// it: never root by accident, so that build outputs are not owned by root
// and the command gets none of once's privileges.
package privdrop

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Credential picks who the command runs as: --user NAME (a name or a
// numeric uid), else, when once runs as root under sudo, the user behind
// sudo (SUDO_UID and SUDO_GID, both required, decimal, and SUDO_USER, if
// set and known, naming the same uid); nil means unchanged. A malformed,
// partial or inconsistent sudo environment is an error, never a fall back
// to root.
func Credential(name string) (*syscall.Credential, error) {
	if name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			if _, nerr := parseID(name); nerr == nil {
				u, err = user.LookupId(name)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("--user %s: %w", quote(name), err)
		}
		uid, err := parseID(u.Uid)
		if err != nil {
			return nil, fmt.Errorf("--user %s: uid %s: %w", quote(name), quote(u.Uid), err)
		}
		gid, err := parseID(u.Gid)
		if err != nil {
			return nil, fmt.Errorf("--user %s: gid %s: %w", quote(name), quote(u.Gid), err)
		}
		return &syscall.Credential{Uid: uid, Gid: gid, Groups: groupsOf(u)}, nil
	}
	if os.Geteuid() != 0 {
		return nil, nil
	}
	return fromSudo(os.LookupEnv, user.Lookup, user.LookupId)
}

// fromSudo is the user behind sudo, from its environment (lookup), with
// passwd lookups by name and by id: nil when no sudo variable is set, or
// when root ran sudo.
func fromSudo(lookup func(string) (string, bool), byName, byID func(string) (*user.User, error)) (*syscall.Credential, error) {
	const refuse = "refusing to run the command as root"
	sudoUID, hasUID := lookup("SUDO_UID")
	sudoGID, hasGID := lookup("SUDO_GID")
	sudoUser, hasUser := lookup("SUDO_USER")
	if !hasUID && !hasGID && !hasUser {
		return nil, nil
	}
	var uid, gid uint32
	var err error
	if hasUID {
		if uid, err = parseID(sudoUID); err != nil {
			return nil, fmt.Errorf("SUDO_UID=%s: %w: %s", quote(sudoUID), err, refuse)
		}
	}
	if hasGID {
		if gid, err = parseID(sudoGID); err != nil {
			return nil, fmt.Errorf("SUDO_GID=%s: %w: %s", quote(sudoGID), err, refuse)
		}
	}
	if !hasUID || !hasGID {
		return nil, fmt.Errorf("a partial sudo environment (sudo sets SUDO_UID, SUDO_GID and SUDO_USER; %s): %s", sudoSet(hasUID, hasGID, hasUser), refuse)
	}
	var u *user.User
	if hasUser && sudoUser != "" {
		// SUDO_USER names the same user as SUDO_UID when sudo set both.
		if named, err := byName(sudoUser); err == nil {
			if named.Uid != sudoUID {
				return nil, fmt.Errorf("SUDO_USER=%s is uid %s, SUDO_UID=%s: an inconsistent sudo environment: %s",
					quote(sudoUser), quote(named.Uid), quote(sudoUID), refuse)
			}
			u = named
		}
	}
	if uid == 0 {
		return nil, nil // sudo run by root: the user is root
	}
	cred := &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
	// The user's supplementary groups when it has a passwd entry; sudo's
	// numbers alone otherwise.
	if u == nil {
		u, _ = byID(sudoUID)
	}
	if u != nil {
		cred.Groups = groupsOf(u)
	}
	return cred, nil
}

// sudoSet says which of sudo's variables are set: "only SUDO_USER is
// set".
func sudoSet(uid, gid, name bool) string {
	var set []string
	for _, v := range []struct {
		name string
		set  bool
	}{{"SUDO_UID", uid}, {"SUDO_GID", gid}, {"SUDO_USER", name}} {
		if v.set {
			set = append(set, v.name)
		}
	}
	return "only " + strings.Join(set, " and ") + map[bool]string{true: " is", false: " are"}[len(set) == 1] + " set"
}

// parseID accepts a uid or gid as sudo and /etc/passwd write it: decimal
// digits only (no sign, no space), below 2^32-1 (which is (uid_t)-1).
func parseID(s string) (uint32, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a decimal id")
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, errors.New("out of range")
	}
	return uint32(n), nil
}

func groupsOf(u *user.User) []uint32 {
	groups := []uint32{}
	ids, err := u.GroupIds()
	if err != nil {
		return groups
	}
	for _, s := range ids {
		if g, err := parseID(s); err == nil {
			groups = append(groups, g)
		}
	}
	return groups
}

// quote makes a string from the environment or the command line safe to
// print: %q, control bytes escaped.
func quote(s string) string { return strconv.Quote(s) }

// DropThread empties every capability set a child started from this
// thread could keep, and sets no_new_privs on it: the kernel clears the
// permitted, effective and ambient sets when the child's uid changes from
// 0, but it keeps the inheritable and bounding sets, and a setuid program
// the command runs could regain what the bounding set allows. It also
// keeps the command from typing into the terminal it shares with root
// (refuseTerminalInput), and from inheriting the descriptors once
// inherited (closeInheritedOnExec). Capabilities, no_new_privs and seccomp filters
// are per thread: call it on a locked OS thread that is then thrown away.
func DropThread() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	if data[0].Inheritable|data[1].Inheritable != 0 {
		data[0].Inheritable, data[1].Inheritable = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("clear inheritable capabilities: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := closeInheritedOnExec(); err != nil {
		return err
	}
	return refuseTerminalInput()
}

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC (linux/close_range.h, Linux
// 5.11), which x/sys/unix does not name for Linux.
const closeRangeCloexec = 1 << 2

// closeInheritedOnExec marks every descriptor past stderr close-on-exec,
// so that a command started as another user gets stdin, stdout and
// stderr and nothing more of once's, as sudo's closefrom does: the
// descriptors once opens are close-on-exec already, but those it
// inherited without the flag (a root shell's redirection, a service
// manager's socket) would reach the command. What os/exec passes on
// purpose (ExtraFiles) it dup2s to fresh numbers in the child, which
// clears the flag. The descriptor table is the process's: this is for
// every thread, and harmless to once, which execs nothing of its own.
func closeInheritedOnExec() error {
	err := unix.CloseRange(3, math.MaxUint32, closeRangeCloexec)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	// Before Linux 5.11: one at a time.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list inherited descriptors: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			continue // the directory's own descriptor, closed since
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

// lastCap is the highest capability this kernel knows.
func lastCap() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < 64 {
			return n
		}
	}
	return 63 // past the kernel's last, PR_CAPBSET_DROP says EINVAL
}

// OnThread runs f on an OS thread of its own that has first dropped what
// a child could keep of once's privileges (DropThread), and that the
// runtime then throws away (a goroutine that ends locked to its thread
// takes the thread with it): f starts, and may wait for, a command that
// runs as cred. With cred nil, f runs as it is, here.
func OnThread(cred *syscall.Credential, f func() error) error {
	if cred == nil {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		if err := DropThread(); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

// AsUser runs f with the filesystem identity of cred (fsuid, fsgid and
// supplementary groups), on an OS thread of its own that the runtime then
// throws away: what f creates is the user's, and what it may reach is
// only what the user may, as root's capabilities over files go with the
// fsuid. For what once does for the command in files the command can
// write (a workload it generates, resets between runs and removes): as
// root, a link the command left there would take root's hand elsewhere.
// The identity is the thread's alone (raw system calls, not the runtime's
// that change every thread); f must do its work on this goroutine. With
// cred nil, f runs as it is, here.
func AsUser(cred *syscall.Credential, f func() error) error {
	if cred == nil {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		if err := setThreadFSIdentity(cred); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

// setThreadFSIdentity sets the calling thread's groups, fsgid and fsuid
// to cred's, and checks that they took. x/sys/unix makes these calls for
// the calling thread alone, unlike package syscall's Setgroups.
func setThreadFSIdentity(cred *syscall.Credential) error {
	groups := make([]int, 0, len(cred.Groups))
	for _, g := range cred.Groups {
		groups = append(groups, int(g))
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("set the thread's groups to %v: %w", groups, err)
	}
	// setfsgid and setfsuid say no more than the previous value: a second
	// call with the same id says whether the first took.
	for _, id := range []struct {
		name string
		set  func(int) (int, error)
		v    uint32
	}{{"fsgid", unix.SetfsgidRetGid, cred.Gid}, {"fsuid", unix.SetfsuidRetUid, cred.Uid}} {
		if _, err := id.set(int(id.v)); err != nil {
			return fmt.Errorf("set the thread's %s to %d: %w", id.name, id.v, err)
		}
		if prev, err := id.set(int(id.v)); err != nil || uint32(prev) != id.v {
			return fmt.Errorf("set the thread's %s to %d: still %d", id.name, id.v, prev)
		}
	}
	return nil
}
