package reltest

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineRoundTrip(t *testing.T) {
	r := &Row{Case: "flood|x", Inputs: "4 procs\nfor 2s", Seen: uint64(12), Lost: nil}
	line := "    flood_test.go:88: " + r.Line("pass")
	got, ok := ParseLine(line)
	if !ok {
		t.Fatalf("ParseLine(%q) found no row", line)
	}
	want := Result{"flood/x", "4 procs for 2s", "12", "-", "pass"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, ok := ParseLine("=== RUN   TestX"); ok {
		t.Error("a line without the marker parsed as a row")
	}
	if _, ok := ParseLine(Marker + "only|three|fields"); ok {
		t.Error("a short row parsed")
	}
}

func TestTable(t *testing.T) {
	out := "=== RUN TestA\n    a_test.go:1: " + (&Row{Case: "a", Inputs: 1, Seen: 2, Lost: 0}).Line("pass") +
		"\n--- PASS: TestA\n    b_test.go:2: " + (&Row{Case: "b"}).Line("FAIL") + "\n"
	rows, err := Parse(strings.NewReader(out))
	if err != nil || len(rows) != 2 {
		t.Fatalf("Parse: %d rows, %v", len(rows), err)
	}
	var b bytes.Buffer
	if err := Table(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "| case | inputs tried | events seen | events lost (reported) | result |\n" +
		"|------|--------------|------------:|-----------------------:|--------|\n" +
		"| a | 1 | 2 | 0 | pass |\n" +
		"| b | - | - | - | FAIL |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestRecordLogsResult(t *testing.T) {
	// A sub-test's row is logged in its cleanup, with its result.
	var row *Row
	t.Run("inner", func(t *testing.T) {
		row = Record(t, "inner case")
		row.Inputs = 3
	})
	if got := row.Line("pass"); !strings.HasPrefix(got, Marker+"inner case|3|-|-|") {
		t.Errorf("line %q", got)
	}
}
