// Command testsum shows a go test -json run as go test shows it without
// -v (each package's closing line, a failing test's whole output), and
// each skipped test on one line of its own, with its reason:
//
//	SKIP github.com/oncetool/once/collector TestGitFilesMatchStrace: needs git, which is not installed (...)
//
// Plain go test hides skips unless -v, which shows everything else too.
//
//	testsum < go-test-json-output
//	testsum -- go test -json ./...   # runs it; exits with its status
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		if err := filter(stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "testsum: %v\n", err)
			return 2
		}
		return 0
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = stdin, stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testsum: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testsum: %v\n", err)
		return 2
	}
	ferr := filter(out, stdout)
	if ferr != nil {
		// Keep reading, so that the command does not block on a full pipe.
		io.Copy(stdout, out)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintf(stderr, "testsum: %v\n", err)
		return 2
	case ferr != nil:
		fmt.Fprintf(stderr, "testsum: %v\n", ferr)
		return 2
	}
	return 0
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// line is one line of a test's output, and which (sub)test wrote it.
type line struct {
	test, text string
}

// filter reads go test -json from r and writes what go test would print
// without -v, plus a SKIP line for each skipped test. Lines that are not
// JSON (go's own messages) pass through.
func filter(r io.Reader, w io.Writer) error {
	// held is the output of each running top-level test, subtests
	// included, by package and top-level name: printed if it fails.
	held := map[[2]string][]line{}
	var order [][2]string // held's keys in the order they started
	flush := func(key [2]string) {
		render(w, held[key], key[1], 0)
		delete(held, key)
	}
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		b := sc.Bytes()
		var ev event
		if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &ev) != nil {
			fmt.Fprintf(w, "%s\n", b)
			continue
		}
		if ev.Action == "build-output" {
			io.WriteString(w, ev.Output)
			continue
		}
		if ev.Test == "" {
			switch ev.Action {
			case "output":
				if ev.Output != "PASS\n" {
					io.WriteString(w, ev.Output)
				}
			case "pass", "fail":
				failed = failed || ev.Action == "fail"
				// Tests that never ended (a panic, a timeout):
				// their output says why.
				for _, k := range order {
					if k[0] == ev.Package {
						flush(k)
					}
				}
			}
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		key := [2]string{ev.Package, top}
		switch ev.Action {
		case "run":
			if _, ok := held[key]; !ok {
				held[key] = []line{}
				order = append(order, key)
			}
		case "output":
			held[key] = append(held[key], line{ev.Test, ev.Output})
		case "pass", "skip":
			if ev.Action == "skip" {
				fmt.Fprintf(w, "SKIP %s %s: %s\n", ev.Package, ev.Test, reason(held[key], ev.Test))
			}
			if ev.Test == top {
				delete(held, key)
			} else {
				held[key] = drop(held[key], ev.Test)
			}
		case "fail":
			if ev.Test == top {
				flush(key)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if failed {
		// go test's own last line when a package failed, which -json
		// leaves out.
		io.WriteString(w, "FAIL\n")
	}
	return nil
}

// render writes the output of test as go test does without -v: its result
// line ("--- FAIL: ..."), its log, then its subtests', each level
// indented four more spaces. (go test -json streams a log as it is
// written, before the result line.)
func render(w io.Writer, ls []line, test string, depth int) {
	indent := strings.Repeat("    ", depth)
	var result string
	var log []string
	var subs []string
	seen := map[string]bool{}
	for _, l := range ls {
		switch {
		case l.test == test && strings.HasPrefix(l.text, "--- "):
			result = l.text
		case l.test == test && !strings.HasPrefix(l.text, "=== "):
			log = append(log, l.text)
		case strings.HasPrefix(l.test, test+"/"):
			child := test + "/" + strings.SplitN(l.test[len(test)+1:], "/", 2)[0]
			if !seen[child] {
				seen[child] = true
				subs = append(subs, child)
			}
		}
	}
	if result != "" {
		io.WriteString(w, indent+result)
	}
	for _, l := range log {
		io.WriteString(w, indent+l)
	}
	for _, c := range subs {
		render(w, ls, c, depth+1)
	}
}

// drop removes the lines of test and its subtests.
func drop(ls []line, test string) []line {
	out := ls[:0]
	for _, l := range ls {
		if l.test != test && !strings.HasPrefix(l.test, test+"/") {
			out = append(out, l)
		}
	}
	return out
}

// logLine starts a line t.Log, t.Skip and the like write: file:line: .
var logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// maxReason bounds a skip's reason, to keep its line one line.
const maxReason = 300

// reason is why test skipped: its last message (t.Skip's), on one line.
func reason(ls []line, test string) string {
	var msg []string
	for _, l := range ls {
		if l.test != test || strings.HasPrefix(l.text, "=== ") || strings.HasPrefix(strings.TrimSpace(l.text), "--- ") {
			continue
		}
		if logLine.MatchString(l.text) {
			msg = msg[:0]
		}
		if s := strings.TrimSpace(l.text); s != "" {
			msg = append(msg, s)
		}
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	s := strings.Join(msg, " ")
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason]) + "…"
	}
	return s
}
