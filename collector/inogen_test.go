package collector_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// Two opens are of one file only if they are of one inode object. An inode
// number freed by a delete (or a rename over the file) is given by ext4
// and xfs to the next file made: with the number alone, a file and the
// one made after it in its place were one "file" opened under two names.
// inoreuse makes a, then a.lock renamed over a, then b (a's number, on
// ext4), then c in the place of b, deleted; each of a, b and c is opened
// twice, a.lock once. Each must be a file of its own, opened twice.
func TestReusedInodeIsAnotherFile(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Inoreuse)
	for _, fstype := range scratchFSTypes {
		t.Run(fstype, func(t *testing.T) {
			for _, m := range fileIDModes {
				t.Run(m.name, func(t *testing.T) {
					dir := scratchFS(t, fstype)
					if m.noCasts {
						collector.WithoutBTFCasts(t)
					}
					var out strings.Builder
					cmd := exec.Command(bin, dir)
					cmd.Stdout = &out
					r := traceCmd(t, cmd, m.opts)
					if r.ExitCode != 0 {
						t.Fatalf("inoreuse exited %d", r.ExitCode)
					}
					checkReusedInodes(t, fstype, dir, out.String(), r, m.opts.FirstOpensUnsent)
				})
			}
		})
	}
}

// fileIDMode is one way the kernel side decides which opens are of one
// file: every open sent (once run --events); repeats counted by kind in the
// kernel (once run); first opens counted, not sent, by the image's table of
// files (once watch). Each also read without BTF casts (as before Linux
// 6.2), where file_id reads with CO-RE.
type fileIDMode struct {
	name    string
	opts    collector.Options
	noCasts bool
}

var fileIDModes = []fileIDMode{
	{"every open sent", collector.Options{}, false},
	{"repeats tallied", collector.Options{SendOpensPerKind: 1}, false},
	{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, false},
	{"first opens unsent without BTF casts", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}, true},
	{"repeats tallied without BTF casts", collector.Options{SendOpensPerKind: 1}, true},
}

func checkReusedInodes(t *testing.T, fstype, dir, out string, r *trace.Result, unsent bool) {
	t.Helper()
	inos := map[string]uint64{} // what inoreuse saw
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, ino, ok := strings.Cut(line, " ")
		n, err := strconv.ParseUint(ino, 10, 64)
		if !ok || err != nil {
			t.Fatalf("inoreuse printed %q", out)
		}
		inos[name] = n
	}
	reused := inos["b"] == inos["a"] || inos["c"] == inos["b"]
	t.Logf("%s: inode numbers %v (reused: %v)", fstype, inos, reused)
	if !reused && (fstype == "ext4" || fstype == "overlay-ext4") {
		// ext4 gives the lowest free number in the group: the test
		// would prove nothing if it stopped doing so.
		t.Fatalf("%s gave no freed inode number again: %v", fstype, inos)
	}

	var p *trace.Process
	for _, q := range r.Processes {
		if q.Comm == "inoreuse" {
			p = q
		}
	}
	if p == nil {
		t.Fatal("no inoreuse process")
	}
	files := map[string]*trace.FileOpens{}
	for _, fo := range p.Opens {
		if rel, ok := strings.CutPrefix(fo.Path, dir+"/"); ok {
			if files[rel] != nil {
				t.Errorf("%s: two files opened first as %s", fstype, rel)
			}
			files[rel] = fo
		}
	}
	want := map[string]int{"a": 2, "a.lock": 1, "b": 2, "c": 2}
	if unsent {
		// A file's first open is counted, not sent: a.lock, opened once,
		// is not listed; the others are, from their second open.
		delete(want, "a.lock")
	}
	for name, n := range want {
		fo := files[name]
		switch {
		case fo == nil:
			t.Errorf("%s: %s not among the files opened: %v", fstype, name, pathsOf(p.Opens))
		case fo.Count != n:
			t.Errorf("%s: %s opened %d times, want %d (paths %q)", fstype, name, fo.Count, n, fo.Paths)
		case fo.Ino != inos[name]:
			t.Errorf("%s: %s has inode %d, inoreuse saw %d", fstype, name, fo.Ino, inos[name])
		}
	}
	for _, x := range []string{"a", "b", "c"} {
		for _, y := range []string{"b", "c"} {
			fx, fy := files[x], files[y]
			if x >= y || fx == nil || fy == nil || fx.Ino != fy.Ino {
				continue
			}
			if fx.Gen == fy.Gen {
				t.Errorf("%s: %s and %s share inode %d and generation %d", fstype, x, y, fx.Ino, fx.Gen)
			}
		}
	}
	if fstype != "btrfs" {
		// btrfs's generation is the id of the transaction that made the
		// inode: a and a.lock may share it. The others draw it at random.
		for name, fo := range files {
			if fo.Gen == 0 {
				t.Errorf("%s: %s has generation 0", fstype, name)
			}
		}
	}
	var dups []string
	for _, f := range findings(r, trace.KindDuplicateOpen) {
		if rel, ok := strings.CutPrefix(f.Path, dir+"/"); ok {
			dups = append(dups, rel+"x"+strconv.Itoa(f.Count))
		}
	}
	slices.Sort(dups)
	if got := strings.Join(dups, " "); got != "ax2 bx2 cx2" {
		t.Errorf("%s: duplicate_open findings %q, want \"ax2 bx2 cx2\"", fstype, got)
	}
}

func pathsOf(fos []*trace.FileOpens) []string {
	var out []string
	for _, fo := range fos {
		out = append(out, filepath.Base(fo.Path))
	}
	return out
}
