package main

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The bpftrace scripts of the floor and bpftrace rows.
var (
	//go:embed bt/snoop.bt
	snoopBT []byte
	//go:embed bt/floor.bt
	floorBT []byte
)

// How a row traces the workloads.
type mode int

const (
	modeNone   mode = iota // untraced: the baseline
	modeWrap               // the tracer runs each workload as its child
	modeSystem             // the tracer runs system-wide around a cell's workloads
)

// procSpec is one process of a system-wide tracer.
type procSpec struct {
	argv   []string
	stdout string // file for its stdout
	stderr string // file for its stderr
	// readyFile and readyText: the line that says it is ready (start-up
	// is measured to it); "" when it prints none the bench can see.
	readyFile, readyText string
	// stop is the signal that makes it stop and write its final output;
	// nil means SIGINT.
	stop os.Signal
	// attachedAtReady: its ready line comes after its last probe is
	// attached (once), so the bench need not watch its descriptors settle.
	attachedAtReady bool
}

// tracer is one row of the table.
type tracer struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	// Command is how the row runs, for the notes.
	Command string `json:"command"`
	Note    string `json:"note,omitempty"`
	mode    mode
	needs   []string // executables it needs
	// w1N overrides the W1 open count (strace: the full count would take
	// minutes per run).
	w1N int
	// precise: a row judged against the floor or a tight limit, which
	// takes W1Reps W1 and W2Reps W2 runs per cell (see reps).
	precise bool
	// rounds: the row runs in the first this many rounds only (0: in
	// every round).
	rounds int
	// wrap returns the command line that runs argv under the tracer,
	// writing its output to out.
	wrap func(out string, argv []string) []string
	// start returns the processes of a system-wide tracer, writing into
	// dir, and the files to count events in.
	start func(dir string) ([]procSpec, []string)
	// index counts the events in the tracer's output files.
	index func(outs, stderrs []string, w1File string) (*eventIndex, error)

	Unavailable string `json:"unavailable,omitempty"` // why the row can't run
}

// tracers returns the rows, in table order.
func (b *bench) tracers() []*tracer {
	once := b.progs.once
	snoop := filepath.Join(b.tmp, "snoop.bt")
	floor := filepath.Join(b.tmp, "floor.bt")
	const straceSet = "trace=open,openat,openat2,creat,execve,execveat"
	// The once-run-other row's command: says it runs, then idles until
	// once passes it a SIGTERM, and exits 0 then.
	const idle = `trap 'kill $!; exit 0' TERM; echo ready >&2; sleep 86400 & wait`
	return []*tracer{
		{Key: "none", Label: "untraced", Command: "(the workload alone)", mode: modeNone},
		{Key: "floor", Label: "floor: empty programs",
			Command: "bench " + floorArg + " (30 syscall tracepoint programs that return at once: opens, execs, lookups, mkdir; loaded and attached as once attaches its own)",
			Note:    "what any BPF tracer of these 30 tracepoints pays; once also has 3 sched hooks (fork, exec, exit) that only W3 exercises",
			mode:    modeSystem, precise: true,
			start: func(dir string) ([]procSpec, []string) {
				out := filepath.Join(dir, "floor.stdout")
				return []procSpec{{argv: []string{b.self, floorArg}, stdout: out,
					stderr: filepath.Join(dir, "floor.stderr"), readyFile: out, readyText: floorReady,
					attachedAtReady: true}}, nil
			},
			index: silentIndex},
		{Key: "floor-bpftrace", Label: "bpftrace, empty programs",
			Command: "bpftrace -o FILE bench/bt/floor.bt (the floor's 30 tracepoints)",
			Note:    "the floor's programs under bpftrace, the floor row before 2026-12-07: bpftrace's empty programs return 1 and its perf events, bound to CPU 0, are enabled, so a traced call on CPU 0 also writes a perf sample (docs/performance.md); no target is judged against it",
			mode:    modeSystem, needs: []string{"bpftrace"},
			start: func(dir string) ([]procSpec, []string) {
				out := filepath.Join(dir, "floor.out")
				return []procSpec{{argv: []string{"bpftrace", "-o", out, floor}, stdout: filepath.Join(dir, "floor.stdout"),
					stderr: filepath.Join(dir, "floor.stderr"), readyFile: out, readyText: "Attaching "}}, []string{out}
			},
			index: silentIndex},
		{Key: "once-run", Label: "once run", Command: "bin/once run --processes all --format json -o FILE -- WORKLOAD",
			Note: "follows the workload's process tree in the kernel; report written at exit, outside the workload's own timing",
			mode: modeWrap, needs: []string{once}, precise: true,
			wrap: func(out string, argv []string) []string {
				return append([]string{once, "run", "--processes", "all", "--format", "json", "-o", out, "--"}, argv...)
			},
			index: func(outs, _ []string, w1File string) (*eventIndex, error) { return indexOnceReport(outs[0], w1File) }},
		{Key: "once-run-stacks", Label: "once run --stacks", Command: "bin/once run --stacks --processes all --format json -o FILE -- WORKLOAD",
			Note: "as once run, and a user stack snapshot (registers, up to 8 KiB of stack, the frame-pointer walk past a cut window) at every open and exec; a first open's kept in the kernel and sent only if the file is opened again, the others sent, unwound and symbolized in user space",
			mode: modeWrap, needs: []string{once}, precise: true,
			wrap: func(out string, argv []string) []string {
				return append([]string{once, "run", "--stacks", "--processes", "all", "--format", "json", "-o", out, "--"}, argv...)
			},
			index: func(outs, _ []string, w1File string) (*eventIndex, error) { return indexOnceReport(outs[0], w1File) }},
		{Key: "once-run-other", Label: "once run, workload outside its tree",
			Command: "bin/once run --format json -o FILE -- sh -c '" + idle + "'",
			Note:    "once run following an idle command while the workloads run outside its tree: what a process pays for a once run it is not part of (the target: no more than the floor)",
			mode:    modeSystem, needs: []string{once, "sh", "sleep"}, precise: true,
			start: func(dir string) ([]procSpec, []string) {
				out := filepath.Join(dir, "other.json")
				errf := filepath.Join(dir, "other.stderr")
				return []procSpec{{argv: []string{once, "run", "--format", "json", "-o", out, "--", "sh", "-c", idle},
					stdout: filepath.Join(dir, "other.stdout"), stderr: errf, readyFile: errf, readyText: "ready",
					// The command starts once everything is attached.
					attachedAtReady: true,
					// once run passes SIGTERM on to the command, whose
					// end ends the run; a SIGINT it leaves to the
					// terminal's process group.
					stop: syscall.SIGTERM}}, nil
			},
			index: func(outs, _ []string, _ string) (*eventIndex, error) {
				x := newIndex()
				x.silent = true // it must see none of them
				return x, nil
			}},
		onceWatchRow(once, "once-watch", "once watch (aggregated)", "bin/once watch --format json -o FILE",
			"system-wide; writes findings and a summary per second; its output names only processes that wasted something, so W2 and W3-absolute can't be counted (its loss counters still cover them)",
			"watch", true),
		onceWatchRow(once, "once-watch-events", "once watch --events", "bin/once watch --events --format json -o FILE",
			"system-wide; one JSON line per event", "events", false, "--events"),
		{Key: "strace", Label: "strace -f", Command: "strace -f -qq -e " + straceSet + " -o FILE WORKLOAD",
			Note: fmt.Sprintf("W1 runs %d opens instead of %d under strace (ptrace stops cost hundreds of µs per call here; the per-call figure does not depend on the count); ", b.cfg.W1StraceN, b.cfg.W1N) +
				referenceNote,
			mode: modeWrap, needs: []string{"strace"}, w1N: b.cfg.W1StraceN, rounds: referenceRounds,
			wrap: func(out string, argv []string) []string {
				return append([]string{"strace", "-f", "-qq", "-e", straceSet, "-o", out}, argv...)
			},
			index: func(outs, _ []string, w1File string) (*eventIndex, error) { return indexStrace(outs[0], w1File) }},
		{Key: "bpftrace", Label: "bpftrace snoop", Command: "bpftrace -o FILE bench/bt/snoop.bt (open*/creat/execve* enter+exit, one line per call)",
			Note: referenceNote, mode: modeSystem, needs: []string{"bpftrace"}, rounds: referenceRounds,
			start: func(dir string) ([]procSpec, []string) {
				out := filepath.Join(dir, "snoop.out")
				return []procSpec{{argv: []string{"bpftrace", "-o", out, snoop}, stdout: filepath.Join(dir, "snoop.stdout"),
					stderr: filepath.Join(dir, "snoop.stderr"), readyFile: out, readyText: "Attaching "}}, []string{out}
			},
			index: func(outs, _ []string, w1File string) (*eventIndex, error) { return indexSnoop(outs[0], w1File) }},
		{Key: "libbpf-tools", Label: "libbpf-tools opensnoop + execsnoop -x",
			Command: "/usr/sbin/opensnoop > FILE and /usr/sbin/execsnoop -x > FILE, both for every workload",
			Note:    "both run in every cell (each only costs the calls it traces); stdout is a file, so block-buffered and its header is not visible at attach time: start-up is to the last attach",
			mode:    modeSystem, needs: []string{"/usr/sbin/opensnoop", "/usr/sbin/execsnoop"},
			start: func(dir string) ([]procSpec, []string) {
				o, e := filepath.Join(dir, "opensnoop.out"), filepath.Join(dir, "execsnoop.out")
				return []procSpec{
					{argv: []string{"/usr/sbin/opensnoop"}, stdout: o, stderr: filepath.Join(dir, "opensnoop.stderr")},
					{argv: []string{"/usr/sbin/execsnoop", "-x"}, stdout: e, stderr: filepath.Join(dir, "execsnoop.stderr")},
				}, []string{o, e}
			},
			index: func(outs, stderrs []string, w1File string) (*eventIndex, error) {
				return indexLibbpfTools(outs[0], outs[1], w1File, stderrs)
			}},
	}
}

// silentIndex is the index of a tracer that prints nothing per event.
func silentIndex(_, _ []string, _ string) (*eventIndex, error) {
	x := newIndex()
	x.silent = true
	return x, nil
}

// referenceRounds is how many rounds strace and bpftrace snoop run in:
// no target is judged against them, their cells are the rounds' longest,
// and their costs are so far from the others' that a median of 3 tells
// them as well as one of 5.
const referenceRounds = 3

var referenceNote = fmt.Sprintf("in the first %d rounds only (no target is judged against it)", referenceRounds)

// inRound reports whether t runs in round r (from 1).
func (t *tracer) inRound(r int) bool { return t.rounds == 0 || r <= t.rounds }

// checkAvailable sets t.Unavailable when a tool the row needs is missing.
func (t *tracer) checkAvailable() {
	for _, n := range t.needs {
		if _, err := exec.LookPath(n); err != nil {
			t.Unavailable = fmt.Sprintf("%s not found (make bench-deps installs it)", n)
			return
		}
	}
}

// session is one system-wide tracer run: started before a cell's
// workloads, stopped after them.
type session struct {
	Round  int    `json:"round"`
	Tracer string `json:"tracer"`
	// ReadyNs: launch → the ready line (once: watching, bpftrace's
	// Attaching line), 0 when the tool prints none visible.
	ReadyNs int64 `json:"ready_ns"`
	// AttachedNs: launch → its last perf-event or BPF-link descriptor,
	// the moment the last probe went live.
	AttachedNs int64 `json:"attached_ns"`
	// RestWaitNs: how long the bench waited, before the launch, for the
	// kernel to let go of the tracer before's tracepoints (restProbe).
	RestWaitNs int64 `json:"rest_wait_ns"`
	PeakRSSKB  int64 `json:"peak_rss_kb"` // VmHWM just before stopping, summed over its processes
	CPUNs      int64 `json:"cpu_ns"`      // CPU it used from attach to stop
	StopNs     int64 `json:"stop_ns"`     // SIGINT → exit, with its final output
	Lost       int64 `json:"events_lost_declared"`
	LostKnown  bool  `json:"events_lost_known"`
	// Foreign lists other tracers found on the machine before the cell.
	Foreign []string `json:"foreign_tracers,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Killed says which process did not stop within stopGrace of its stop
	// signal and was killed: its timings stand, its output may be cut.
	Killed string `json:"killed,omitempty"`

	procs   []*exec.Cmd
	sigs    []os.Signal // what stops each of procs
	files   []*os.File
	outs    []string
	stderrs []string
	cpu0    time.Duration
}

func (s *session) pids() []int {
	var p []int
	for _, c := range s.procs {
		p = append(p, c.Process.Pid)
	}
	return p
}

// active is the running session, for the bench's signal handler.
var (
	activeMu sync.Mutex
	active   *session
)

// stopActive stops the running session, if any, on the bench's way out.
func stopActive() {
	activeMu.Lock()
	s := active
	activeMu.Unlock()
	if s != nil {
		_ = s.stop()
	}
}

// startSession launches a system-wide tracer and waits until it is
// attached: its ready line (if any) printed and its attach descriptors
// stable for a while.
func startSession(t *tracer, dir string, env []string) (*session, error) {
	s := &session{Tracer: t.Key}
	specs, outs := t.start(dir)
	s.outs = outs
	var dirs []string
	for _, sp := range specs {
		if sp.readyText != "" {
			dirs = append(dirs, filepath.Dir(sp.readyFile))
		}
	}
	watch := newReadyWatch(dirs)
	defer watch.close()
	launch := time.Now()
	for _, sp := range specs {
		cmd := exec.Command(sp.argv[0], sp.argv[1:]...)
		cmd.Env = env
		// Should the bench die without stopping it, the tracer must not
		// stay attached, slowing the machine down.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		so, err := os.Create(sp.stdout)
		if err != nil {
			s.stop()
			return s, err
		}
		se, err := os.Create(sp.stderr)
		if err != nil {
			so.Close()
			s.stop()
			return s, err
		}
		s.files = append(s.files, so, se)
		s.stderrs = append(s.stderrs, sp.stderr)
		cmd.Stdout, cmd.Stderr = so, se
		if err := cmd.Start(); err != nil {
			s.stop()
			return s, err
		}
		s.procs = append(s.procs, cmd)
		sig := sp.stop
		if sig == nil {
			sig = os.Interrupt
		}
		s.sigs = append(s.sigs, sig)
	}
	activeMu.Lock()
	active = s
	activeMu.Unlock()

	deadline := launch.Add(60 * time.Second)
	// The ready lines.
	settled := len(specs) > 0
	for _, sp := range specs {
		settled = settled && sp.readyText != "" && sp.attachedAtReady
		if sp.readyText == "" {
			continue
		}
		for {
			if b, _ := os.ReadFile(sp.readyFile); strings.Contains(string(b), sp.readyText) {
				break
			}
			if err := s.checkAlive(deadline); err != nil {
				return s, err
			}
			watch.wait(5 * time.Millisecond)
		}
		s.ReadyNs = int64(time.Since(launch))
	}
	if settled {
		s.AttachedNs = s.ReadyNs
		s.cpu0 = cpuTimeAll(s.pids())
		return s, nil
	}
	// The attach descriptors: stable for 300 ms counts as done. The tools
	// attach their probes one after another within milliseconds.
	const settle = 300 * time.Millisecond
	last, lastChange := -1, time.Now()
	for {
		n := 0
		for _, p := range s.pids() {
			c, _ := attachFDs(p)
			n += c
		}
		now := time.Now()
		if n != last {
			last, lastChange = n, now
		} else if n > 0 && now.Sub(lastChange) >= settle {
			break
		}
		if err := s.checkAlive(deadline); err != nil {
			return s, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.AttachedNs = int64(lastChange.Sub(launch))
	s.cpu0 = cpuTimeAll(s.pids())
	return s, nil
}

// checkAlive fails when a tracer process died or the deadline passed.
func (s *session) checkAlive(deadline time.Time) error {
	for i, c := range s.procs {
		if !alive(c.Process.Pid) {
			b, _ := os.ReadFile(s.stderrs[i])
			s.stop()
			return fmt.Errorf("%s exited while starting: %s", filepath.Base(c.Path), tail(b, 300))
		}
	}
	if time.Now().After(deadline) {
		s.stop()
		return errors.New("not attached after 60s")
	}
	return nil
}

// drain waits until the tracer has consumed what the workload left in its
// buffers (its CPU time stops moving), so the next workload does not pay
// for the previous one's backlog. It returns how long that took.
func (s *session) drain() time.Duration { return s.drainUpTo(30 * time.Second) }

// drainUpTo is drain giving up after limit: a system-wide tracer on a
// machine busy with other work never goes idle.
func (s *session) drainUpTo(limit time.Duration) time.Duration {
	// schedstat counts nanoseconds: a short window tells idle from busy
	// (a tracer with a backlog reads it without pause), and every
	// workload run of a cell waits at least one.
	const window = 50 * time.Millisecond
	start := time.Now()
	prev := cpuTimeAll(s.pids())
	for time.Since(start) < limit {
		time.Sleep(window)
		cur := cpuTimeAll(s.pids())
		if cur-prev <= window/100 { // 1% of a CPU: idle
			return time.Since(start) - window
		}
		prev = cur
	}
	return time.Since(start)
}

// finish reads the peak RSS and CPU time, then stops the tracer.
func (s *session) finish() {
	for _, p := range s.pids() {
		if hwm, _, err := memKB(p); err == nil {
			s.PeakRSSKB += hwm
		}
	}
	s.CPUNs = int64(cpuTimeAll(s.pids()) - s.cpu0)
	t := time.Now()
	if err := s.stop(); err != nil && s.Error == "" {
		s.Error = err.Error()
	}
	s.StopNs = int64(time.Since(t))
}

// stopGrace is how long tracers get, together, to stop and write their
// final output after their stop signal (many times what the slowest
// took) before they are killed: a tracer that ignores the signal must not
// hold the round up.
var stopGrace = 10 * time.Second

// stop interrupts the tracer processes (they flush their output on
// SIGINT, or their procSpec's stop signal) and waits for them; those still
// there after stopGrace are killed, and Killed says so.
func (s *session) stop() error {
	activeMu.Lock()
	defer activeMu.Unlock()
	var firstErr error
	for i, c := range s.procs {
		_ = c.Process.Signal(s.sigs[i])
	}
	expired := make(chan struct{})
	timer := time.AfterFunc(stopGrace, func() { close(expired) })
	defer timer.Stop()
	for i, c := range s.procs {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		var err error
		killed := false
		select {
		case err = <-done:
		case <-expired:
			select {
			case err = <-done: // it made it after all
			default:
				_ = c.Process.Kill()
				<-done
				killed = true
			}
		}
		switch {
		case killed:
			s.Killed = joinErr(s.Killed, fmt.Sprintf("%s did not stop within %v of %s: killed", filepath.Base(c.Path), stopGrace, sigName(s.sigs[i])))
		case err != nil && firstErr == nil:
			b, _ := os.ReadFile(s.stderrs[i])
			firstErr = fmt.Errorf("%s: %v: %s", filepath.Base(c.Path), err, tail(b, 300))
		}
	}
	s.procs, s.sigs = nil, nil
	active = nil
	for _, f := range s.files {
		f.Close()
	}
	s.files = nil
	return firstErr
}

func sigName(sig os.Signal) string {
	if n := unix.SignalName(sig.(syscall.Signal)); n != "" {
		return n
	}
	return sig.String()
}

// onceWatchRow is a row that runs once (the binary) watch system-wide,
// writing JSON lines to stem.jsonl (extra flags before the format), ready
// when its stderr says so; aggregated: findings and summaries, not every
// event. Both are judged against the floor (W1), so both are precise.
func onceWatchRow(once, key, label, command, note, stem string, aggregated bool, extra ...string) *tracer {
	return &tracer{Key: key, Label: label, Command: command, Note: note, mode: modeSystem, needs: []string{once},
		precise: true,
		start: func(dir string) ([]procSpec, []string) {
			out := filepath.Join(dir, stem+".jsonl")
			errf := filepath.Join(dir, stem+".stderr")
			argv := append(append([]string{once, "watch"}, extra...), "--format", "json", "-o", out)
			return []procSpec{{argv: argv, stdout: filepath.Join(dir, stem+".stdout"), stderr: errf,
				readyFile: errf, readyText: "once: watching", attachedAtReady: true}}, []string{out}
		},
		index: func(outs, _ []string, w1File string) (*eventIndex, error) {
			return indexWatch(outs[0], w1File, aggregated)
		}}
}
