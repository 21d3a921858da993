package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/report"
)

// hostileNames are file names a traced program can choose to attack
// whoever reads the report: line breaks that fake report lines, terminal
// control sequences (clear screen, set window title), bytes that are not
// UTF-8, a bidi override, and Markdown table and fence syntax. Each maps to
// how the text report must show it.
var hostileNames = []struct{ name, text string }{
	{"nl\nname", `nl\nname`},
	{"cr\rname", `cr\rname`},
	{"clear\x1b[2Jname", `clear\x1b[2Jname`},
	{"title\x1b]0;title\x07name", `title\x1b]0;title\x07name`},
	{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
	{"rlo\u202etxt.exe", `rlo\u{202E}txt.exe`},
	{"pipe|and```ticks", "pipe|and```ticks"},
}

// longPath makes a file whose absolute path is exactly n bytes, through
// nested directories of at most 255-byte names.
func longPath(t *testing.T, root string, n int) string {
	t.Helper()
	p := root
	for len(p)+1+255 < n {
		p = filepath.Join(p, strings.Repeat("d", 200))
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	f := p + "/" + strings.Repeat("f", n-len(p)-1)
	if len(f) != n || len(filepath.Base(f)) > 255 {
		t.Fatalf("long path is %d bytes (base %d)", len(f), len(filepath.Base(f)))
	}
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// runOnce runs the once binary and returns its exit status and output.
func runOnce(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(buildOnce(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// rawControls lists the control bytes (other than the newlines that end
// lines) and the invalid UTF-8 in out.
func rawControls(out string) []string {
	var bad []string
	for i := 0; i < len(out); i++ {
		if c := out[i]; (c < 0x20 && c != '\n') || c == 0x7f {
			bad = append(bad, fmt.Sprintf("%#02x at %d", c, i))
		}
	}
	if !utf8.ValidString(out) {
		bad = append(bad, "invalid UTF-8")
	}
	return bad
}

// TestHostileNames opens files with hostile names and a 4095-byte path
// (PATH_MAX with its NUL) under once run and checks every output format:
// the text report and the --events lines hold no raw control byte and show
// the escapes; the JSON report gives back the exact bytes; the Markdown
// report keeps its tables and code fences intact.
func TestHostileNames(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "run: hostile file names, 4095-byte path, empty argv entry")
	opener := testprog.Build(t, testprog.Opener)
	exitonly := testprog.Build(t, testprog.Exitonly)
	dir := t.TempDir()
	var paths []string
	for _, h := range hostileNames {
		p := filepath.Join(dir, h.name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	long := longPath(t, filepath.Join(dir, "long"), 4095)
	paths = append(paths, long)
	args := []string{opener}
	for _, p := range paths {
		args = append(args, "repeat:2:openat:"+p)
	}
	// Last: an exec whose argv has an empty entry.
	args = append(args, "exec:"+exitonly+":x::y")
	row.Inputs = fmt.Sprintf("%d names x 2 opens, 1 exec; 3 formats", len(paths))

	out := func(format string) (string, string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "report."+format)
		flags := []string{"run", "--processes", "all", "--events", "--format", format, "-o", file}
		if format != "json" {
			flags = append(flags, "--details") // text's and markdown's sections
		}
		code, _, stderr := runOnce(t, nil, append(append(flags, "--"), args...)...)
		if code != 0 {
			t.Fatalf("once run --format %s: exit %d\n%s", format, code, stderr)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), stderr
	}

	t.Run("text", func(t *testing.T) {
		text, events := out("text")
		for what, s := range map[string]string{"text report": text, "--events lines": events} {
			if bad := rawControls(s); len(bad) > 0 {
				t.Errorf("%s holds raw control bytes: %v", what, bad)
			}
			for _, h := range hostileNames {
				if !strings.Contains(s, h.text) {
					t.Errorf("%s lacks %s", what, h.text)
				}
			}
			if !strings.Contains(s, long) {
				t.Errorf("%s lacks the 4095-byte path whole", what)
			}
		}
		if !strings.Contains(events, `x "" y]`) {
			t.Errorf("--events lines do not show the empty argv entry as \"\":\n%s", lastLines(events, 3))
		}
	})

	t.Run("json", func(t *testing.T) {
		doc, _ := out("json")
		if bad := rawControls(doc); len(bad) > 0 {
			t.Errorf("JSON report holds raw control bytes: %v", bad)
		}
		var r struct {
			EventsLost     uint64 `json:"events_lost"`
			FnameTruncated uint64 `json:"fname_truncated"`
			PathTruncated  uint64 `json:"path_truncated"`
			EventsReceived uint64 `json:"events_received"`
			Processes      []struct {
				Exe   json.RawMessage   `json:"exe"`
				Argv  []json.RawMessage `json:"argv"`
				Opens []struct {
					Path  json.RawMessage `json:"path"`
					Count int             `json:"count"`
					Calls []struct {
						Fname          json.RawMessage `json:"fname"`
						FnameTruncated bool            `json:"fname_truncated"`
						PathTruncated  bool            `json:"path_truncated"`
					} `json:"calls"`
				} `json:"opens"`
			} `json:"processes"`
			Findings []struct {
				Kind string          `json:"kind"`
				Path json.RawMessage `json:"path"`
			} `json:"findings"`
		}
		if err := json.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatalf("report is not JSON: %v", err)
		}
		row.Seen, row.Lost = r.EventsReceived, r.EventsLost
		bytesOf := func(raw json.RawMessage) string {
			b, err := report.UnescapeJSONBytes(raw)
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			return string(b)
		}
		opened := map[string]int{}
		for _, p := range r.Processes {
			for _, o := range p.Opens {
				path := bytesOf(o.Path)
				opened[path] = o.Count
				for _, c := range o.Calls {
					if slices.Contains(paths, path) && (bytesOf(c.Fname) != path || c.FnameTruncated || c.PathTruncated) {
						t.Errorf("call of %q: fname %q, truncated %v/%v", path, bytesOf(c.Fname), c.FnameTruncated, c.PathTruncated)
					}
				}
			}
			if bytesOf(p.Exe) == exitonly {
				var argv []string
				for _, a := range p.Argv {
					argv = append(argv, bytesOf(a))
				}
				if want := []string{exitonly, "x", "", "y"}; !slices.Equal(argv, want) {
					t.Errorf("exec'd image argv %q, want %q", argv, want)
				}
			}
		}
		dups := map[string]bool{}
		for _, f := range r.Findings {
			if f.Kind == "duplicate_open" {
				dups[bytesOf(f.Path)] = true
			}
		}
		for _, p := range paths {
			if opened[p] != 2 || !dups[p] {
				t.Errorf("%q: opened %d times, duplicate finding %v; want the exact bytes back, 2 opens and a finding", p, opened[p], dups[p])
			}
		}
		if r.FnameTruncated != 0 || r.PathTruncated != 0 || r.EventsLost != 0 {
			t.Errorf("counters: fname truncated %d, path truncated %d, lost %d; want 0 (4095 bytes fit)", r.FnameTruncated, r.PathTruncated, r.EventsLost)
		}
	})

	t.Run("markdown", func(t *testing.T) {
		md, _ := out("markdown")
		if bad := rawControls(md); len(bad) > 0 {
			t.Errorf("Markdown report holds raw control bytes: %v", bad)
		}
		checkMarkdown(t, md)
		for _, want := range []string{
			`pipe\|and\` + "`" + `\` + "`" + `\` + "`" + `ticks`, // in the findings table
			`nl\\nname`,        // the escape's backslash escaped, outside code blocks
			"pipe|and```ticks", // as is inside a longer fence
			`title\x1b]0;title\x07name`,
		} {
			if !strings.Contains(md, want) {
				t.Errorf("Markdown report lacks %s", want)
			}
		}
	})
}

// checkMarkdown checks the structure hostile text must not break: every
// table row has exactly its columns' unescaped pipes; every code block
// ends at its own closing fence (no content line is a fence as long); and
// outside code blocks no backtick is left unescaped.
func checkMarkdown(t *testing.T, md string) {
	t.Helper()
	fence := ""
	cols := 0
	for i, line := range strings.Split(md, "\n") {
		if fence != "" {
			run := len(line) - len(strings.TrimLeft(line, "`"))
			if run >= len(fence) {
				if strings.TrimSpace(line) != strings.Repeat("`", run) || run != len(fence) {
					t.Errorf("line %d: %q would close the %d-backtick fence early", i+1, line, len(fence))
				}
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			fence = line[:len(line)-len(strings.TrimLeft(line, "`"))]
			continue
		}
		pipes := 0
		for j := 0; j < len(line); j++ {
			switch line[j] {
			case '\\':
				j++ // the escaped character
			case '|':
				pipes++
			case '`':
				t.Errorf("line %d: unescaped backtick outside a code block: %q", i+1, line)
			}
		}
		if strings.HasPrefix(line, "|") {
			if cols == 0 {
				cols = pipes
			} else if pipes != cols {
				t.Errorf("line %d: table row with %d pipes, the header has %d: %q", i+1, pipes, cols, line)
			}
		} else {
			cols = 0
		}
	}
	if fence != "" {
		t.Errorf("code block opened with %s never closed", fence)
	}
}

// TestArgvTruncated: the kernel side keeps 64 argv entries and 4 KiB of
// them. An exec past either bound is marked: argv_truncated in the JSON
// report (the image and its exec), "[argv truncated]" in the text report,
// and the counter.
func TestArgvTruncated(t *testing.T) {
	testprog.RequireRoot(t)
	opener := testprog.Build(t, testprog.Opener)
	f := filepath.Join(t.TempDir(), "target")
	os.WriteFile(f, []byte("x"), 0o644)
	deep := "chdir:/" + strings.Repeat("./", 1000) // 2006 bytes, a harmless action
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"70 entries", slices.Repeat([]string{"chdir:/"}, 70)},
		{"5 KiB", []string{deep, deep, deep}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := reltest.Record(t, "run: argv past the bound ("+tc.name+")")
			// The opener's own argv is cut; it opens the target twice so
			// the text report shows its argv in a finding.
			argv := append([]string{opener, "repeat:2:openat:" + f}, tc.extra...)
			size := 0
			for _, a := range argv {
				size += len(a) + 1
			}
			row.Inputs = fmt.Sprintf("argv of %d entries, %d bytes", len(argv), size)
			dir := t.TempDir()
			js, txt := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.txt")
			for _, o := range [][]string{{"--processes", "all", "--format", "json", "-o", js}, {"--details", "-o", txt}} {
				if code, _, stderr := runOnce(t, nil, append(append([]string{"run"}, o...), append([]string{"--"}, argv...)...)...); code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
			}
			data, _ := os.ReadFile(js)
			var r struct {
				ArgvTruncated  uint64 `json:"argv_truncated"`
				EventsReceived uint64 `json:"events_received"`
				EventsLost     uint64 `json:"events_lost"`
				Processes      []struct {
					Exe           string   `json:"exe"`
					Argv          []string `json:"argv"`
					ArgvTruncated bool     `json:"argv_truncated"`
					Execs         []struct {
						ArgvTruncated bool `json:"argv_truncated"`
					} `json:"execs"`
				} `json:"processes"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			row.Seen, row.Lost = r.EventsReceived, r.EventsLost
			if r.ArgvTruncated == 0 {
				t.Errorf("argv_truncated counter is 0")
			}
			// Cut, not lost: a record of 4 KiB of argv or more once came
			// out short and failed to decode.
			if r.EventsLost != 0 {
				t.Errorf("%d events lost", r.EventsLost)
			}
			found := false
			for _, p := range r.Processes {
				if p.Exe != opener {
					continue
				}
				found = true
				kept := 0
				for _, a := range p.Argv {
					kept += len(a) + 1
				}
				if !p.ArgvTruncated || len(p.Argv) > 64 || kept > 4096 || len(p.Argv) == 0 || p.Argv[0] != opener {
					t.Errorf("opener image: argv_truncated %v, %d entries of %d bytes kept", p.ArgvTruncated, len(p.Argv), kept)
				}
				for i, a := range p.Argv {
					if i < len(argv) && !strings.HasPrefix(argv[i], a) {
						t.Errorf("kept argv[%d] %q is not (a prefix of) %q", i, a, argv[i])
					}
				}
			}
			if !found {
				t.Fatalf("no image of %s in the report", opener)
			}
			text, _ := os.ReadFile(txt)
			if !strings.Contains(string(text), " [argv truncated]") {
				t.Errorf("text report has no [argv truncated] mark:\n%s", text)
			}
			// Only the counters that are not zero are named.
			if !regexp.MustCompile(`(?m)^once: .*; truncated: argv 1(;|$)`).Match(text) {
				t.Errorf("text summary does not count the cut argv:\n%s", lastLines(string(text), 1))
			}
			// The --events exec line's argc is the entries the exec
			// was given (as strace -v lists them), not those kept.
			ev := filepath.Join(dir, "ev.jsonl")
			if code, _, stderr := runOnce(t, nil, append([]string{"run", "--events", "--format", "json", "--events-o", ev, "-o", filepath.Join(dir, "r2.json"), "--"}, argv...)...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines, _ := os.ReadFile(ev)
			seen := false
			for _, l := range strings.Split(string(lines), "\n") {
				var e struct {
					Type     string   `json:"type"`
					Filename string   `json:"filename"`
					Argv     []string `json:"argv"`
					Argc     int      `json:"argc"`
					Cut      bool     `json:"argv_truncated"`
				}
				if json.Unmarshal([]byte(l), &e) != nil || e.Type != "exec" || e.Filename != opener {
					continue
				}
				seen = true
				if e.Argc != len(argv) || !e.Cut || len(e.Argv) >= len(argv) {
					t.Errorf("exec line: argc %d, %d entries kept, argv_truncated %v; want argc %d", e.Argc, len(e.Argv), e.Cut, len(argv))
				}
			}
			if !seen {
				t.Errorf("no exec line of %s in --events:\n%s", opener, lines)
			}
		})
	}
}
