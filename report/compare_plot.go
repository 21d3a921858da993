package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/oncetool/once/compare"
)

// The plot is drawn with gonum.org/v1/plot rather than by hand: axes,
// ticks, box plots, bars, legends and SVG text escaping are its job, done
// and kept up by others.

// Side colours: the run points of a side are drawn in its colour, and
// nothing else in the plot is a filled circle.
var plotColors = [2]color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}

// maxPlotGroups bounds the bars of the opens panel: a comparison without
// roles has a pattern per file opened more than once.
const maxPlotGroups = 12

// ComparePlot draws r as one SVG: per side, a box plot of the wall time of
// the timed runs with every run as a point on it (whiskers to the furthest
// run within 1.5 interquartile ranges, as Tukey drew them); the same of
// the CPU time when it is exact on both sides; and, when a side was
// traced, the opens of its traced run by role (or by file opened more than
// once), before and after side by side. Every string from the traced
// system or the command line goes through Escape, so the SVG holds no
// control character of theirs.
func ComparePlot(w io.Writer, r *compare.Result) error {
	if r == nil {
		return errNilCompare
	}
	var times []*plot.Plot
	wall, err := timePlot(r, "wall time", func(s compare.Sample) time.Duration { return s.Wall },
		func(s *compare.Side) compare.Stats { return s.Wall })
	if err != nil {
		return err
	}
	times = append(times, wall)
	if r.A.CPUExact && r.B.CPUExact {
		cpu, err := timePlot(r, "CPU time", func(s compare.Sample) time.Duration { return s.CPU },
			func(s *compare.Side) compare.Stats { return s.CPU })
		if err != nil {
			return err
		}
		times = append(times, cpu)
	}
	var opens *plot.Plot
	groups := 0
	if r.A.Trace != nil || r.B.Trace != nil {
		if opens, groups, err = opensPlot(r); err != nil {
			return err
		}
	}

	const panel, title = 5 * vg.Inch, 0.45 * vg.Inch
	timeH := 4 * vg.Inch
	opensH := max(3*vg.Inch, vg.Length(groups)*0.45*vg.Inch+1.3*vg.Inch)
	// One row when it fits: the time panels and the opens beside them.
	var width, height vg.Length
	twoRows := opens != nil && len(times) == 2
	switch {
	case twoRows:
		width, height = 2*panel, title+timeH+opensH
	case opens != nil:
		width, height = 2*panel, title+max(timeH, opensH)
	default:
		width, height = vg.Length(len(times))*panel, title+timeH
	}
	cv := vgsvg.New(width, height)
	dc := draw.New(cv)
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 13), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	dc.FillText(sty, vg.Point{X: width / 2, Y: height - 0.12*vg.Inch}, fitText(sty, plotTitle(r), width-0.3*vg.Inch))
	body := draw.Crop(dc, 0, 0, 0, -title)
	// at draws p in the part of body from x0 to x1 and y0 to y1, less a
	// margin that keeps panels and the canvas edge apart.
	at := func(p *plot.Plot, x0, x1, y0, y1 vg.Length) {
		const m = 0.12 * vg.Inch
		p.Draw(draw.Crop(body, x0+m/2, -(width-x1)-m, y0+m/2, -(height-title-y1)-m/2))
	}
	switch {
	case twoRows:
		at(times[0], 0, panel, opensH, height-title)
		at(times[1], panel, width, opensH, height-title)
		at(opens, 0, width, 0, opensH)
	default:
		for i, p := range times {
			at(p, vg.Length(i)*panel, vg.Length(i+1)*panel, 0, height-title)
		}
		if opens != nil {
			at(opens, panel, width, 0, height-title)
		}
	}
	if _, err := cv.WriteTo(w); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

func plotTitle(r *compare.Result) string {
	t := "once compare"
	if r.Workload != "" {
		t += ": " + Escape(r.Workload)
	}
	return t + ", " + plural(r.Runs, "timed run", "timed runs") + " each"
}

// fitText shortens txt, already escaped, to the most runes that are at
// most w wide (a binary search: a hostile workload can be long).
func fitText(sty draw.TextStyle, txt string, w vg.Length) string {
	if sty.Width(txt) <= w {
		return txt
	}
	lo, hi := 1, utf8.RuneCountInString(txt)
	for lo < hi {
		if mid := (lo + hi + 1) / 2; sty.Width(shorten(txt, mid)) <= w {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return shorten(txt, lo)
}

// plotLabel is a side's name and its command, shortened for an axis: each
// word that is a path by its last element ("refcp -r src dst"). A word
// with a space in it (a shell's script: sh -c 'cat </dev/null') is no
// path, and is kept whole.
func plotLabel(i int, s *compare.Side) string {
	return sideNames[i] + "\n" + shorten(Escape(strings.Join(shortWords(s.Command), " ")), 36)
}

// shortWords is argv with each path by its last element.
func shortWords(argv []string) []string {
	words := make([]string, len(argv))
	for j, a := range argv {
		if strings.Contains(a, "/") && strings.Trim(a, "/") != "" && !strings.ContainsAny(a, " \t\n") {
			a = filepath.Base(a)
		}
		words[j] = a
	}
	return words
}

// shorten cuts s, already escaped, to n runes, marking the cut, which
// falls between two escapes (escFloor), never inside one.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	head := string([]rune(s)[:max(n-1, 0)])
	return s[:escFloor(s, len(head))] + "…"
}

// timePlot is the box plot of one measure of both sides, every run a point.
func timePlot(r *compare.Result, name string, get func(compare.Sample) time.Duration,
	st func(*compare.Side) compare.Stats) (*plot.Plot, error) {
	sides := cmpSides(r)
	a, b := st(sides[0]), st(sides[1])
	u := unitFor(max(a.Mean, b.Mean, a.Median, b.Median))
	p := plot.New()
	p.Title.Text = name + ", every timed run a point"
	p.Y.Label.Text = name + " (" + u.name + ")"
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{}
	labels := make([]string, 2)
	for i, s := range sides {
		labels[i] = plotLabel(i, s)
		if len(s.Samples) == 0 {
			continue
		}
		vals := make(plotter.Values, len(s.Samples))
		pts := make(plotter.XYs, len(s.Samples))
		for j, x := range s.Samples {
			vals[j] = float64(get(x)) / u.ns
			// A fixed spread across the box, so that equal times stay
			// apart and the picture is the same at every run.
			pts[j] = plotter.XY{X: float64(i) + 0.3*(math.Mod(float64(j)*0.618034, 1)-0.5), Y: vals[j]}
		}
		box, err := plotter.NewBoxPlot(vg.Points(50), float64(i), vals)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		// Every run is drawn below, the outside ones included.
		box.Outside = nil
		box.BoxStyle.Color, box.MedianStyle.Color, box.WhiskerStyle.Color = color.Gray{0x55}, color.Black, color.Gray{0x55}
		box.MedianStyle.Width = vg.Points(1.5)
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(3), Color: plotColors[i]}
		p.Add(box, sc)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, 1.6
	return p, nil
}

// plainTicks are the default ticks labelled in plain decimals ("2500",
// not "2500.00"), and for counts (ints) only where a count can be.
type plainTicks struct{ ints bool }

func (pt plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label == "" {
			continue
		}
		ticks[i].Label = ""
		if pt.ints && t.Value != math.Trunc(t.Value) {
			continue
		}
		// Six significant digits, then the shortest decimal of that.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(t.Value, 'g', 6, 64), 64)
		ticks[i].Label = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ticks
}

// opensGroup is one bar pair of the opens panel.
type opensGroup struct {
	label string
	n     [2]float64
}

// opensPlot is the opens of each side's traced run: all of them, the
// failed exec probes when there are any, and the successful opens of each
// role's files (or, without roles, of each file opened more than once), as
// horizontal bars. It returns the number of bar pairs.
func opensPlot(r *compare.Result) (*plot.Plot, int, error) {
	sides := cmpSides(r)
	total := opensGroup{label: "all opens"}
	execs := opensGroup{label: "failed exec probes"}
	byKey := map[string]*opensGroup{}
	var patterns []*opensGroup
	for i, s := range sides {
		if s.Trace == nil {
			continue
		}
		total.n[i] = float64(s.Opens)
		execs.n[i] = float64(s.FailedExecs)
		for _, pt := range s.Patterns {
			// By role, whatever the syscall and flags, which differ from
			// one program to the next and are in the text report: a role
			// names files, a path is one file.
			key := pt.Role
			if !strings.HasPrefix(key, "/") {
				key += "/*"
			}
			key = Escape(key)
			g := byKey[key]
			if g == nil {
				g = &opensGroup{label: key}
				byKey[key] = g
				patterns = append(patterns, g)
			}
			g.n[i] += float64(pt.PerFile * pt.Files)
		}
	}
	title := "opens of one traced run"
	if len(patterns) > maxPlotGroups {
		sort.SliceStable(patterns, func(x, y int) bool {
			return max(patterns[x].n[0], patterns[x].n[1]) > max(patterns[y].n[0], patterns[y].n[1])
		})
		title += fmt.Sprintf(" (the %d largest of %d files)", maxPlotGroups, len(patterns))
		patterns = patterns[:maxPlotGroups]
	}
	groups := []*opensGroup{&total}
	if execs.n[0] != 0 || execs.n[1] != 0 {
		groups = append(groups, &execs)
	}
	groups = append(groups, patterns...)
	// The first group at the top: the axis counts upwards.
	labels := make([]string, len(groups))
	vals := [2]plotter.Values{make(plotter.Values, len(groups)), make(plotter.Values, len(groups))}
	for j, g := range groups {
		k := len(groups) - 1 - j
		labels[k] = shorten(g.label, 48)
		vals[0][k], vals[1][k] = g.n[0], g.n[1]
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "calls in the traced run"
	p.X.Min = 0
	top := 1.0
	for _, v := range vals {
		for _, x := range v {
			top = max(top, x)
		}
	}
	// Room on the right for the counts and the legend.
	p.X.Max = top * 1.3
	const barW = 9
	for i, s := range sides {
		bars, err := plotter.NewBarChart(vals[i], vg.Points(barW))
		if err != nil {
			return nil, 0, fmt.Errorf("plot: %w", err)
		}
		bars.Horizontal = true
		bars.Color = plotColors[i]
		bars.LineStyle.Width = 0
		// Within a pair, before above after.
		off := vg.Points(barW/2) - vg.Points(barW)*vg.Length(i)
		bars.Offset = off
		p.Add(bars)
		name := sideNames[i]
		if s.Trace == nil {
			name += " (not traced)"
		}
		p.Legend.Add(name, bars)
		if s.Trace == nil {
			continue
		}
		counts := plotter.XYLabels{XYs: make(plotter.XYs, len(vals[i])), Labels: make([]string, len(vals[i]))}
		for k, v := range vals[i] {
			counts.XYs[k] = plotter.XY{X: v, Y: float64(k)}
			counts.Labels[k] = strconv.FormatFloat(v, 'f', -1, 64)
		}
		lb, err := plotter.NewLabels(counts)
		if err != nil {
			return nil, 0, fmt.Errorf("plot: %w", err)
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Font.Size = vg.Points(8)
			lb.TextStyle[k].YAlign = draw.YCenter
		}
		lb.Offset = vg.Point{X: vg.Points(3), Y: off}
		p.Add(lb)
	}
	p.Legend.Top = true
	p.NominalY(labels...)
	p.X.Tick.Marker = plainTicks{ints: true}
	return p, len(groups), nil
}
