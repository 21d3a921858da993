// Package testprog builds the helper programs that integration tests run
// under the tracer (and under strace as an oracle):
//
//   - "opener": performs exactly the open/exec system calls listed on its
//     command line (see the opener command's documentation for ACTIONs).
//   - "spawnp": runs a program through posix_spawnp(3), optionally from a
//     forked child, to exercise libc's PATH search.
//   - "exitonly": a static, libc-free program that only exits 0, as an exec
//     target that does nothing after execve.
//   - "forker": forks N children one after the other, each opening a file
//     twice (process churn).
//   - "flooder": opens a file in a tight loop for a given time and prints
//     how many opens it made (event overload).
//   - "uringopen": opens a file twice and a missing one once through
//     io_uring (raw syscalls): opens no syscall tracer sees.
//   - "stackprog": opens a file from three distinct functions, pauses, then
//     execvp's a program through a PATH whose first two directories lack
//     it (stack snapshots).
//   - "internalnames": opens a pipe again through /proc/self/fd/N, then
//     executes a copy of a program from a memfd: files on kernel-internal
//     mounts, and the names /proc gives them.
//   - "inoreuse": makes files whose inode numbers a filesystem may give
//     again to the next file made (git's lock-file pattern), opening each
//     twice.
//   - "fifoself": becomes nobody, puts a FIFO at its own executable's
//     path (renaming the file aside), opens a file twice and sleeps
//     (--stacks must not open the path it was mapped from).
//   - "threadexit": forks children whose threads each open a file a few
//     times and are then ended together by exit_group (a thread's last
//     repeats must count although it is not the last to exit).
//   - "seccompdeny": installs a seccomp filter that answers openat2 and
//     faccessat2 with an error before the kernel runs them, then makes
//     each N times on a file, with an openat it lets by.
//   - "cloneinto": makes children with clone3(CLONE_INTO_CGROUP), each
//     started in a given cgroup v2 directory, not its parent's; each opens
//     a file twice and exits without an exec.
//   - "ptracestop": traces a child that opens a file N times and once
//     more, and stops that last openat at its entry: killed there, or
//     skipped by PTRACE_SYSEMU; the kernel runs N opens.
//   - "namedthread": a process whose worker thread names itself
//     (pthread_setname_np) and forks a child that keeps that name, each
//     opening a file a known number of times (--comm selects processes).
//   - "execmapper": maps and unmaps an executable page in a loop for a
//     given time (a JIT's stream of mapping records, from outside the
//     traced tree).
//
// The C sources live in csrc/, a directory without Go files, so that the go
// tool does not treat them as cgo sources of this package.
package testprog

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// openerPkg is the import path of the opener helper.
const openerPkg = "github.com/oncetool/once/internal/testprog/opener"

// Names of the helpers Build knows.
const (
	Opener    = "opener"
	Spawnp    = "spawnp"
	Exitonly  = "exitonly"
	Forker    = "forker"
	Flooder   = "flooder"
	Reopen    = "reopen"
	Inoreuse  = "inoreuse"
	Uringopen = "uringopen"
	Stackprog = "stackprog"
	// Internalnames: see the package documentation.
	Internalnames = "internalnames"
	Churner       = "churner"
	Fifoself      = "fifoself"
	Openmix       = "openmix"
	Renameopen    = "renameopen"
	Threadexit    = "threadexit"
	Seccompdeny   = "seccompdeny"
	Cloneinto     = "cloneinto"
	Ptracestop    = "ptracestop"
	Execmapper    = "execmapper"
	Namedthread   = "namedthread"
)

// build is the memoized outcome of building one helper in this process.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}

	// outDir holds every helper built by this process. It is deliberately
	// not a t.TempDir: that would be removed when the first test to call
	// Build finishes, while later tests still use the cached binaries. A
	// package's TestMain removes it at the end (Main).
	outDirOnce sync.Once
	outDir     string
	outDirErr  error
)

// Main runs a package's tests and then removes the helpers they built:
// func TestMain(m *testing.M) { os.Exit(testprog.Main(m)) }. Left behind,
// each test binary's would stay in $TMPDIR, megabytes a run.
func Main(m *testing.M) int {
	if err := CheckMachine(); err != nil {
		fmt.Fprintln(os.Stderr, "testprog:", err)
		return 1
	}
	code := m.Run()
	RemoveBuilds()
	return code
}

// RemoveBuilds removes the helpers built by this process, for a TestMain
// that does more than Main.
func RemoveBuilds() {
	if outDir != "" {
		os.RemoveAll(outDir)
	}
}

// Build compiles the named helper (Opener, Spawnp or Exitonly) once per test
// binary and returns the absolute path of the executable. Later calls, from
// any test or goroutine, reuse that binary. A build failure fails t with the
// compiler's output; every later caller of the same name fails too.
func Build(t testing.TB, name string) string {
	t.Helper()
	buildsMu.Lock()
	b, ok := builds[name]
	if !ok {
		b = &build{}
		builds[name] = b
	}
	buildsMu.Unlock()

	b.once.Do(func() { b.path, b.err = buildHelper(name) })
	if b.err != nil {
		t.Fatalf("testprog: building %s: %v", name, b.err)
	}
	return b.path
}

func buildHelper(name string) (string, error) {
	outDirOnce.Do(func() { outDir, outDirErr = os.MkdirTemp("", "once-testprog-") })
	if outDirErr != nil {
		return "", outDirErr
	}
	src, err := sourceDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(outDir, name)

	var cmd *exec.Cmd
	switch name {
	case Opener:
		root, err := moduleRoot(src)
		if err != nil {
			return "", err
		}
		cmd = exec.Command("go", "build", "-o", out, openerPkg)
		cmd.Dir = root
		// A static binary without cgo keeps the dynamic loader's own
		// opens (ld.so.cache, libc) out of every trace of the helper.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	case Spawnp:
		cmd = exec.Command("gcc", "-O2", "-o", out, filepath.Join(src, "csrc", "spawnp.c"))
	case Exitonly:
		cmd = exec.Command("gcc", "-nostdlib", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "exitonly.c"))
	case Forker:
		cmd = exec.Command("gcc", "-O2", "-o", out, filepath.Join(src, "csrc", "forker.c"))
	case Flooder:
		cmd = exec.Command("gcc", "-O2", "-o", out, filepath.Join(src, "csrc", "flooder.c"))
	case Reopen:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "reopen.c"))
	case Uringopen:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "uringopen.c"))
	case Stackprog:
		// Dynamic, without frame pointers, with symbols: callers are
		// found through the CFI of the program and of libc.
		cmd = exec.Command("gcc", "-O2", "-fomit-frame-pointer", "-fno-ipa-icf", "-o", out, filepath.Join(src, "csrc", "stackprog.c"))
	case Inoreuse:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "inoreuse.c"))
	case Seccompdeny:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "seccompdeny.c"))
	case Threadexit:
		cmd = exec.Command("gcc", "-static", "-O2", "-pthread", "-o", out, filepath.Join(src, "csrc", "threadexit.c"))
	case Namedthread:
		cmd = exec.Command("gcc", "-static", "-O2", "-pthread", "-o", out, filepath.Join(src, "csrc", "namedthread.c"))
	case Churner:
		cmd = exec.Command("gcc", "-O2", "-o", out, filepath.Join(src, "csrc", "churner.c"))
	case Cloneinto:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "cloneinto.c"))
	case Execmapper:
		cmd = exec.Command("gcc", "-O2", "-o", out, filepath.Join(src, "csrc", "execmapper.c"))
	case Ptracestop:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "ptracestop.c"))
	case Fifoself:
		// Dynamic, without frame pointers: its callers are found
		// through its own CFI, which only its file has.
		cmd = exec.Command("gcc", "-O2", "-fomit-frame-pointer", "-o", out, filepath.Join(src, "csrc", "fifoself.c"))
	case Openmix:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "openmix.c"))
	case Renameopen:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "renameopen.c"))
	case Internalnames:
		cmd = exec.Command("gcc", "-static", "-O2", "-o", out, filepath.Join(src, "csrc", "internalnames.c"))
	default:
		return "", fmt.Errorf("unknown helper %q (want %q, %q or %q)", name, Opener, Spawnp, Exitonly)
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, output)
	}
	return out, nil
}

// sourceDir finds this package's directory from the compiled-in file name,
// since tests run with the working directory of whichever package imports
// testprog, not this one.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate testprog sources (file %q; built with -trimpath?)", file)
	}
	return filepath.Dir(file), nil
}

// moduleRoot asks the go tool which go.mod governs dir, so the build works
// regardless of the caller's working directory.
func moduleRoot(dir string) (string, error) {
	cmd := exec.Command("go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := string(bytes.TrimSpace(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD in %s: not inside a module", dir)
	}
	return filepath.Dir(gomod), nil
}
