// Package opencount counts, without BPF, how many times a command opens each
// file: it runs the command under strace (through package strace) and
// attributes every open-family call to an absolute path, including calls
// relative to a directory descriptor (openat(dirfd, "name")), whose
// directory it finds from the earlier open that returned that descriptor.
//
// It exists for the tests of the reference programs refcp and refmv, which
// promise an exact number of opens per source file.
package opencount

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/strace"
	"golang.org/x/sys/unix"
)

// Open is one open-family call of the traced command (or, in
// Trace.Lookups, one stat or access call).
type Open struct {
	// Path is the absolute, lexically cleaned path the call named; for a
	// call relative to a descriptor the trace does not explain, it is
	// "?fdN/name".
	Path string
	strace.Call
}

// Trace is the outcome of one traced run.
type Trace struct {
	// Opens are the open-family calls, in order.
	Opens []Open
	// Lookups are the stat and access calls that named a file, in order,
	// their paths resolved as the opens' are.
	Lookups []Open
	// Err is the command's error: nil when it exited with status 0.
	Err error
	// Output is the command's standard output and error, combined.
	Output []byte

	logged bool // Check has logged Opens
}

// Build compiles the main package pkg (as the go tool names it, relative to
// the test's working directory) and returns the binary's path. cgo is off
// so the binary is static: no dynamic loader opens in the traces.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(mustAbs(t, pkg)))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func mustAbs(t testing.TB, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// Run runs argv under strace with dir as its working directory. It fails t
// when the trace cannot be read, but not when the command fails: see
// Trace.Err. Callers check strace.Require first, so that a missing strace
// skips (or in CI fails) the test before any setup.
func Run(t testing.TB, dir string, argv ...string) *Trace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "trace")
	cmd := strace.Command(ctx, out, argv...)
	cmd.Dir = dir
	output, runErr := cmd.CombinedOutput()
	calls, err := strace.ParseFile(out)
	if err != nil {
		t.Fatalf("parsing the trace of %q: %v\n%s", argv, err, output)
	}
	if len(calls) == 0 {
		t.Fatalf("empty trace of %q (did strace run?): %v\n%s", argv, runErr, output)
	}
	tr := resolve(calls, dir)
	tr.Err, tr.Output = runErr, output
	return tr
}

// resolve turns the open-family calls into Opens with absolute paths. Each
// process has its own descriptor table: a dirfd means the path of the
// latest successful open in that process that returned the same number.
// That is right as long as descriptors come from opens, which holds for the
// programs traced here (the Go runtime's own descriptors, epoll and pipes,
// are never used as a dirfd).
func resolve(calls []strace.Call, cwd string) *Trace {
	fds := map[int]map[int]string{} // tgid → fd → path
	tr := &Trace{}
	for _, c := range calls {
		lookup := c.IsLookup()
		if !(c.IsOpen() || lookup) || !c.HasPath {
			continue
		}
		table := fds[c.Tgid]
		if table == nil {
			table = map[int]string{}
			fds[c.Tgid] = table
		}
		var p string
		switch {
		case filepath.IsAbs(c.Path):
			p = filepath.Clean(c.Path)
		case c.Dirfd == strace.AtFDCWD:
			p = filepath.Join(cwd, c.Path)
		default:
			if dir, ok := table[c.Dirfd]; ok {
				p = filepath.Join(dir, c.Path)
			} else {
				p = "?fd" + strconv.Itoa(c.Dirfd) + "/" + c.Path
			}
		}
		if lookup {
			tr.Lookups = append(tr.Lookups, Open{Path: p, Call: c})
			continue
		}
		if c.Succeeded() && c.Ret >= 0 {
			table[int(c.Ret)] = p
		}
		tr.Opens = append(tr.Opens, Open{Path: p, Call: c})
	}
	return tr
}

// Of returns the opens of exactly path (absolute and clean).
func (tr *Trace) Of(path string) []Open {
	var out []Open
	for _, o := range tr.Opens {
		if o.Path == path {
			out = append(out, o)
		}
	}
	return out
}

// MissesOf counts the failed lookups of exactly path: once reports two
// that fail alike as a repeated miss.
func (tr *Trace) MissesOf(path string) int {
	n := 0
	for _, l := range tr.Lookups {
		if l.Path == path && l.Failed() {
			n++
		}
	}
	return n
}

// Under returns the opens of root and of anything below it.
func (tr *Trace) Under(root string) []Open {
	var out []Open
	for _, o := range tr.Opens {
		if o.Path == root || strings.HasPrefix(o.Path, root+"/") {
			out = append(out, o)
		}
	}
	return out
}

// String lists the opens, one per line, for test failure messages.
func (tr *Trace) String() string {
	var b strings.Builder
	for _, o := range tr.Opens {
		b.WriteString("  ")
		b.WriteString(o.Syscall)
		b.WriteString("(")
		if o.Dirfd != strace.AtFDCWD && o.Dirfd != 0 {
			b.WriteString("fd " + strconv.Itoa(o.Dirfd) + ", ")
		}
		b.WriteString(o.Path + ", " + o.Flags + ") = ")
		if o.Failed() {
			b.WriteString(o.Errno)
		} else {
			b.WriteString(strconv.Itoa(int(o.Ret)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Expect returns what is wrong, or "" if nothing, with the opens of path:
// there must be exactly n calls, all of them successful.
func (tr *Trace) Expect(path string, n int) string {
	opens := tr.Of(path)
	failed := 0
	for _, o := range opens {
		if !o.Succeeded() {
			failed++
		}
	}
	if len(opens) == n && failed == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d open calls (%d failed), want exactly %d successful", path, len(opens), failed, n)
}

// Tree lists what is under root (root included among dirs), as absolute
// paths: the regular files, the directories and the symbolic links.
func Tree(t testing.TB, root string) (files, dirs, links []string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			files = append(files, p)
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type()&fs.ModeSymlink != 0:
			links = append(links, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, dirs, links
}

// MustRun is Run for a command that must succeed.
func MustRun(t testing.TB, dir string, argv ...string) *Trace {
	t.Helper()
	tr := Run(t, dir, argv...)
	if tr.Err != nil {
		t.Fatalf("%q: %v\n%s", argv, tr.Err, tr.Output)
	}
	return tr
}

// ExpectReadOnly returns what is wrong, or "" if nothing, with how path was
// opened: only for reading, never with O_CREAT.
func (tr *Trace) ExpectReadOnly(path string) string {
	for _, o := range tr.Of(path) {
		bits, err := o.FlagBits()
		if err != nil || bits&unix.O_ACCMODE != unix.O_RDONLY || bits&unix.O_CREAT != 0 {
			return fmt.Sprintf("%s opened with flags %s; want read-only", path, o.Flags)
		}
	}
	return ""
}

// Check fails t with each non-empty problem (from Expect and
// ExpectReadOnly) and, on the first failure, logs the whole list of opens
// to show what happened instead.
func (tr *Trace) Check(t testing.TB, problems ...string) {
	t.Helper()
	for _, p := range problems {
		if p == "" {
			continue
		}
		t.Error(p)
		if !tr.logged {
			tr.logged = true
			t.Logf("opens:\n%s", tr)
		}
	}
}
