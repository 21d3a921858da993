// Package privdrop picks the user a traced command runs as: never root by
// accident, so that build outputs are not owned by root and the command
// gets none of once's privileges.
package privdrop

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// Credential picks who the command runs as: --user, else the user behind
// sudo, so build outputs aren't owned by root; nil means unchanged.
func Credential(name string) (*syscall.Credential, error) {
	var u *user.User
	var err error
	switch {
	case name != "":
		u, err = user.Lookup(name)
		if err != nil {
			if _, nerr := strconv.Atoi(name); nerr == nil {
				u, err = user.LookupId(name)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("--user %s: %w", name, err)
		}
	case os.Geteuid() == 0 && os.Getenv("SUDO_UID") != "":
		u, err = user.LookupId(os.Getenv("SUDO_UID"))
		if err != nil {
			// A uid without a passwd entry: use the numbers sudo gave.
			uid, _ := strconv.Atoi(os.Getenv("SUDO_UID"))
			gid, _ := strconv.Atoi(os.Getenv("SUDO_GID"))
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
		}
	default:
		return nil, nil
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if name == "" {
		if g, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil {
			gid = g
		}
	}
	groups := []uint32{}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.Atoi(s); err == nil {
				groups = append(groups, uint32(g))
			}
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, nil
}
