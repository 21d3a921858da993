package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// TestWatchOutputFileGuards: once watch -o appends root's system-wide
// trace to a file, which must be one this user made, that no one else can
// write, and a regular file: never another user's (it would keep their
// ownership and mode, and every argv on the machine would be theirs to
// read), never a FIFO (the open would hang).
func TestWatchOutputFileGuards(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "watch -o: another user's file, a 0666 file, a FIFO")
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	theirs := filepath.Join(dir, "theirs.jsonl")
	os.WriteFile(theirs, nil, 0o600)
	os.Chown(theirs, 65534, 65534)
	open := filepath.Join(dir, "open.jsonl")
	os.WriteFile(open, nil, 0o666)
	os.Chmod(open, 0o666)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{theirs, "another user's file"},
		{open, "writable by group or others"},
		{fifo, "not a regular file"},
	} {
		start := time.Now()
		code, _, stderr := runOnce(t, nil, "watch", "--duration", "1s", "--format", "json", "-o", tc.path)
		if code == 0 || !strings.Contains(stderr, tc.want) || time.Since(start) > 20*time.Second {
			t.Errorf("-o %s: exit %d, stderr %q; want a refusal: %s", filepath.Base(tc.path), code, stderr, tc.want)
		}
		if st, err := os.Stat(tc.path); err == nil && st.Mode().IsRegular() && st.Size() != 0 {
			t.Errorf("-o %s: written to (%d bytes)", filepath.Base(tc.path), st.Size())
		}
	}
	row.Inputs, row.Seen = "3 -o files", "3 refused"
}

// TestWatchOutputAfterUncleanStop: a JSON lines file whose last line an
// unclean stop cut (kill -9, an OOM kill, a full disk) is appended to on a
// new line, so that every line after is whole, and the repair is said.
func TestWatchOutputAfterUncleanStop(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "watch -o: a file whose last line a kill -9 cut")
	out := filepath.Join(t.TempDir(), "w.jsonl")
	w := startWatch(t, "--format", "json", "-o", out, "--interval", "50ms", "--comm", "nothing-here")
	testprog.Eventually(t, 10*time.Second, "a summary line in "+out, func() bool {
		data, _ := os.ReadFile(out)
		return bytes.Contains(data, []byte("}\n"))
	})
	w.cmd.Process.Kill()
	w.cmd.Wait()
	// What a cut write leaves: half a line.
	f, _ := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"type":"summary","time":"2026-`)
	f.Close()
	w = startWatch(t, "--format", "json", "-o", out, "--interval", "50ms", "--comm", "nothing-here")
	testprog.Eventually(t, 10*time.Second, "a summary counting the repair in "+out, func() bool {
		data, _ := os.ReadFile(out)
		return bytes.Contains(data, []byte(`"lines_repaired":1`))
	})
	w.stop(t, os.Interrupt)
	if !strings.Contains(w.stderr.buf.String(), "did not end with a newline") {
		t.Errorf("the repair is not said: %s", w.stderr.buf.String())
	}
	data, _ := os.ReadFile(out)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	bad, repaired := 0, false
	for _, l := range lines {
		if !json_valid(l) {
			bad++
		}
		if bytes.Contains(l, []byte(`"lines_repaired":1`)) {
			repaired = true
		}
	}
	if bad != 1 || !repaired {
		t.Errorf("%d of %d lines are not JSON (want only the cut one), a summary says lines_repaired: %v", bad, len(lines), repaired)
	}
	row.Inputs, row.Seen = "a cut line, then a restart", len(lines)
}

// TestRunOutputChecked: -o is checked before the command runs: a missing
// directory costs nothing but a usage error; a report name of 255 bytes
// works (the temp file it is written to first must fit too).
func TestRunOutputChecked(t *testing.T) {
	testprog.RequireRoot(t)
	marker := filepath.Join(t.TempDir(), "ran")
	code, _, stderr := runOnce(t, nil, "run", "-o", "/proc/once-missing/out", "--", "touch", marker)
	if code != exitUsage || strings.Contains(stderr, ".tmp") {
		t.Errorf("-o in a missing directory: exit %d, stderr %q; want %d before anything ran", code, stderr, exitUsage)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran although its report could not be written")
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("r", 255))
	code, _, stderr = runOnce(t, nil, "run", "-o", long, "--", "true")
	if _, err := os.Stat(long); code != 0 || err != nil {
		t.Errorf("-o with a 255-byte name: exit %d, %v, stderr %q", code, err, stderr)
	}
	if out, err := exec.Command("ls", "-a", filepath.Dir(long)).Output(); err != nil || strings.Contains(string(out), ".tmp") {
		t.Errorf("a temp file is left: %s", out)
	}
}

func json_valid(b []byte) bool {
	return len(b) > 0 && b[0] == '{' && bytes.HasSuffix(b, []byte("}")) && jsonValid(b)
}

func jsonValid(b []byte) bool { return json.Valid(b) }
