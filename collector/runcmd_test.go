package collector_test

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

func init() {
	collector.RunForTest = func(ctx context.Context, tr *collector.Tracer, cmd *exec.Cmd, linger time.Duration, onStart func(int)) (*trace.Result, error) {
		return runCommand(ctx, tr, cmd, runOpts{linger: linger, onStart: onStart})
	}
}

type runOpts struct {
	linger  time.Duration
	onStart func(int)
	onEvent func(*trace.Event, detect.Annotation)
	engine  *detect.Engine // default: exact, every file listed
}

// runCommand is once run's pipeline: cmd traced by tr, its events fed to
// an engine by the session's drain loop.
func runCommand(ctx context.Context, tr *collector.Tracer, cmd *exec.Cmd, o runOpts) (*trace.Result, error) {
	eng := o.engine
	if eng == nil {
		eng = detect.New(detect.Options{Policy: detect.KeepAll(trace.FilesAll), Spawner: os.Getpid()})
	}
	s := session.New(tr, eng)
	if o.onEvent != nil {
		s.AddSink(session.EventFunc(o.onEvent))
	}
	return session.Run(ctx, s, cmd, session.RunOptions{Linger: o.linger, OnStart: o.onStart})
}
