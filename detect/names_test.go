package detect

import (
	"testing"

	"github.com/oncetool/once/trace"
)

// TestImageNames: an image is named once, for its life, by the comm its
// exec gave it or, without an exec seen, by its leader's comm at the
// leader's first event seen; its leader's later renames (prctl
// PR_SET_NAME, /proc/PID/comm) are its LastComm. A fork record's comm
// (the parent's at the fork) and a worker thread's never name it. Every
// case is fed with its fork records (once run) and without (once watch
// sees none), to the exact and the bounded engine: the four must agree,
// on the image's row, its findings and (exact) its Process.
func TestImageNames(t *testing.T) {
	const ren, renamed, kid = "ren", "renamed", "kid"
	parent := task(10, 10, 1, 2, ren)
	parentRenamed := task(10, 10, 1, 2, renamed)
	child := func(comm string) trace.Task { // a fork of parent: its image, its comm
		c := task(20, 20, 5, 2, comm)
		c.PPid = 10
		return c
	}
	dup := func(s *seq, tk trace.Task, path string, ino uint64) *seq {
		return s.open(tk, path, path, 1, ino, 3).open(tk, path, path, 1, ino, 3)
	}
	type want struct {
		pid            uint32
		execID         uint64
		comm, lastComm string
	}
	tests := []struct {
		name string
		s    *seq
		want want
	}{
		{
			// ./ren: its exec names it ren; it renames itself, then
			// opens /b twice (strace: prctl(PR_SET_NAME, "renamed")).
			name: "renamed after its exec",
			s: dup(dup(new(seq).image(parent, "/t/ren"), parent, "/a", 1), parentRenamed, "/b", 2).
				exit(parentRenamed, 0),
			want: want{10, 2, ren, renamed},
		},
		{
			// Forked while its parent was named renamed, the child
			// writes kid to /proc/self/comm before its first call.
			name: "a forked child renamed before its first call",
			s: dup(new(seq).fork(child(renamed), 10, 1), child(kid), "/c", 3).
				exec(child(kid), "/usr/bin/nosuchprog", enoent, "nosuchprog").
				exec(child(kid), "/bin/nosuchprog", enoent, "nosuchprog").
				exit(child(kid), 0),
			want: want{20, 2, kid, kid},
		},
		{
			name: "a forked child keeps its parent's name",
			s:    dup(new(seq).fork(child(renamed), 10, 1), child(renamed), "/c", 3).exit(child(renamed), 0),
			want: want{20, 2, renamed, renamed},
		},
		{
			// Its first call (the open of /proc/self/comm) was still
			// under its parent's name.
			name: "a forked child renamed after its first call",
			s: dup(new(seq).fork(child(renamed), 10, 1).open(child(renamed), "/proc/self/comm", "/proc/20/comm", 2, 9, 3),
				child(kid), "/c", 3).exit(child(kid), 0),
			want: want{20, 2, renamed, kid},
		},
		{
			// Its name is last seen at its exit.
			name: "renamed after its last call",
			s:    dup(new(seq).image(parent, "/t/ren"), parent, "/a", 1).exit(parentRenamed, 0),
			want: want{10, 2, ren, renamed},
		},
		{
			// A worker named by pthread_setname_np calls first.
			name: "a thread's name is not its process's",
			s: dup(dup(new(seq), task(10, 11, 1, 2, "worker"), "/a", 1), parent, "/b", 2).
				open(task(10, 11, 1, 2, "worker"), "/c", "/c", 1, 3, 3).exit(parent, 0),
			want: want{10, 2, ren, ren},
		},
		{
			// bash -c 'exec -a fake ls': argv[0] is fake, comm the
			// file's name; the image it replaced is not renamed ls.
			name: "exec -a",
			s: dup(new(seq), task(30, 30, 7, 1, "bash"), "/etc/profile", 4).
				exec(task(30, 30, 7, 2, "ls"), "/usr/bin/ls", 0, "fake").
				image(task(30, 30, 7, 2, "ls"), "/usr/bin/ls").exit(task(30, 30, 7, 2, "ls"), 0),
			want: want{30, 1, "bash", "bash"},
		},
		{
			// At the exec of a script (pyenv), the opens bash left
			// unsent are reported for its image once comm is the
			// new image's: a record of counts, no call of bash's.
			name: "the counts an exec reports for the image it left",
			s: dup(new(seq).image(task(30, 30, 7, 1, "bash"), "/usr/bin/bash"), task(30, 30, 7, 1, "bash"), "/etc/profile", 4).
				unsentLookups(task(30, 30, 7, 1, "pyenv"), 3).
				exec(task(30, 30, 7, 2, "pyenv"), "/root/.pyenv/libexec/pyenv", 0, "pyenv").
				image(task(30, 30, 7, 2, "pyenv"), "/usr/bin/env").exit(task(30, 30, 7, 2, "pyenv"), 0),
			want: want{30, 1, "bash", "bash"},
		},
	}
	for _, tc := range tests {
		for _, forks := range []bool{true, false} {
			s := tc.s
			if !forks {
				s = new(seq)
				for _, ev := range tc.s.evs {
					if ev.Kind != trace.EventFork {
						s.evs = append(s.evs, ev)
					}
				}
			}
			for _, pol := range []Policy{KeepAll(trace.FilesAll), Bounded(0, 0)} {
				name := tc.name + map[bool]string{true: ", run", false: ", watch"}[forks] + map[bool]string{true: ", bounded", false: ", exact"}[pol.Bounded]
				e := New(Options{Policy: pol})
				var rows []Row
				for i := range s.evs {
					e.Handle(&s.evs[i], t0)
					if s.evs[i].Kind != trace.EventExit {
						rows = e.Rows(SortTime, 0, GroupPid)
					}
				}
				var fs []trace.Finding
				if pol.Bounded {
					e.Finish(t0)
					fs = e.Drain()
				} else {
					r := e.Result()
					fs = r.Findings
					for _, p := range r.Processes {
						if p.Pid == tc.want.pid && p.Key.ExecID == tc.want.execID && (p.Comm != tc.want.comm || p.LastComm != tc.want.lastComm) {
							t.Errorf("%s: process %d named %q, last %q; want %q, %q", name, p.Pid, p.Comm, p.LastComm, tc.want.comm, tc.want.lastComm)
						}
					}
				}
				n := 0
				for _, f := range fs {
					if f.Pid != tc.want.pid || f.Key.ExecID != tc.want.execID {
						continue
					}
					n++
					if f.Comm != tc.want.comm || f.LastComm != tc.want.lastComm {
						t.Errorf("%s: %s of %s: named %q, last %q; want %q, %q", name, f.Kind, f.Subject(), f.Comm, f.LastComm, tc.want.comm, tc.want.lastComm)
					}
				}
				if n == 0 {
					t.Errorf("%s: no finding of pid %d", name, tc.want.pid)
				}
				for _, r := range rows {
					if r.Pid == tc.want.pid && r.Key.ExecID == tc.want.execID && r.Comm != tc.want.comm {
						t.Errorf("%s: row of pid %d named %q, want %q", name, r.Pid, r.Comm, tc.want.comm)
					}
				}
			}
		}
	}
}
