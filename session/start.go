package session

import (
	"os/exec"

	"github.com/oncetool/once/internal/privdrop"
)

// startCommand starts cmd. When it is to run as another user
// (SysProcAttr.Credential), the thread that forks it first drops what the
// child could keep of once's privileges (privdrop.OnThread).
func startCommand(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil {
		return cmd.Start()
	}
	return privdrop.OnThread(cmd.SysProcAttr.Credential, cmd.Start)
}
