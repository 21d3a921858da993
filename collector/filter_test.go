package collector_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// workload is a helper process started before the tracer, blocked on its
// stdin (opener -wait-stdin) until traceFiltered releases it.
type workload struct {
	cmd     *exec.Cmd
	release *os.File
	stdout  bytes.Buffer
	stderr  bytes.Buffer
}

func (w *workload) pid() uint32 { return uint32(w.cmd.Process.Pid) }

// proc is a process: its pid, and its parent's, which tells it apart from a
// later process that reuses the pid of one already reaped (system-wide,
// other processes come and go all the time).
type proc struct{ pid, ppid uint32 }

func (w *workload) proc() proc { return proc{w.pid(), uint32(os.Getpid())} }

// exited returns when the workload has exited, without reaping it: while
// it is a zombie its pid can't be reused, so every event with its pid
// is its own.
func (w *workload) exited() error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, w.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// startBlocked starts argv (an opener with -wait-stdin) after setup has
// adjusted the command; the process is killed at the end of the test if
// still running.
func startBlocked(t *testing.T, setup func(*exec.Cmd), argv ...string) *workload {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	wl := &workload{cmd: exec.Command(argv[0], argv[1:]...), release: w}
	wl.cmd.Stdin, wl.cmd.Stdout, wl.cmd.Stderr = r, &wl.stdout, &wl.stderr
	if setup != nil {
		setup(wl.cmd)
	}
	err = wl.cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		t.Fatalf("start %q: %v", argv, err)
	}
	t.Cleanup(func() {
		w.Close()
		if wl.cmd.ProcessState == nil {
			_ = wl.cmd.Process.Kill()
			_ = wl.cmd.Wait()
		}
	})
	return wl
}

// seen is what reached user space during a run: every record the tracer
// read, from any process on the machine, in order.
type seen struct {
	all      []trace.Event
	counters trace.Counters
}

// traceFiltered opens a system-wide tracer with f, releases the workloads,
// reads while they run and, once they have all been waited for (so every
// record of theirs is in the ring buffer), flushes the ring and reads
// what is left: no sleep decides when the run is over.
func traceFiltered(t *testing.T, f collector.Filter, ws ...*workload) *seen {
	t.Helper()
	return traceFilteredWith(t, f, nil, ws...)
}

// traceFilteredWith is traceFiltered, with setup (if not nil) given the
// tracer before the workloads are let go.
func traceFilteredWith(t *testing.T, f collector.Filter, setup func(*collector.Tracer), ws ...*workload) *seen {
	t.Helper()
	testprog.RequireRoot(t)
	tr, err := collector.Open(collector.Options{Filter: f})
	if err != nil {
		t.Fatalf("open tracer with %+v: %v", f, err)
	}
	defer tr.Close()
	if setup != nil {
		setup(tr)
	}

	exited := make(chan error, len(ws))
	for _, w := range ws {
		w.release.Close()
		go func() { exited <- w.exited() }()
	}
	// Reaped only when everything has been read.
	defer func() {
		for _, w := range ws {
			if err := w.cmd.Wait(); err != nil {
				t.Errorf("%q: %v: %s", w.cmd.Args, err, w.stderr.String())
			}
		}
	}()

	s := &seen{}
	var ev trace.Event
	keep := func() { s.all = append(s.all, ev) }
	deadline := time.Now().Add(time.Minute)
	for running := len(ws); running > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("workloads still running after a minute")
		}
		// Checked at every record: a busy machine may never let Next
		// time out.
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("wait for a workload: %v", err)
			}
			running--
			continue
		default:
		}
		tr.SetDeadline(time.Now().Add(25 * time.Millisecond))
		switch err := tr.Next(&ev, &s.counters); {
		case err == nil:
			keep()
		case errors.Is(err, collector.ErrTimeout):
		default:
			t.Fatalf("read: %v", err)
		}
	}
	// Every workload (and, before it, each child it waited for) has
	// exited: all their records were written, in their own context.
	// Read up to the last one there is.
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	tr.SetDeadline(time.Time{})
	for {
		err := tr.Next(&ev, &s.counters)
		if errors.Is(err, collector.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("read after flush: %v", err)
		}
		keep()
	}
	if err := tr.KernelCounters(&s.counters); err != nil {
		t.Fatal(err)
	}
	if s.counters.DroppedEvents != 0 || s.counters.DecodeErrors != 0 {
		t.Fatalf("lost records, exact counts are meaningless: %+v", s.counters)
	}
	return s
}

// of returns the events of process p, of kind k (0: any), from any process
// on the machine.
func (s *seen) of(p proc, k trace.EventKind) []trace.Event {
	var out []trace.Event
	for _, ev := range s.all {
		if ev.Task.Pid == p.pid && ev.Task.PPid == p.ppid && (k == 0 || ev.Kind == k) {
			out = append(out, ev)
		}
	}
	return out
}

// opensOfFile counts p's opens of the file id.
func (s *seen) opensOfFile(p proc, id fileID) int {
	n := 0
	for _, ev := range s.of(p, trace.EventOpen) {
		if ev.Open.Ret >= 0 && ev.Open.Dev == id.dev && ev.Open.Ino == id.ino {
			n++
		}
	}
	return n
}

// children returns the processes seen whose parent is p (a workload, which
// can't fork once a zombie: its children can't be mistaken).
func (s *seen) children(p proc) []proc {
	var out []proc
	for _, ev := range s.all {
		c := proc{ev.Task.Pid, ev.Task.PPid}
		if c.ppid == p.pid && c.pid != p.pid && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// wantProcess checks that p reported exactly opens opens of id and exactly
// one exit.
func (s *seen) wantProcess(t *testing.T, name string, p proc, id fileID, opens int) {
	t.Helper()
	if n := s.opensOfFile(p, id); n != opens {
		t.Errorf("%s (pid %d): %d opens of the target reached user space, want %d", name, p.pid, n, opens)
	}
	if n := len(s.of(p, trace.EventExit)); n != 1 {
		t.Errorf("%s (pid %d): %d exit events, want 1", name, p.pid, n)
	}
}

// wantNothing checks that not a single record about p reached user space.
func (s *seen) wantNothing(t *testing.T, name string, p proc) {
	t.Helper()
	var kinds []string
	for _, ev := range s.of(p, 0) {
		kinds = append(kinds, strconv.Itoa(int(ev.Kind))+"/"+ev.Task.Comm)
	}
	if len(kinds) != 0 {
		t.Errorf("%s (pid %d) is filtered out, yet %d of its events reached user space (kind/comm: %v)",
			name, p.pid, len(kinds), kinds)
	}
}

// wantOnly checks every record that reached user space, from any process on
// the machine, against the filter. With exclusive (no process but the
// test's can pass the filter), it also checks that the kernel sent nothing
// that was not read: its count of records sent equals the records read.
func (s *seen) wantOnly(t *testing.T, what string, exclusive bool, ok func(*trace.Event) bool) {
	t.Helper()
	bad := 0
	for i := range s.all {
		if !ok(&s.all[i]) {
			if bad < 5 {
				ev := &s.all[i]
				t.Errorf("event kind %d of pid %d (%s, uid %d, cgroup %d) passed a filter on %s",
					ev.Kind, ev.Task.Pid, ev.Task.Comm, ev.Task.UID, ev.Task.CgroupID, what)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d events should have been filtered out in the kernel", bad, len(s.all))
	}
	if c := s.counters; exclusive && c.EventsSent != c.EventsReceived {
		t.Errorf("kernel sent %d records, %d read: the filter let through records from elsewhere",
			c.EventsSent, c.EventsReceived)
	}
}

var childRan = regexp.MustCompile(`(?m)^child (\d+) ran`)

// childOf is the process the opener's child: action ran (it says, with -v).
func childOf(t *testing.T, w *workload) proc {
	t.Helper()
	m := childRan.FindStringSubmatch(w.stdout.String())
	if m == nil {
		t.Fatalf("no child pid in the opener's output %q", w.stdout.String())
	}
	n, _ := strconv.Atoi(m[1])
	return proc{uint32(n), w.pid()}
}

func TestFilterPid(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	f := tempFile(t, t.TempDir(), "target")
	id := idOf(t, f)

	for _, tree := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "tree"}[tree], func(t *testing.T) {
			p := startBlocked(t, nil, opener, "-v", "-wait-stdin", "repeat:2:openat:"+f, "child:openat:"+f)
			other := startBlocked(t, nil, opener, "-v", "-wait-stdin", "repeat:2:openat:"+f, "child:openat:"+f)
			s := traceFiltered(t, collector.Filter{Pids: []int{p.cmd.Process.Pid}, Tree: tree}, p, other)

			child := childOf(t, p)
			s.wantProcess(t, "the pid", p.proc(), id, 2)
			s.wantNothing(t, "the other process", other.proc())
			s.wantNothing(t, "the other process's child", childOf(t, other))
			if !tree {
				s.wantNothing(t, "the pid's child without Tree", child)
				s.wantOnly(t, "pid", true, func(ev *trace.Event) bool { return ev.Task.Pid == p.pid() })
				return
			}
			s.wantProcess(t, "the pid's child", child, id, 1)
			if forks := s.of(child, trace.EventFork); len(forks) != 1 || forks[0].Proc.ParentPid != p.pid() {
				t.Errorf("fork events of the child: %+v, want one from %d", forks, p.pid())
			}
			// os/exec may fork a probe first (clone with CLONE_PIDFD, then
			// exit): a child too, reported as such.
			kids := s.children(p.proc())
			if !slices.Contains(kids, child) {
				t.Errorf("children of the pid seen: %v, want %v among them", kids, child)
			}
			s.wantOnly(t, "pid tree", true, func(ev *trace.Event) bool {
				return ev.Task.Pid == p.pid() || slices.Contains(kids, proc{ev.Task.Pid, ev.Task.PPid})
			})
		})
	}

	// The tree is followed whatever the other filters say; they decide
	// what is reported. Here they leave out the pid (comm "opener") and
	// its fork of the child (reported in the parent's context, comm
	// "opener" too), not the child once it has exec'd (comm "exe", from
	// /proc/self/exe).
	t.Run("tree and excluded comm", func(t *testing.T) {
		p := startBlocked(t, nil, opener, "-v", "-wait-stdin", "repeat:2:openat:"+f, "child:openat:"+f)
		s := traceFiltered(t, collector.Filter{Pids: []int{p.cmd.Process.Pid}, Tree: true, ExcludeComms: []string{"opener"}}, p)
		child := childOf(t, p)
		s.wantNothing(t, "the pid, excluded by comm", p.proc())
		s.wantProcess(t, "the pid's child, comm exe", child, id, 1)
		if n := len(s.of(child, trace.EventFork)); n != 0 {
			t.Errorf("%d fork events of the child: its parent's comm is excluded", n)
		}
		s.wantOnly(t, "pid tree and comm", true, func(ev *trace.Event) bool {
			return ev.Task.Pid == child.pid && ev.Task.PPid == child.ppid && ev.Task.Comm == "exe"
		})
	})
}

// namedOpeners copies the opener to dir under each name, so that its comm
// is that name.
func namedOpeners(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		out = append(out, copyHelper(t, testprog.Opener, dir, n))
	}
	return out
}

// copyHelper copies the named testprog helper to dir/name (mode 0755).
func copyHelper(t *testing.T, helper, dir, name string) string {
	t.Helper()
	bin, err := os.ReadFile(testprog.Build(t, helper))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantImage checks that p's exec of exe reached user space: one successful
// exec call and one new image, exe.
func (s *seen) wantImage(t *testing.T, name string, p proc, exe string) {
	t.Helper()
	execs, images := s.of(p, trace.EventExec), s.of(p, trace.EventImage)
	if len(execs) != 1 || execs[0].Exec.Ret != 0 || len(images) != 1 || images[0].Proc.Exe != exe {
		t.Errorf("%s (pid %d): exec events %+v and image events %+v, want one each, of %s",
			name, p.pid, execs, images, exe)
	}
}

func TestFilterComm(t *testing.T) {
	dir := t.TempDir()
	bins := namedOpeners(t, dir, "oncefilt-yes", "oncefilt-no")
	f := tempFile(t, dir, "target")
	id := idOf(t, f)
	start := func() (yes, no *workload) {
		return startBlocked(t, nil, bins[0], "-wait-stdin", "repeat:3:openat:"+f),
			startBlocked(t, nil, bins[1], "-wait-stdin", "repeat:3:openat:"+f)
	}

	t.Run("include", func(t *testing.T) {
		yes, no := start()
		s := traceFiltered(t, collector.Filter{Comms: []string{"oncefilt-yes", "oncefilt-other"}}, yes, no)
		s.wantProcess(t, "oncefilt-yes", yes.proc(), id, 3)
		s.wantNothing(t, "oncefilt-no", no.proc())
		s.wantOnly(t, "comm", true, func(ev *trace.Event) bool { return ev.Task.Comm == "oncefilt-yes" })
	})
	t.Run("exclude", func(t *testing.T) {
		yes, no := start()
		s := traceFiltered(t, collector.Filter{ExcludeComms: []string{"oncefilt-no"}}, yes, no)
		s.wantProcess(t, "oncefilt-yes", yes.proc(), id, 3)
		s.wantNothing(t, "oncefilt-no", no.proc())
		s.wantOnly(t, "excluded comm", false, func(ev *trace.Event) bool { return ev.Task.Comm != "oncefilt-no" })
	})
	t.Run("include and exclude", func(t *testing.T) {
		yes, no := start()
		s := traceFiltered(t, collector.Filter{
			Comms:        []string{"oncefilt-yes", "oncefilt-no"},
			ExcludeComms: []string{"oncefilt-no"},
		}, yes, no)
		s.wantProcess(t, "oncefilt-yes", yes.proc(), id, 3)
		s.wantNothing(t, "oncefilt-no", no.proc())
		s.wantOnly(t, "comm", true, func(ev *trace.Event) bool { return ev.Task.Comm == "oncefilt-yes" })
	})
}

// TestFilterCommProcess: --comm and --exclude-comm judge a thread by its
// own comm and by its process's (its group leader's): a worker thread
// that names itself (pthread_setname_np, as a JVM's compiler threads do)
// is its process's, selected and dropped with it. A child it forks is a
// process of its own, named as the worker: not selected by the leader's
// name, not dropped with it.
func TestFilterCommProcess(t *testing.T) {
	bin := testprog.Build(t, testprog.Namedthread)
	dir := t.TempDir()
	f := tempFile(t, dir, "target")
	id := idOf(t, f)
	const n = 4
	opensByTid := func(s *seen, p proc) map[uint32]int {
		m := map[uint32]int{}
		for _, ev := range s.of(p, trace.EventOpen) {
			if ev.Open.Ret >= 0 && ev.Open.Dev == id.dev && ev.Open.Ino == id.ino {
				m[ev.Task.Tid]++
			}
		}
		return m
	}

	t.Run("include", func(t *testing.T) {
		w := startBlocked(t, nil, bin, f, strconv.Itoa(n))
		s := traceFiltered(t, collector.Filter{Comms: []string{"namedthread"}}, w)
		p := w.proc()
		s.wantProcess(t, "namedthread", p, id, 3*n)
		byTid := opensByTid(s, p)
		if byTid[p.pid] != n || len(byTid) != 2 {
			t.Errorf("opens by thread %v: want %d of the leader (tid %d) and %d of its worker", byTid, n, p.pid, 2*n)
		}
		s.wantNothing(t, "the worker's child", childOf(t, w))
	})
	t.Run("exclude", func(t *testing.T) {
		w := startBlocked(t, nil, bin, f, strconv.Itoa(n))
		s := traceFiltered(t, collector.Filter{ExcludeComms: []string{"namedthread"}}, w)
		s.wantNothing(t, "namedthread and its worker", w.proc())
		s.wantProcess(t, "the worker's child", childOf(t, w), id, 3*n)
	})
}

// TestFilterCommExecInto: a process that execs into an included comm is
// reported from its new image on, and so is the execve that gave it that
// comm, though it entered under another (execsnoop -n judges an exec so):
// one exec event, its argv the kernel's copy of what was passed; nothing
// counted lost.
func TestFilterCommExecInto(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	bins := namedOpeners(t, dir, "oncefilt-into")
	f := tempFile(t, dir, "target")
	id := idOf(t, f)
	tr, err := collector.Open(collector.Options{Filter: collector.Filter{Comms: []string{"oncefilt-into"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cmd := exec.Command(bins[0], "repeat:2:openat:"+f)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Reaped: everything it caused is in the ring.
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	var ev trace.Event
	for tr.Next(&ev, &s.counters) == nil {
		s.all = append(s.all, ev)
	}
	if err := tr.KernelCounters(&s.counters); err != nil {
		t.Fatal(err)
	}
	p := proc{uint32(cmd.Process.Pid), uint32(os.Getpid())}
	s.wantProcess(t, "oncefilt-into", p, id, 2)
	execs, images := s.of(p, trace.EventExec), s.of(p, trace.EventImage)
	if len(execs) != 1 || len(images) != 1 {
		t.Fatalf("%d exec and %d image events, want 1 (the exec into the comm) and 1", len(execs), len(images))
	}
	if e := execs[0].Exec; e.Ret != 0 || fmt.Sprint(e.Argv) != fmt.Sprint([]string{bins[0], "repeat:2:openat:" + f}) {
		t.Errorf("exec ret %d argv %q, want 0 and the argv passed", e.Ret, e.Argv)
	}
	if c := s.counters; c.Lost() != 0 {
		t.Errorf("events counted lost: %+v", c)
	}
	s.wantOnly(t, "comm", true, func(ev *trace.Event) bool { return ev.Task.Comm == "oncefilt-into" })
}

// TestFilterCommExecIntoRelative: an exec caught by its new comm (the
// caller's comm was refused at the entry, so its strings are read at
// sched_process_exec) of a relative name names, as every other exec of
// one, the directory the name was looked up in (StPathIsBase), not the
// file it ran: the exec line's path and path_is_base mean the same in
// once watch --comm as in once run.
func TestFilterCommExecIntoRelative(t *testing.T) {
	testprog.RequireRoot(t)
	dir := t.TempDir()
	namedOpeners(t, dir, "oncefilt-rel")
	tr, err := collector.Open(collector.Options{Filter: collector.Filter{Comms: []string{"oncefilt-rel"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cmd := exec.Command("./oncefilt-rel", "chdir:/")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	var ev trace.Event
	for tr.Next(&ev, &s.counters) == nil {
		s.all = append(s.all, ev)
	}
	p := proc{uint32(cmd.Process.Pid), uint32(os.Getpid())}
	execs := s.of(p, trace.EventExec)
	if len(execs) != 1 {
		t.Fatalf("%d exec events, want 1", len(execs))
	}
	e := execs[0].Exec
	if e.Ret != 0 || e.Filename != "./oncefilt-rel" || e.Path != dir || !e.Status.Has(trace.StPathIsBase) {
		t.Errorf("exec ret %d filename %q path %q path_is_base %v, want 0, ./oncefilt-rel, %q, true",
			e.Ret, e.Filename, e.Path, e.Status.Has(trace.StPathIsBase), dir)
	}
	if r := e.Resolved(); r != filepath.Join(dir, "oncefilt-rel") {
		t.Errorf("exec resolved %q, want %q", r, filepath.Join(dir, "oncefilt-rel"))
	}
}

func TestFilterUID(t *testing.T) {
	const nobody = 65534
	// Everything the unprivileged helper touches must be reachable by it.
	dir, err := os.MkdirTemp("", "once-filter-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bins := namedOpeners(t, dir, "oncefilt-uid")
	exe := copyHelper(t, testprog.Exitonly, dir, "oncefilt-exit")
	f := tempFile(t, dir, "target")
	id := idOf(t, f)

	asNobody := func(c *exec.Cmd) {
		c.Dir = dir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	// Each ends with an exec: the new image is the same uid's.
	user := startBlocked(t, asNobody, bins[0], "-wait-stdin", "repeat:3:openat:"+f, "exec:"+exe)
	root := startBlocked(t, nil, bins[0], "-wait-stdin", "repeat:3:openat:"+f, "exec:"+exe)
	s := traceFiltered(t, collector.Filter{UIDs: []uint32{nobody, 12345}}, user, root)
	s.wantProcess(t, "the uid 65534 helper", user.proc(), id, 3)
	s.wantImage(t, "the uid 65534 helper", user.proc(), exe)
	s.wantNothing(t, "the root helper", root.proc())
	s.wantOnly(t, "uid", false, func(ev *trace.Event) bool { return ev.Task.UID == nobody })
}

// cgroup2Root returns where the cgroup v2 hierarchy is mounted, or skips
// (fails under CI=true) when it is not.
func cgroup2Root(t *testing.T) string {
	t.Helper()
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if ok && strings.HasPrefix(post, "cgroup2 ") && len(fields) >= 5 && fields[3] == "/" {
			return fields[4]
		}
	}
	testprog.Skip(t, "no cgroup2 mount")
	return ""
}

// tempCgroup makes a cgroup under parent, removed at the end of the test
// (after the processes started later are reaped: cleanups run in reverse).
func tempCgroup(t *testing.T, parent, pattern string) string {
	t.Helper()
	var dir string
	if pattern == "" {
		dir = filepath.Join(parent, "sub")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp(parent, pattern); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove cgroup: %v", err)
		}
	})
	return dir
}

func joinCgroup(t *testing.T, dir string, w *workload) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(w.cmd.Process.Pid)), 0); err != nil {
		t.Fatalf("move %d into %s: %v", w.cmd.Process.Pid, dir, err)
	}
}

func TestFilterCgroup(t *testing.T) {
	testprog.RequireRoot(t)
	cg := tempCgroup(t, cgroup2Root(t), "once-test-")
	sub := tempCgroup(t, cg, "")
	dir := t.TempDir()
	bins := namedOpeners(t, dir, "oncefilt-cg")
	exe := copyHelper(t, testprog.Exitonly, dir, "oncefilt-exit")
	f := tempFile(t, dir, "target")
	id := idOf(t, f)

	// Each ends with an exec: the new image is in the same cgroup.
	inside := startBlocked(t, nil, bins[0], "-wait-stdin", "repeat:3:openat:"+f, "exec:"+exe)
	below := startBlocked(t, nil, bins[0], "-wait-stdin", "repeat:2:openat:"+f, "exec:"+exe)
	outside := startBlocked(t, nil, bins[0], "-wait-stdin", "repeat:3:openat:"+f, "exec:"+exe)
	joinCgroup(t, cg, inside)
	joinCgroup(t, sub, below)
	s := traceFiltered(t, collector.Filter{CgroupPath: cg}, inside, below, outside)
	s.wantProcess(t, "the helper in the cgroup", inside.proc(), id, 3)
	s.wantProcess(t, "the helper in a child cgroup", below.proc(), id, 2)
	s.wantImage(t, "the helper in the cgroup", inside.proc(), exe)
	s.wantImage(t, "the helper in a child cgroup", below.proc(), exe)
	s.wantNothing(t, "the helper outside", outside.proc())
	ids := map[uint64]bool{idOf(t, cg).ino: true, idOf(t, sub).ino: true}
	s.wantOnly(t, "cgroup", true, func(ev *trace.Event) bool { return ids[ev.Task.CgroupID] })
}

func TestFilterValidate(t *testing.T) {
	tid := 0
	if ents, err := os.ReadDir("/proc/self/task"); err == nil {
		for _, e := range ents {
			if n, _ := strconv.Atoi(e.Name()); n != os.Getpid() {
				tid = n
			}
		}
	}
	cg2 := ""
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			pre, post, ok := strings.Cut(line, " - ")
			if fields := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(fields) >= 5 {
				cg2 = fields[4]
			}
		}
	}
	tests := []struct {
		name string
		f    collector.Filter
		err  string // "" when valid
	}{
		{"zero", collector.Filter{}, ""},
		{"15-byte comm", collector.Filter{Comms: []string{"abcdefghijklmno"}}, ""},
		{"16-byte comm", collector.Filter{Comms: []string{"abcdefghijklmnop"}}, "kernel truncates comm to 15 bytes"},
		{"16-byte excluded comm", collector.Filter{ExcludeComms: []string{"systemd-journald"}}, "kernel truncates comm to 15 bytes"},
		{"empty comm", collector.Filter{Comms: []string{""}}, "empty"},
		{"NUL in comm", collector.Filter{Comms: []string{"a\x00b"}}, "NUL"},
		{"own pid", collector.Filter{Pids: []int{os.Getpid()}, Tree: true}, ""},
		{"pid 0", collector.Filter{Pids: []int{0}}, "must be positive"},
		{"negative pid", collector.Filter{Pids: []int{-3}}, "must be positive"},
		{"no such pid", collector.Filter{Pids: []int{math.MaxInt32}}, "no such process"},
		{"Tree without pids", collector.Filter{Tree: true}, "no pid"},
		{"uid -1", collector.Filter{UIDs: []uint32{math.MaxUint32}}, "invalid uid"},
		{"uids", collector.Filter{UIDs: []uint32{0, 65534}}, ""},
		{"missing cgroup", collector.Filter{CgroupPath: "/sys/fs/cgroup/no-such-once-cgroup"}, "no such file"},
		{"not cgroup2", collector.Filter{CgroupPath: t.TempDir()}, "not on a cgroup v2"},
	}
	if tid != 0 {
		tests = append(tests, struct {
			name string
			f    collector.Filter
			err  string
		}{"thread id", collector.Filter{Pids: []int{tid}}, "is a thread of process"})
	}
	// A zombie: exited, not reaped. Its exit went by: followed, its
	// number would name the next process given it.
	zombie := exec.Command("true")
	if err := zombie.Start(); err == nil {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		defer zombie.Wait()
		tests = append(tests, struct {
			name string
			f    collector.Filter
			err  string
		}{"zombie pid", collector.Filter{Pids: []int{zombie.Process.Pid}}, "has exited"})
	}
	if cg2 != "" {
		tests = append(tests, []struct {
			name string
			f    collector.Filter
			err  string
		}{
			{"cgroup2 root", collector.Filter{CgroupPath: cg2}, ""},
			{"cgroup2 file", collector.Filter{CgroupPath: filepath.Join(cg2, "cgroup.procs")}, "not a directory"},
		}...)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error is not one line: %q", err)
			}
			if tc.err != "" {
				// Open refuses it before loading anything (no root needed).
				if _, err := collector.Open(collector.Options{Filter: tc.f}); err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("Open() = %v, want the validation error", err)
				}
			}
		})
	}
}

// TestCloneIntoCgroup: a child made with clone3(CLONE_INTO_CGROUP) starts
// in the cgroup it names, not its parent's. Its image before any exec
// says so (cgroup_id: the directory's inode), and its opens count exactly
// (two each).
func TestCloneIntoCgroup(t *testing.T) {
	testprog.RequireRoot(t)
	cg := tempCgroup(t, cgroup2Root(t), "once-test-")
	prog := testprog.Build(t, testprog.Cloneinto)
	f := tempFile(t, t.TempDir(), "target")
	const children = 3
	r := traceCmd(t, exec.Command(prog, cg, f, fmt.Sprint(children)), collector.Options{})
	want := idOf(t, cg).ino
	n := 0
	for _, p := range r.Processes {
		if p.PPid == 0 || p.Comm != "cloneinto" {
			continue
		}
		per := 0
		for _, fo := range p.Opens {
			if fo.Dev == idOf(t, f).dev && fo.Ino == idOf(t, f).ino {
				per = fo.Count
			}
		}
		if per == 0 {
			continue // the parent
		}
		n++
		if p.CgroupID != want || per != 2 {
			t.Errorf("child %d: cgroup id %d, %d opens; want %d (%s), 2", p.Pid, p.CgroupID, per, want, cg)
		}
	}
	if n != children {
		t.Errorf("%d children opened the file, want %d", n, children)
	}
}

// A cgroup removed and made again at the same path (systemd, at each
// restart of a service) is another cgroup: --cgroup PATH follows the path.
func TestFilterCgroupRemade(t *testing.T) {
	testprog.RequireRoot(t)
	cg := tempCgroup(t, cgroup2Root(t), "once-test-")
	dir := t.TempDir()
	bins := namedOpeners(t, dir, "oncefilt-cg")
	f := tempFile(t, dir, "target")
	id := idOf(t, f)

	inside := startBlocked(t, nil, bins[0], "-wait-stdin", "repeat:3:openat:"+f)
	s := traceFilteredWith(t, collector.Filter{CgroupPath: cg}, func(tr *collector.Tracer) {
		if ch, err := tr.FollowCgroupPath(); err != nil || ch != collector.CgroupSame {
			t.Fatalf("before any change: %v, %v; want CgroupSame", ch, err)
		}
		if err := os.Remove(cg); err != nil {
			t.Fatal(err)
		}
		for i, want := range []collector.CgroupChange{collector.CgroupGone, collector.CgroupSame} {
			if ch, err := tr.FollowCgroupPath(); err != nil || ch != want {
				t.Fatalf("removed, call %d: %v, %v; want %v", i, ch, err, want)
			}
		}
		if err := os.Mkdir(cg, 0o755); err != nil {
			t.Fatal(err)
		}
		joinCgroup(t, cg, inside)
		if ch, err := tr.FollowCgroupPath(); err != nil || ch != collector.CgroupRemade {
			t.Fatalf("made again: %v, %v; want CgroupRemade", ch, err)
		}
	}, inside)
	s.wantProcess(t, "the helper in the cgroup made again", inside.proc(), id, 3)
}
