package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oncetool/once/trace"
)

func FuzzEscape(f *testing.F) {
	for _, s := range hostileStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if why := checkInert(out); why != "" {
			t.Fatalf("Escape(%q) = %q: %s", s, out, why)
		}
		back, err := unescapeText(out)
		if err != nil || back != s {
			t.Fatalf("Escape(%q) = %q is not reversible: %q, %v", s, out, back, err)
		}
		lit := appendJSONString(nil, s)
		if !json.Valid(lit) {
			t.Fatalf("JSON literal %q is invalid", lit)
		}
		if b, err := UnescapeJSONBytes(lit); err != nil || string(b) != s {
			t.Fatalf("JSON round trip of %q: %q, %v", s, b, err)
		}
		if md := mdText(s); badControl([]byte(md)) >= 0 || strings.Contains(md, "\n") {
			t.Fatalf("mdText(%q) = %q holds a control byte", s, md)
		}
	})
}

// FuzzRender renders a Result whose strings all come from the fuzzer in
// every format and checks the safety properties of each.
func FuzzRender(f *testing.F) {
	f.Add("\x1b[31m", "a\nb")
	f.Add("\xff\xfe", "\u202e")
	f.Add("|`*_<>[]", "```")
	f.Fuzz(func(t *testing.T, a, b string) {
		i := 0
		next := func() string {
			i++
			switch i % 3 {
			case 0:
				return a
			case 1:
				return b
			}
			return a + b
		}
		r := hostileResultFrom(next)
		checkRender(t, r)
	})
}

// checkRender renders r three ways and checks that the text forms are
// inert, the JSON is valid and the Markdown structure is intact.
func checkRender(t *testing.T, r *trace.Result) {
	t.Helper()
	var text, textD, js, md, mdD bytes.Buffer
	if err := Text(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := TextDetails(&textD, r); err != nil {
		t.Fatal(err)
	}
	if err := MarkdownDetails(&mdD, r); err != nil {
		t.Fatal(err)
	}
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}

	for name, out := range map[string][]byte{"Text": text.Bytes(), "TextDetails": textD.Bytes(), "Markdown": md.Bytes(), "MarkdownDetails": mdD.Bytes()} {
		if i := badControl(out); i >= 0 {
			t.Fatalf("%s: raw control byte %#x at %d:\n%s", name, out[i], i, out)
		}
		if !utf8.Valid(out) {
			t.Fatalf("%s: invalid UTF-8", name)
		}
		if !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("%s: no final newline", name)
		}
	}

	// Exactly one summary line, the last one: nothing from the traced
	// system can start a line of its own.
	for _, out := range []*bytes.Buffer{&text, &textD} {
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		summaries := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "once: ") {
				summaries++
			}
		}
		if summaries != 1 || !strings.HasPrefix(lines[len(lines)-1], "once: ") {
			t.Fatalf("Text: %d summary lines, last line %q", summaries, lines[len(lines)-1])
		}
	}

	if !json.Valid(js.Bytes()) || !bytes.HasSuffix(js.Bytes(), []byte("}\n")) {
		t.Fatalf("JSON: invalid output:\n%s", js.Bytes())
	}

	checkMarkdownStructure(t, md.String(), false)
	checkMarkdownStructure(t, mdD.String(), true)
}

// checkMarkdownStructure checks that every findings-table row has exactly
// its columns and that every fenced block is closed only by its own fence.
func checkMarkdownStructure(t *testing.T, md string, wantBlocks bool) {
	t.Helper()
	fence := ""
	blocks := 0
	for _, l := range strings.Split(md, "\n") {
		if fence != "" {
			if l == fence {
				fence = ""
				continue
			}
			if strings.HasPrefix(strings.TrimLeft(l, " "), fence) {
				t.Fatalf("Markdown: line %q inside a %s fence would close it", l, fence)
			}
			continue
		}
		if strings.HasPrefix(l, "```") {
			fence = strings.TrimSuffix(l, "text")
			blocks++
			continue
		}
		if strings.HasPrefix(l, "|") {
			if n := unescapedPipes(l); n != 9 {
				t.Fatalf("Markdown: table row has %d cell separators, want 9: %q", n, l)
			}
		} else if strings.Contains(l, "|") && unescapedPipes(l) > 0 {
			t.Fatalf("Markdown: unescaped pipe outside the table: %q", l)
		}
	}
	if fence != "" {
		t.Fatal("Markdown: unclosed code block")
	}
	if wantBlocks && blocks == 0 {
		t.Fatal("Markdown: no finding blocks")
	}
}

func unescapedPipes(l string) int {
	n := 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

func TestRenderHostile(t *testing.T) {
	for _, s := range hostileStrings {
		checkRender(t, hostileResult(s))
	}
	checkRender(t, sampleResult())
}
