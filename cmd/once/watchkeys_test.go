package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// TestWatchKeysInTmux: on a terminal, the live screen's keys work end to
// end (help, a filter, a row's detail, q) and the terminal is back in
// canonical mode with echo after; with standard input not a terminal
// there are no keys (q does nothing) and SIGTERM still ends it.
func TestWatchKeysInTmux(t *testing.T) {
	testprog.RequireRoot(t)
	tmux := needTool(t, "tmux")
	bin := buildOnce(t)
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	for _, tty := range []bool{true, false} {
		t.Run(fmt.Sprintf("stdin a terminal: %v", tty), func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "tmux.sock")
			tm := func(args ...string) string {
				out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %q: %v: %s", args, err, out)
				}
				return string(out)
			}
			in := ""
			if !tty {
				in = " </dev/null"
			}
			shell := fmt.Sprintf("%s watch --comm cat --interval 200ms%s; echo WATCH-ENDED; stty -a | tr ' ' '\\n' | grep -x -- '-\\{0,1\\}icanon\\|-\\{0,1\\}echo' | tr '\\n' ' '; echo; sleep 30", bin, in)
			tm("new-session", "-d", "-s", "w", "-x", "100", "-y", "30", "sh", "-c", shell)
			t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
			screen := func() string { return tm("capture-pane", "-p", "-t", "w") }
			waitFor := func(what string, ok func(string) bool) {
				t.Helper()
				var s string
				if !testprog.WaitFor(10*time.Second, func() bool { s = screen(); return ok(s) }) {
					t.Fatalf("%s: not on the screen:\n%s", what, s)
				}
			}
			waitFor("the header", func(s string) bool { return strings.HasPrefix(s, "once watch") })
			for i := 0; i < 5; i++ {
				runOK(t, "cat", f, f)
			}
			waitFor("the cat row", func(s string) bool { return strings.Contains(s, "\ncat ") })
			if !tty {
				tm("send-keys", "-t", "w", "?")
				time.Sleep(500 * time.Millisecond)
				if s := screen(); strings.Contains(s, "once watch: help") {
					t.Errorf("? opened help with stdin not a terminal:\n%s", s)
				}
				pids := testprog.Pids(bin, "watch", "--comm", "cat")
				if len(pids) == 0 {
					t.Fatal("once watch --comm cat: no such process")
				}
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGTERM)
				}
				waitFor("the end after SIGTERM", func(s string) bool { return strings.Contains(s, "WATCH-ENDED") })
				return
			}
			tm("send-keys", "-t", "w", "?")
			waitFor("help", func(s string) bool { return strings.Contains(s, "once watch: help") })
			tm("send-keys", "-t", "w", "Escape")
			waitFor("the table again", func(s string) bool { return strings.Contains(s, "\ncat ") })
			tm("send-keys", "-t", "w", "/", "z", "z", "z", "Enter")
			waitFor("the filter", func(s string) bool { return strings.Contains(s, `no row matches "zzz"`) })
			tm("send-keys", "-t", "w", "Escape")
			waitFor("the filter cleared", func(s string) bool { return strings.Contains(s, "\ncat ") })
			tm("send-keys", "-t", "w", "Enter")
			waitFor("the cat row's detail", func(s string) bool {
				return strings.HasPrefix(s, "detail") && strings.Contains(s, "comm cat: 5 processes")
			})
			tm("send-keys", "-t", "w", "q")
			waitFor("the end", func(s string) bool { return strings.Contains(s, "WATCH-ENDED") })
			waitFor("the terminal restored", func(s string) bool { return strings.Contains(s, "icanon echo") })
		})
	}
}

// TestWatchCtrlZInTmux: Ctrl-Z stops the live screen as it stops top:
// the shell gets its own screen back, the cursor shown and the terminal
// in canonical mode with echo; fg brings the screen back, keys working.
func TestWatchCtrlZInTmux(t *testing.T) {
	testprog.RequireRoot(t)
	tmux := needTool(t, "tmux")
	bash := needTool(t, "bash")
	bin := buildOnce(t)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v: %s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-s", "w", "-x", "100", "-y", "30", "env", "PS1=PROMPT$ ", bash, "--norc", "--noprofile", "-i")
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	screen := func() string { return tm("capture-pane", "-p", "-t", "w") }
	pane := func(format string) string { return strings.TrimSpace(tm("display-message", "-p", "-t", "w", format)) }
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		var s string
		if !testprog.WaitFor(10*time.Second, func() bool { s = screen(); return ok(s) }) {
			t.Fatalf("%s: not on the screen:\n%s", what, s)
		}
	}
	stty := `stty -a | tr ' ' '\n' | grep -x -- '-\{0,1\}icanon\|-\{0,1\}echo' | tr '\n' ' '; echo`
	waitFor("the prompt", func(s string) bool { return strings.Contains(s, "PROMPT$") })
	tm("send-keys", "-t", "w", bin+" watch --comm cat --interval 200ms", "Enter")
	waitFor("the header", func(s string) bool { return strings.HasPrefix(s, "once watch") })
	if got := pane("#{alternate_on} #{cursor_flag}"); got != "1 0" {
		t.Fatalf("while watching: alternate screen, cursor shown = %q, want \"1 0\"", got)
	}

	tm("send-keys", "-t", "w", "C-z")
	waitFor("the job stopped", func(s string) bool { return strings.Contains(s, "Stopped") })
	if got := pane("#{alternate_on} #{cursor_flag}"); got != "0 1" {
		t.Errorf("stopped: alternate screen, cursor shown = %q, want \"0 1\"", got)
	}
	if s := screen(); strings.Contains(s, "once watch") && !strings.Contains(s, "watch --comm cat") {
		t.Errorf("stopped: the live screen is still shown:\n%s", s)
	}
	tm("send-keys", "-t", "w", stty, "Enter")
	waitFor("the terminal restored while stopped", func(s string) bool { return strings.Contains(s, "icanon echo") })

	tm("send-keys", "-t", "w", "fg", "Enter")
	waitFor("the header again", func(s string) bool { return strings.HasPrefix(s, "once watch") })
	if got := pane("#{alternate_on} #{cursor_flag}"); got != "1 0" {
		t.Errorf("after fg: alternate screen, cursor shown = %q, want \"1 0\"", got)
	}
	tm("send-keys", "-t", "w", "?")
	waitFor("help after fg (keys read one at a time)", func(s string) bool { return strings.Contains(s, "once watch: help") })
	tm("send-keys", "-t", "w", "Escape")
	tm("send-keys", "-t", "w", "q")
	waitFor("the prompt after q", func(s string) bool {
		return strings.Count(s, "PROMPT$") >= 3 && !strings.HasPrefix(s, "once watch")
	})
	tm("send-keys", "-t", "w", "clear; "+stty, "Enter")
	waitFor("the terminal restored at the end", func(s string) bool { return strings.Contains(s, "icanon echo") })
}
