package report

import (
	"io"

	"github.com/oncetool/once/trace"
)

// Renderer writes a run's report in one format.
type Renderer func(io.Writer, *trace.Result) error

// Formats names the formats ForFormat knows, for a usage message.
const Formats = "text, json, markdown, pprof or folded"

// ForFormat is the renderer of a run's report in format ("md" is
// markdown); details: each process's findings and the process tables too
// (text and markdown). Nil for a format it does not know.
func ForFormat(format string, details bool) Renderer {
	switch format {
	case "text":
		if details {
			return TextDetails
		}
		return Text
	case "json":
		return JSON
	case "markdown", "md":
		if details {
			return MarkdownDetails
		}
		return Markdown
	case "pprof":
		return PProf
	case "folded":
		return Folded
	}
	return nil
}
