package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncetool/once/internal/golden"
)

// TestFilterRun: testdata/run.json is go test -json of three small
// packages (passing, skipping, failing with subtests, panicking);
// testdata/run.golden is what plain go test printed for them, with its
// timings and addresses, plus the SKIP lines.
func TestFilterRun(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := filter(bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("testdata", "run.golden"), out.Bytes())
}

func TestFilter(t *testing.T) {
	ev := func(action, test, output string) string {
		s := `{"Action":"` + action + `","Package":"p"`
		if test != "" {
			s += `,"Test":"` + test + `"`
		}
		if output != "" {
			b, _ := json.Marshal(output)
			s += `,"Output":` + string(b)
		}
		return s + "}\n"
	}
	tests := []struct {
		name, in, want string
	}{
		{"a pass shows only the package line",
			ev("run", "TestA", "") + ev("output", "TestA", "=== RUN   TestA\n") + ev("output", "TestA", "    a_test.go:1: log\n") +
				ev("output", "TestA", "--- PASS: TestA (0.00s)\n") + ev("pass", "TestA", "") +
				ev("output", "", "PASS\n") + ev("output", "", "ok  \tp\t0.1s\n") + ev("pass", "", ""),
			"ok  \tp\t0.1s\n"},
		{"a skip is one line, the reason's later lines joined",
			ev("run", "TestS", "") + ev("output", "TestS", "    s_test.go:3: looked\n") + ev("output", "TestS", "    s_test.go:4: no io_uring: setup:\n") +
				ev("output", "TestS", "        ENOSYS\n") + ev("output", "TestS", "--- SKIP: TestS (0.00s)\n") + ev("skip", "TestS", ""),
			"SKIP p TestS: s_test.go:4: no io_uring: setup: ENOSYS\n"},
		{"a skip without a message",
			ev("run", "TestS", "") + ev("output", "TestS", "--- SKIP: TestS (0.00s)\n") + ev("skip", "TestS", ""),
			"SKIP p TestS: (no reason given)\n"},
		{"a failing package ends with FAIL, as go test does",
			ev("output", "", "FAIL\tp [build failed]\n") + ev("fail", "", ""),
			"FAIL\tp [build failed]\nFAIL\n"},
		{"build output and lines that are not JSON pass through",
			`{"ImportPath":"p","Action":"build-output","Output":"# p\n"}` + "\n" + "go: downloading x\n",
			"# p\ngo: downloading x\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := filter(strings.NewReader(tc.in), &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestReasonBounded(t *testing.T) {
	long := strings.Repeat("é", 2*maxReason)
	got := reason([]line{{"T", "    x_test.go:1: " + long + "\n"}}, "T")
	if n := len([]rune(got)); n != maxReason+1 || !strings.HasSuffix(got, "…") {
		t.Errorf("a long reason is %d runes: %q", n, got)
	}
}

// TestRunExitStatus: with a command, testsum exits with its status.
func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
	}{{"exit 0", 0}, {"exit 3", 3}, {`echo '{"Action":"output","Package":"p","Output":"ok  \tp\n"}'; exit 1`, 1}} {
		var out, errb bytes.Buffer
		if code := run([]string{"--", "sh", "-c", tc.script}, strings.NewReader(""), &out, &errb); code != tc.code {
			t.Errorf("%s: exit %d, want %d (%s)", tc.script, code, tc.code, errb.String())
		}
	}
}
