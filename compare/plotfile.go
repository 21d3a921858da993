package compare

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/oncetool/once/internal/output"
)

// CheckPlot says, before anything runs, whether path can take the plot of
// a comparison: an SVG file name that output.Usable accepts (in a
// directory that exists and once may write, no symlink, directory,
// special file or another user's file). Checked up front so that a typo
// costs nothing, not the runs it would have drawn.
func CheckPlot(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	if !strings.EqualFold(filepath.Ext(path), ".svg") {
		return errors.New("the plot is an SVG: name the file *.svg")
	}
	return output.Usable(path)
}

// PlotLink is the path of the plot as a report written to report ("" or
// "-" for standard output, read from the working directory) links it:
// relative to the report's directory when it can be, else as given.
func PlotLink(plot, report string) string {
	base := "."
	if report != "" && report != "-" {
		base = filepath.Dir(report)
	}
	absPlot, err := filepath.Abs(plot)
	if err != nil {
		return plot
	}
	absBase, err := filepath.Abs(base)
	if err != nil {
		return plot
	}
	rel, err := filepath.Rel(absBase, absPlot)
	if err != nil {
		return plot
	}
	return rel
}
