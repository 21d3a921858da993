package main

import (
	"context"
	"os"
	"os/exec"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/session"
	"github.com/oncetool/once/trace"
)

// traceExact is once run for compare and demo: cmd traced with every file
// it opens listed (compare counts the opens of each role's files), quietly.
func traceExact(ctx context.Context, cmd *exec.Cmd, linger time.Duration) (*trace.Result, error) {
	return traceFiles(ctx, cmd, linger, trace.FilesAll, stackFlags{}, defaultRings)
}

// defaultRings: once run's rings without --rings or --ring-size.
var defaultRings = traceRings{size: collector.DefaultRingBufferSize}

// traceRings is what --rings and --ring-size ask of a traced run: n rings
// (0: the default for the CPU count), each of size bytes if sizeGiven,
// else size shared out over them.
type traceRings struct {
	n         int
	size      int
	sizeGiven bool
}

// traceFiles is traceExact listing the files of each process that files
// says (trace.FilesAll, trace.FilesDuplicates), with the call stacks
// that st asks for, into the rings r asks for.
func traceFiles(ctx context.Context, cmd *exec.Cmd, linger time.Duration, files string, st stackFlags, r traceRings) (*trace.Result, error) {
	p := detect.KeepAll(files)
	tr, err := collector.Open(collector.Options{Tracked: true, BatchWakeups: true, SendOpensPerKind: p.MaxCalls, LinkCacheDir: cacheDir(),
		StackSize: st.kernelSize(), Rings: r.n, RingBufferSize: ringSize(st.ringSize(r.size, r.sizeGiven), r.sizeGiven, r.n)})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	s := session.New(tr, detect.New(detect.Options{Policy: p, Spawner: os.Getpid(), Stacks: st.on}))
	if st.on {
		ss, err := openStacks(os.Getpid())
		if err != nil {
			return nil, err
		}
		defer ss.Close()
		s.Stacks = ss
	}
	return session.Run(ctx, s, cmd, session.RunOptions{Linger: linger})
}
