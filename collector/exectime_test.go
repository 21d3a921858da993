package collector_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// An exec's time starts after what once does at its entry (its strings
// read and sent, with stacks its stack copied): the entry reads the clock
// last, so that an attempt's latency, a failed probe's waste, is the
// kernel's. With two rings the entry's strings record carries the time it
// was sent (the rings are merged by it), which must come before the
// exec's start. env searches a PATH of three directories, the target in
// the last.
func TestExecTimeStartsAfterEntryWork(t *testing.T) {
	testprog.RequireRoot(t)
	dirs := pathDirs(t, 3, map[string]string{"oncetarget": ""})
	for _, tc := range []struct {
		name string
		opts collector.Options
	}{
		{"without stacks", collector.Options{}},
		{"with stacks", collector.Options{StackSize: 8192}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Tracked, opts.Rings = true, 2
			tr, err := collector.Open(opts)
			if err != nil {
				t.Fatalf("open tracer: %v", err)
			}
			defer tr.Close()
			sent := map[uint32][]uint64{} // the strings records' times, by the exec's tid
			collector.SetExecArgsSeen(tr, func(ev *trace.Event) {
				sent[ev.Exec.OldTid] = append(sent[ev.Exec.OldTid], ev.Exec.ExitNs)
			})
			var execs []trace.ExecRecord
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.Command("/usr/bin/env", "PATH="+strings.Join(dirs, ":"), "oncetarget")
			r, err := runCommand(ctx, tr, cmd, runOpts{linger: time.Second,
				engine: detect.New(detect.Options{Policy: detect.KeepAll(trace.FilesDuplicates), Spawner: os.Getpid()}),
				onEvent: func(ev *trace.Event, _ detect.Annotation) {
					if ev.Kind == trace.EventExec {
						execs = append(execs, ev.Exec)
					}
				}})
			if err != nil || r.Counters.Lost() != 0 {
				t.Fatalf("trace: %v, %d lost", err, r.Counters.Lost())
			}
			// env, its two misses, the target.
			if len(execs) != 4 {
				t.Fatalf("%d execs, want 4: %+v", len(execs), execs)
			}
			for i, e := range execs {
				q := sent[e.OldTid]
				if len(q) == 0 {
					t.Errorf("exec %d (%s): no strings record before it", i, e.Filename)
					continue
				}
				at := q[0]
				sent[e.OldTid] = q[1:]
				if at == 0 || e.EnterNs <= at {
					t.Errorf("exec %d (%s) started at %d ns, its strings were sent at %d: want its start after them",
						i, e.Filename, e.EnterNs, at)
				}
			}
		})
	}
}
