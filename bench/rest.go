package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A once that exits leaves its syscall tracepoints' perf events to the
// kernel, which lets go of them one after another in a worker, each
// holding the tracing events' lock through the tracepoint's grace
// periods (docs/performance.md, After the command). A tracer started
// meanwhile waits for that lock in its attach, for as long as the rest
// of the release takes: its start-up measures the once before it. So
// the bench starts a system-wide row, and the start-up pair's starts at
// rest, only once the lock is free for good.
//
// The probe: a perf event opened and closed on a tracepoint nothing hits
// takes the same lock twice, and waits while the worker holds it. An
// anchor event kept open on the same tracepoint makes the probe never
// its last user, so closing it waits for no grace period of its own.

// restTracepoints are tracepoints hit almost never (a module's init, an
// OOM kill): an event on them costs the machine nothing.
var restTracepoints = []string{"initcall/initcall_finish", "oom/mark_victim", "module/module_free"}

const (
	// restQuick is how long a probe may take with the lock free: opening
	// and closing a perf event, tenths of a millisecond; a probe that
	// waited for the worker takes a grace period, tens of milliseconds.
	restQuick = 2 * time.Millisecond
	// restQuiet is how long probes must stay quick in a row: longer than
	// the gap between a once's exit and the worker's first release (an
	// RCU grace period, then a timer tick), during which they are quick
	// although the release has not begun.
	restQuiet = 150 * time.Millisecond
	restEvery = 25 * time.Millisecond
	// restMax bounds the wait: the release takes about 40 ms per
	// tracepoint, a little over a second for once's.
	restMax = 5 * time.Second
)

// restProbe tells when the kernel holds no tracer's release.
type restProbe struct {
	id     uint64
	anchor int
}

// newRestProbe opens the anchor on the first of restTracepoints tracefs
// has.
func newRestProbe(tracefs string) (*restProbe, error) {
	var errs []error
	for _, tp := range restTracepoints {
		b, err := os.ReadFile(filepath.Join(tracefs, "events", tp, "id"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s id: %w", tp, err))
			continue
		}
		fd, err := openTracepointEvent(id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", tp, err))
			continue
		}
		return &restProbe{id: id, anchor: fd}, nil
	}
	return nil, fmt.Errorf("no tracepoint to probe the tracing lock with: %w", errors.Join(errs...))
}

func openTracepointEvent(id uint64) (int, error) {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_TRACEPOINT, Config: id, Sample_type: unix.PERF_SAMPLE_RAW, Sample: 1, Bits: unix.PerfBitDisabled}
	attr.Size = uint32(unsafe.Sizeof(attr))
	return unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// wait returns once probes have been quick for restQuiet in a row, or
// after restMax (settled false); waited is how long it took.
func (p *restProbe) wait() (waited time.Duration, settled bool) {
	start := time.Now()
	var quietSince time.Time
	for {
		t := time.Now()
		fd, err := openTracepointEvent(p.id)
		if err != nil {
			return time.Since(start), false
		}
		unix.Close(fd)
		now := time.Now()
		if now.Sub(t) >= restQuick {
			quietSince = time.Time{}
		} else if quietSince.IsZero() {
			quietSince = t
		} else if now.Sub(quietSince) >= restQuiet {
			return now.Sub(start), true
		}
		if now.Sub(start) >= restMax {
			return now.Sub(start), false
		}
		time.Sleep(restEvery)
	}
}

// atRest waits until the kernel has let go of the tracer before's
// tracepoints (restProbe), and returns how long that took; a wait that
// did not settle is a warning, and the start goes ahead.
func (b *bench) atRest(what string) int64 {
	if b.rest == nil && !b.restFailed {
		// Made at the first wait: by then once has mounted tracefs, if
		// it was not.
		var err error
		if b.rest, err = newRestProbe(tracefsDir()); err != nil {
			b.restFailed = true
			b.res.Warnings = append(b.res.Warnings, "runs and starts not held back until the kernel lets go of the tracer before's tracepoints: "+err.Error())
		}
	}
	if b.rest == nil {
		return 0
	}
	waited, settled := b.rest.wait()
	b.res.RestWaits++
	b.res.RestWaitNs += int64(waited)
	if !settled {
		b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("%s: the tracing events' lock still busy after %v; started anyway", what, waited.Round(time.Millisecond)))
	}
	return int64(waited)
}

// settle waits atRest if a tracer exited since the last time: before
// every timed run and system-wide start, so that no run pays for the
// syscall tracepoints the kernel still has registered for a once that
// exited (every syscall takes the tracing path until the last is let
// go of), and no start waits for them. It says how long it waited, and
// whether it did.
func (b *bench) settle(what string) (waited int64, rested bool) {
	if !b.tracerExited || !b.cfg.Settle {
		return 0, false
	}
	b.tracerExited = false
	return b.atRest(what), true
}

// warmUntraced runs run, an untimed run of workload wl, before t's timed
// run of it when t is the untraced row and the machine is cold for it:
// settle waited (rested: idle for up to a second or more), or the run
// before was of another workload. On this VM the first run after either
// is slower than the next by up to a third (cp -r 35-90 ms, then 26-30;
// the first W2 of an untraced block after W1 and W3 the slowest of its
// nine), while a wrapping tracer's run comes right after its untraced
// pair of the same workload and its own busy start. Without it the
// untraced half of a pair ran cold and the traced half warm, in the
// tracer's favour. Traced runs get none: under a system-wide tracer the
// warm-up would count in the tracer's events and CPU, and a cold traced
// run errs against the tracer.
func (b *bench) warmUntraced(t *tracer, wl string, rested bool, run func()) {
	cold := rested || b.lastWorkload != wl
	b.lastWorkload = wl
	if t.mode != modeNone || !cold {
		return
	}
	run()
	b.res.WarmUps++
}

// tracefsDir is where tracefs is mounted, or its usual place.
func tracefsDir() string {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return d
		}
	}
	return "/sys/kernel/tracing"
}

func (p *restProbe) close() {
	if p != nil {
		unix.Close(p.anchor)
	}
}
