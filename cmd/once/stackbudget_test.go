package main

import (
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// hostileStackSrc opens its argument twice (a duplicate) from opener,
// called by a function whose symbol is a 300 KB mangled name: both on
// the stack at each open.
func hostileStackSrc(name string) string {
	return `#include <fcntl.h>
#include <unistd.h>
__attribute__((noinline)) int opener(const char *p)
{
	int fd = open(p, O_RDONLY);

	if (fd >= 0)
		close(fd);
	return fd;
}
__attribute__((noinline, used)) int longname(const char *p) __asm__("` + name + `");
int longname(const char *p)
{
	int a = opener(p);
	int b = opener(p);

	return a < 0 || b < 0;
}
int main(int argc, char **argv) { return argc < 2 || longname(argv[1]); }
`
}

// longMangled is a C++-style mangled name of about n bytes.
func longMangled(n int) string { return "_ZN" + strings.Repeat("1a", n/2) + "Ev" }

// buildHostileStack compiles the program, without frame pointers, into
// a directory uid 65534 can read.
func buildHostileStack(t *testing.T, name string) (dir, exe string) {
	t.Helper()
	gcc := needTool(t, "gcc")
	// Not t.TempDir: its parent is 0700.
	dir, err := os.MkdirTemp("", "once-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte(hostileStackSrc(name)), 0o644); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "hostile")
	if out, err := exec.Command(gcc, "-O1", "-fomit-frame-pointer", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "target"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exe
}

// claimSection makes exe's section claim size bytes, the file extended
// sparsely to hold them (a few KB on disk).
func claimSection(t *testing.T, exe, section string, size uint64) {
	t.Helper()
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	f, err := os.OpenFile(exe, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h [64]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		t.Fatal(err)
	}
	shoff := int64(binary.LittleEndian.Uint64(h[0x28:]))
	for i, s := range ef.Sections {
		if s.Name != section {
			continue
		}
		if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, size), shoff+int64(i)*64+0x20); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(int64(s.Offset + size)); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s has no %s", exe, section)
}

// stackReport is what the tests read of once run's JSON report.
type stackReport struct {
	Stacks []struct {
		Frames []struct {
			Func   string `json:"func"`
			Module string `json:"module"`
			Offset uint64 `json:"offset"`
		} `json:"frames"`
		Notes []struct {
			Module string `json:"module"`
			Note   string `json:"note"`
		} `json:"notes"`
	} `json:"stacks"`
	StacksCaptured int `json:"stacks_captured"`
	StacksCapped   int `json:"stacks_capped"`
	StacksNamesCut int `json:"stacks_names_cut"`
}

// stackRunBound is the peak RSS once run --stacks may reach, whatever
// the traced files claim: the DaemonSet's limit, which holds what
// --stacks needs on a plain program (its rings mapped), and the traced
// files' parsed parts, 64 MiB in all (README: Limits and bounds).
const stackRunBound = 256 << 20

// TestStacksHostileFiles: files a user controls, run as uid 65534
// under once run --stacks, claiming sections far larger than they are
// (a 16 KB sparse file whose .eh_frame says 256 MB, a .symtab of 96 MB)
// or holding a 300 KB mangled name on the stack: once's memory stays
// within its bound, its report comes within seconds of the command, the
// frames show module+offset (or the name cut), and every cap is counted.
func TestStacksHostileFiles(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	setpriv := needTool(t, "setpriv")
	for _, tc := range []struct {
		name    string
		row     string
		fn      string // the long function's name
		section string // made to claim size bytes
		size    uint64
		check   func(t *testing.T, r *stackReport, exe string)
	}{
		{
			name: "eh_frame claims 256 MB", row: "run --stacks: a sparse binary whose .eh_frame claims 256 MB, by uid 65534",
			fn: "_ZN4easy4nameEv", section: ".eh_frame", size: 256 << 20,
			check: func(t *testing.T, r *stackReport, exe string) {
				if r.StacksCapped == 0 || !noted(r, exe, ".eh_frame") {
					t.Errorf("stacks_capped %d, notes %+v: want the refused .eh_frame counted and noted", r.StacksCapped, r.Stacks)
				}
			},
		},
		{
			name: "symtab claims 96 MB", row: "run --stacks: a sparse binary whose .symtab claims 96 MB, by uid 65534",
			fn: "_ZN4easy4nameEv", section: ".symtab", size: 96 << 20,
			check: func(t *testing.T, r *stackReport, exe string) {
				if r.StacksCapped == 0 || !noted(r, exe, ".symtab") {
					t.Errorf("stacks_capped %d: want the refused .symtab counted and noted", r.StacksCapped)
				}
				if !hasFrame(r, func(fn, mod string, off uint64) bool { return mod == exe && fn == "" && off != 0 }) {
					t.Errorf("no frame of %s shown as module+offset: %+v", exe, r.Stacks)
				}
			},
		},
		{
			name: "300 KB mangled name", row: "run --stacks: a 300 KB mangled name on the stack, by uid 65534",
			fn: longMangled(300_000),
			check: func(t *testing.T, r *stackReport, exe string) {
				if !hasFrame(r, func(fn, mod string, off uint64) bool {
					return mod == exe && strings.HasPrefix(fn, "_ZN1a1a") && strings.HasSuffix(fn, "…") && len(fn) <= 4096+len("…")
				}) {
					t.Errorf("no frame with the long name cut at 4 KiB: %+v", r.Stacks)
				}
				if r.StacksNamesCut == 0 {
					t.Error("stacks_names_cut 0: want the cut name counted")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := reltest.Record(t, tc.row)
			dir, exe := buildHostileStack(t, tc.fn)
			if tc.section != "" {
				claimSection(t, exe, tc.section, tc.size)
			}
			target := filepath.Join(dir, "target")
			out := filepath.Join(t.TempDir(), "r.json")
			// The command alone, for its time.
			start := time.Now()
			runOK(t, setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", exe, target)
			alone := time.Since(start)

			cmd := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", out, "--",
				setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", exe, target)
			start = time.Now()
			hwm := peakOf(t, cmd)
			took := time.Since(start)
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var r stackReport
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			row.Inputs, row.Seen = tc.row, fmt.Sprintf("%d stacks, %d capped, %d names cut", r.StacksCaptured, r.StacksCapped, r.StacksNamesCut)
			t.Logf("once run --stacks: peak RSS %d MiB, %v (the command alone %v); %s", hwm>>20, took.Round(time.Millisecond), alone.Round(time.Millisecond), row.Seen)
			if hwm > stackRunBound {
				t.Errorf("peak RSS %d MiB, bound %d MiB", hwm>>20, stackRunBound>>20)
			}
			if took > alone+5*time.Second {
				t.Errorf("once run took %v, the command alone %v", took, alone)
			}
			if r.StacksCaptured == 0 || !hasFrame(&r, func(fn, mod string, off uint64) bool { return mod == exe }) {
				t.Fatalf("no stack through %s: %s", exe, raw)
			}
			tc.check(t, &r, exe)
		})
	}

	t.Run("watch in a 256 MiB memory cgroup", func(t *testing.T) {
		row := reltest.Record(t, "watch --stacks in a 256 MiB memory cgroup: a sparse binary whose .eh_frame claims 256 MB")
		dir, exe := buildHostileStack(t, "_ZN4easy4nameEv")
		claimSection(t, exe, ".eh_frame", 256<<20)
		cg := memoryCgroup(t, floodMemoryLimit)
		out := filepath.Join(t.TempDir(), "w.jsonl")
		sh := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec %s watch --stacks --format json -o %s --uid 65534 --interval 200ms`, cg, bin, out)
		w := startWatchCmd(t, exec.Command("/bin/sh", "-c", sh))
		for range 3 {
			runOK(t, setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", exe, filepath.Join(dir, "target"))
		}
		time.Sleep(time.Second)
		if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatalf("once watch is gone (OOM-killed?): %v", err)
		}
		w.stop(t, nil)
		sum := lastSummary(t, out)
		if sum == nil {
			t.Fatal("no summary")
		}
		row.Inputs, row.Seen = "3 runs", fmt.Sprintf("%v stacks, %v capped", sum["stacks_captured"], sum["stacks_capped"])
		if c, _ := sum["stacks_capped"].(float64); c == 0 {
			t.Errorf("stacks_capped %v: want the refused .eh_frame counted", sum["stacks_capped"])
		}
	})
}

func hasFrame(r *stackReport, ok func(fn, mod string, off uint64) bool) bool {
	for _, s := range r.Stacks {
		for _, f := range s.Frames {
			if ok(f.Func, f.Module, f.Offset) {
				return true
			}
		}
	}
	return false
}

func noted(r *stackReport, exe, what string) bool {
	for _, s := range r.Stacks {
		for _, n := range s.Notes {
			if n.Module == exe && strings.Contains(n.Note, what) {
				return true
			}
		}
	}
	return false
}
