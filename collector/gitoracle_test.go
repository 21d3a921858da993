package collector_test

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestGitFilesMatchStrace runs git's everyday commands, whose lock files
// (config.lock renamed over config, index.lock over index, then
// COMMIT_EDITMSG made) make ext4 give freed inode numbers to new files,
// under strace -f, and that strace under once: one run, two tracers.
//
// strace shows no inode, so which opens are of one file is worked out
// from it alone, by path and in order: a path names one file object from
// its first open until that object is renamed or linked elsewhere or
// unlinked, and an open that creates (O_CREAT where nothing is, or
// O_EXCL) starts a new one. Per image, once's files must be exactly those
// objects: no file of once's made of two objects (a reused number taken
// for the file it was), and no object split between two of once's files.
// Every duplicate_open finding is then a file strace shows opened that
// many times.
func TestGitFilesMatchStrace(t *testing.T) {
	stracePath := strace.Require(t)
	git := testprog.NeedTool(t, "git")
	for _, fstype := range []string{"ext4", "xfs", "tmpfs", "overlay-ext4"} {
		for _, rings := range ringModes {
			t.Run(fstype+ringsName(rings), func(t *testing.T) {
				dir, err := filepath.EvalSymlinks(scratchFS(t, fstype))
				if err != nil {
					t.Fatal(err)
				}
				script := strings.Join([]string{
					git + " init -q",
					"echo hello > file",
					git + " add file",
					git + " commit -q -m x",
					git + " status >/dev/null",
					git + " log >/dev/null",
				}, " && ")
				out := filepath.Join(t.TempDir(), "strace.out")
				cmd := exec.CommandContext(context.Background(), stracePath, straceArgs(out, "/bin/sh", "-c", script)...)
				cmd.Dir = dir
				cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
					"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}
				r := traceCmd(t, cmd, collector.Options{Rings: rings})
				if r.ExitCode != 0 {
					t.Fatalf("git exited %d", r.ExitCode)
				}
				calls, err := strace.ParseFile(out)
				if err != nil {
					t.Fatal(err)
				}
				checkFilesAgainstStrace(t, dir, calls, r)
			})
		}
	}
}

// straceArgs is strace.Command's argument list, with the calls that change
// what a path names traced too.
func straceArgs(out string, argv ...string) []string {
	args := slices.Clone(strace.Args)
	for i, a := range args {
		if strings.HasPrefix(a, "trace=") {
			args[i] = a + ",rename,renameat,renameat2,link,linkat,unlink,unlinkat,chdir,fchdir"
		}
	}
	args = append(args, "-o", out, "--")
	return append(args, argv...)
}

// A file object in the strace model, and the once file (in one image) an
// open of it was grouped in.
type objID int

type onceFile struct {
	image trace.ImageKey
	fo    *trace.FileOpens
}

func checkFilesAgainstStrace(t *testing.T, dir string, calls []strace.Call, r *trace.Result) {
	t.Helper()
	// once's successful opens, per thread and name as passed, in order.
	type onceCall struct {
		file onceFile
		call trace.OpenCall
	}
	byName := map[string][]onceCall{}
	for _, p := range r.Processes {
		// Devices (git's /dev/null) are listed apart, as strace's opens.
		for _, fo := range slices.Concat(p.Opens, p.SpecialOpens) {
			for _, c := range fo.Calls {
				k := fmt.Sprintf("%d %q", c.Tid, c.Fname)
				byName[k] = append(byName[k], onceCall{onceFile{p.Key, fo}, c})
			}
			if fo.CallsOmitted > 0 {
				t.Fatalf("%s: calls omitted, can't compare", fo.Path)
			}
		}
	}
	for _, cs := range byName {
		slices.SortFunc(cs, func(a, b onceCall) int { return cmp.Compare(a.call.EnterNs, b.call.EnterNs) })
	}

	m := pathModel{obj: map[string]objID{}, cwd: map[int]string{}, start: dir}
	objOf := map[onceFile]map[objID]bool{}
	fileOf := map[trace.ImageKey]map[objID]map[*trace.FileOpens]bool{}
	opens := map[trace.ImageKey]map[objID]int{}
	matched := map[string]int{}
	for _, c := range calls {
		if c.NoReturn || c.Failed() {
			continue
		}
		if !c.IsOpen() {
			m.apply(t, c)
			continue
		}
		flags, err := c.FlagBits()
		if c.Syscall == "creat" {
			flags, err = 0o100, nil
		}
		if err != nil {
			t.Fatalf("line %d: %v", c.Line, err)
		}
		if flags&trace.OPath != 0 {
			continue // grouped apart by once, never a duplicate
		}
		k := fmt.Sprintf("%d %q", c.Pid, c.Path)
		i := matched[k]
		matched[k]++
		if i >= len(byName[k]) {
			t.Errorf("line %d: strace's %s(%q) by %d: once has no such open", c.Line, c.Syscall, c.Path, c.Pid)
			continue
		}
		oc := byName[k][i]
		// The file as the kernel resolved it: a name through a symlink is
		// the file it leads to.
		o := m.open(oc.call.Path, flags)
		f := oc.file
		if objOf[f] == nil {
			objOf[f] = map[objID]bool{}
		}
		objOf[f][o] = true
		if fileOf[f.image] == nil {
			fileOf[f.image], opens[f.image] = map[objID]map[*trace.FileOpens]bool{}, map[objID]int{}
		}
		if fileOf[f.image][o] == nil {
			fileOf[f.image][o] = map[*trace.FileOpens]bool{}
		}
		fileOf[f.image][o][f.fo] = true
		opens[f.image][o]++
	}
	if len(matched) == 0 {
		t.Fatal("strace saw no open: the oracle matched nothing")
	}
	for f, objs := range objOf {
		if len(objs) > 1 {
			t.Errorf("pid %d: once's file %q (ino %d gen %d, %d opens) is %d files by strace",
				f.image.Pid, f.fo.Paths, f.fo.Ino, f.fo.Gen, f.fo.Count, len(objs))
		}
	}
	for im, objs := range fileOf {
		for _, fs := range objs {
			if len(fs) > 1 {
				var paths []string
				for fo := range fs {
					paths = append(paths, fmt.Sprintf("%q (ino %d gen %d)", fo.Paths, fo.Ino, fo.Gen))
				}
				t.Errorf("pid %d: one file by strace is %d of once's: %s", im.Pid, len(fs), strings.Join(paths, ", "))
			}
		}
	}
	n := 0
	for _, f := range findings(r, trace.KindDuplicateOpen) {
		for of, objs := range objOf {
			if of.image != f.Key || of.fo.Ino != f.Ino || of.fo.Dev != f.Dev || of.fo.Gen != f.Gen {
				continue
			}
			n++
			for o := range objs {
				if opens[f.Key][o] != f.Count {
					t.Errorf("pid %d: duplicate_open %q x%d: strace shows it opened %d times",
						f.Pid, f.Paths, f.Count, opens[f.Key][o])
				}
			}
		}
	}
	t.Logf("%d strace calls, %d duplicate_open findings checked", len(calls), n)
}

// pathModel is what each path names, from strace's calls alone.
type pathModel struct {
	next  objID
	obj   map[string]objID // absolute path → the object it names now
	cwd   map[int]string   // by tgid
	start string           // the first process's cwd
}

func (m *pathModel) fresh() objID {
	m.next++
	return m.next
}

// open: the object a successful open of path with flags is of.
func (m *pathModel) open(path string, flags uint64) objID {
	const oCreat, oExcl = 0o100, 0o200
	o, ok := m.obj[path]
	if !ok || flags&(oCreat|oExcl) == oCreat|oExcl {
		o = m.fresh()
		m.obj[path] = o
	}
	return o
}

func (m *pathModel) of(path string) objID {
	o, ok := m.obj[path]
	if !ok {
		o = m.fresh()
		m.obj[path] = o
	}
	return o
}

// take removes path and everything under it, and returns them by what
// follows path ("" for path itself).
func (m *pathModel) take(path string) map[string]objID {
	out := map[string]objID{}
	for p, o := range m.obj {
		if rest, ok := strings.CutPrefix(p, path); ok && (rest == "" || rest[0] == '/') {
			out[rest] = o
			delete(m.obj, p)
		}
	}
	return out
}

func (m *pathModel) put(path string, objs map[string]objID) {
	for rest, o := range objs {
		m.obj[path+rest] = o
	}
}

// move renames from to to (exchange: and to to from), with what is under
// them.
func (m *pathModel) move(from, to string, exchange bool) {
	a := m.take(from)
	if _, ok := a[""]; !ok {
		a[""] = m.fresh() // an object no open was of yet
	}
	b := m.take(to)
	m.put(to, a)
	if exchange {
		m.put(from, b)
	}
}

// apply records what a successful call other than an open changes.
func (m *pathModel) apply(t *testing.T, c strace.Call) {
	t.Helper()
	cwd, ok := m.cwd[c.Tgid]
	if !ok {
		cwd = m.start
	}
	arg := func(i int) string {
		if i >= len(c.Args) {
			t.Fatalf("line %d: %s has %d arguments", c.Line, c.Syscall, len(c.Args))
		}
		return c.Args[i]
	}
	path := func(i int) string {
		p := unquote(t, c, arg(i))
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return filepath.Clean(p)
	}
	atPath := func(dirfd, i int) string {
		if d := arg(dirfd); d != "-100" {
			t.Fatalf("line %d: %s relative to dirfd %s: not modelled", c.Line, c.Syscall, d)
		}
		return path(i)
	}
	switch c.Syscall {
	case "clone", "clone3", "fork", "vfork":
		flags, _ := c.FlagBits()
		if flags&0x10000 == 0 { // CLONE_THREAD: the same process
			m.cwd[int(c.Ret)] = cwd
		}
	case "chdir":
		m.cwd[c.Tgid] = path(0)
	case "fchdir":
		t.Fatalf("line %d: fchdir: not modelled", c.Line)
	case "rename":
		m.move(path(0), path(1), false)
	case "renameat":
		m.move(atPath(0, 1), atPath(2, 3), false)
	case "renameat2":
		m.move(atPath(0, 1), atPath(2, 3), strings.Contains(arg(4), "0x2") || strings.Contains(arg(4), "EXCHANGE"))
	case "link":
		m.obj[path(1)] = m.of(path(0))
	case "linkat":
		m.obj[atPath(2, 3)] = m.of(atPath(0, 1))
	case "unlink":
		m.take(path(0))
	case "unlinkat":
		m.take(atPath(0, 1))
	}
}

// unquote decodes a string argument as strace -xx prints it.
func unquote(t *testing.T, c strace.Call, s string) string {
	t.Helper()
	q, ok := strings.CutPrefix(s, `"`)
	q, ok2 := strings.CutSuffix(q, `"`)
	if !ok || !ok2 {
		t.Fatalf("line %d: %s: argument %s is not a string", c.Line, c.Syscall, s)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(q, `\x`, ""))
	if err != nil || len(b)*4 != len(q) {
		t.Fatalf("line %d: %s: argument %s is not in -xx form", c.Line, c.Syscall, s)
	}
	return string(b)
}
