package session

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestLookCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	for _, tc := range []struct {
		name, path string
		code       int // 0: found
	}{
		{"tool", filepath.Join(dir, "tool"), 0},
		{"./anything/at/all", "./anything/at/all", 0}, // a slash: run as given, its failure traced
		{"notexec", "", 126},
		{"missing", "", 127},
	} {
		path, err := LookCommand(tc.name)
		var se *StartError
		switch {
		case tc.code == 0 && (err != nil || path != tc.path):
			t.Errorf("LookCommand(%q) = %q, %v; want %q", tc.name, path, err, tc.path)
		case tc.code != 0 && (!errors.As(err, &se) || se.Code != tc.code || se.Name != tc.name):
			t.Errorf("LookCommand(%q) error %v; want a StartError with code %d", tc.name, err, tc.code)
		}
	}

	// Found through a relative PATH entry: a shell runs it, from the
	// working directory, as bash and env do (Go's LookPath says
	// exec.ErrDot). Not "permission denied".
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "subtool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct{ path, name, want string }{
		{".", "tool", "./tool"},
		{":/nonexistent", "tool", "./tool"},
		{"/nonexistent:sub", "subtool", "sub/subtool"},
	} {
		t.Setenv("PATH", tc.path)
		if path, err := LookCommand(tc.name); err != nil || path != tc.want {
			t.Errorf("PATH=%s: LookCommand(%q) = %q, %v; want %q", tc.path, tc.name, path, err, tc.want)
		}
	}
}

// A Ctrl-C told before the command started, or just after (it may have
// come before the fork), is early: Run passes it on if the command is
// still running a while later. One told later reached the command from
// the terminal and is not relayed, unless another follows. A SIGTERM is
// always passed on.
func TestRelaySignals(t *testing.T) {
	in := make(chan os.Signal, 4)
	r := relaySignals(in)
	defer r.stop()
	in <- syscall.SIGINT
	if !early(r) {
		t.Fatal("SIGINT before the start: not early")
	}
	r.startedAt.Store(time.Now().UnixNano())
	in <- syscall.SIGINT
	if !early(r) {
		t.Fatal("SIGINT just after the start: not early")
	}
	r.startedAt.Store(time.Now().Add(-2 * earlyWindow).UnixNano())
	in <- syscall.SIGINT
	in <- syscall.SIGTERM
	if got := recv(r.out); got != syscall.SIGTERM {
		t.Fatalf("after the start: relayed %v, want SIGTERM only", got)
	}
	if got := recv(r.out); got != nil {
		t.Fatalf("relayed %v more", got)
	}
	if early(r) {
		t.Fatal("SIGINT well after the start: early")
	}
	// A second one: once alone got them (kill -INT), or the command
	// ignored the first.
	in <- syscall.SIGINT
	if got := recv(r.out); got != syscall.SIGINT {
		t.Fatalf("a second late SIGINT: relayed %v, want SIGINT", got)
	}
}

// A command in a process group of its own (setsid) never gets the
// terminal's Ctrl-C: the first late SIGINT is passed on.
func TestRelaySignalsOwnGroup(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	in := make(chan os.Signal, 4)
	r := relaySignals(in)
	defer r.stop()
	r.pid.Store(int64(cmd.Process.Pid))
	r.startedAt.Store(time.Now().Add(-2 * earlyWindow).UnixNano())
	in <- syscall.SIGINT
	if got := recv(r.out); got != syscall.SIGINT {
		t.Fatalf("relayed %v, want SIGINT", got)
	}
}

func early(r *signalRelay) bool {
	select {
	case <-r.early:
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

func recv(c <-chan os.Signal) os.Signal {
	select {
	case s := <-c:
		return s
	case <-time.After(200 * time.Millisecond):
		return nil
	}
}

// abortSink is a sink whose last sending a signal can cut short.
type abortSink struct {
	NopSink
	aborted chan struct{}
}

func (a *abortSink) Abort() { close(a.aborted) }

// TestAbortOnSignal: while the sinks send what is left (Run's close), a
// signal to once ends an aborter's sending; the signals the relay took
// for the command before (the Ctrl-C that ended it) do not.
func TestAbortOnSignal(t *testing.T) {
	in := make(chan os.Signal, 4)
	r := relaySignals(in)
	r.startedAt.Store(time.Now().Add(-2 * earlyWindow).UnixNano())
	in <- syscall.SIGTERM // the command's, still in the relay
	time.Sleep(50 * time.Millisecond)
	k := &abortSink{aborted: make(chan struct{})}
	stop := abortOnSignal(&Session{sinks: []Sink{k}}, r, in)
	defer stop()
	select {
	case <-k.aborted:
		t.Fatal("aborted by a signal the relay had taken before")
	case <-time.After(100 * time.Millisecond):
	}
	in <- syscall.SIGINT
	select {
	case <-k.aborted:
	case <-time.After(time.Second):
		t.Fatal("a SIGINT while the sinks close did not abort their sending")
	}
	r.stop() // Run's deferred stop: a second one is harmless
}
