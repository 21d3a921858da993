package testprog_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// recorder stands for a test: it records whether the helper skipped or
// failed it; both end only the helper's goroutine.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(a ...any) {
	r.skipped, r.msg = true, fmt.Sprint(a...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, a ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, a...)
	runtime.Goexit()
}

func record(fn func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); fn(r) }()
	<-done
	return r
}

// TestNeedTool: a missing tool skips the test, or fails it under CI=true;
// a present one is returned.
func TestNeedTool(t *testing.T) {
	tests := []struct {
		ci, tool      string
		skip, fail    bool
		wantPathFound bool
	}{
		{"", "sh", false, false, true},
		{"true", "sh", false, false, true},
		{"", "once-no-such-tool", true, false, false},
		{"true", "once-no-such-tool", false, true, false},
		{"false", "once-no-such-tool", true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.ci+" "+tc.tool, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			var path string
			r := record(func(tb testing.TB) { path = testprog.NeedTool(tb, tc.tool) })
			if r.skipped != tc.skip || r.failed != tc.fail || (path != "") != tc.wantPathFound {
				t.Errorf("skipped %v failed %v path %q (%s); want skipped %v failed %v", r.skipped, r.failed, path, r.msg, tc.skip, tc.fail)
			}
		})
	}
}

func TestSkip(t *testing.T) {
	for _, tc := range []struct {
		ci         string
		skip, fail bool
	}{{"", true, false}, {"true", false, true}} {
		t.Setenv("CI", tc.ci)
		r := record(func(tb testing.TB) { testprog.Skipf(tb, "no %s", "io_uring") })
		if r.skipped != tc.skip || r.failed != tc.fail || r.msg[:11] != "no io_uring" {
			t.Errorf("CI=%q: skipped %v failed %v (%q)", tc.ci, r.skipped, r.failed, r.msg)
		}
	}
}

func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	start := time.Now()
	if !testprog.WaitFor(5*time.Second, func() bool { return n.Add(1) == 3 }) {
		t.Error("a condition true at the third look was not seen")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("WaitFor took %v for a condition true at once", d)
	}
	start = time.Now()
	if testprog.WaitFor(50*time.Millisecond, func() bool { return false }) {
		t.Error("a false condition was reported true")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("WaitFor gave up after %v, before its deadline", d)
	}
	r := record(func(tb testing.TB) {
		testprog.Eventually(tb, 20*time.Millisecond, "nothing", func() bool { return false })
	})
	if !r.failed || r.msg != "waited 20ms for nothing" {
		t.Errorf("Eventually of a false condition: failed %v, %q", r.failed, r.msg)
	}
}
