package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/oncetool/once/trace"
)

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file   string
		render func(io.Writer, *trace.Result) error
	}{
		{"text.golden", Text},
		{"text.details.golden", TextDetails},
		{"json.golden", JSON},
		{"markdown.golden", Markdown},
		{"markdown.details.golden", MarkdownDetails},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf, sampleResult()); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.file, buf.Bytes())
		})
	}
}

// TestGoldenTextIsInert checks the stored text golden itself: whatever the
// renderer did when it was written, the file must be safe to cat.
func TestGoldenTextIsInert(t *testing.T) {
	for _, name := range []string{"text.golden", "text.details.golden", "markdown.golden", "markdown.details.golden"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0x1b) >= 0 {
			t.Errorf("%s contains a raw ESC", name)
		}
		if i := badControl(b); i >= 0 {
			t.Errorf("%s: raw control byte 0x%02x at offset %d", name, b[i], i)
		}
	}
}

// badControl returns the offset of the first byte that must never appear in
// Text or Markdown output (a control byte other than '\n', or DEL), or -1.
func badControl(b []byte) int {
	for i, c := range b {
		if (c < 0x20 && c != '\n') || c == 0x7f {
			return i
		}
	}
	return -1
}
