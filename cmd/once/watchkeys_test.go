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
