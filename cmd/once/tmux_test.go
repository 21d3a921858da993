package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// tmuxPane is a tmux session of one window on a server of its own (its
// socket in the test's temporary directory), killed when the test ends:
// a terminal the live screen's tests type into and read back.
type tmuxPane struct {
	t    *testing.T
	tmux string
	sock string
}

// newTmuxPane starts a w×h session running argv.
func newTmuxPane(t *testing.T, w, h int, argv ...string) *tmuxPane {
	t.Helper()
	p := &tmuxPane{t: t, tmux: needTool(t, "tmux"), sock: filepath.Join(t.TempDir(), "tmux.sock")}
	p.run(append([]string{"new-session", "-d", "-s", "w", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h)}, argv...)...)
	t.Cleanup(func() { exec.Command(p.tmux, "-S", p.sock, "kill-server").Run() })
	return p
}

// run runs a tmux command on the pane's server and returns its output.
func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command(p.tmux, append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return string(out)
}

// screen is what the pane shows; joined: its wrapped lines joined.
func (p *tmuxPane) screen() string { return p.run("capture-pane", "-p", "-t", "w") }
func (p *tmuxPane) joined() string { return p.run("capture-pane", "-p", "-J", "-t", "w") }

// keys types keys (tmux's names: Enter, Escape, C-z) into the pane.
func (p *tmuxPane) keys(keys ...string) { p.run(append([]string{"send-keys", "-t", "w"}, keys...)...) }

// format is a tmux format (#{alternate_on}) expanded for the pane.
func (p *tmuxPane) format(f string) string {
	return strings.TrimSpace(p.run("display-message", "-p", "-t", "w", f))
}

// waitFor waits up to 10 s for the pane to show what ok wants, and fails
// the test with what it shows if it does not.
func (p *tmuxPane) waitFor(what string, ok func(string) bool) string {
	p.t.Helper()
	var s string
	if !testprog.WaitFor(10*time.Second, func() bool { s = p.screen(); return ok(s) }) {
		p.t.Fatalf("%s: not on the screen:\n%s", what, s)
	}
	return s
}
