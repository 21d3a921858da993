package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// action is one parsed command-line ACTION.
type action interface {
	run() error
	// replacesProcess reports whether a successful run never returns
	// because the process image is replaced (exec, execveat-empty).
	replacesProcess() bool
}

// parseAction turns one ACTION argument into an action, recursively for the
// combinators. Everything after the keyword's colon belongs to the action, so
// a PATH may itself contain colons (except where documented otherwise).
func parseAction(spec string) (action, error) {
	kind, rest, ok := splitHead(spec)
	if !ok {
		return nil, fmt.Errorf("%q: expected KIND:ARGS", spec)
	}
	bad := func(format string, args ...any) (action, error) {
		return nil, fmt.Errorf("%q: %s", spec, fmt.Sprintf(format, args...))
	}
	switch kind {
	case "open", "openat", "openat2", "creat", "opath", "bufat", "fail", "fail2", "fail2nosym", "chdir", "stat":
		if rest == "" {
			return bad("empty path")
		}
		return simpleAct{kind: kind, path: rest, spec: spec}, nil
	case "cpu":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			return bad("CPU %q is not a number", rest)
		}
		return cpuAct{cpu: n, spec: spec}, nil
	case "dirfd":
		dir, name, ok := splitHead(rest)
		if !ok || dir == "" || name == "" {
			return bad("expected dirfd:DIR:NAME")
		}
		return dirfdAct{dir: dir, name: name, spec: spec}, nil
	case "repeat", "threads":
		nstr, inner, ok := splitHead(rest)
		if !ok {
			return bad("expected %s:N:ACTION", kind)
		}
		n, err := strconv.Atoi(nstr)
		if err != nil || n < 1 {
			return bad("count %q is not a positive integer", nstr)
		}
		a, err := parseAction(inner)
		if err != nil {
			return nil, err
		}
		// An exec that succeeds never comes back, so repeating it or
		// racing it against siblings cannot mean anything sensible. The
		// one exception is threads:1:, which execs from a non-leader
		// thread: the kernel then gives that thread the leader's pid,
		// an edge case tracers must handle.
		if a.replacesProcess() && (kind == "repeat" || n != 1) {
			return bad("%s: cannot wrap an action that replaces the process", kind)
		}
		if kind == "repeat" {
			return repeatAct{n: n, inner: a}, nil
		}
		return threadsAct{n: n, inner: a, spec: spec}, nil
	case "alternate":
		n, failPath, openPath, msg := countAndTwoPaths(rest, "alternate:N:FAILPATH:OPENPATH")
		if msg != "" {
			return bad("%s", msg)
		}
		return repeatAct{n: n, inner: seqAct{
			simpleAct{kind: "fail", path: failPath, spec: spec},
			simpleAct{kind: "openat", path: openPath, spec: spec},
		}}, nil
	case "pollmiss":
		n, statMiss, rest2, msg := countAndTwoPaths(rest, "pollmiss:N:STATMISS:FAILPATH[:OPENPATH]")
		if msg != "" {
			return bad("%s", msg)
		}
		failPath, openPath, _ := strings.Cut(rest2, ":")
		if failPath == "" {
			return bad("expected pollmiss:N:STATMISS:FAILPATH[:OPENPATH]")
		}
		return pollMissAct{n: n, statMiss: statMiss, failPath: failPath, openPath: openPath, spec: spec}, nil
	case "statpair":
		n, hit, miss, msg := countAndTwoPaths(rest, "statpair:N:HIT:MISS")
		if msg != "" {
			return bad("%s", msg)
		}
		return statPairAct{n: n, hit: hit, miss: miss, spec: spec}, nil
	case "statsearch":
		n, misses, hit, msg := countAndTwoPaths(rest, "statsearch:N:MISS[,MISS...]:HIT")
		if msg != "" {
			return bad("%s", msg)
		}
		a := statSearchAct{n: n, hit: hit, spec: spec}
		for _, m := range strings.Split(misses, ",") {
			if m == "" {
				return bad("empty path")
			}
			a.misses = append(a.misses, m)
		}
		return a, nil
	case "cycle":
		nstr, list, ok := splitHead(rest)
		if !ok || list == "" {
			return bad("expected cycle:N:PATH,PATH...")
		}
		n, err := strconv.Atoi(nstr)
		if err != nil || n < 1 {
			return bad("count %q is not a positive integer", nstr)
		}
		var opens, stats seqAct
		for _, p := range strings.Split(list, ",") {
			if p == "" {
				return bad("empty path")
			}
			opens = append(opens, simpleAct{kind: "openat", path: p, spec: spec})
			stats = append(stats, simpleAct{kind: "stat", path: p, spec: spec})
		}
		return repeatAct{n: n, inner: append(opens, stats...)}, nil
	case "child":
		// Validate now, so a bad nested action fails in the parent before
		// anything is done rather than later in the child.
		if _, err := parseAction(rest); err != nil {
			return nil, err
		}
		return childAct{inner: rest, spec: spec}, nil
	case "exec":
		parts := strings.Split(rest, ":")
		if parts[0] == "" {
			return bad("empty path")
		}
		return execAct{path: parts[0], argv: parts, spec: spec}, nil
	case "coldopen":
		if rest == "" {
			return bad("empty path")
		}
		return coldOpenAct{path: rest, spec: spec}, nil
	case "coldexecveat-empty":
		if rest == "" {
			return bad("empty path")
		}
		return coldExecveatAct{name: "", path: rest, spec: spec}, nil
	case "coldexecveat":
		dir, name, ok := splitHead(rest)
		if !ok || dir == "" || name == "" {
			return bad("expected coldexecveat:DIR:NAME")
		}
		return coldExecveatAct{dir: dir, name: name, spec: spec}, nil
	case "coldfstat":
		call, path, ok := splitHead(rest)
		if !ok || (call != "newfstatat" && call != "statx") || path == "" {
			return bad("expected coldfstat:newfstatat|statx:PATH")
		}
		return coldFstatAct{call: call, path: path, spec: spec}, nil
	case "coldexec", "coldexecfail":
		parts := strings.Split(rest, ":")
		if parts[0] == "" {
			return bad("empty path")
		}
		return coldExecAct{path: parts[0], argv: parts, fail: kind == "coldexecfail", spec: spec}, nil
	case "execveat-empty":
		if rest == "" {
			return bad("empty path")
		}
		return execveatAct{path: rest, spec: spec}, nil
	case "execveat":
		dir, name, ok := splitHead(rest)
		if !ok || dir == "" || name == "" {
			return bad("expected execveat:DIR:NAME")
		}
		return execveatDirAct{dir: dir, name: name, spec: spec}, nil
	}
	return bad("unknown action kind %q", kind)
}

// countAndTwoPaths parses the N:A:B of an action spelled as form: a
// positive count and two non-empty paths, the first without ':'. msg says
// what is wrong, "" when nothing is.
func countAndTwoPaths(rest, form string) (n int, a, b, msg string) {
	nstr, paths, ok := splitHead(rest)
	a, b, ok2 := splitHead(paths)
	if !ok || !ok2 || a == "" || b == "" {
		return 0, "", "", "expected " + form
	}
	n, err := strconv.Atoi(nstr)
	if err != nil || n < 1 {
		return 0, "", "", fmt.Sprintf("count %q is not a positive integer", nstr)
	}
	return n, a, b, ""
}

// statPairAct stats a file and a missing name in turn, each from its own
// buffer, which keeps its address for the whole loop (unix.Stat copies the
// name anew at every call).
type statPairAct struct {
	n         int
	hit, miss string
	spec      string
}

func (statPairAct) replacesProcess() bool { return false }

func (a statPairAct) run() error {
	hit, err := unix.BytePtrFromString(a.hit)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	miss, err := unix.BytePtrFromString(a.miss)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	var st unix.Stat_t
	for i := 0; i < a.n; i++ {
		if errno := sysNewfstatat(hit, &st); errno != 0 {
			return fmt.Errorf("%q: stat of the file: %w", a.spec, errno)
		}
		if errno := sysNewfstatat(miss, &st); errno != unix.ENOENT {
			return fmt.Errorf("%q: stat of the missing name gave %v, want ENOENT", a.spec, errno)
		}
	}
	runtime.KeepAlive(hit)
	runtime.KeepAlive(miss)
	logf("statpair %d %q %q", a.n, a.hit, a.miss)
	return nil
}

// statSearchAct is a search made again and again: stats of names that
// are missing, then of one that is there. A "%d" in a missing name is
// replaced by TID-I (the thread's id, the round's number): a name no call
// tried before, as a loop through new names (a cache's misses) or new
// directories makes.
type statSearchAct struct {
	n      int
	misses []string
	hit    string
	spec   string
}

func (statSearchAct) replacesProcess() bool { return false }

func (a statSearchAct) run() error {
	hit, err := unix.BytePtrFromString(a.hit)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	// Each missing name in a buffer of its own, written in place when
	// it changes from round to round.
	bufs := make([][]byte, len(a.misses))
	tid := unix.Gettid()
	var st unix.Stat_t
	for i := 0; i < a.n; i++ {
		for j, m := range a.misses {
			if bufs[j] == nil || strings.Contains(m, "%d") {
				name := strings.Replace(m, "%d", strconv.Itoa(tid)+"-"+strconv.Itoa(i), 1)
				bufs[j] = append(append(bufs[j][:0], name...), 0)
			}
			if errno := sysNewfstatat(&bufs[j][0], &st); errno != unix.ENOENT {
				return fmt.Errorf("%q: stat of %q gave %v, want ENOENT", a.spec, bufs[j][:len(bufs[j])-1], errno)
			}
		}
		if errno := sysNewfstatat(hit, &st); errno != 0 {
			return fmt.Errorf("%q: stat of the file: %w", a.spec, errno)
		}
	}
	runtime.KeepAlive(hit)
	logf("statsearch %d %q %q", a.n, a.misses, a.hit)
	return nil
}

// pollMissAct is a poll loop of two kinds of failure in turn: a stat of
// a missing name, then an open of another that fails, then (with
// openPath) an open of a file that is there; each name from a buffer of
// its own at a fixed address, as a C loop passes them.
type pollMissAct struct {
	n                            int
	statMiss, failPath, openPath string
	spec                         string
}

func (pollMissAct) replacesProcess() bool { return false }

func (a pollMissAct) run() error {
	statMiss, err := unix.BytePtrFromString(a.statMiss)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	failPath, err := unix.BytePtrFromString(a.failPath)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	var openPath *byte
	if a.openPath != "" {
		if openPath, err = unix.BytePtrFromString(a.openPath); err != nil {
			return fmt.Errorf("%q: %w", a.spec, err)
		}
	}
	var st unix.Stat_t
	for i := 0; i < a.n; i++ {
		if errno := sysNewfstatat(statMiss, &st); errno != unix.ENOENT {
			return fmt.Errorf("%q: stat of the missing name gave %v, want ENOENT", a.spec, errno)
		}
		if fd, errno := sysOpenatPtr(failPath, unix.O_RDONLY|unix.O_CLOEXEC); errno == 0 {
			unix.Close(fd)
			return fmt.Errorf("%q: open of %q succeeded but was expected to fail", a.spec, a.failPath)
		}
		if openPath == nil {
			continue
		}
		fd, errno := sysOpenatPtr(openPath, unix.O_RDONLY|unix.O_CLOEXEC)
		if errno != 0 {
			return fmt.Errorf("%q: open of %q: %w", a.spec, a.openPath, errno)
		}
		if err := closeFD(a.spec, fd); err != nil {
			return err
		}
	}
	runtime.KeepAlive(statMiss)
	runtime.KeepAlive(failPath)
	runtime.KeepAlive(openPath)
	logf("pollmiss %d %q %q %q", a.n, a.statMiss, a.failPath, a.openPath)
	return nil
}

// cpuAct moves the thread to one CPU: the calls after it run there.
type cpuAct struct {
	cpu  int
	spec string
}

func (cpuAct) replacesProcess() bool { return false }

func (a cpuAct) run() error {
	var set unix.CPUSet
	set.Set(a.cpu % runtime.NumCPU())
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	logf("cpu %d", a.cpu%runtime.NumCPU())
	return nil
}

// simpleAct is a single open-like system call on one path, or chdir.
type simpleAct struct {
	kind, path, spec string
}

func (simpleAct) replacesProcess() bool { return false }

func (a simpleAct) run() error {
	var (
		fd  int
		err error
	)
	switch a.kind {
	case "open":
		fd, err = sysOpen(a.path, unix.O_RDONLY|unix.O_CLOEXEC)
	case "openat":
		fd, err = unix.Openat(unix.AT_FDCWD, a.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	case "openat2":
		fd, err = unix.Openat2(unix.AT_FDCWD, a.path, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
	case "creat":
		fd, err = sysCreat(a.path, 0o644)
	case "opath":
		fd, err = unix.Openat(unix.AT_FDCWD, a.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	case "bufat":
		fd, err = sysOpenatBuf(a.path, unix.O_RDONLY|unix.O_CLOEXEC)
	case "stat":
		var st unix.Stat_t
		if err := unix.Stat(a.path, &st); err != nil {
			return fmt.Errorf("%q: %w", a.spec, err)
		}
		logf("stat %q", a.path)
		return nil
	case "chdir":
		if err := unix.Chdir(a.path); err != nil {
			return fmt.Errorf("%q: %w", a.spec, err)
		}
		logf("chdir %q", a.path)
		return nil
	case "fail", "fail2", "fail2nosym":
		switch a.kind {
		case "fail":
			fd, err = unix.Openat(unix.AT_FDCWD, a.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		case "fail2":
			fd, err = unix.Openat2(unix.AT_FDCWD, a.path, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
		default:
			fd, err = unix.Openat2(unix.AT_FDCWD, a.path, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_NO_SYMLINKS})
		}
		if err == nil {
			unix.Close(fd)
			return fmt.Errorf("%q: open succeeded but was expected to fail", a.spec)
		}
		logf("%s %q = %s", a.kind, a.path, errnoName(err))
		return nil
	default:
		panic("unhandled simple action " + a.kind)
	}
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	logf("%s %q = %d", a.kind, a.path, fd)
	return closeFD(a.spec, fd)
}

// dirfdAct opens a directory and then a name relative to that directory's
// descriptor, exercising the dirfd-relative path resolution case.
type dirfdAct struct {
	dir, name, spec string
}

func (dirfdAct) replacesProcess() bool { return false }

func (a dirfdAct) run() error {
	dfd, err := unix.Openat(unix.AT_FDCWD, a.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%q: opening directory: %w", a.spec, err)
	}
	fd, err := unix.Openat(dfd, a.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(dfd)
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	logf("dirfd %q = %d, openat(%d, %q) = %d", a.dir, dfd, dfd, a.name, fd)
	if err := closeFD(a.spec, fd); err != nil {
		unix.Close(dfd)
		return err
	}
	return closeFD(a.spec, dfd)
}

type repeatAct struct {
	n     int
	inner action
}

func (repeatAct) replacesProcess() bool { return false }

func (a repeatAct) run() error {
	for range a.n {
		if err := a.inner.run(); err != nil {
			return err
		}
	}
	return nil
}

// seqAct runs its actions one after the other in this thread.
type seqAct []action

func (seqAct) replacesProcess() bool { return false }

func (a seqAct) run() error {
	for _, in := range a {
		if err := in.run(); err != nil {
			return err
		}
	}
	return nil
}

// threadsAct runs its inner action once in each of n OS threads at the same
// time.
type threadsAct struct {
	n     int
	inner action
	spec  string
}

func (a threadsAct) replacesProcess() bool { return a.inner.replacesProcess() }

func (a threadsAct) run() error {
	var (
		locked  sync.WaitGroup // every goroutine has its own thread
		done    sync.WaitGroup
		start   = make(chan struct{})
		proceed bool // written before close(start), read after
		tids    = make([]int, a.n)
		errs    = make([]error, a.n)
	)
	locked.Add(a.n)
	for i := range a.n {
		done.Go(func() {
			// A locked goroutine owns its thread until it unlocks or
			// exits, so while all of them wait below, no two can share a
			// thread. The lock is never released on purpose: the runtime
			// then retires the thread when the goroutine ends instead of
			// handing it to unrelated work.
			runtime.LockOSThread()
			tids[i] = unix.Gettid()
			locked.Done()
			<-start
			if proceed {
				errs[i] = a.inner.run()
			}
		})
	}
	locked.Wait()

	// Check the premise before acting: a test that asked for N threads
	// must not silently get fewer.
	err := checkDistinctTids(tids, unix.Getpid())
	proceed = err == nil
	close(start)
	done.Wait()
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	logf("threads %v ran %q", tids, a.spec)
	return errors.Join(errs...)
}

func checkDistinctTids(tids []int, leader int) error {
	seen := make(map[int]bool, len(tids))
	for _, tid := range tids {
		if tid == leader {
			return fmt.Errorf("thread %d is the main thread", tid)
		}
		if seen[tid] {
			return fmt.Errorf("thread id %d used twice in %v", tid, tids)
		}
		seen[tid] = true
	}
	return nil
}

// childAct re-executes this binary to run one action in a new process.
type childAct struct {
	inner, spec string
}

func (childAct) replacesProcess() bool { return false }

func (a childAct) run() error {
	args := []string{a.inner}
	if verbose {
		args = []string{"-v", a.inner}
	}
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Args[0] = os.Args[0]
	// Explicit stdio: with a nil Stdin, os/exec would open /dev/null, an
	// extra open that tests would have to account for.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	logf("child %d ran %q", cmd.ProcessState.Pid(), a.inner)
	return nil
}

// execAct is a plain execve with the path exactly as given (no PATH search).
type execAct struct {
	path string
	argv []string
	spec string
}

func (execAct) replacesProcess() bool { return true }

func (a execAct) run() error {
	logf("exec %q %q", a.path, a.argv)
	return fmt.Errorf("%q: %w", a.spec, sysExecve(a.path, a.argv, os.Environ()))
}

// execveatAct executes the file behind an open descriptor via AT_EMPTY_PATH,
// the fexecve(3) style, where no path at all reaches the exec syscall.
type execveatAct struct {
	path, spec string
}

func (execveatAct) replacesProcess() bool { return true }

func (a execveatAct) run() error {
	// O_CLOEXEC so the descriptor does not leak into the new image. (That
	// makes #! scripts fail with ENOENT, as the interpreter could not reopen
	// /dev/fd/N; tests use binaries.)
	fd, err := unix.Openat(unix.AT_FDCWD, a.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	logf("execveat-empty %q fd %d", a.path, fd)
	err = sysExecveatEmpty(fd, []string{a.path}, os.Environ())
	unix.Close(fd)
	return fmt.Errorf("%q: %w", a.spec, err)
}

// execveatDirAct execs a name relative to a directory's descriptor, one
// step of a search the way a launcher that holds its directories open
// makes it: a miss goes on to the next action.
type execveatDirAct struct {
	dir, name, spec string
}

// replacesProcess is false: a miss returns, and the search goes on. Only
// the action that finds its file never does.
func (execveatDirAct) replacesProcess() bool { return false }

func (a execveatDirAct) run() error {
	dfd, err := unix.Openat(unix.AT_FDCWD, a.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%q: opening directory: %w", a.spec, err)
	}
	err = sysExecveat(dfd, a.name, []string{a.name}, os.Environ(), 0)
	logf("execveat(%d, %q) in %q = %s", dfd, a.name, a.dir, errnoName(err))
	if cerr := closeFD(a.spec, dfd); cerr != nil {
		return cerr
	}
	if !missErrno(err) {
		return fmt.Errorf("%q: %w", a.spec, err)
	}
	return nil
}

// missErrno: the errnos of a search's miss, which execveat: goes on after.
func missErrno(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOTDIR)
}

func closeFD(spec string, fd int) error {
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("%q: close(%d): %w", spec, fd, err)
	}
	return nil
}

// errnoName gives "ENOENT" rather than the message, which is what tests
// compare against.
func errnoName(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}

// waitForByte blocks until stdin yields a byte or EOF; both mean "go".
func waitForByte() error {
	var b [1]byte
	for {
		_, err := unix.Read(0, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("-wait-stdin: %w", err)
		}
		return nil
	}
}
