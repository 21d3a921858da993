package session

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startCommand starts cmd. When it is to run as another user
// (SysProcAttr.Credential), the thread that forks it first empties its
// inheritable capability set: the kernel clears the permitted, effective
// and ambient sets when the child's uid changes from 0, but it keeps the
// inheritable one, and a command once runs as a user must hold no
// capability at all. Capabilities are per thread, so this is done on a
// thread of its own that the runtime discards afterwards (a goroutine that
// ends while locked to its thread takes the thread with it).
func startCommand(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- fmt.Errorf("read capabilities: %w", err)
			return
		}
		if data[0].Inheritable|data[1].Inheritable != 0 {
			data[0].Inheritable, data[1].Inheritable = 0, 0
			if err := unix.Capset(&hdr, &data[0]); err != nil {
				done <- fmt.Errorf("clear inheritable capabilities: %w", err)
				return
			}
		}
		done <- cmd.Start()
	}()
	return <-done
}
