package report

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// table is a borderless, column-aligned plain-text table. Every cell must
// already be escaped: the table only pads and aligns, it never rewrites
// content (no trimming, no title-casing of headers, no wrapping or
// truncation), so what the caller escaped is exactly what is printed.
type table struct {
	header []string
	right  map[int]bool // columns aligned right (numbers)
	rows   [][]string
}

func newTable(header ...string) *table {
	return &table{header: header, right: map[int]bool{}}
}

// alignRight marks columns whose content is right-aligned.
func (t *table) alignRight(cols ...int) *table {
	for _, c := range cols {
		t.right[c] = true
	}
	return t
}

func (t *table) add(cells ...string) {
	row := make([]string, len(t.header))
	copy(row, cells)
	t.rows = append(t.rows, row)
}

// render writes the table, each line prefixed by indent. Trailing blanks
// are trimmed from every line; this is safe because the last column of
// every table in this package holds renderer-generated text only.
func (t *table) render(w io.Writer, indent string) error {
	var buf bytes.Buffer
	aligns := make([]tw.Align, len(t.header))
	for i := range aligns {
		aligns[i] = tw.AlignLeft
		if t.right[i] {
			aligns[i] = tw.AlignRight
		}
	}
	noWrap := tw.CellFormatting{AutoWrap: tw.WrapNone, AutoFormat: tw.Off}
	// Two spaces between columns, none before the first.
	pad := tw.CellPadding{Global: tw.Padding{Left: "", Right: "  ", Overwrite: true}}
	section := func() tw.CellConfig {
		return tw.CellConfig{
			Formatting: noWrap,
			Padding:    pad,
			Alignment:  tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns},
		}
	}
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.Border{Left: tw.Off, Right: tw.Off, Top: tw.Off, Bottom: tw.Off},
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{
			Header: section(),
			Row:    section(),
			Behavior: tw.Behavior{
				AutoHide:  tw.Off,
				TrimSpace: tw.Off,
				TrimTab:   tw.Off,
				TrimLine:  tw.Off,
			},
		}),
	)
	tbl.Header(t.header)
	for _, r := range t.rows {
		if err := tbl.Append(r); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(indent)
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}
