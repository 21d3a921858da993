package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPlot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	os.WriteFile(filepath.Join(dir, "old.svg"), nil, 0o644)
	os.Symlink(filepath.Join(dir, "old.svg"), filepath.Join(dir, "link.svg"))
	os.Mkdir(filepath.Join(dir, "dir.svg"), 0o755)
	tests := []struct {
		path, fail string
	}{
		{filepath.Join(dir, "new.svg"), ""},
		{filepath.Join(dir, "NEW.SVG"), ""},
		{filepath.Join(dir, "old.svg"), ""},
		{"", "empty path"},
		{filepath.Join(dir, "plot.png"), "name the file *.svg"},
		{filepath.Join(dir, "plot"), "name the file *.svg"},
		{filepath.Join(dir, "missing", "plot.svg"), "no such file or directory"},
		{filepath.Join(file, "plot.svg"), "is not a directory"},
		{filepath.Join(dir, "link.svg"), "symlink"},
		{filepath.Join(dir, "dir.svg"), "is a directory"},
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		tests = append(tests, struct{ path, fail string }{filepath.Join(ro, "plot.svg"), "permission denied"})
	}
	for _, tc := range tests {
		err := CheckPlot(tc.path)
		if tc.fail == "" && err != nil || tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)) {
			t.Errorf("CheckPlot(%q) = %v, want %q", tc.path, err, tc.fail)
		}
	}
}

func TestPlotLink(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ plot, report, want string }{
		{"x.svg", "", "x.svg"},
		{"x.svg", "-", "x.svg"},
		{"plots/x.svg", "report.md", "plots/x.svg"},
		{"plots/x.svg", "out/report.md", "../plots/x.svg"},
		{"/tmp/a/x.svg", "/tmp/b/report.md", "../a/x.svg"},
		{filepath.Join(wd, "x.svg"), "", "x.svg"},
	} {
		if got := PlotLink(tc.plot, tc.report); got != tc.want {
			t.Errorf("PlotLink(%q, %q) = %q, want %q", tc.plot, tc.report, got, tc.want)
		}
	}
}
