package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// TestWatchScreenInTmux: in tmux at 80x24 and 200x50, once watch under a
// loop of 50 `cat f f` draws a screen whose every line fits the width,
// the header first, the rows within the height; --group comm makes the 50
// one row, and at 200x50 a row per cat fills the height; q leaves the
// alternate screen for the shell's, with the summary printed there,
// fitted to the width, the columns named as on the screen.
func TestWatchScreenInTmux(t *testing.T) {
	testprog.RequireRoot(t)
	needTool(t, "tmux")
	bin := buildOnce(t)
	// A name of its own: the watch is system-wide, and other cats may
	// run on the machine meanwhile.
	cat := namedCopy(t, "/bin/cat", "oncetmcat")
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	for _, tc := range []struct {
		w, h  int
		group string
	}{{80, 24, "pid"}, {200, 50, "pid"}, {80, 24, "comm"}} {
		t.Run(fmt.Sprintf("%dx%d --group %s", tc.w, tc.h, tc.group), func(t *testing.T) {
			row := reltest.Record(t, fmt.Sprintf("watch screen in tmux %dx%d, --group %s", tc.w, tc.h, tc.group))
			shell := fmt.Sprintf("%s watch --comm oncetmcat --interval 200ms --group %s; echo WATCH-ENDED; sleep 30", bin, tc.group)
			p := newTmuxPane(t, tc.w, tc.h, "sh", "-c", shell)
			var screen string
			testprog.Eventually(t, 20*time.Second, "once watch's header in the pane", func() bool {
				screen = p.screen()
				return strings.HasPrefix(screen, "once watch")
			})
			for i := 0; i < 50; i++ {
				runOK(t, cat, f, f)
			}
			// A redraw that shows the cats; the checks below judge it.
			// At 200x50 a row per cat fills the height: more than the
			// 20 rows of --top's default.
			enough := 1
			if tc.h == 50 && tc.group == "pid" {
				enough = 30
			}
			testprog.WaitFor(10*time.Second, func() bool {
				screen = p.screen()
				if tc.group == "comm" {
					return strings.Contains(screen, "oncetmcat ") && strings.Contains(screen, " 50 ")
				}
				return strings.Count(screen, " oncetmcat ") >= enough
			})
			lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
			if !strings.HasPrefix(lines[0], "once watch") {
				t.Errorf("the first line is not the header: %q", lines[0])
			}
			if len(lines) > tc.h {
				t.Errorf("%d lines on a %d-line screen", len(lines), tc.h)
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > tc.w {
					t.Errorf("a line of %d columns on a %d-column screen: %q", n, tc.w, l)
				}
			}
			cats := strings.Count(screen, " oncetmcat ")
			switch tc.group {
			case "comm":
				if !strings.Contains(screen, "oncetmcat ") || !strings.Contains(screen, " 50 ") {
					t.Errorf("--group comm: no row of 50 oncetmcat processes:\n%s", screen)
				}
			default:
				if cats < enough {
					t.Errorf("%d oncetmcat rows of 50, want %d or more:\n%s", cats, enough, screen)
				}
			}
			p.keys("q")
			var after string
			testprog.WaitFor(10*time.Second, func() bool {
				after = p.screen()
				return strings.Contains(after, "WATCH-ENDED")
			})
			if !strings.Contains(after, "WATCH-ENDED") || !strings.Contains(after, "total:") {
				t.Errorf("after q: not back on the shell's screen with the final table:\n%s", after)
			}
			// The summary fits the width (-J joins the lines the
			// terminal wrapped) and names the columns as the screen
			// does.
			for _, l := range strings.Split(p.joined(), "\n") {
				if n := utf8.RuneCountInString(l); n > tc.w {
					t.Errorf("the summary wraps at %d columns: a line of %d: %q", tc.w, n, l)
				}
			}
			for _, name := range []string{"DUP FILES", "EXTRA OPENS", "EXEC PROBES", "OPEN PROBES"} {
				if strings.Contains(after, name) {
					t.Errorf("the summary names a column %q, the screen its short name:\n%s", name, after)
				}
			}
			row.Inputs, row.Seen = "50 x cat f f", fmt.Sprintf("%d lines, widest fits", len(lines))
		})
	}
}
