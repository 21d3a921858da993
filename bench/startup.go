package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// startupRuns is how many starts each of the start-up points makes.
const startupRuns = 9

// startupPoint is once watch's start-up with or without its link cache,
// at rest or right after another once exited.
type startupPoint struct {
	Cache string `json:"cache"` // "warm" or "none"
	// After: started right as the start before it exited, while the
	// kernel lets go of that once's tracepoints; otherwise at rest.
	After   bool    `json:"after_exit,omitempty"`
	ReadyNs []int64 `json:"ready_ns"`
	Error   string  `json:"error,omitempty"`
}

// startupPair starts once watch startupRuns times with its link cache
// warm and as many without one (ONCE_CACHE_DIR empty: the first start on
// a new kernel or a new once), each once the kernel has let go of the
// tracepoints of the start before (atRest), and as many with it warm
// right after the start before exited; in turn, keeping launch →
// watching of each. It runs before the rounds, and its first start (not
// kept) fills the bench's own cache: the rows' once starts all find it
// warm.
func (b *bench) startupPair() []startupPoint {
	logf("start-up with and without the link cache, and right after an exit, %d starts each", startupRuns)
	row := onceWatchRow(b.progs.once, "startup", "", "", "", "startup", true)
	points := []startupPoint{{Cache: "fill"}, {Cache: "warm"}, {Cache: "none"}, {Cache: "warm", After: true}}
	for run := range startupRuns {
		for i := range points {
			p := &points[i]
			if p.Error != "" || p.Cache == "fill" && run > 0 {
				continue
			}
			env := slices.Clone(b.env)
			if p.Cache == "none" {
				env = append(withoutEnv(env, "ONCE_CACHE_DIR"), "ONCE_CACHE_DIR=")
			}
			dir, err := os.MkdirTemp(b.tmp, "startup-")
			if err != nil {
				p.Error = err.Error()
				continue
			}
			if !p.After {
				b.atRest("start-up (" + p.Cache + " cache)")
			}
			s, err := startSession(row, dir, env)
			if err == nil {
				p.ReadyNs = append(p.ReadyNs, s.ReadyNs)
			} else {
				p.Error = err.Error()
			}
			if err := s.stop(); err != nil && p.Error == "" {
				p.Error = "stop: " + err.Error()
			}
			if s.Killed != "" {
				b.res.Warnings = append(b.res.Warnings, "start-up ("+p.Cache+" cache): "+s.Killed)
			}
			os.RemoveAll(dir)
		}
	}
	b.tracerExited = true
	if points[0].Error != "" {
		for i := 1; i < len(points); i++ {
			points[i].Error = "filling the cache: " + points[0].Error
		}
	}
	return points[1:]
}

func withoutEnv(env []string, name string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// onceCacheDir is the bench's own link cache for once (ONCE_CACHE_DIR):
// whatever /var/cache/once holds does not change the figures.
func onceCacheDir(tmp string) string { return filepath.Join(tmp, "once-cache") }

func minOf(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	return fp(slices.Min(v))
}

func maxOf(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	return fp(slices.Max(v))
}
