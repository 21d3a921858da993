package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTracer is a system-wide "tracer" that says ready and then waits;
// ignoring SIGINT (as bpftrace once did for 30 s) when deaf.
func fakeTracer(deaf bool) *tracer {
	script := "echo ready >&2; exec sleep 60"
	if deaf {
		// An ignored signal stays ignored across exec.
		script = "trap '' INT; " + script
	}
	return &tracer{Key: "fake", mode: modeSystem, start: func(dir string) ([]procSpec, []string) {
		errf := filepath.Join(dir, "fake.stderr")
		return []procSpec{{argv: []string{"sh", "-c", script}, stdout: filepath.Join(dir, "fake.stdout"), stderr: errf,
			readyFile: errf, readyText: "ready", attachedAtReady: true}}, nil
	}}
}

// TestStopKillsDeafTracer: a tracer that ignores SIGINT is killed once
// stopGrace has passed, not 30 s later, and the session says so without
// failing: its timings stand. One that stops is not killed.
func TestStopKillsDeafTracer(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 300 * time.Millisecond
	for _, deaf := range []bool{false, true} {
		s, err := startSession(fakeTracer(deaf), t.TempDir(), os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		pid := s.pids()[0]
		start := time.Now()
		s.finish()
		took := time.Since(start)
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("deaf %v: pid %d still there after finish", deaf, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		switch {
		case deaf && !strings.Contains(s.Killed, "did not stop within 300ms of SIGINT: killed"):
			t.Errorf("deaf: Killed %q, want it noted", s.Killed)
		case !deaf && s.Killed != "":
			t.Errorf("a tracer that stops: Killed %q", s.Killed)
		case took > 3*time.Second:
			t.Errorf("deaf %v: stopping took %v, want about stopGrace", deaf, took)
		}
		if deaf && s.Error != "" {
			t.Errorf("deaf: session error %q: a killed tracer's timings stand", s.Error)
		}
	}
}

// TestKilledSessionKeepsItsRound: the samples of a cell whose tracer had
// to be killed are kept, and the row notes the kill.
func TestKilledSessionKeepsItsRound(t *testing.T) {
	r := &results{
		Config:  config{W3K: 7},
		W2Opens: 1000,
		Tracers: []*tracer{{Key: "none", mode: modeNone}, {Key: "x", mode: modeSystem, Label: "x"}},
		Samples: []*sample{
			{Tracer: "none", Round: 1, Workload: w2, WallNs: 100e6, Seen: -1},
			{Tracer: "x", Round: 1, Workload: w2, WallNs: 110e6, Seen: -1},
		},
		Sessions: []*session{{Round: 1, Tracer: "x", AttachedNs: 1e6, Killed: "bpftrace did not stop within 10s of SIGINT: killed"}},
	}
	r.summarize()
	x := r.Rows[1]
	if x.W2WallNs == nil || *x.W2WallNs != 110e6 {
		t.Errorf("W2 wall %v, want the killed round's 110 ms kept", x.W2WallNs)
	}
	if len(x.Errors) != 1 || !strings.Contains(x.Errors[0], "round 1: bpftrace did not stop") {
		t.Errorf("notes %q, want the kill noted", x.Errors)
	}
	if md := r.markdown(); !strings.Contains(md, "bpftrace did not stop within 10s of SIGINT: killed") {
		t.Errorf("markdown does not note the kill")
	}
}

// TestReferenceRowsFewerRounds: strace and bpftrace snoop, far from any
// target and the rounds' longest cells, run in the first rounds only;
// every other row in all of them.
func TestReferenceRowsFewerRounds(t *testing.T) {
	b := &bench{cfg: config{W1StraceN: 20000, W1N: 200000}, progs: programs{once: "once"}}
	for _, row := range b.tracers() {
		switch row.Key {
		case "strace", "bpftrace":
			if !row.inRound(referenceRounds) || row.inRound(referenceRounds+1) {
				t.Errorf("%s: rounds %d, want the first %d only", row.Key, row.rounds, referenceRounds)
			}
		default:
			if !row.inRound(5) {
				t.Errorf("%s: not in round 5 (rounds %d)", row.Key, row.rounds)
			}
		}
	}
}
