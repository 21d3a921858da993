// Package reltest is how the reliability tests (hostile names, overload,
// churn, faults, leaks) report what they tried: each records one row, case,
// inputs tried, events seen, events lost (as once reported them) and
// result, logged as a single line
//
//	RELIABILITY|case|inputs|seen|lost|result
//
// that `make reliability` (reltable) gathers into a Markdown table. The
// tests are ordinary tests: `go test ./...` runs them too.
package reltest

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Marker starts every row line.
const Marker = "RELIABILITY|"

// Row is one test's line of the table. Inputs, Seen and Lost are printed
// with fmt.Sprint; nil prints as "-" (not applicable).
type Row struct {
	Case   string
	Inputs any
	Seen   any
	Lost   any
}

// Record returns the test's row, logged when the test ends with its
// result: pass, FAIL or skip.
func Record(t testing.TB, name string) *Row {
	t.Helper()
	r := &Row{Case: name}
	t.Cleanup(func() {
		result := "pass"
		switch {
		case t.Failed():
			result = "FAIL"
		case t.Skipped():
			result = "skip"
		}
		t.Log(r.Line(result))
	})
	return r
}

// Line formats the row with its result.
func (r *Row) Line(result string) string {
	return Marker + strings.Join([]string{field(r.Case), field(r.Inputs), field(r.Seen), field(r.Lost), field(result)}, "|")
}

func field(v any) string {
	if v == nil {
		return "-"
	}
	s := fmt.Sprint(v)
	if s == "" {
		return "-"
	}
	// One line, and '|' is the separator.
	return strings.NewReplacer("|", "/", "\n", " ", "\r", " ").Replace(s)
}

// Result is a parsed row line.
type Result struct {
	Case, Inputs, Seen, Lost, Result string
}

// Parse finds the row lines in test output (go test -v prefixes them with
// the file and line of the log call) and returns them in order.
func Parse(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if res, ok := ParseLine(sc.Text()); ok {
			out = append(out, res)
		}
	}
	return out, sc.Err()
}

// ParseLine parses one line of test output; ok is false when it holds no
// row.
func ParseLine(line string) (Result, bool) {
	i := strings.Index(line, Marker)
	if i < 0 {
		return Result{}, false
	}
	f := strings.Split(strings.TrimSpace(line[i+len(Marker):]), "|")
	if len(f) != 5 {
		return Result{}, false
	}
	return Result{f[0], f[1], f[2], f[3], f[4]}, true
}

// Table writes the rows as a Markdown table.
func Table(w io.Writer, rows []Result) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("| case | inputs tried | events seen | events lost (reported) | result |\n")
	bw.WriteString("|------|--------------|------------:|-----------------------:|--------|\n")
	for _, r := range rows {
		fmt.Fprintf(bw, "| %s | %s | %s | %s | %s |\n", r.Case, r.Inputs, r.Seen, r.Lost, r.Result)
	}
	return bw.Flush()
}
