package main

import (
	"slices"
	"testing"
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
