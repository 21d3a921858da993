package session

import (
	"os/exec"

	"github.com/oncetool/once/internal/privdrop"
)

// commandLauncher is a StackResolver that runs the command's start
// where the command inherits what it records (Stacks.Launch).
type commandLauncher interface {
	Launch(start func() error) error
}

// startCommand starts cmd: on a thread of once's own whose perf events
// the command inherits (--stacks: Stacks.Launch), or where it is. When
// it is to run as another user (SysProcAttr.Credential), the thread that
// forks it first drops what the child could keep of once's privileges
// (privdrop): the launcher's thread is not used again, and another is
// made for it otherwise (privdrop.OnThread).
func startCommand(s *Session, cmd *exec.Cmd) error {
	attr := cmd.SysProcAttr
	if l, ok := s.Stacks.(commandLauncher); ok {
		return l.Launch(func() error {
			if attr != nil && attr.Credential != nil {
				if err := privdrop.DropThread(); err != nil {
					return err
				}
			}
			return cmd.Start()
		})
	}
	if attr == nil || attr.Credential == nil {
		return cmd.Start()
	}
	return privdrop.OnThread(attr.Credential, cmd.Start)
}
