package report

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/oncetool/once/trace"
)

// What a group of findings suggests changing. Each suggestion is a pure
// function of the group's findings (and, with --stacks, of their call
// sites): it names only places and numbers the trace holds, and says so
// when nothing specific is known. The kind's trace.KindInfo.Remedy picks
// the function; no kind's name is looked at.

// quoter renders a string from the traced system for one output: quoteArg
// for text, identity for JSON (whose encoder escapes it).
type quoter func(string) string

// remedies words each trace.Remedy.
var remedies = map[trace.Remedy]func(g *findingGroup, src trace.StackSource, q quoter) string{
	trace.RemedyReuse:    suggestReuse,
	trace.RemedySearch:   suggestSearch,
	trace.RemedyShebang:  suggestShebang,
	trace.RemedyRemember: suggestRemember,
}

// suggest is what g suggests changing, and the numbers it rests on.
func suggest(g *findingGroup, src trace.StackSource, q quoter) string {
	fn := remedies[g.kind.Info().Remedy]
	if fn == nil {
		fn = suggestNone
	}
	return fn(g, src, q) + outlierNote(g)
}

// span is the per-finding amount of g, "13" or "3-13".
func (g *findingGroup) span() string {
	if g.min == g.max {
		return strconv.Itoa(g.min)
	}
	return strconv.Itoa(g.min) + "-" + strconv.Itoa(g.max)
}

// cost is "13 opens per process × 301 processes, 4.1ms": what the
// suggestion rests on.
func (g *findingGroup) cost(what, per, pers string) string {
	return fmt.Sprintf("%s %s per %s × %s, %s", g.span(), what, per, plural(len(g.findings), per, pers), Duration(g.wasted))
}

// suggestNone: a kind without a remedy (a newer producer's).
func suggestNone(g *findingGroup, _ trace.StackSource, _ quoter) string {
	return "nothing specific is known of this kind: " + g.cost(g.kind.Info().Amount, "finding", "findings")
}

// suggestReuse: one file used again. With call sites, the first one keeps
// the call and the others take its result; without, the numbers only.
func suggestReuse(g *findingGroup, src trace.StackSource, _ quoter) string {
	ki := g.kind.Info()
	cost := g.cost(ki.Amount, "process", "processes")
	var all []trace.CallSite
	for _, f := range g.findings {
		all = append(all, f.CallSites...)
	}
	// Named where the sites part, past a wrapper they share; escaped.
	// Module+offset names none of them: say why instead.
	sites := siteNames(src, all)
	why := "(--stacks names the call sites)"
	if mods, ok := unnamed(src, all); ok {
		sites, why = nil, "("+unnamedModules(mods)+")"
	}
	switch len(sites) {
	case 0:
		return fmt.Sprintf("%s it once and %s the later calls: %s; which code repeats the %s is not known %s",
			ki.Call, ki.Reuse, cost, ki.Amount, why)
	case 1:
		return fmt.Sprintf("every %s is from %s: %s it once there and %s the later calls: %s", ki.Call, sites[0], ki.Call, ki.Reuse, cost)
	}
	return fmt.Sprintf("%s it once at %s and %s %s: %s", ki.Call, sites[0], ki.Reuse, andList(sites[1:]), cost)
}

// andList is "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// dirsList names up to listDirs directories, then how many more.
func dirsList(dirs []string, q quoter) string {
	var out []string
	for i, d := range dirs {
		if i == listDirs {
			out = append(out, fmt.Sprintf("%d more", len(dirs)-listDirs))
			break
		}
		out = append(out, q(d))
	}
	return strings.Join(out, ", ")
}

// listDirs: how many of the places missed a suggestion names.
const listDirs = 2

// suggestSearch: a name searched for. The place that held it (the first
// finding's winner) and the places missed before it, per search.
func suggestSearch(g *findingGroup, _ trace.StackSource, q quoter) string {
	ki := g.kind.Info()
	f := g.findings[0]
	what, per, pers := "failed lookups", "search", "searches"
	switch {
	case ki.ExecSearch:
		what, per, pers = "failed execve", "launch", "launches"
	case len(f.Attempts) > 0 && f.Attempts[0].Syscall.IsLookup():
		what = "failed stat calls"
	case len(f.Attempts) > 0:
		what = "failed opens"
	}
	cost := g.cost(what, per, pers)
	var missed []string
	held := ""
	for _, a := range f.Attempts {
		if a.Errno == 0 && !a.Fallback {
			held = a.Path
			break
		}
		if d := trace.NameDir(a.Path); len(missed) == 0 || missed[len(missed)-1] != d {
			missed = append(missed, d)
		}
	}
	twice := repeatedDirs(f.Attempts, q)
	if f.Found == nil || held == "" {
		return fmt.Sprintf("%s was in none of the places tried (%s): %s; nothing traced says where it is: drop the search if it cannot succeed%s",
			q(g.subject), dirsList(missed, q), cost, twice)
	}
	dir := trace.NameDir(held)
	// Each failed attempt is a miss (a PATH entry for an exec), a
	// directory tried twice too.
	n := f.Failed
	if ki.ExecSearch {
		return fmt.Sprintf("call %s directly, or put %s before %s (%s): %s%s",
			q(held), q(dir), plural(n, "entry", "entries"), dirsList(missed, q), cost, twice)
	}
	return fmt.Sprintf("%s held %s after %s (%s): put %s first in %s: %s%s",
		q(dir), q(g.subject), plural(n, "miss", "misses"), dirsList(missed, q), q(dir), searchList(g, dir), cost, twice)
}

// repeatedDirs says which directories a search missed in more than once
// with the same call (as a PATH that names one twice makes a shell do),
// from the attempts kept; "" when none was.
func repeatedDirs(attempts []trace.Attempt, q quoter) string {
	type try struct {
		dir string
		sc  trace.Syscall
	}
	times := map[try]int{}
	var order []try
	for _, a := range attempts {
		if a.Errno == 0 || a.Fallback {
			break
		}
		k := try{trace.NameDir(a.Path), a.Syscall}
		if times[k] == 0 {
			order = append(order, k)
		}
		times[k]++
	}
	var rep []string
	for _, k := range order {
		if n := times[k]; n > 1 {
			rep = append(rep, fmt.Sprintf("%s %d times", q(k.dir), n))
		}
	}
	if len(rep) == 0 {
		return ""
	}
	return fmt.Sprintf("; it tried %s in one search, where once is enough", andList(rep))
}

// searchList names the list a search went through when the trace tells
// it: an -I option of the process's own argv, a shared library's search
// path; else it says only that it is a list.
func searchList(g *findingGroup, dir string) string {
	for _, f := range g.findings {
		if f.Proc == nil {
			continue
		}
		argv := f.Proc.Argv
		for i, a := range argv {
			if a == "-I"+dir || a == "-I" && i+1 < len(argv) && argv[i+1] == dir {
				return "the -I order"
			}
		}
	}
	if base := path.Base(g.subject); strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.") {
		return "the library search path (RUNPATH, LD_LIBRARY_PATH)"
	}
	return "the search list"
}

// suggestShebang: execve failed with ENOEXEC and a shell ran the file.
func suggestShebang(g *findingGroup, _ trace.StackSource, q quoter) string {
	shell := "the shell"
	if f := g.findings[0]; f.Found != nil {
		shell = q(*f.Found)
	}
	return fmt.Sprintf("%s has no #! line, so its execve fails with ENOEXEC before %s runs it: give it a #! line: %s",
		q(g.subject), shell, g.cost("failed execve", "launch", "launches"))
}

// suggestRemember: the same lookup failing the same way.
func suggestRemember(g *findingGroup, _ trace.StackSource, q quoter) string {
	f := g.findings[0]
	s := fmt.Sprintf("%s fails with %s every time: look it up once and keep the answer: %s",
		q(g.subject), ErrnoName(f.Errno), g.cost(g.kind.Info().Amount, "process", "processes"))
	chained := 0
	for _, f := range g.findings {
		chained += f.Chained
	}
	if chained > 0 {
		verb := "are"
		if chained == 1 {
			verb = "is"
		}
		s += fmt.Sprintf("; %d of the repeats %s attempts of searches reported as findings of their own, whose time counts them", chained, verb)
	}
	return s
}

// outlierNote says when one call is most of a group's waste. The total
// is the measured sum (the waste model, SCHEMA.md), and one slow call (a
// cold cache, a preemption) is not what a repeat usually costs: a call
// that took more than half the total and over outlierFactor times the
// mean of the group's other avoidable calls is named beside it.
func outlierNote(g *findingGroup) string {
	avoidable := 0
	var slowest uint64
	for _, f := range g.findings {
		avoidable += f.Avoidable()
		slowest = max(slowest, slowestAvoidable(f))
	}
	if avoidable < 2 || slowest > g.wasted || slowest*2 <= g.wasted {
		return ""
	}
	othersMean := (g.wasted - slowest) / uint64(avoidable-1)
	if slowest <= outlierFactor*othersMean {
		return ""
	}
	return fmt.Sprintf("; one call took %s of the %s, the others %s each on average", Duration(slowest), Duration(g.wasted), Duration(othersMean))
}

// outlierFactor: how many times the others' mean one call must take to
// be named as an outlier.
const outlierFactor = 4

// slowestAvoidable is the longest of f's avoidable calls that were kept.
func slowestAvoidable(f *trace.Finding) uint64 {
	var n uint64
	if f.Info().Shape == trace.ShapeChain {
		for _, a := range f.Attempts {
			if a.Errno != 0 {
				n = max(n, a.Ns)
			}
		}
		return n
	}
	if len(f.Calls) > 1 {
		for _, c := range f.Calls[1:] {
			n = max(n, c.Ns)
		}
	}
	return n
}
