package session

import (
	"os"
	"strings"
	"testing"
)

func TestProcComm(t *testing.T) {
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		pid  uint32
		want string
	}{
		{"self", uint32(os.Getpid()), strings.TrimSuffix(string(self), "\n")},
		{"gone", 1<<22 + 1, ""}, // above pid_max's limit: never a process
	} {
		if got := ProcComm(tc.pid); got != tc.want {
			t.Errorf("%s: ProcComm(%d) = %q, want %q", tc.name, tc.pid, got, tc.want)
		}
	}
}
