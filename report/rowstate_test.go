package report

import (
	"testing"
	"time"

	"github.com/oncetool/once/detect"
)

// TestRowStateExitUnseen: a process image ended without its exit event
// (lost, or left out by the kernel's filters: --comm and a process that
// renamed itself) says it ended, not an exit code it never had.
func TestRowStateExitUnseen(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		row  detect.Row
		want string
	}{
		{"running", detect.Row{Running: 1}, "running"},
		{"exited 3", detect.Row{Exited: true, ExitCode: 3, LastSeen: now.Add(-4 * time.Second)}, "exited 3 4s ago"},
		{"exit unseen", detect.Row{Exited: true, ExitUnseen: true, LastSeen: now.Add(-4 * time.Second)}, "ended 4s ago"},
		{"exec'd", detect.Row{Exited: true, Replaced: true, LastSeen: now.Add(-2 * time.Second)}, "exec'd 2s ago"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &detect.Snapshot{Time: now, Group: detect.GroupPid}
			if got := rowState(s, &tc.row); got != tc.want {
				t.Errorf("rowState = %q, want %q", got, tc.want)
			}
		})
	}
}
