package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/oncetool/once/compare"
	"gonum.org/v1/gonum/stat/distuv"
)

// The timing part of the compare reports, after hyperfine's conventions:
// mean ± σ, median, min … max of each side; one unit for every time of a
// table; the ratio of the means as "1.14 ± 0.06 times faster" (or slower);
// warnings of statistical outliers and of a slow first run.

// A measure of the timed runs: a column of the timing table.
type measure struct {
	name, title string // "wall", "WALL"
	get         func(*compare.Side) compare.Stats
	ratio       func(*compare.Result) compare.Ratio
}

var measures = []measure{
	{"wall", "WALL", func(s *compare.Side) compare.Stats { return s.Wall }, func(r *compare.Result) compare.Ratio { return r.Wall }},
	{"CPU", "CPU", func(s *compare.Side) compare.Stats { return s.CPU }, func(r *compare.Result) compare.Ratio { return r.CPU }},
	{"user", "USER", func(s *compare.Side) compare.Stats { return s.User }, func(r *compare.Result) compare.Ratio { return r.User }},
	{"sys", "SYS", func(s *compare.Side) compare.Stats { return s.Sys }, func(r *compare.Result) compare.Ratio { return r.Sys }},
}

// tableUnit is the one unit of every time in a comparison's tables and
// sentences. Like hyperfine, it is chosen from the mean wall time (here
// the larger side's) and then used for σ, median, min, max and the CPU,
// user and sys times alike, so that every figure reads against every
// other. Unlike hyperfine's (µs below 1 ms, ms below 1 s, else s), it is
// the largest unit in which that mean reads at least 10.0 (unitFor), so
// that its one decimal keeps three significant digits: 1290.0 µs rather
// than 1.3 ms.
func tableUnit(r *compare.Result) timeUnit {
	return unitFor(max(r.A.Wall.Mean, r.B.Wall.Mean))
}

// timingTable has a column per measure and three rows per side: mean ± σ,
// median, min … max, every figure in unit u (named above the table).
func timingTable(r *compare.Result, u timeUnit) *table {
	header := []string{"SIDE", "STATISTIC"}
	for _, m := range measures {
		header = append(header, m.title)
	}
	t := newTable(header...).alignRight(2, 3, 4, 5)
	for i, s := range cmpSides(r) {
		for j, row := range statRows {
			cells := []string{"", row.name}
			if j == 0 {
				cells[0] = sideNames[i]
			}
			for _, m := range measures {
				cells = append(cells, row.get(m.get(s), u))
			}
			t.add(cells...)
		}
	}
	return t
}

// statRows are the statistics of a side, as hyperfine shows them.
var statRows = []struct {
	name string
	get  func(compare.Stats, timeUnit) string
}{
	{"mean ± σ", func(st compare.Stats, u timeUnit) string { return u.number(st.Mean) + pmNumber(st, u) }},
	{"median", func(st compare.Stats, u timeUnit) string { return u.number(st.Median) }},
	{"min … max", func(st compare.Stats, u timeUnit) string { return u.number(st.Min) + " … " + u.number(st.Max) }},
}

// relativeText words one ratio as hyperfine words relative speed, the
// after side against the before side: "after ran 1.16 ± 0.17 times faster
// than before" for the wall time, "CPU time: after used 1.18 ± 0.05 times
// less than before" for the others; then the ratio of the medians in
// parentheses. "" when the ratio is not defined.
func relativeText(m measure, q compare.Ratio) string {
	if !ratioDefined(q) {
		return ""
	}
	f, sd, speed := q.Relative()
	mf, mspeed := q.MedianRelative()
	return fmt.Sprintf("%s %s%s times %s %s (medians: %s)", relativeSubject(m), ratio2(f), pmRatio(q, sd),
		relativeWord(m, speed), sideNames[0], medianText(m, mf, mspeed))
}

// pmNumber is " ± σ" of st in unit u, without the unit's name; "" for a
// single run, whose σ is undefined (hyperfine shows none either).
func pmNumber(st compare.Stats, u timeUnit) string {
	if st.N < 2 {
		return ""
	}
	return " ± " + u.number(st.Stddev)
}

// pmFormat is pmNumber with the unit's name.
func pmFormat(st compare.Stats, u timeUnit) string {
	if st.N < 2 {
		return ""
	}
	return " ± " + u.format(st.Stddev)
}

// pmRatio is " ± sd" of a ratio, "" when a side ran once.
func pmRatio(q compare.Ratio, sd float64) string {
	if q.NoSpread {
		return ""
	}
	return " ± " + ratio2(sd)
}

func relativeSubject(m measure) string {
	if m.name == "wall" {
		return sideNames[1] + " ran"
	}
	return m.name + " time: " + sideNames[1] + " used"
}

// relativeWord is "faster than", "slower than" or "as fast as" for the
// wall time, "less than", "more than" or "as much as" for CPU time.
func relativeWord(m measure, s compare.Speed) string {
	wall := m.name == "wall"
	switch {
	case s == compare.Faster && wall:
		return "faster than"
	case s == compare.Slower && wall:
		return "slower than"
	case wall:
		return "as fast as"
	case s == compare.Faster:
		return "less than"
	case s == compare.Slower:
		return "more than"
	}
	return "as much as"
}

func medianText(m measure, f float64, s compare.Speed) string {
	if s == compare.Same {
		return "the same"
	}
	w, _, _ := strings.Cut(relativeWord(m, s), " ")
	return ratio2(f) + " times " + w
}

// relativeLines are relativeText of every measure with a ratio.
func relativeLines(r *compare.Result) []string {
	var out []string
	for _, m := range measures {
		if l := relativeText(m, m.ratio(r)); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// cpuNotes say what of the CPU times to trust: where each side's comes
// from and whether it is exact, and that the user/sys split is the
// kernel's tick-based one. Every note is text of the renderer's own:
// nothing in it needs escaping.
func cpuNotes(r *compare.Result) []string {
	sides := cmpSides(r)
	a, b := sides[0], sides[1]
	var out []string
	cpuLine := func(s *compare.Side) string {
		if s.CPUExact {
			return cpuSourceName(s.CPUSource) + ", exact to the µs, every process of the run"
		}
		return cpuSourceName(s.CPUSource) + ", user + sys: only the children the command waited for, not known exact, so no ratio"
	}
	if a.CPUSource == b.CPUSource && a.CPUExact == b.CPUExact {
		out = append(out, "CPU time, both sides: "+cpuLine(a)+".")
	} else {
		for i, s := range sides {
			out = append(out, "CPU time, "+sideNames[i]+": "+cpuLine(s)+".")
		}
	}
	if !a.SplitExact || !b.SplitExact {
		out = append(out, "user and sys: the kernel's split of the CPU time by sampling at scheduler ticks; not exact for runs of a few ticks, so no ratio.")
	}
	return out
}

// outlierRule states the rule behind the outlier warnings.
var outlierRule = fmt.Sprintf("further from the median than %.3f median absolute deviations: hyperfine's outlier rule", compare.OutlierMADs)

// statWarnings are hyperfine's warnings about the wall time of each side,
// and its CPU time where exact: a first timed run that is an outlier above
// the median (a cache it filled, typically), else statistical outliers.
// The times are in unit u.
func statWarnings(r *compare.Result, u timeUnit) []string {
	out := noiseNotes(r)
	for i, s := range cmpSides(r) {
		for _, m := range measures[:2] {
			if m.name == "CPU" && !s.CPUExact {
				continue
			}
			out = append(out, statNotes(sideNames[i], m.name, m.get(s), u)...)
		}
	}
	return out
}

func statNotes(side, name string, st compare.Stats, u timeUnit) []string {
	var out []string
	outliers := st.Outliers
	if st.SlowFirst {
		out = append(out, fmt.Sprintf("warning: %s: the first timed run was much slower than the rest: %s of %s time, "+
			"the median %s (%s). A cache it filled? More --warmup runs may help.", side, u.format(st.First), name,
			u.format(st.Median), outlierRule))
		outliers--
	}
	if outliers > 0 {
		what := "is a statistical outlier"
		if outliers > 1 {
			what = "are statistical outliers"
		}
		out = append(out, fmt.Sprintf("warning: %s: %d of %d timed runs %s in %s time (%s). "+
			"Other load on the machine? A quieter machine or more --runs may help.",
			side, outliers, st.N, what, name, outlierRule))
	}
	return out
}

// meanPair is "199.9ms ± 14.9ms -> 171.7ms ± 23.6ms", in unit u.
func meanPair(a, b compare.Stats, u timeUnit) string {
	return u.format(a.Mean) + pmFormat(a, u) + " -> " + u.format(b.Mean) + pmFormat(b, u)
}

// mdTimingTable is the timing table in Markdown, like hyperfine's
// --export-markdown: a row per side with the wall time's mean ± σ, median
// and min … max, the CPU time's mean ± σ, and the mean user and system
// times, all in unit u; the last column is each side's mean relative to
// the faster one's, hyperfine's "Relative" (1.00 for the faster side).
func mdTimingTable(r *compare.Result, u timeUnit) string {
	n := u.name
	var b strings.Builder
	fmt.Fprintf(&b, "| Side | Wall mean ± σ [%s] | Median [%s] | Min … max [%s] | CPU mean ± σ [%s] | User [%s] | System [%s] | Relative |\n", n, n, n, n, n, n)
	b.WriteString("|:---|---:|---:|---:|---:|---:|---:|---:|\n")
	rel := [2]string{"", ""}
	if q := r.Wall; ratioDefined(q) {
		f, sd, speed := q.Relative()
		// The slower side carries the factor, the faster one 1.00.
		slow := 0
		if speed == compare.Slower {
			slow = 1
		}
		rel[slow], rel[1-slow] = ratio2(f)+pmRatio(q, sd), "1.00"
	}
	for i, s := range cmpSides(r) {
		fmt.Fprintf(&b, "| %s | %s%s | %s | %s … %s | %s%s | %s | %s | %s |\n", sideNames[i],
			u.number(s.Wall.Mean), pmNumber(s.Wall, u), u.number(s.Wall.Median), u.number(s.Wall.Min), u.number(s.Wall.Max),
			u.number(s.CPU.Mean), pmNumber(s.CPU, u), u.number(s.User.Mean), u.number(s.Sys.Mean), rel[i])
	}
	return b.String()
}

// cpuSourceNames describe the CPU sources in the reports.
var cpuSourceNames = map[compare.CPUSource]string{
	compare.CPUCgroup2: "cgroup v2 cpu.stat of each run's own cgroup",
	compare.CPUCgroup1: "cgroup v1 cpuacct.usage of each run's own cgroup",
	compare.CPURusage:  "wait4's rusage",
}

func cpuSourceName(src compare.CPUSource) string {
	if n, ok := cpuSourceNames[src]; ok {
		return n
	}
	if src == "" {
		return "unknown"
	}
	return string(src)
}

// noiseNotes warn, for the wall time and the CPU time where its ratio is
// stated, when the runs do not show the means apart: the ratio above
// still says "faster" or "slower" (hyperfine's words, from the means
// alone), and 1.02 ± 0.18 times slower says nothing of which side is.
// The test is Welch's t-test of the two means (unequal variances, as
// hyperfine's scripts/welch_ttest.py makes it), two-sided at 5%: the
// difference of the means against its standard error, σ²/N of each side.
// None when either side ran once (no σ), or the means are equal (the
// ratio then says "as fast as").
func noiseNotes(r *compare.Result) []string {
	var out []string
	for _, m := range measures[:2] {
		if !ratioDefined(m.ratio(r)) {
			continue
		}
		a, b := m.get(&r.A), m.get(&r.B)
		t, df, ok := welch(a, b)
		if !ok {
			continue
		}
		if crit := tCrit975(df); math.Abs(t) < crit {
			neither := "neither side faster"
			if m.name != "wall" {
				neither = "neither side using less"
			}
			out = append(out, fmt.Sprintf("warning: %s time: the difference of the means is within the runs' noise "+
				"(Welch's t-test: t = %.2f on %.1f degrees of freedom, under %.2f at 5%%, two-sided): "+
				"these runs show %s. More --runs, or a quieter machine, may tell.",
				m.name, math.Abs(t), df, crit, neither))
		}
	}
	return out
}

// welch is Welch's t statistic of a's and b's means and its degrees of
// freedom (Welch–Satterthwaite); false when a side has fewer than 2 runs,
// the means are equal, or both σ are 0 (nothing to test against).
func welch(a, b compare.Stats) (t, df float64, ok bool) {
	if a.N < 2 || b.N < 2 || a.Mean == b.Mean {
		return 0, 0, false
	}
	va, vb := a.Stddev*a.Stddev/float64(a.N), b.Stddev*b.Stddev/float64(b.N)
	if va+vb == 0 || !finite(va) || !finite(vb) {
		return 0, 0, false
	}
	t = (b.Mean - a.Mean) / math.Sqrt(va+vb)
	df = (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
	return t, df, finite(t) && finite(df)
}

// tCrit975 is Student's t at 97.5% (two-sided 5%) for df degrees of
// freedom, fractional as Welch–Satterthwaite makes them (scipy's
// ttest_ind, which hyperfine's script calls, takes them so too): gonum's
// quantile, not a printed table read between its rows.
func tCrit975(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}
