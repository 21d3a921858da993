package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/oncetool/once/trace"
)

// A large tree makes thousands of findings and processes: the text and
// Markdown reports rank them grouped across processes (one program, one
// kind, one subject: "cc1 x301: stddef.h, 13 opens each") and show the
// top ones; JSON keeps every one.

// topGroups is how many groups of findings, and detailGroups of them with
// their process's tables, the text and Markdown reports show.
const (
	topGroups    = 20
	detailGroups = 10
	// detailProcesses: how many processes' sections --details shows.
	detailProcesses = 100
	// groupProcessesOver: past this many processes the process table has
	// a row per program instead of one per process.
	groupProcessesOver = 30
)

// findingGroup is the findings of one kind of one program about one
// subject, across processes.
type findingGroup struct {
	kind     trace.FindingKind
	comm     string
	subject  string
	findings []*trace.Finding // Result order: the first is the most wasteful
	procs    int
	wasted   uint64
	min, max int // per finding: opens (duplicates) or failed attempts
	// lost is the run's events lost: a search that found nothing may
	// have found its name in a call among them.
	lost uint64
	// others: for a search, the searches of its kind by each image,
	// shared by the groups: what a new order of a list the image's
	// searches share (-I) costs the other names (reorderCost).
	others map[othersKey][]*trace.Finding
	// bases memoizes relativeBase.
	bases map[any]relBase
	// children: the run's processes by parent pid, shared by the
	// groups: a search that found nothing whose name a child of the
	// searching process then ran (childRan).
	children map[uint32][]*trace.Process
}

// othersKey is an image's searches of one kind.
type othersKey struct {
	kind trace.FindingKind
	img  trace.ImageKey
}

// groupAcross groups r's findings, most wasteful group first.
func groupAcross(r *trace.Result) []*findingGroup {
	type key struct {
		kind          trace.FindingKind
		comm, subject string
	}
	byKey := map[key]*findingGroup{}
	var out []*findingGroup
	seen := map[key]map[trace.ImageKey]bool{}
	for i := range r.Findings {
		f := &r.Findings[i]
		k := key{f.Kind, f.Comm, f.Subject()}
		g := byKey[k]
		if g == nil {
			g = &findingGroup{kind: f.Kind, comm: f.Comm, subject: k.subject, min: f.Amount(), max: f.Amount(), lost: r.Counters.Lost()}
			byKey[k] = g
			seen[k] = map[trace.ImageKey]bool{}
			out = append(out, g)
		}
		g.findings = append(g.findings, f)
		g.wasted += f.WastedNs
		g.min, g.max = min(g.min, f.Amount()), max(g.max, f.Amount())
		if !seen[k][f.Key] {
			seen[k][f.Key] = true
			g.procs++
		}
	}
	linkOthers(out)
	children := map[uint32][]*trace.Process{}
	for _, p := range r.Processes {
		if p != nil && p.Exe != "" {
			children[p.PPid] = append(children[p.PPid], p)
		}
	}
	for _, g := range out {
		g.children = children
	}
	slices.SortStableFunc(out, func(a, b *findingGroup) int {
		return cmp.Or(cmp.Compare(b.wasted, a.wasted), cmp.Compare(len(b.findings), len(a.findings)))
	})
	return out
}

// linkOthers gives each group of open or stat searches the searches of
// its kind by image (findingGroup.others), one map for all.
func linkOthers(groups []*findingGroup) {
	byImage := map[othersKey][]*trace.Finding{}
	for _, g := range groups {
		if g.kind != trace.KindFailedOpenProbes && g.kind != trace.KindFailedStatProbes {
			continue
		}
		for _, f := range g.findings {
			k := othersKey{f.Kind, f.Key}
			byImage[k] = append(byImage[k], f)
		}
		g.others = byImage
	}
}

// each is the per-finding amount: "13 opens" or "3-6 failed".
func (g *findingGroup) each() string {
	n := strconv.Itoa(g.min)
	if g.max != g.min {
		n += "-" + strconv.Itoa(g.max)
	}
	return n + " " + g.kind.Info().Amount
}

// findingsTable is the ranked groups, the top ones, and the line that
// counts the rest ("" when none is left out).
func findingsTable(groups []*findingGroup) (*table, string) {
	t, _, rest := findingsTableCut(groups)
	return t, rest
}

// maxSubjectWidth bounds the findings table's SUBJECT column: a path of
// kilobytes would push EACH and WASTED off any screen.
const maxSubjectWidth = 80

// findingsTableCut is findingsTable, and whether a subject was cut to
// maxSubjectWidth (cutMiddle): --details and JSON have it whole.
func findingsTableCut(groups []*findingGroup) (*table, bool, string) {
	t := newTable("KIND", "PROGRAM", "PROCESSES", "SUBJECT", "EACH", "WASTED").alignRight(2, 5)
	shown := min(len(groups), topGroups)
	var cut bool
	for _, g := range groups[:shown] {
		subject := cutMiddle(quoteArg(g.subject), maxSubjectWidth)
		cut = cut || subject != quoteArg(g.subject)
		t.add(Escape(string(g.kind)), quoteArg(g.comm), strconv.Itoa(g.procs), subject, g.each(), Duration(g.wasted))
	}
	if shown == len(groups) {
		return t, cut, ""
	}
	n, wasted := 0, uint64(0)
	for _, g := range groups[shown:] {
		n += len(g.findings)
		wasted += g.wasted
	}
	return t, cut, fmt.Sprintf("... and %d more findings in %d groups, %s wasted (--format json lists every one)", n, len(groups)-shown, Duration(wasted))
}

// cutMiddle cuts an escaped s wider than width display columns in its
// middle, with …: its start and, of more use in a path, its end (the
// file name) are kept, a third and two thirds of what is left. Neither
// cut splits an escape (escFloor, escCeil).
func cutMiddle(s string, width int) string {
	if narrow.StringWidth(s) <= width {
		return s
	}
	room := width - 1 // the …
	head := narrow.Truncate(s, room/3, "")
	head = head[:escFloor(s, len(head))]
	tailW := room - narrow.StringWidth(head)
	i, w := len(s), 0
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		rw := narrow.RuneWidth(r)
		if w+rw > tailW {
			break
		}
		w += rw
		i -= size
	}
	return head + "…" + s[escCeil(s, i):]
}

// detailFindings is what the report details: every finding of each
// process with findings, up to detailProcesses of them, in the order of
// their groups' rank: first the process of each group's first finding,
// so that every group past the top ones has its process there too (an
// exec chain's, which little time ranks low), then the others' processes.
// left counts the processes, findings and time left out.
func detailFindings(r *trace.Result, groups []*findingGroup) (out []*trace.Finding, left detailLeft) {
	rank := map[trace.ImageKey]int{}
	add := func(k trace.ImageKey) {
		if _, ok := rank[k]; !ok {
			rank[k] = len(rank)
		}
	}
	for _, g := range groups {
		add(g.findings[0].Key)
	}
	for _, g := range groups {
		for _, f := range g.findings[1:] {
			add(f.Key)
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		n, ok := rank[f.Key]
		if !ok {
			add(f.Key)
			n = rank[f.Key]
		}
		if n < detailProcesses {
			out = append(out, f)
			continue
		}
		left.findings++
		left.wasted += f.WastedNs
	}
	left.processes = max(0, len(rank)-detailProcesses)
	left.shown = len(rank) - left.processes
	// Sections in rank order (groupFindings keeps the findings' order).
	slices.SortStableFunc(out, func(a, b *trace.Finding) int { return rank[a.Key] - rank[b.Key] })
	return out, left
}

// detailLeft is what --details leaves out past detailProcesses.
type detailLeft struct {
	shown, processes, findings int
	wasted                     uint64
}

// programTable is the process table of a large tree: a row per program
// (comm and executable), with per-process ranges.
func programTable(procs []*trace.Process) *table {
	type key struct{ comm, exe string }
	type row struct {
		key
		n                                            int
		opens, files, dups, failedOpens, execs, fail [2]int
		lookups, failedLookups                       [2]int
		exits                                        map[int]int
		running                                      int
	}
	var order []*row
	byKey := map[key]*row{}
	widen := func(r *[2]int, v int, first bool) {
		if first {
			*r = [2]int{v, v}
			return
		}
		r[0], r[1] = min(r[0], v), max(r[1], v)
	}
	for _, p := range procs {
		if p == nil {
			continue
		}
		k := key{p.Comm, p.Exe}
		r := byKey[k]
		first := r == nil
		if first {
			r = &row{key: k, exits: map[int]int{}}
			byKey[k] = r
			order = append(order, r)
		}
		r.n++
		tt := p.Totals
		widen(&r.opens, tt.Opens, first)
		widen(&r.files, tt.Files, first)
		widen(&r.dups, tt.DupFiles, first)
		widen(&r.failedOpens, tt.FailedOpens, first)
		widen(&r.execs, tt.Execs, first)
		widen(&r.fail, tt.FailedExecs, first)
		widen(&r.lookups, tt.Lookups, first)
		widen(&r.failedLookups, tt.FailedLookups, first)
		if p.Exited {
			r.exits[p.ExitCode]++
		} else {
			r.running++
		}
	}
	span := func(r [2]int) string {
		if r[0] == r[1] {
			return strconv.Itoa(r[0])
		}
		return strconv.Itoa(r[0]) + "-" + strconv.Itoa(r[1])
	}
	t := newTable("PROGRAM", "PROCESSES", "OPENS", "FILES", "DUP FILES", "FAILED OPENS", "EXECS", "FAILED EXECS",
		"LOOKUPS", "FAILED LOOKUPS", "EXITS").
		alignRight(1, 2, 3, 4, 5, 6, 7, 8, 9)
	for _, r := range order {
		codes := make([]int, 0, len(r.exits))
		for c := range r.exits {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		exits := ""
		for _, c := range codes {
			exits += fmt.Sprintf("%d x%d, ", c, r.exits[c])
		}
		if r.running > 0 {
			exits += fmt.Sprintf("- x%d, ", r.running)
		}
		name := quoteArg(r.comm)
		if r.exe != "" && r.exe != r.comm {
			name += " (" + quoteArg(r.exe) + ")"
		}
		t.add(name, strconv.Itoa(r.n), span(r.opens), span(r.files), span(r.dups), span(r.failedOpens),
			span(r.execs), span(r.fail), span(r.lookups), span(r.failedLookups), exits[:max(len(exits)-2, 0)])
	}
	return t
}
