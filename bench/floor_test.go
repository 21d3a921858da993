package main

import (
	"slices"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

func TestFloorTracepoints(t *testing.T) {
	names, err := floorTracepoints(floorBT)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 30 {
		t.Errorf("floor.bt names %d tracepoints, want 30: %v", len(names), names)
	}
	for _, want := range []string{"sys_enter_openat2", "sys_exit_newfstatat", "sys_enter_mkdirat", "sys_exit_execveat"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s in %v", want, names)
		}
	}
	for _, c := range []struct {
		script string
		want   []string
		err    bool
	}{
		{"/* x */\ntracepoint:syscalls:sys_enter_open { }\n  tracepoint:syscalls:sys_exit_open { }\n", []string{"sys_enter_open", "sys_exit_open"}, false},
		{"BEGIN { }\n", nil, true},
	} {
		got, err := floorTracepoints([]byte(c.script))
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("floorTracepoints(%q) = %v, %v; want %v (error %v)", c.script, got, err, c.want, c.err)
		}
	}
}

// TestAttachFloor: the floor attaches where the kernel has the tracepoint
// and names the ones it has not, as once leaves those out.
func TestAttachFloor(t *testing.T) {
	testprog.RequireRoot(t)
	links, missing, err := attachFloor([]string{"sys_enter_newfstatat", "sys_exit_no_such_call"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	if len(links) != 1 || !slices.Equal(missing, []string{"sys_exit_no_such_call"}) {
		t.Errorf("%d links, missing %q; want 1 and the made-up call", len(links), missing)
	}
	if _, _, err := attachFloor([]string{"sys_exit_no_such_call"}); err == nil {
		t.Error("no error with none of the tracepoints on the kernel")
	}
}
