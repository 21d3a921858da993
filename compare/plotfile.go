package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// CheckPlot says, before anything runs, whether path can take the plot of
// a comparison: an SVG file name, in a directory that exists and once may
// write, that is no symlink, directory or special file. Checked up front
// so that a typo costs nothing, not the runs it would have drawn.
func CheckPlot(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	if !strings.EqualFold(filepath.Ext(path), ".svg") {
		return errors.New("the plot is an SVG: name the file *.svg")
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	lst, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case lst.Mode()&os.ModeSymlink != 0:
		return errors.New("it is a symlink; refusing to write through it")
	case lst.IsDir():
		return errors.New("it is a directory")
	case !lst.Mode().IsRegular():
		return errors.New("it is not a regular file")
	}
	return nil
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
