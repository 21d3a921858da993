package main

import (
	"fmt"
	"os"
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
	needTool(t, "tmux")
	bin := buildOnce(t)
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	for _, tty := range []bool{true, false} {
		t.Run(fmt.Sprintf("stdin a terminal: %v", tty), func(t *testing.T) {
			in := ""
			if !tty {
				in = " </dev/null"
			}
			shell := fmt.Sprintf("%s watch --comm cat --interval 200ms%s; echo WATCH-ENDED; stty -a | tr ' ' '\\n' | grep -x -- '-\\{0,1\\}icanon\\|-\\{0,1\\}echo' | tr '\\n' ' '; echo; sleep 30", bin, in)
			p := newTmuxPane(t, 100, 30, "sh", "-c", shell)
			p.waitFor("the header", func(s string) bool { return strings.HasPrefix(s, "once watch") })
			for i := 0; i < 5; i++ {
				runOK(t, "cat", f, f)
			}
			p.waitFor("the cat row", func(s string) bool { return strings.Contains(s, "\ncat ") })
			if !tty {
				p.keys("?")
				time.Sleep(500 * time.Millisecond)
				if s := p.screen(); strings.Contains(s, "once watch: help") {
					t.Errorf("? opened help with stdin not a terminal:\n%s", s)
				}
				pids := testprog.Pids(bin, "watch", "--comm", "cat")
				if len(pids) == 0 {
					t.Fatal("once watch --comm cat: no such process")
				}
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGTERM)
				}
				p.waitFor("the end after SIGTERM", func(s string) bool { return strings.Contains(s, "WATCH-ENDED") })
				return
			}
			p.keys("?")
			p.waitFor("help", func(s string) bool { return strings.Contains(s, "once watch: help") })
			p.keys("Escape")
			p.waitFor("the table again", func(s string) bool { return strings.Contains(s, "\ncat ") })
			p.keys("/", "z", "z", "z", "Enter")
			p.waitFor("the filter", func(s string) bool { return strings.Contains(s, `no row matches "zzz"`) })
			p.keys("Escape")
			p.waitFor("the filter cleared", func(s string) bool { return strings.Contains(s, "\ncat ") })
			p.keys("Enter")
			p.waitFor("the cat row's detail", func(s string) bool {
				return strings.HasPrefix(s, "detail") && strings.Contains(s, "comm cat: 5 processes")
			})
			p.keys("q")
			p.waitFor("the end", func(s string) bool { return strings.Contains(s, "WATCH-ENDED") })
			p.waitFor("the terminal restored", func(s string) bool { return strings.Contains(s, "icanon echo") })
		})
	}
}

// TestWatchCtrlZInTmux: Ctrl-Z stops the live screen as it stops top:
// the shell gets its own screen back, the cursor shown and the terminal
// in canonical mode with echo; fg brings the screen back, keys working.
func TestWatchCtrlZInTmux(t *testing.T) {
	testprog.RequireRoot(t)
	bash := needTool(t, "bash")
	bin := buildOnce(t)
	p := newTmuxPane(t, 100, 30, "env", "PS1=PROMPT$ ", bash, "--norc", "--noprofile", "-i")
	stty := `stty -a | tr ' ' '\n' | grep -x -- '-\{0,1\}icanon\|-\{0,1\}echo' | tr '\n' ' '; echo`
	p.waitFor("the prompt", func(s string) bool { return strings.Contains(s, "PROMPT$") })
	p.keys(bin+" watch --comm cat --interval 200ms", "Enter")
	p.waitFor("the header", func(s string) bool { return strings.HasPrefix(s, "once watch") })
	if got := p.format("#{alternate_on} #{cursor_flag}"); got != "1 0" {
		t.Fatalf("while watching: alternate screen, cursor shown = %q, want \"1 0\"", got)
	}

	p.keys("C-z")
	p.waitFor("the job stopped", func(s string) bool { return strings.Contains(s, "Stopped") })
	if got := p.format("#{alternate_on} #{cursor_flag}"); got != "0 1" {
		t.Errorf("stopped: alternate screen, cursor shown = %q, want \"0 1\"", got)
	}
	if s := p.screen(); strings.Contains(s, "once watch") && !strings.Contains(s, "watch --comm cat") {
		t.Errorf("stopped: the live screen is still shown:\n%s", s)
	}
	p.keys(stty, "Enter")
	p.waitFor("the terminal restored while stopped", func(s string) bool { return strings.Contains(s, "icanon echo") })

	p.keys("fg", "Enter")
	p.waitFor("the header again", func(s string) bool { return strings.HasPrefix(s, "once watch") })
	if got := p.format("#{alternate_on} #{cursor_flag}"); got != "1 0" {
		t.Errorf("after fg: alternate screen, cursor shown = %q, want \"1 0\"", got)
	}
	p.keys("?")
	p.waitFor("help after fg (keys read one at a time)", func(s string) bool { return strings.Contains(s, "once watch: help") })
	p.keys("Escape")
	p.keys("q")
	p.waitFor("the prompt after q", func(s string) bool {
		return strings.Count(s, "PROMPT$") >= 3 && !strings.HasPrefix(s, "once watch")
	})
	p.keys("clear; "+stty, "Enter")
	p.waitFor("the terminal restored at the end", func(s string) bool { return strings.Contains(s, "icanon echo") })
}
