// Command opener is a test helper that performs exactly the file opens and
// execs it is told to, so that integration tests can compare what the once
// tracer (and strace) report against a known ground truth.
//
// It deliberately avoids the os package for the actions themselves: os.Open
// may add flags, retry, or stat the file, while tests need one precise system
// call per requested open. Every action uses golang.org/x/sys/unix directly
// and closes each descriptor it gets before moving on.
//
// Usage:
//
//	opener [-v] [-wait-stdin] [-hold] ACTION...
//
// Actions run in order. Paths are passed to the kernel exactly as written, so
// a relative path stays relative (resolved against the current directory,
// which chdir: changes). All opens use O_RDONLY|O_CLOEXEC unless noted.
//
//	open:PATH          open(2) (SYS_OPEN; amd64 only, arm64 has no such syscall)
//	openat:PATH        openat(AT_FDCWD, PATH)
//	openat2:PATH       openat2(AT_FDCWD, PATH, {flags: O_RDONLY|O_CLOEXEC})
//	creat:PATH         creat(2) with mode 0644 (SYS_CREAT; amd64 only); creates/truncates PATH
//	opath:PATH         openat(AT_FDCWD, PATH, O_PATH|O_CLOEXEC)
//	bufat:PATH         openat(AT_FDCWD, PATH, O_RDONLY|O_CLOEXEC), the name passed
//	                   from one buffer at a fixed address, as a C loop does
//	dirfd:DIR:NAME     openat(AT_FDCWD, DIR, O_RDONLY|O_DIRECTORY|O_CLOEXEC), then
//	                   openat(dirfd, NAME); DIR must not contain ':', NAME may
//	chdir:DIR          chdir(2), so that later relative paths resolve under DIR
//	cpu:N              sched_setaffinity(2) of this thread to CPU N mod the CPUs:
//	                   it migrates there, and its later calls run there
//	fail:PATH          openat(AT_FDCWD, PATH) that must fail; the errno is printed
//	                   with -v; an unexpected success is an error
//	fail2:PATH         openat2(AT_FDCWD, PATH, {flags: O_RDONLY|O_CLOEXEC}) that
//	                   must fail, as fail:
//	fail2nosym:PATH    as fail2:, with resolve RESOLVE_NO_SYMLINKS
//	stat:PATH          stat(2) of PATH (newfstatat), which must succeed
//	repeat:N:ACTION    run ACTION N times in this thread
//	alternate:N:FAILPATH:OPENPATH
//	                   N times in this thread: fail:FAILPATH, then
//	                   openat:OPENPATH (FAILPATH must not contain ':')
//	statpair:N:HIT:MISS
//	                   N times in this thread: newfstatat(AT_FDCWD, HIT), which
//	                   must succeed, then newfstatat(AT_FDCWD, MISS), which must
//	                   fail with ENOENT, each name from a buffer of its own at
//	                   a fixed address, as a C stat loop passes them (HIT must
//	                   not contain ':')
//	pollmiss:N:STATMISS:FAILPATH[:OPENPATH]
//	                   N times in this thread: newfstatat(AT_FDCWD, STATMISS),
//	                   which must fail with ENOENT, then openat(AT_FDCWD,
//	                   FAILPATH), which must fail, then (with OPENPATH)
//	                   openat(AT_FDCWD, OPENPATH), which must succeed; each
//	                   name from a buffer of its own at a fixed address
//	                   (STATMISS and FAILPATH must not contain ':')
//	statsearch:N:MISS[,MISS...]:HIT
//	                   N times in this thread: newfstatat(AT_FDCWD, MISS) of each
//	                   MISS, which must fail with ENOENT, then newfstatat(AT_FDCWD,
//	                   HIT), which must succeed. A "%d" in a MISS is replaced by
//	                   TID-I (the thread's id and the round): a name not tried
//	                   before (no MISS may contain ':' or ',')
//	cycle:N:PATH,PATH...
//	                   N times in this thread: openat:PATH of each PATH, then
//	                   stat:PATH of each (no PATH may contain ',')
//	threads:N:ACTION   run ACTION once in each of N distinct OS threads at the
//	                   same time; none of them is the main thread. ACTION may
//	                   be exec: or execveat-empty: only with N=1 (an exec from a
//	                   non-leader thread), and then it must be last
//	child:ACTION       run "opener [-v] ACTION" from /proc/self/exe as a child
//	                   process and wait for it; its failure is an error
//	exec:PATH[:ARG...] execve(PATH, [PATH, ARG...], environ); must be last
//	execveat-empty:PATH
//	                   fd = openat(AT_FDCWD, PATH, O_RDONLY|O_CLOEXEC), then
//	                   execveat(fd, "", [PATH], environ, AT_EMPTY_PATH); must be last
//	execveat:DIR:NAME  dirfd = openat(AT_FDCWD, DIR, O_RDONLY|O_DIRECTORY|O_CLOEXEC),
//	                   then execveat(dirfd, NAME, [NAME], environ, 0): one step of
//	                   a search. A miss (ENOENT, EACCES, ENOTDIR) goes on to the
//	                   next action; any other failure is an error. DIR must not
//	                   contain ':'
//
// The cold actions pass names that are not mapped in the process's page
// tables when the system call starts, so the kernel's own copy of the string
// takes the page fault and a tracer's non-faulting read at syscall entry
// fails. Each writes its strings, back to back, into a fresh unnamed scratch
// file in $TMPDIR (from inside its second page on), drops the file's page cache
// where the filesystem allows, maps it PROT_READ/MAP_PRIVATE without ever
// touching the mapping, and checks in /proc/self/pagemap that no page
// holding the strings is mapped; if one is, the action fails rather than
// pass vacuously. Beyond the call itself, each cold action therefore makes
// two more open-family calls: the scratch file (openat of $TMPDIR with
// O_TMPFILE) and /proc/self/pagemap.
//
//	coldopen:PATH      openat(AT_FDCWD, PATH, O_RDONLY|O_CLOEXEC), PATH in a cold page
//	coldexec:PATH[:ARG...]
//	                   execve(PATH, [PATH, ARG...], environ) with PATH and every
//	                   argv string (argv[0] a copy of PATH) in cold pages; the
//	                   pointer array and environ are ordinary memory; must be last
//	coldexecfail:PATH[:ARG...]
//	                   the same exec, which must fail with ENOENT (PATH must not
//	                   exist); the helper then goes on with the next action
//	coldexecveat-empty:PATH
//	                   opens PATH and execs it by execveat(fd, "", argv,
//	                   environ, AT_EMPTY_PATH), the empty name in a cold page
//	                   (fexecve in a child just forked); must be last
//	coldexecveat:DIR:NAME
//	                   opens DIR and execs NAME in it by execveat(dirfd,
//	                   NAME, ...), NAME in a cold page; must be last
//	coldfstat:CALL:PATH
//	                   opens PATH, then CALL (newfstatat or statx) of the
//	                   descriptor with an empty name in a cold page and
//	                   AT_EMPTY_PATH: glibc's fstat, which names no file
//
// With -wait-stdin the helper reads one byte (or EOF) from stdin before the
// first action, so a test can start it, attach a tracer, and then release it.
// With -hold it prints "held" after the last action and reads stdin to EOF
// before exiting: a process still running, idle, when a tracer stops.
// On success it prints nothing (unless -v); on any unexpected error it prints
// one line to stderr and exits 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

func init() {
	// Pin the main goroutine to the main (leader) thread. Locked goroutines
	// own their thread exclusively, so this keeps the goroutines used by
	// threads: off the leader and guarantees those actions run in
	// non-leader threads, which is the interesting case for per-process
	// aggregation in the tracer.
	runtime.LockOSThread()
}

// verbose is set by -v; it is passed on to children started by child:.
var verbose bool

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "opener: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("opener", flag.ContinueOnError)
	// The flag package prints multi-line usage on errors; the contract is
	// one line on stderr, which main takes care of.
	fs.SetOutput(io.Discard)
	fs.BoolVar(&verbose, "v", false, "print what each action did to stdout")
	waitStdin := fs.Bool("wait-stdin", false, "read one byte from stdin before acting")
	hold := fs.Bool("hold", false, "after the actions, print \"held\" and read stdin to EOF before exiting")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v (usage: opener [-v] [-wait-stdin] [-hold] ACTION...)", err)
	}
	if fs.NArg() == 0 {
		return errors.New("no actions (usage: opener [-v] [-wait-stdin] [-hold] ACTION...)")
	}

	// Parse everything before doing anything, so a typo in the last action
	// cannot leave a half-performed sequence for a test to misinterpret.
	acts := make([]action, 0, fs.NArg())
	for i, s := range fs.Args() {
		a, err := parseAction(s)
		if err != nil {
			return err
		}
		if a.replacesProcess() && i != fs.NArg()-1 {
			return fmt.Errorf("%q: replaces the process, so it must be the last action", s)
		}
		acts = append(acts, a)
	}

	if *waitStdin {
		if err := waitForByte(); err != nil {
			return err
		}
	}
	for _, a := range acts {
		if err := a.run(); err != nil {
			return err
		}
	}
	if *hold {
		// Alive, making no more calls: what its threads counted in
		// the kernel stays in their slots until a tracer ends.
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	return nil
}

// logf prints progress for -v. Output goes to stdout so that stderr stays
// reserved for the single error line.
func logf(format string, args ...any) {
	if verbose {
		fmt.Printf(format+"\n", args...)
	}
}

// splitHead splits "head:rest" at the first colon.
func splitHead(s string) (head, rest string, ok bool) {
	return strings.Cut(s, ":")
}
