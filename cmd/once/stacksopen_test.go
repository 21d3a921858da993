package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// hostileDir makes a directory uid 65534 may write in (its parents
// searchable), with a copy of program prog in it, and the file it opens.
func hostileDir(t *testing.T, prog string) (dir, exe, file string) {
	t.Helper()
	top, err := os.MkdirTemp("", "once-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dir = filepath.Join(top, "w")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{top, dir} {
		if err := os.Chmod(d, map[bool]os.FileMode{true: 0o755, false: 0o777}[d == top]); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, filepath.Base(prog))
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(top, "target")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exe, file
}

// isFIFO says whether path is a FIFO now.
func isFIFO(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// waitFor polls cond every 20ms for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// sigtermLimit is how soon once must end after SIGTERM. It takes 0.1 to
// 0.5 s (the report symbolizes, reading libc's debug file when there is
// one), over a second on a machine loaded 6 times over its cores; blocked
// in a FIFO's open it never ends.
const sigtermLimit = 2 * time.Second

// stopWithin sends sig to cmd and says how long it took to exit, failing
// the test past limit (and killing it then).
func stopWithin(t *testing.T, cmd *exec.Cmd, sig os.Signal, limit time.Duration) time.Duration {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	start := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	d := time.Since(start)
	if d > limit {
		t.Errorf("once took %v to end after %v, want under %v", d.Round(time.Millisecond), sig, limit)
	}
	return d
}

// openTwiceSite finds, in a once run JSON report, the duplicate open of
// file and the functions of its call sites' stacks.
func openTwiceSite(t *testing.T, report string, file string) [][]string {
	t.Helper()
	r, _ := readStacksReport(t, report)
	var out [][]string
	for _, f := range r.Findings {
		if f.Kind == "duplicate_open" && f.Path == file {
			for _, cs := range f.CallSites {
				out = append(out, r.funcs(cs.StackID))
			}
		}
	}
	return out
}

// TestStacksFIFOAtOwnPath: a program run as nobody renames its own
// executable aside and puts a FIFO at the path it was mapped from, then
// opens a file twice. --stacks must not open that path (a blocking open
// of a FIFO waits for ever): once run ends with the program, its
// duplicate's stack named through the process's own mapping, and ends
// promptly on SIGTERM (sigtermLimit); once watch keeps writing and ends
// promptly on SIGTERM.
func TestStacksFIFOAtOwnPath(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	prog := testprog.Build(t, testprog.Fifoself)

	t.Run("run", func(t *testing.T) {
		row := reltest.Record(t, "--stacks: run as nobody, a FIFO at its own path (once run)")
		_, exe, file := hostileDir(t, prog)
		report := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", report, "--", exe, file, "1000")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("once run: %v\n%s", err, out.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("once run --stacks did not end within 20s (the program ran 1s)\n%s", out.String())
		}
		if !isFIFO(exe) {
			t.Fatalf("%s is not a FIFO: the program did not run as meant\n%s", exe, out.String())
		}
		sites := openTwiceSite(t, report, file)
		row.Inputs, row.Seen = "1 program, 2 opens", len(sites)
		if len(sites) != 1 || !slices.Contains(sites[0], "open_twice") || !slices.Contains(sites[0], "main") {
			t.Errorf("duplicate of %s: call sites %v, want one through open_twice and main (the process's own file)", file, sites)
		}
	})

	t.Run("run SIGTERM", func(t *testing.T) {
		row := reltest.Record(t, "--stacks: run as nobody, a FIFO at its own path (once run, SIGTERM)")
		_, exe, file := hostileDir(t, prog)
		report := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", report, "--", exe, file, "30000")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		if !waitFor(10*time.Second, func() bool { return isFIFO(exe) }) {
			t.Fatalf("no FIFO at %s\n%s", exe, out.String())
		}
		time.Sleep(500 * time.Millisecond) // its opens, and their drain
		d := stopWithin(t, cmd, syscall.SIGTERM, sigtermLimit)
		row.Inputs, row.Seen = "SIGTERM", d.Round(time.Millisecond)
	})

	t.Run("watch", func(t *testing.T) {
		row := reltest.Record(t, "--stacks: run as nobody, a FIFO at its own path (once watch)")
		_, exe, file := hostileDir(t, prog)
		out := filepath.Join(t.TempDir(), "w.jsonl")
		w := startWatch(t, "--stacks", "--events", "--format", "json", "-o", out, "--comm", filepath.Base(exe))
		runOK(t, exe, file, "300")
		if !isFIFO(exe) {
			t.Fatalf("%s is not a FIFO: the program did not run as meant", exe)
		}
		seen := waitFor(10*time.Second, func() bool {
			data, _ := os.ReadFile(out)
			return bytes.Count(data, []byte(file)) >= 2
		})
		if !seen {
			data, _ := os.ReadFile(out)
			t.Errorf("once watch wrote no line of the program's 2 opens of %s within 10s:\n%s", file, data)
		}
		d := stopWithin(t, w.cmd, syscall.SIGTERM, sigtermLimit)
		row.Inputs, row.Seen = "2 opens, SIGTERM", d.Round(time.Millisecond)
		if data, _ := os.ReadFile(out); !strings.Contains(string(data), `"summary"`) {
			t.Errorf("no summary line after SIGTERM")
		}
	})
}

// TestStacksMountNamespace: a program run by nobody in its own user and
// mount namespace (unshare -Urm), from a path at which the host has
// something else: a FIFO, or another program. In its namespace a bind
// mount puts stackprog there. --stacks must resolve its frames against
// its own file (stackprog's functions), never open the host's path (a
// FIFO would hang it; another program would name wrong functions).
func TestStacksMountNamespace(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	unshare, setpriv := needTool(t, "unshare"), needTool(t, "setpriv")
	stackprog := testprog.Build(t, testprog.Stackprog)
	decoy := testprog.Build(t, testprog.Fifoself)
	for _, tc := range []struct {
		name string
		fifo bool // the host's file at the path: a FIFO, else another program
		// quick: the program goes on at once, and is likely gone before
		// once reads its snapshots: its file is then taken at the host's
		// path only if it is the build mapped, which it is not.
		quick bool
	}{
		{"host path a FIFO", true, false},
		{"host path another program", false, false},
		{"host path another program, the process gone", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := reltest.Record(t, "--stacks: a process in its own mount namespace, the host's file at its path "+tc.name[len("host path "):])
			dir, own, file := hostileDir(t, stackprog)
			path := filepath.Join(dir, "mapped")
			if tc.fifo {
				if err := syscall.Mkfifo(path, 0o666); err != nil {
					t.Fatal(err)
				}
			} else {
				data, err := os.ReadFile(decoy)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			report := filepath.Join(t.TempDir(), "r.json")
			sh := `mount --bind "$1" "$2" && exec "$2" "$3" true`
			cmd := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", report, "--",
				setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups",
				unshare, "-Urm", "/bin/sh", "-c", sh, "sh", own, path, file)
			// stackprog waits for a byte after its opens: it gets it once
			// once holds its file open (the stack cache's Retain, through
			// the live process), however long once takes to get there.
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdin = pr
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			go func() {
				if !tc.quick {
					testprog.WaitFor(15*time.Second, func() bool { return holdsFile(cmd.Process.Pid, own) })
				}
				pw.Write([]byte("g"))
				pw.Close()
			}()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("once run: %v\n%s", err, out.String())
				}
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("once run --stacks did not end within 20s (the program ran 1s)\n%s", out.String())
			}
			r, raw := readStacksReport(t, report)
			// Had once opened the host's path, the file there would have
			// been refused, and counted.
			var counts struct {
				Refused uint64 `json:"stacks_modules_refused"`
				Gone    uint64 `json:"stacks_modules_gone"`
			}
			if err := json.Unmarshal(raw, &counts); err != nil {
				t.Fatal(err)
			}
			row.Lost = counts.Refused + counts.Gone
			if !tc.quick && (counts.Refused != 0 || counts.Gone != 0) {
				t.Errorf("modules refused %d, gone %d: want none (every file opened through the live process)", counts.Refused, counts.Gone)
			}
			var callers []string
			for _, f := range r.Findings {
				if f.Kind != "duplicate_open" || f.Path != file {
					continue
				}
				for _, cs := range f.CallSites {
					fs := r.funcs(cs.StackID)
					if slices.Contains(fs, "open_twice") {
						t.Errorf("call site %v: the host's program's function", fs)
					}
					if i := slices.IndexFunc(fs, func(s string) bool { return strings.HasPrefix(s, "open_") }); i >= 0 && slices.Contains(fs[i:], "main") {
						callers = append(callers, fs[i])
					}
				}
			}
			slices.Sort(callers)
			row.Inputs, row.Seen = "3 opens", len(callers)
			if tc.quick && len(callers) == 0 {
				// Gone before once saw it: unresolved, and counted.
				if counts.Gone == 0 {
					t.Errorf("no caller named, and no module counted gone")
				}
				t.Logf("the process was gone: %d modules gone", counts.Gone)
				return
			}
			if want := []string{"open_alpha", "open_beta", "open_gamma"}; !slices.Equal(callers, want) {
				t.Errorf("duplicate of %s: callers %v, want %v (stackprog, as the process mapped it)\n%s", file, callers, want, out.String())
			}
		})
	}
}

// holdsFile says whether process pid has the file at path open.
func holdsFile(pid int, path string) bool {
	want, err := os.Stat(path)
	if err != nil {
		return false
	}
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fds)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if st, err := os.Stat(filepath.Join(fds, e.Name())); err == nil && os.SameFile(st, want) {
			return true
		}
	}
	return false
}

// TestStacksOtherProcessMappings: under once run --stacks, a process
// outside the command's tree making executable mappings as fast as it
// can (a JIT's stream of them) takes none of the command's mapping
// records and loses none it would count: stackprog's three call sites
// are named through its functions, and stacks_maps_lost is 0. Before the
// records were the command's alone, the other's filled the rings between
// two drains, hundreds of thousands counted lost, and the command's own
// frames were in no known mapping.
func TestStacksOtherProcessMappings(t *testing.T) {
	testprog.RequireRoot(t)
	bin := buildOnce(t)
	prog := testprog.Build(t, testprog.Stackprog)
	mapper := testprog.Build(t, testprog.Execmapper)
	row := reltest.Record(t, "--stacks: once run beside a process making executable mappings in a loop")

	flood := exec.Command(mapper, "60000")
	fout, err := flood.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		flood.Process.Kill()
		flood.Wait()
	}()
	if _, err := fout.Read(make([]byte, 1)); err != nil {
		t.Fatalf("execmapper did not start: %v", err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "target")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "r.json")
	// A shell first, and a pause: the flood has time to fill every ring
	// before stackprog maps its own code.
	cmd := exec.Command(bin, "run", "--stacks", "--format", "json", "-o", report, "--",
		"/bin/sh", "-c", `sleep 1; exec "$0" "$1" true`, prog, file)
	cmd.Stdin = strings.NewReader("go")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("once run --stacks: %v\n%s", err, out.String())
	}
	r, raw := readStacksReport(t, report)
	var callers []string
	for _, f := range r.Findings {
		if f.Kind != "duplicate_open" || f.Path != file {
			continue
		}
		for _, cs := range f.CallSites {
			fs := r.funcs(cs.StackID)
			if i := slices.IndexFunc(fs, func(s string) bool { return strings.HasPrefix(s, "open_") }); i >= 0 {
				callers = append(callers, fs[i])
			}
		}
	}
	slices.Sort(callers)
	row.Inputs, row.Seen = "1 program, 3 call sites", len(callers)
	if want := []string{"open_alpha", "open_beta", "open_gamma"}; !slices.Equal(callers, want) || r.StacksMapsLost != 0 {
		t.Errorf("duplicate of %s named through %v, stacks_maps_lost %d; want %v and 0 (%s)", file, callers, r.StacksMapsLost, want, stackCounters(t, raw))
	}
}
