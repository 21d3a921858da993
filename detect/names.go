package detect

import "github.com/oncetool/once/trace"

// An image's names (trace.Process.Comm and LastComm).
//
// comm is per thread and changes: an exec sets it to the name of the file
// run, prctl(PR_SET_NAME) or a write to /proc/PID/comm to anything. A
// process's name is its leader's (what /proc/PID/comm, ps and top show),
// never a worker thread's (pthread_setname_np). An image is named once,
// for its life, so that its findings, its row, its metrics series and its
// group never part: by the comm its exec gave it or, when no exec of it
// was seen, by its leader's comm at the leader's first event seen, its
// exit included. A fork record's comm, the parent's at the fork, only
// stands in until then: once watch sees no fork record, and a child that
// renames itself before its first call (systemd's "(sd-...)" children)
// must be named alike by once run and once watch. LastComm follows the
// leader's later renames (a server's setproctitle, a worker's role name),
// shown beside the name, never in its place.

// named takes im's names from t, an event's task: an event of its leader
// gives the image its name if it has none of its own yet, and its latest
// comm. A fork record's task (the child's comm is its parent's) names
// nothing, nor an exec's for the image it replaced (its comm is the new
// image's), nor a record of counts (Engine.counting).
func (e *Engine) named(im *image, t *trace.Task) {
	if t == nil || e.forking || e.replacing || e.counting || t.Tid != t.Pid || t.Comm == "" {
		return
	}
	if im.unnamed {
		im.p.Comm, im.unnamed = t.Comm, false
	}
	im.p.LastComm = t.Comm
}

// execNamed names im, an image its exec began, by the comm the exec gave
// it.
func execNamed(im *image, comm string) {
	im.p.Comm, im.p.LastComm, im.unnamed = comm, comm, false
}
