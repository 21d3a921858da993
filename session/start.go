package session

import (
	"os/exec"
	"runtime"

	"github.com/oncetool/once/internal/privdrop"
)

// startCommand starts cmd. When it is to run as another user
// (SysProcAttr.Credential), the thread that forks it first drops what the
// child could keep of once's privileges (privdrop.DropThread): on a
// thread of its own that the runtime discards afterwards (a goroutine that
// ends while locked to its thread takes the thread with it).
func startCommand(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		if err := privdrop.DropThread(); err != nil {
			done <- err
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}
