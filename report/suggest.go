package report

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

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
	return passedNote(g, q) + fn(g, src, q) + generatedNote(g) + accessNote(g) + outlierNote(g)
}

// passedNote names, of a duplicate named by the kernel-resolved path
// its subject is, the names its calls passed where they differ
// (passedNames: a symlink's, a relative name), which are what a grep of
// the code finds: `the calls name it "/etc/os-release": `. "" where every
// call passed the path resolved, or none of their names is known.
func passedNote(g *findingGroup, q quoter) string {
	var names []string
	for _, f := range g.findings {
		for _, n := range passedNames(f) {
			// Quoted always: the string the code passed, as a
			// grep of it looks for it (and "." reads as one).
			if n = q(n); !strings.HasPrefix(n, `"`) {
				n = `"` + n + `"`
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	if len(names) > listDirs+1 {
		names = append(names[:listDirs:listDirs], fmt.Sprintf("%d more", len(names)-listDirs))
	}
	return "the calls name it " + andList(names) + ": "
}

// accessNote says, of a duplicate open whose opens asked for different
// access (a file read, then opened again to write it: its open flags'
// O_ACCMODE), that one descriptor serves them all only when opened
// O_RDWR: the first open's, passed on as it is, would not. On an overlay
// the first open for writing also copies the file up, which a repeat
// then takes the time of. "" for any other group, and where every open
// asked for the same access.
func accessNote(g *findingGroup) string {
	if g.kind != trace.KindDuplicateOpen {
		return ""
	}
	var seen [unix.O_ACCMODE + 1]bool
	var modes []string
	for _, f := range g.findings {
		for _, k := range f.Kinds {
			m := k.Flags & unix.O_ACCMODE
			if !seen[m] {
				seen[m] = true
				modes = append(modes, OpenFlags(m))
			}
		}
	}
	if len(modes) < 2 {
		return ""
	}
	return fmt.Sprintf("; its opens asked for different access (%s): one descriptor serves them all only opened O_RDWR", strings.Join(modes, ", "))
}

// generatedNote says, of a duplicate open or stat of a file on a file
// system that makes its files' content and attributes at each read or
// stat (procfs, sysfs: trace.FileDetail.FSType), that the calls again
// may be to see them anew, as a program refreshing its view reads
// /proc/PID/stat each round: reusing the first call's result would
// read stale data, and what saves the calls then is another remedy.
// "" for any other group.
func generatedNote(g *findingGroup) string {
	fstype := ""
	for _, f := range g.findings {
		if f.FSType != "" {
			fstype = f.FSType
			break
		}
	}
	if fstype == "" {
		return ""
	}
	switch g.kind {
	case trace.KindDuplicateOpen:
		return fmt.Sprintf("; the file is on %s, which makes its content at each read: if the opens are to read it anew, keep one descriptor and read it again from offset 0 (pread) instead", fstype)
	case trace.KindDuplicateStat:
		return fmt.Sprintf("; the file is on %s, which makes its attributes at each stat: if the stats are to see them anew, keep a descriptor of it and fstat that instead", fstype)
	}
	return ""
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
	return fmt.Sprintf("%s %s per %s × %s, %s", g.span(), g.unit(what), per, plural(len(g.findings), per, pers), Duration(g.wasted))
}

// unit is what, "failed opens", in the singular when each finding
// counts one: "1 failed open per search".
func (g *findingGroup) unit(what string) string {
	if g.max != 1 {
		return what
	}
	if w, ok := strings.CutSuffix(what, "sses"); ok {
		return w + "ss" // misses
	}
	return strings.TrimSuffix(what, "s")
}

// costPerProcess is cost for the kinds a process has one finding of per
// file or path, which one process may still have several of with one
// subject: a file replaced under its name is another file.
func (g *findingGroup) costPerProcess(what string) string {
	if len(g.findings) == g.procs {
		return g.cost(what, "process", "processes")
	}
	unit, units := "finding", "findings"
	if g.kind.Info().Shape == trace.ShapeFile {
		unit, units = "file", "files"
	}
	return fmt.Sprintf("%s %s per %s × %s in %s, %s", g.span(), g.unit(what), unit, plural(len(g.findings), unit, units),
		plural(g.procs, "process", "processes"), Duration(g.wasted))
}

// suggestNone: a kind without a remedy (a newer producer's).
func suggestNone(g *findingGroup, _ trace.StackSource, _ quoter) string {
	return "nothing specific is known of this kind: " + g.cost(g.kind.Info().Amount, "finding", "findings")
}

// suggestReuse: one file used again. With call sites, the first one keeps
// the call and the others take its result; without, the numbers only.
func suggestReuse(g *findingGroup, src trace.StackSource, _ quoter) string {
	ki := g.kind.Info()
	cost := g.costPerProcess(ki.Amount)
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
	} else if s := stoppedAtCall(src, all); s != "" {
		// The system call's own wrapper is no call site.
		sites, why = nil, "(the stacks stopped at the call's own function, "+s+")"
	} else if s := interpreted(src, all); s != "" {
		// A script's or JIT code's: the runtime's frames would be
		// named instead, as if the calls were its own.
		sites, why = nil, "("+s+")"
	} else if s := threadStarted(src, all, ki.Call); s != "" {
		// A thread's start routine (a pool's loop) would be named
		// as a site to pass the result to.
		sites, why = nil, "("+s+")"
	}
	if sites != nil {
		// Sites on a thread some start routine runs may be a thread
		// pool's work, whose stacks do not show who queued it.
		cost += threadNote(src, all, ki.Call)
	}
	// Calls with no stack (counted in the kernel, or not captured) may
	// be from anywhere: what the sites say is of the others only.
	total, unknown := 0, unsited(all)
	for _, c := range all {
		total += c.Count
	}
	if sites != nil {
		if own, prog := runtimeOwnSites(src, all); own > 0 {
			return suggestRuntimeOwn(g, src, own, total, unknown, prog, cost)
		}
	}
	// The calls without a stack are the first ones (a duplicate_stat's
	// first lookup, counted in the kernel): the sites known are the
	// repeats', not where to keep the call.
	firstOnly := unknown > 0 && unknown == len(g.findings) && !slices.ContainsFunc(g.findings, func(f *trace.Finding) bool { return !firstUnsited(f) })
	var partly string
	if unknown > 0 && len(sites) > 0 {
		partly = fmt.Sprintf("; %d of the %d %ss %s no call site known (counted in the kernel, or not captured)", unknown, total, ki.Call, verbFor(unknown, "has", "have"))
	}
	switch len(sites) {
	case 0:
		return fmt.Sprintf("%s it once and %s the later calls: %s; which code repeats the %s is not known %s",
			ki.Call, ki.Reuse, cost, ki.Amount, why)
	case 1:
		if s := stoppedShort(src, all); s != "" {
			// Calls from different callers look alike past where
			// their walk stopped: one site is not known to be one.
			return fmt.Sprintf("every %s is from %s as far as the stacks go (they stopped at %s), which code called it is not known: %s it once and %s the later calls: %s%s",
				ki.Call, sites[0], s, ki.Call, ki.Reuse, cost, partly)
		}
		if firstOnly {
			return fmt.Sprintf("the repeats are from %s, the first %s's call site is not known (counted in the kernel, or not captured): %s it once, before them, and %s %s: %s",
				sites[0], ki.Call, ki.Call, ki.Reuse, sites[0], cost)
		}
		if unknown > 0 {
			return fmt.Sprintf("every %s with a known call site is from %s: %s it once there and %s the later calls: %s%s",
				ki.Call, sites[0], ki.Call, ki.Reuse, cost, partly)
		}
		return fmt.Sprintf("every %s is from %s: %s it once there and %s the later calls: %s", ki.Call, sites[0], ki.Call, ki.Reuse, cost)
	}
	if firstOnly {
		// No site of these is the first call's: keeping the call at
		// the first of them would leave the first call as it is.
		return fmt.Sprintf("the repeats are from %s, the first %s's call site is not known (counted in the kernel, or not captured): %s it once, before them, and %s %s: %s",
			andList(sites), ki.Call, ki.Call, ki.Reuse, andList(sites), cost)
	}
	return fmt.Sprintf("%s it once at %s and %s %s: %s%s", ki.Call, sites[0], ki.Reuse, andList(sites[1:]), cost, partly)
}

// runtimeOwnSites splits sites into the calls whose stack, walked to its
// outermost frame, has no frame of the program's (runtimeFrame: ld.so
// opening /etc/ld.so.cache as it loads a program's libraries at
// start-up, before any code of the program's ran), how many, and the
// other sites.
func runtimeOwnSites(src trace.StackSource, sites []trace.CallSite) (own int, prog []trace.CallSite) {
	for _, c := range sites {
		var st *trace.Stack
		if src != nil && c.Stack != 0 && c.Stack != trace.StackNotKept {
			st = src.Stack(c.Stack)
		}
		if st != nil && len(st.Frames) > 0 && st.Stop == "" && !slices.ContainsFunc(st.Frames, func(f trace.Frame) bool { return !runtimeFrame(&f) }) {
			own += c.Count
			continue
		}
		prog = append(prog, c)
	}
	return own, prog
}

// suggestRuntimeOwn: a duplicate some of whose calls the runtime made on
// its own (runtimeOwnSites): no site of the program's keeps those, and
// the sites named are the other calls'.
func suggestRuntimeOwn(g *findingGroup, src trace.StackSource, own, total, unknown int, prog []trace.CallSite, cost string) string {
	ki := g.kind.Info()
	if own == total {
		return fmt.Sprintf("every %s was made with no frame of the program's code in its stack (the C library's, the dynamic loader's or the language runtime's own calls, as ld.so's at start-up), which no change to the program's calls saves: %s",
			ki.Call, cost)
	}
	head := fmt.Sprintf("%d of the %d %ss %s made with no frame of the program's code in %s stack (the C library's, the dynamic loader's or the language runtime's own %s, as ld.so's at start-up), which no change to the program's calls saves",
		own, total, ki.Call, verbFor(own, "was", "were"), verbFor(own, "its", "their"), verbFor(own, "call", "calls"))
	var partly string
	if unknown > 0 {
		partly = fmt.Sprintf("; %d of the %d %ss %s no call site known (counted in the kernel, or not captured)", unknown, total, ki.Call, verbFor(unknown, "has", "have"))
	}
	sites := siteNames(src, prog)
	switch {
	case len(sites) == 0:
		return fmt.Sprintf("%s: %s%s", head, cost, partly)
	case len(sites) == 1:
		return fmt.Sprintf("%s; the %s from %s: %s%s", head, verbFor(total-own, "other is", "others are"), sites[0], cost, partly)
	}
	return fmt.Sprintf("%s; of the others, %s it once at %s and %s %s: %s%s", head, ki.Call, sites[0], ki.Reuse, andList(sites[1:]), cost, partly)
}

// verbFor is one's verb for a count of 1, else many's: "1 of the 2 opens
// has", "2 of the 3 have".
func verbFor(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// firstUnsited: f's first call has no stack: a duplicate_stat's first
// lookup, counted in the kernel and never sent (it is in neither Calls
// nor CallsOmitted), or a first open whose kept snapshot was lost
// (stacks_first_lost).
func firstUnsited(f *trace.Finding) bool {
	if len(f.Calls)+f.CallsOmitted < f.Count {
		return true
	}
	return len(f.Calls) > 0 && f.Calls[0].Stack == 0
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

// missedList is dirsList of the places a search missed, as its attempts
// kept show them; attempts past those kept (omitted: counted in the
// misses, their places not known) are said apart, not taken for none.
func missedList(dirs []string, omitted int, q quoter) string {
	s := dirsList(dirs, q)
	if omitted > 0 {
		s += ", and " + plural(omitted, "attempt", "attempts") + " past those kept"
	}
	return s
}

// listDirs: how many of the places missed a suggestion names.
const listDirs = 2

// suggestSearch: a name searched for. The place that held it (the most
// wasteful search that found it) and the places missed before it, per
// search.
func suggestSearch(g *findingGroup, _ trace.StackSource, q quoter) string {
	ki := g.kind.Info()
	f, notFound := g.findings[0], 0
	for _, h := range g.findings {
		if heldBy(h) == "" {
			notFound += passes(h)
		}
	}
	for _, h := range g.findings {
		if heldBy(h) != "" {
			f = h
			break
		}
	}
	what, per, pers := "failed lookups", "search", "searches"
	switch {
	case ki.ExecSearch:
		what, per, pers = "failed execve", "launch", "launches"
	case len(f.Attempts) > 0 && f.Attempts[0].Syscall.IsLookup():
		what = "failed stat calls"
	case len(f.Attempts) > 0:
		what = "failed opens"
	}
	cost, searches := g.searchCost(what, per, pers)
	var missed []string
	// One search's places: a chain of k searches that found nothing
	// (passes) holds each PATH entry k times.
	for _, a := range onePass(f) {
		if a.Errno == 0 && !a.Fallback {
			break
		}
		// PATH entries as they come (an entry named twice is two, in
		// a row too: the count the suggestion gives is of attempts);
		// places each once.
		d := trace.NameDir(a.Path)
		if ki.ExecSearch || !slices.Contains(missed, d) {
			missed = append(missed, d)
		}
	}
	twice := repeatedDirs(onePass(f), f.AttemptsOmitted > 0, q) + dirChecksNote(g)
	held := heldBy(f)
	if !ki.ExecSearch && len(missed) > 0 {
		if s, ok := localeSuggestion(g, missed, held, cost, twice, q); ok {
			return s
		}
		if s, ok := variantSuggestion(g, missed, held, cost, twice, q); ok {
			return s
		}
		twice += variantNote(g, q)
		if f.ViaCache != "" && held != "" {
			// Found through ld.so's cache, which comes after every
			// entry of the search path: no entry held it.
			if entries, subs, under := libraryEntries(f, missed); under > 0 {
				// The misses under an entry are its hardware-capability
				// subdirectories', not entries of their own.
				return fmt.Sprintf("ld.so found %s through its cache (%s), in %s, after %s in the %s of the library search path (%s), %d of them in the entries' hardware-capability subdirectories (%s), which ld.so tries before each entry: ld.so tries every LD_LIBRARY_PATH and RUNPATH entry before its cache, for each library it loads (ld.so(8)), so no order of the entries saves these misses; leaving out the entries the program does not need does: %s%s",
					q(g.subject), q(f.ViaCache), q(trace.NameDir(held)), plural(f.Failed, "miss", "misses"), plural(len(entries), "entry", "entries"), missedList(entries, f.AttemptsOmitted, q), under, dirsList(subs, q), cost, twice)
			}
			return fmt.Sprintf("ld.so found %s through its cache (%s), in %s, after %s in the entries of the library search path (%s): ld.so tries every LD_LIBRARY_PATH and RUNPATH entry before its cache, for each library it loads (ld.so(8)), so no order of the entries saves these misses; leaving out the entries the program does not need does: %s%s",
				q(g.subject), q(f.ViaCache), q(trace.NameDir(held)), plural(f.Failed, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), cost, twice)
		}
	}
	if held != "" && !ki.ExecSearch {
		// The notes but the repeated places', which a walk's own says.
		notes := strings.TrimPrefix(twice, repeatedDirs(onePass(f), f.AttemptsOmitted > 0, q))
		if notFound > 0 {
			notes += fmt.Sprintf("; %d of the %s found it nowhere", notFound, plural(searches, per, pers))
		}
		if s, ok := walkSuggestion(g, f, missed, trace.NameDir(held), cost, notes, q); ok {
			return s
		}
	}
	if also := alsoFound(g); also != "" {
		found := []string{q(also)}
		if held != "" && trace.NameDir(held) != also {
			found = append([]string{q(trace.NameDir(held))}, found...)
		}
		return fmt.Sprintf("it looks for %s in every place, found or not (found in %s; missed in %s): no order of the list saves a miss; leave out the places that never hold it: %s%s",
			q(g.subject), andList(found), missedList(missed, f.AttemptsOmitted, q), cost, twice)
	}
	// A search that found nothing in a run that lost events may have
	// found its name in a call among them (its success, or the
	// attempts after those seen): what is traced can't tell.
	unsure := ""
	if g.lost > 0 {
		unsure = fmt.Sprintf("; %s lost in this run: the call that found it may be among them", plural(g.lost, "event was", "events were"))
	}
	if held == "" {
		twice += unsure
		if walksUp(missed) {
			// The chain ended at the root (detect): each place the
			// parent of the one before, a package scope's or a
			// project root's lookup, not a list of places.
			return fmt.Sprintf("%s was in none of the %d directories from %s up to /, each the parent of the one before: %s; nothing traced says where it is: the walk ends only where it finds the name%s",
				q(g.subject), len(missed), q(missed[0]), cost, twice)
		}
		if ki.ExecSearch {
			if s, ok := execFailedWhereFound(g, f, missed, cost, twice, q); ok {
				return s
			}
		}
		if errs := notMissing(g); errs != "" {
			// EACCES, ELOOP, ENAMETOOLONG: the name may be there
			// (a file not executable, an interpreter missing is
			// ENOENT, alas), and failed to be used.
			return fmt.Sprintf("%s failed in every place tried (%s), not only as missing (%s): %s; nothing traced says where it would work: drop the search if it cannot succeed%s",
				q(g.subject), missedList(missed, f.AttemptsOmitted, q), errs, cost, twice)
		}
		if ran := childRan(g); ran != "" && g.kind != trace.KindFailedExecProbes {
			// gcc's search of its own directories for as, then its
			// child's execvp of as through PATH.
			return fmt.Sprintf("%s was in none of the places tried (%s), and a child of the process then ran it by that name (the executable %s: its exec found it elsewhere, through a search of its own as execvp's of PATH, or by a path): the program tries these places first, and nothing traced says how to leave them out: %s%s",
				q(g.subject), missedList(missed, f.AttemptsOmitted, q), q(ran), cost, twice)
		}
		if ki.ExecSearch {
			// execve's ENOENT is a missing name's and a missing
			// interpreter's alike: a script whose #! line names no
			// file, an ELF whose loader is not there. What is
			// traced can't tell them apart.
			return fmt.Sprintf("%s was in none of the places tried (%s), or was there and names a #! interpreter or ELF loader that is missing (execve fails with ENOENT for both): %s; nothing traced says which: drop the search if it cannot succeed%s",
				q(g.subject), missedList(missed, f.AttemptsOmitted, q), cost, twice)
		}
		return fmt.Sprintf("%s was in none of the places tried (%s): %s; nothing traced says where it is: drop the search if it cannot succeed%s",
			q(g.subject), missedList(missed, f.AttemptsOmitted, q), cost, twice)
	}
	if notFound > 0 {
		twice += fmt.Sprintf("; %d of the %s found it nowhere", notFound, plural(searches, per, pers)) + unsure
	}
	dir := trace.NameDir(held)
	// Each failed attempt is a miss (a PATH entry for an exec), a
	// directory tried twice too.
	n := f.Failed
	if ki.ExecSearch {
		return fmt.Sprintf("call %s directly, or put %s before %s (%s): %s%s",
			q(held), q(dir), plural(n, "entry", "entries"), missedList(missed, f.AttemptsOmitted, q), cost, twice)
	}
	name := g.subject
	// An -I entry that holds the name in a subdirectory of its own
	// (#include <sys/x.h>): the entry is what the list orders. Held
	// outside every -I entry (a compiler's system directory) after
	// misses in the entries' same subdirectory: the subdirectory is the
	// name's there too.
	entry, inEntry := includeEntry(g, dir)
	sub := ""
	if inEntry && entry != dir {
		sub = dir[len(entry):] // "/sys"
	} else if !inEntry {
		sub = includeSub(g, missed, dir)
	}
	if sub == "" && !inEntry {
		sub = listSub(g, f, missed, dir)
	}
	if sub != "" {
		name = sub[1:] + "/" + name
		for i, d := range missed {
			missed[i] = strings.TrimSuffix(d, sub)
		}
		dir = strings.TrimSuffix(dir, sub)
	}
	if !inEntry && isCompiler(g.comm) {
		// A system directory comes after every -I entry: no -I order
		// puts it first, and -I of it is ignored.
		var entries []string
		for _, d := range missed {
			if e, ok := includeEntry(g, d); ok && e == d {
				entries = append(entries, d)
			}
		}
		if len(entries) > 0 {
			return fmt.Sprintf("%s held %s after %s (%s), %s in -I entries (%s), which the compiler searches before its system directories for every #include <…>, whatever their order: -iquote instead of -I keeps an entry that serves only #include \"…\" out of those searches: %s%s",
				q(dir), q(name), plural(n, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), strconv.Itoa(len(entries)), dirsList(entries, q), cost, twice)
		}
		if !argvNamesDir(g, dir) && !slices.ContainsFunc(missed, func(d string) bool { return argvNamesDir(g, d) }) {
			// No place of the search is one the compiler was given:
			// its own directories (and, for #include "…", the
			// including file's), in an order no option changes.
			return fmt.Sprintf("%s held %s after %s (%s), none of them a directory the compiler's arguments name (-I, -iquote, -isystem, -idirafter): its own system directories, which it searches in their built-in order after every directory given (an -I naming one is ignored), and for #include \"…\" the including file's directory first: no order of the options saves these misses, and nothing traced says how to avoid them: %s%s",
				q(dir), q(name), plural(n, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), cost, twice)
		}
	}
	if under := subdirsOf(missed, dir); under != nil {
		// Missed before this find, which is all the trace says of the
		// order: ld.so tries an entry's subdirectories first; git
		// finds .git/HEAD, then misses refs/HEAD and the rest, then
		// finds .git/HEAD again.
		return fmt.Sprintf("%s held %s after %s, all in directories under it (%s), missed before it was found there: the order of the search list does not remove them%s: %s%s",
			q(dir), q(name), plural(n, "miss", "misses"), dirsList(under, q), subdirsWhy(g), cost, twice)
	}
	list := searchList(g, dir)
	if s, ok := outsideEntriesSuggestion(g, f, list, dir, name, sub, missed, cost, twice, q); ok {
		return s
	}
	if g.max == 1 && list == genericList {
		// Every search one miss, then a find elsewhere: a list of two,
		// or two places the program reads in turn whatever it finds
		// (git's configuration levels). Nothing says which.
		return fmt.Sprintf("%s held %s after 1 miss (%s): one miss shows no list to reorder: if %s comes first in a list the program is given, putting %s first saves it; if the program reads the name in every place it may be (configuration at several levels), the miss is of a file it does not have there: %s%s",
			q(dir), q(name), q(missed[0]), q(missed[0]), q(dir), cost, twice)
	}
	if in, under := missesUnder(f, dir); in > 0 {
		// Some misses were in the entry's own subdirectories (ld.so's
		// hardware-capability ones): putting it first leaves them.
		why := subdirsWhy(g)
		if why == "" {
			why = ", tried before it"
		}
		return fmt.Sprintf("%s held %s after %s (%s): put %s first in %s: that leaves the %s in directories under it (%s)%s, and saves the other %d: %s%s",
			q(dir), q(name), plural(n, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), q(dir), list,
			plural(in, "miss", "misses"), dirsList(under, q), why, n-in, cost, twice+shadowNote(g, list, missed, q))
	}
	if list == "the -I order" {
		twice += reorderCost(g, dir, q)
	}
	twice += shadowNote(g, list, missed, q)
	return fmt.Sprintf("%s held %s after %s (%s): put %s first in %s: %s%s",
		q(dir), q(name), plural(n, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), q(dir), list, cost, twice)
}

// reorderCost says what putting dir, an -I entry, first costs the same
// processes' searches of other names (g.others) that found theirs in an
// -I entry other than dir without missing in dir (an entry before it):
// with dir first, each of them misses there once more, and one list
// serves them all. "" when none did. Searches that found their name
// after one miss or none are no findings, and the scan is bounded
// (reorderImages images, reorderScan searches each: a hostile image's
// thousands of names cost no quadratic time): the cost is at least this.
func reorderCost(g *findingGroup, dir string, q quoter) string {
	n, capped := 0, false
	var names, entries []string
	listed := map[string]bool{}
	seen := map[trace.ImageKey]bool{}
	for _, f := range g.findings {
		if seen[f.Key] {
			continue
		}
		if len(seen) == reorderImages {
			capped = true
			break
		}
		seen[f.Key] = true
		others := g.others[othersKey{f.Kind, f.Key}]
		if len(others) > reorderScan {
			others, capped = others[:reorderScan], true
		}
		for _, o := range others {
			if o.Subject() == g.subject || o.AttemptsOmitted > 0 {
				continue
			}
			held := heldBy(o)
			if held == "" {
				continue
			}
			e, ok := includeEntry(g, trace.NameDir(held))
			if !ok || e == dir {
				continue
			}
			missed := false
			for _, a := range o.Attempts {
				if a.Errno != 0 && !a.Fallback {
					if d := trace.NameDir(a.Path); d == dir || strings.HasPrefix(d, strings.TrimSuffix(dir, "/")+"/") {
						missed = true
						break
					}
				}
			}
			if missed {
				continue
			}
			n++
			if !listed["name "+o.Target] {
				listed["name "+o.Target] = true
				names = append(names, o.Target)
			}
			if !listed["entry "+e] {
				listed["entry "+e] = true
				entries = append(entries, e)
			}
		}
	}
	if n == 0 {
		return ""
	}
	count := plural(n, "search", "searches")
	if capped {
		count = "at least " + count
	}
	return fmt.Sprintf("; but %s of other names by the same processes (%s) found them in -I entries before it (%s): with %s first each of those misses there once more (one list serves every name: no order saves misses for all)",
		count, dirsList(names, q), dirsList(entries, q), q(dir))
}

// shadowNote says what putting an entry of an -I or -L list first risks:
// a file of the same name in an entry it would then come before (one of
// missed, the search's entries before it) is the one found now, and
// would be hidden (a header of the same name, the file #include_next
// goes on to). The trace shows the names searched for, not each entry's
// files: "" for any other list, or when no entry was missed.
func shadowNote(g *findingGroup, list string, missed []string, q quoter) string {
	opt := listOption(list)
	if opt == "" {
		return ""
	}
	var before []string
	for _, d := range missed {
		if e, ok := optionEntry(g, d, opt); ok && e == d && !slices.Contains(before, d) {
			before = append(before, d)
		}
	}
	if len(before) == 0 {
		return ""
	}
	next := ""
	if opt == "-I" && isCompiler(g.comm) {
		next = ", and #include_next would go on from another entry"
	}
	return fmt.Sprintf("; before moving it, check that none of its files is also in %s: put first, it would hide theirs from every search of the name%s (the trace shows the names searched for, not what each entry holds)",
		dirsList(before, q), next)
}

// The bounds of reorderCost's scan.
const (
	reorderImages = 64
	reorderScan   = 512
)

// outsideEntriesSuggestion is the suggestion for a search held in an
// entry of an -I or -L list (list, searchList's) whose misses were not
// all in entries of that list: a compiler's #include "…" tries the
// including file's own directory and the -iquote entries before the -I
// ones, and no -I order saves those misses. It says which misses an
// order saves, if any; false when every miss was in an entry (or the
// attempts were not all kept: the counts would not be exact).
func outsideEntriesSuggestion(g *findingGroup, f *trace.Finding, list, dir, name, sub string, missed []string, cost, twice string, q quoter) (string, bool) {
	opt := listOption(list)
	if opt == "" {
		return "", false
	}
	if f.AttemptsOmitted > 0 {
		return "", false
	}
	n, out := 0, 0
	var outside []string
	for _, a := range onePass(f) {
		if a.Errno == 0 || a.Fallback {
			break
		}
		n++
		d := trace.NameDir(a.Path)
		if sub != "" {
			d = strings.TrimSuffix(d, sub)
		}
		if e, ok := optionEntry(g, d, opt); ok && e == d {
			continue
		}
		out++
		if !slices.Contains(outside, d) {
			outside = append(outside, d)
		}
	}
	if out == 0 {
		return "", false
	}
	why := ""
	if opt == "-I" && isCompiler(g.comm) {
		why = " (for #include \"…\" a compiler tries the including file's own directory and the -iquote entries first)"
	}
	if out == n {
		return fmt.Sprintf("%s held %s after %s (%s), each in a place no %s entry names, searched before the entries%s: no order of the %s entries saves them: %s%s",
			q(dir), q(name), plural(n, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), opt, why, opt, cost, twice), true
	}
	places := "places"
	if len(outside) == 1 {
		places = "a place"
	}
	if opt == "-I" {
		twice += reorderCost(g, dir, q)
	}
	twice += shadowNote(g, list, missed, q)
	return fmt.Sprintf("%s held %s after %s (%s): put %s first in %s: that saves the %s in %s entries, not the %s in %s no %s entry names (%s), searched before the entries%s: %s%s",
		q(dir), q(name), plural(n, "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), q(dir), list, plural(n-out, "miss", "misses"), opt,
		plural(out, "miss", "misses"), places, opt, dirsList(outside, q), why, cost, twice), true
}

// missesUnder is how many of f's failed attempts were in directories
// under dir (not dir itself), and those directories relative to dir,
// each once; 0 when f's attempts were not all kept (the count would not
// be exact) or none was.
func missesUnder(f *trace.Finding, dir string) (int, []string) {
	if f.AttemptsOmitted > 0 {
		return 0, nil
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	n := 0
	var under []string
	for _, a := range onePass(f) {
		if a.Errno == 0 || a.Fallback {
			break
		}
		r, ok := strings.CutPrefix(trace.NameDir(a.Path), prefix)
		if !ok {
			continue
		}
		n++
		if !slices.Contains(under, r) {
			under = append(under, r)
		}
	}
	return n, under
}

// dirChecksNote says how many failed lookups of the directories missed
// in, each right after its miss, the group's time counts
// (trace.ChainDetail.DirChecks: ld.so's); "" when none.
func dirChecksNote(g *findingGroup) string {
	n := 0
	for _, f := range g.findings {
		n += f.DirChecks
	}
	if n == 0 {
		return ""
	}
	if n == 1 {
		return "; the time includes 1 failed stat call of a directory, made right after a miss there"
	}
	return fmt.Sprintf("; the time includes %d failed stat calls of directories, each made right after a miss there", n)
}

// walksUp says whether dirs are two or more directories, each the parent
// of the one before, the last the root: a walk up the tree that found
// nothing.
func walksUp(dirs []string) bool {
	if len(dirs) < 2 || dirs[len(dirs)-1] != "/" {
		return false
	}
	for i := 1; i < len(dirs); i++ {
		if dirs[i-1] == "/" || path.Dir(dirs[i-1]) != dirs[i] {
			return false
		}
	}
	return true
}

// walkSuggestion: the places missed are the start of the search, held
// by dir, and directories on the way from it to / (each an ancestor of
// the first), with at least one above dir: walks up the tree, as node's
// for node_modules, one a require, which the trace, seeing one name
// missed until a lookup finds it, holds as one chain. No list gives that
// order, and a walk that went on past dir found there not what it looked
// for (a package node_modules lacks): putting dir first, as for a list,
// would save nothing.
func walkSuggestion(g *findingGroup, f *trace.Finding, missed []string, dir, cost, notes string, q quoter) (string, bool) {
	if len(missed) < 2 || f.AttemptsOmitted > 0 {
		return "", false
	}
	start := missed[0]
	if !isAncestor(dir, start) {
		return "", false
	}
	var above []string
	for _, d := range missed[1:] {
		if !isAncestor(d, start) {
			return "", false
		}
		if isAncestor(d, dir) {
			above = append(above, d)
		}
	}
	if len(above) == 0 {
		return "", false
	}
	below, aboveN, starts := 0, 0, 0
	for _, a := range onePass(f) {
		if a.Errno == 0 || a.Fallback {
			break
		}
		d := trace.NameDir(a.Path)
		if d == start {
			starts++
		}
		if isAncestor(d, dir) {
			aboveN++
		} else {
			below++
		}
	}
	if also := alsoFound(g); also != "" && also != dir {
		// Another walk of the group found it nearer its start: each
		// ends at the nearest.
		notes = fmt.Sprintf("; another walk found it in %s", q(also)) + notes
	}
	again := ""
	if starts > 1 {
		again = fmt.Sprintf("; the walk began at %s %d times: searches of their own, which the trace, seeing one name missed until it was found, counts as one", q(start), starts)
	}
	verb := "are"
	if aboveN == 1 {
		verb = "is"
	}
	return fmt.Sprintf("%s held %s after %s, all on walks up from %s toward / (%s): a walk up tries each directory's parent in turn and ends where it finds what it looks for: no list to reorder; the %s below %s come before it in every walk that reaches it, and the %d above it (%s) %s of a walk that went on past %s, not finding there what it looked for: %s%s%s",
		q(dir), q(g.subject), plural(f.Failed, "miss", "misses"), q(start), dirsList(missed, q), plural(below, "miss", "misses"), q(dir),
		aboveN, dirsList(above, q), verb, q(dir), cost, again, notes), true
}

// isAncestor says whether a is a proper ancestor of the directory d
// (both clean and absolute).
func isAncestor(a, d string) bool {
	if a == d || !strings.HasPrefix(d, "/") || !strings.HasPrefix(a, "/") {
		return false
	}
	return a == "/" || strings.HasPrefix(d, a+"/")
}

// genericList is what searchList says when the trace does not name the
// list.
const genericList = "the search list"

// passes is how many searches f's chain holds: k when it found nothing
// and its failed attempts, all kept, are k >= 2 copies of one sequence of
// two or more places. A chain collects every miss of its name until a
// lookup finds it, so a name looked for again and again and never found
// (a shell running a missing command in a loop, `command -v` of one on
// every call) is one chain of every search: 5 walks of a 13-entry PATH
// are 65 misses, not one search that tried each entry 5 times. A list
// that names all its places k times over looks the same in a trace; the
// search made again is the likelier by far. Else 1.
func passes(f *trace.Finding) int {
	if f.Found != nil || f.AttemptsOmitted > 0 {
		return 1
	}
	var seq []string
	for _, a := range f.Attempts {
		if a.Errno == 0 || a.Fallback {
			return 1
		}
		seq = append(seq, a.Syscall.String()+" "+trace.NameDir(a.Path))
	}
	if len(seq) != f.Failed {
		return 1
	}
	for p := 2; p <= len(seq)/2; p++ {
		if len(seq)%p != 0 || !slices.ContainsFunc(seq[1:p], func(s string) bool { return s != seq[0] }) {
			continue
		}
		periodic := true
		for i := p; i < len(seq) && periodic; i++ {
			periodic = seq[i] == seq[i-p]
		}
		if periodic {
			return len(seq) / p
		}
	}
	return 1
}

// onePass is f's attempts of one search (passes).
func onePass(f *trace.Finding) []trace.Attempt {
	k := passes(f)
	return f.Attempts[:len(f.Attempts)/k]
}

// searchCost is cost for a search group, counting its searches (passes)
// rather than its findings, and the searches.
func (g *findingGroup) searchCost(what, per, pers string) (string, int) {
	lo, hi, n := 0, 0, 0
	for i, f := range g.findings {
		k := passes(f)
		each := f.Amount() / k
		if i == 0 {
			lo, hi = each, each
		}
		lo, hi, n = min(lo, each), max(hi, each), n+k
	}
	if n == len(g.findings) {
		return g.cost(what, per, pers), n
	}
	h := &findingGroup{min: lo, max: hi}
	span, unit := h.span(), h.unit(what)
	return fmt.Sprintf("%s %s per %s × %s, %s", span, unit, per, plural(n, per, pers), Duration(g.wasted)), n
}

// alsoFound is the other directory a search of the group found its name
// in (trace.ChainDetail.AlsoFound), "" when none did: the first one.
func alsoFound(g *findingGroup) string {
	for _, f := range g.findings {
		if f.AlsoFound != "" {
			return f.AlsoFound
		}
	}
	return ""
}

// heldBy is the name f's search found, from its attempts; "" when it
// found none (or the attempt that did was not kept).
// notMissing counts the errors of g's kept failed attempts, "EACCES 2,
// ENOENT 1", when one of them says something other than that the name
// is not there (ENOENT, ENOTDIR); "" when none does.
func notMissing(g *findingGroup) string {
	n := map[int32]int{}
	other := false
	for _, f := range g.findings {
		for _, a := range f.Attempts {
			if a.Errno == 0 || a.Fallback {
				continue
			}
			n[a.Errno]++
			if a.Errno != int32(unix.ENOENT) && a.Errno != int32(unix.ENOTDIR) {
				other = true
			}
		}
	}
	if !other {
		return ""
	}
	var parts []string
	for e, c := range n {
		parts = append(parts, ErrnoName(e)+" "+strconv.Itoa(c))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// execFailedWhereFound: an exec search (execvp) that ended where its
// name is, on a failure no order of PATH saves: ETXTBSY (the file is
// open for writing) or E2BIG (argv and the environment past the
// kernel's limit, which Linux 6.8+ finds after opening the file; before
// it, every attempt fails alike and no search starts). execvp gives up
// there. The directory held the name: the misses before it are the
// search's, the last failure is not. Or ENOEXEC (a file with no #! line)
// that no exec of /bin/sh followed: bash runs such a file itself, in the
// child it forked.
func execFailedWhereFound(g *findingGroup, f *trace.Finding, missed []string, cost, twice string, q quoter) (string, bool) {
	p := onePass(f)
	if f.AttemptsOmitted > 0 || len(p) == 0 {
		return "", false
	}
	last := p[len(p)-1]
	if last.Fallback {
		return "", false
	}
	if s, ok := execNoShebangMidSearch(g, p, cost, twice, q); ok {
		return s, true
	}
	dir := trace.NameDir(last.Path)
	before := missed
	if n := len(before); n > 0 && before[n-1] == dir {
		before = before[:n-1]
	}
	if last.Errno == int32(unix.ENOEXEC) {
		misses := ""
		if len(before) > 0 {
			misses = fmt.Sprintf("; call %s directly, or put %s before %s (%s), to save the misses before it",
				q(last.Path), q(dir), plural(len(p)-1, "entry", "entries"), dirsList(before, q))
		}
		return fmt.Sprintf("%s held %s, which has no #! line and is no binary: its execve there failed with ENOEXEC, and no exec of a shell followed (the caller ran it itself, as bash does in the child it forked, or gave up): give it a #! line%s: %s%s",
			q(dir), q(g.subject), misses, cost, twice), true
	}
	if len(p) < 2 {
		return "", false
	}
	var why string
	switch last.Errno {
	case int32(unix.ETXTBSY):
		why = "ETXTBSY: the file is open for writing"
	case int32(unix.E2BIG):
		why = "E2BIG: its arguments and environment are past the kernel's limit"
	default:
		return "", false
	}
	if len(before) == 0 {
		return "", false
	}
	return fmt.Sprintf("%s held %s, but its execve there failed (%s), which no order of PATH saves; call %s directly, or put %s before %s (%s), to save the misses before it: %s%s",
		q(dir), q(g.subject), why, q(last.Path), q(dir), plural(len(p)-1, "entry", "entries"), dirsList(before, q), cost, twice), true
}

// execNoShebangMidSearch: an exec search that found nothing, one of
// whose attempts, not the last, failed with ENOEXEC (a file with no #!
// line), and that went on past it: CPython's subprocess and os.execvp
// try every PATH entry and report the first error that is not a miss.
// The directory of the ENOEXEC held the name: a #! line there ends the
// search at it, which saves the attempts after it too; an order of PATH
// saves those before it. p is one pass of the chain's attempts.
func execNoShebangMidSearch(g *findingGroup, p []trace.Attempt, cost, twice string, q quoter) (string, bool) {
	k := -1
	for i, a := range p {
		if a.Fallback || a.Errno == 0 {
			return "", false
		}
		if k < 0 && a.Errno == int32(unix.ENOEXEC) {
			k = i
		}
	}
	if k < 0 || k == len(p)-1 {
		return "", false
	}
	at := p[k]
	dir := trace.NameDir(at.Path)
	dirsOf := func(as []trace.Attempt) []string {
		out := make([]string, 0, len(as))
		for _, a := range as {
			out = append(out, trace.NameDir(a.Path))
		}
		return out
	}
	misses := ""
	if k > 0 {
		misses = fmt.Sprintf("; call %s directly, or put %s before %s (%s), to save the misses before it",
			q(at.Path), q(dir), plural(k, "entry", "entries"), dirsList(dirsOf(p[:k]), q))
	}
	return fmt.Sprintf("%s held %s, which has no #! line and is no binary: its execve there failed with ENOEXEC, the search went on past it through %s (%s) and no exec of a shell followed (the caller tried the entries after it, as CPython's subprocess and os.execvp do, and gave up): give it a #! line, which ends the search there%s: %s%s",
		q(dir), q(g.subject), plural(len(p)-k-1, "more entry", "more entries"), dirsList(dirsOf(p[k+1:]), q), misses, cost, twice), true
}

func heldBy(f *trace.Finding) string {
	if f.Found == nil {
		return ""
	}
	for _, a := range f.Attempts {
		if a.Errno == 0 && !a.Fallback {
			return a.Path
		}
	}
	return ""
}

// libraryEntries splits the places a library search missed in (missed,
// each once, in order) into the entries of the search path and the
// places under them: a place under another place missed is one of that
// entry's hardware-capability subdirectories, which ld.so tries before
// the entry itself (glibc-hwcaps/x86-64-v3, tls/haswell). subs are those
// subdirectories below their entry (the outermost place missed above
// them: tls/haswell is not haswell under tls), each once; under is how many of f's
// misses were in them (0 when none was).
func libraryEntries(f *trace.Finding, missed []string) (entries, subs []string, under int) {
	sub := map[string]bool{}
	for _, d := range missed {
		var rel string
		for _, e := range missed {
			if r, ok := strings.CutPrefix(d, strings.TrimSuffix(e, "/")+"/"); ok && e != d && len(r) > len(rel) {
				rel = r
			}
		}
		if rel == "" {
			entries = append(entries, d)
			continue
		}
		sub[d] = true
		if !slices.Contains(subs, rel) {
			subs = append(subs, rel)
		}
	}
	for _, a := range f.Attempts {
		if a.Errno != 0 && !a.Fallback && sub[trace.NameDir(a.Path)] {
			under++
		}
	}
	return entries, subs, under
}

// subdirsOf is dirs relative to dir when every one is dir itself or
// under it (ld.so's hwcaps subdirectories of one library path entry);
// nil otherwise.
func subdirsOf(dirs []string, dir string) []string {
	if len(dirs) == 0 {
		return nil
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var rel []string
	for _, d := range dirs {
		r, ok := strings.CutPrefix(d, prefix)
		if !ok {
			return nil
		}
		rel = append(rel, r)
	}
	return rel
}

// subdirsWhy says why a library search tries subdirectories, when the
// name is a shared library's; "" for any other.
func subdirsWhy(g *findingGroup) string {
	if !ldsoSearch(g) {
		return ""
	}
	return " (ld.so tries each LD_LIBRARY_PATH and RUNPATH entry's hardware-capability subdirectories before the entry, ld.so(8); a library it finds through ldconfig's cache is not searched for)"
}

// ldsoSearch says whether g's searches may be ld.so's: opens of a
// shared library's name. ld.so never stats a library it looks for: a
// stat or access search of one is another program's list (a linker's
// -L directories: lld checks each with access()).
func ldsoSearch(g *findingGroup) bool {
	return g.kind == trace.KindFailedOpenProbes && isLibrary(g.subject)
}

// isLibrary says whether name is a shared library's file name.
func isLibrary(name string) bool {
	base := path.Base(name)
	return strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.")
}

// includeEntry is the -I entry of a searching process's argv that dir is
// or is under (the longest such), made absolute as dir is; false when
// no argv names one.
func includeEntry(g *findingGroup, dir string) (string, bool) {
	return optionEntry(g, dir, "-I")
}

// childRan is the executable a child of a process of g's (one started
// after it: not a reused pid's) ran under the name g searched for (its
// argv[0]'s, as a compiler driver's child runs as through PATH after the
// driver missed it in its own directories); "" when none did.
func childRan(g *findingGroup) string {
	for _, f := range g.findings {
		for _, p := range g.children[f.Pid] {
			if p.Key.Proc() != f.Key.Proc() && p.Key.Start >= f.Key.Start && len(p.Argv) > 0 && path.Base(p.Argv[0]) == g.subject {
				return p.Exe
			}
		}
	}
	return ""
}

// argvNamesDir says whether dir is, or is under, a directory one of the
// searching compiler's include options names.
func argvNamesDir(g *findingGroup, dir string) bool {
	for _, opt := range []string{"-I", "-iquote", "-isystem", "-idirafter"} {
		if _, ok := optionEntry(g, dir, opt); ok {
			return true
		}
	}
	return false
}

// optionEntry is includeEntry for the entries of option opt (-I, -L).
// A relative entry is taken relative to the directory the searching
// process's attempts show it ran in (relativeBase): "-Ilib" of a perl
// run in /w is /w/lib, not the /usr/lib its search later tried.
func optionEntry(g *findingGroup, dir, opt string) (string, bool) {
	best := ""
	for _, f := range g.findings {
		if f.Proc == nil {
			continue
		}
		for _, e := range optionValues(f.Proc.Argv, opt) {
			abs := ""
			if !strings.HasPrefix(e, "/") {
				base, ok := g.relativeBase(f, opt)
				if !ok {
					continue
				}
				e = path.Clean(base + e)
			}
			if dir == e || strings.HasPrefix(dir, strings.TrimSuffix(e, "/")+"/") {
				abs = e
			}
			if len(abs) > len(best) {
				best = abs
			}
		}
	}
	return best, best != ""
}

// optionValues is the values argv gives option opt, cleaned: "-Ifoo"
// and "-I foo" alike.
func optionValues(argv []string, opt string) []string {
	var vals []string
	for i, a := range argv {
		e, ok := strings.CutPrefix(a, opt)
		if ok && e == "" && i+1 < len(argv) {
			e = argv[i+1]
		}
		if ok && e != "" {
			vals = append(vals, path.Clean(e))
		}
	}
	return vals
}

// relativeBase is the directory, with a trailing slash, that f's
// process resolved the relative opt entries of its argv against: the
// one under which f's attempts tried the most of those entries (the
// earliest tried on a tie); "" when the attempts are relative too; false
// when no attempt was under any. Its attempts are all the trace says of
// the process's directory: an entry's name alone ("lib", "include")
// matches the system directories of that name too.
func (g *findingGroup) relativeBase(f *trace.Finding, opt string) (string, bool) {
	type key struct {
		f   *trace.Finding
		opt string
	}
	if b, ok := g.bases[key{f, opt}]; ok {
		return b.base, b.ok
	}
	var rel []string
	for _, e := range optionValues(f.Proc.Argv, opt) {
		if strings.HasPrefix(e, "/") || e == "." || e == ".." || strings.HasPrefix(e, "../") || slices.Contains(rel, e) {
			continue
		}
		rel = append(rel, e)
	}
	type cand struct {
		entries map[string]bool
		first   int
	}
	cands := map[string]*cand{}
	for n, a := range f.Attempts {
		d := trace.NameDir(a.Path)
		padded := "/" + d + "/"
		for _, e := range rel {
			needle := "/" + e + "/"
			for off := 0; ; {
				i := strings.Index(padded[off:], needle)
				if i < 0 {
					break
				}
				i += off
				base := d[:i] // padded[i+1:] is d[i:]
				c := cands[base]
				if c == nil {
					c = &cand{entries: map[string]bool{}, first: n}
					cands[base] = c
				}
				c.entries[e] = true
				off = i + 1
			}
		}
	}
	best, found := "", false
	for base, c := range cands {
		if b := cands[best]; !found || len(c.entries) > len(b.entries) || len(c.entries) == len(b.entries) && (c.first < b.first || c.first == b.first && base < best) {
			best, found = base, true
		}
	}
	if g.bases == nil {
		g.bases = map[any]relBase{}
	}
	g.bases[key{f, opt}] = relBase{best, found}
	return best, found
}

// relBase is a memoized relativeBase.
type relBase struct {
	base string
	ok   bool
}

// repeatedDirs says which directories a search missed in more than once
// with the same call (as a PATH that names one twice makes a shell do),
// from the attempts kept; "" when none was. Where some were not kept
// (omitted: past the attempts kept, or counted in the kernel) the times
// counted are a floor, and said so.
func repeatedDirs(attempts []trace.Attempt, omitted bool, q quoter) string {
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
		if n := times[k]; n > 1 && omitted {
			rep = append(rep, fmt.Sprintf("%s at least %d times", q(k.dir), n))
		} else if n > 1 {
			rep = append(rep, fmt.Sprintf("%s %d times", q(k.dir), n))
		}
	}
	if len(rep) == 0 {
		return ""
	}
	return fmt.Sprintf("; it tried %s in one search, where once is enough", andList(rep))
}

// includeSub is the subdirectory ("/sys") every place missed and dir
// end in when the first place missed is one under an -I entry of the
// searching process's argv (#include <sys/x.h> tried as inc/sys/x.h);
// "" otherwise.
func includeSub(g *findingGroup, missed []string, dir string) string {
	if len(missed) == 0 {
		return ""
	}
	e, ok := includeEntry(g, missed[0])
	if !ok || e == missed[0] {
		return ""
	}
	sub := missed[0][len(e):]
	if !strings.HasPrefix(sub, "/") || !strings.HasSuffix(dir, sub) || len(dir) == len(sub) {
		return ""
	}
	for _, d := range missed {
		if !strings.HasSuffix(d, sub) || len(d) == len(sub) {
			return ""
		}
	}
	return sub
}

// listSub is the subdirectory that f's places (missed, in order, then
// dir, which held the name) share below the places another search by
// the same image tried, when those are a list's entries: perl's require
// of warnings/register.pm stats each @INC entry's warnings/, its require
// of POSIX.pm each entry itself; the entries are what the list orders.
// The other search's places, with the subdirectory added, must be f's
// misses from the first, two of them at least, and be no walk up the
// parent directories (a package scope's, beside node_modules of each).
// The longest such subdirectory (File/Spec, not Spec, beside a search
// of File/Spec.pm); "" when none.
func listSub(g *findingGroup, f *trace.Finding, missed []string, dir string) string {
	if len(missed) < 2 || f.AttemptsOmitted > 0 {
		return ""
	}
	best := ""
	for _, o := range slices.Concat(g.others[othersKey{trace.KindFailedStatProbes, f.Key}], g.others[othersKey{trace.KindFailedOpenProbes, f.Key}]) {
		if o == f || o.AttemptsOmitted > 0 {
			continue
		}
		var places []string
		for _, a := range o.Attempts {
			if d := trace.NameDir(a.Path); !slices.Contains(places, d) {
				places = append(places, d)
			}
		}
		n := min(len(places), len(missed))
		if n < 2 || places[0] == "/" || !strings.HasPrefix(missed[0], places[0]+"/") {
			continue
		}
		walk := true
		for i := 1; i < len(places) && walk; i++ {
			walk = places[i] == path.Dir(places[i-1])
		}
		if walk {
			continue
		}
		sub := missed[0][len(places[0]):]
		ok := len(sub) > len(best) && strings.HasSuffix(dir, sub) && len(dir) > len(sub)
		for i := 0; i < len(missed) && ok; i++ {
			ok = strings.HasSuffix(missed[i], sub) && len(missed[i]) > len(sub) && (i >= n || missed[i] == places[i]+sub)
		}
		if ok {
			best = sub
		}
	}
	return best
}

// isCompiler says whether comm is a C-family compiler's (or its
// preprocessor's), whose -I entries come before its system directories.
func isCompiler(comm string) bool {
	return strings.HasPrefix(comm, "cc1") || comm == "cpp" || strings.HasPrefix(comm, "clang")
}

// listOption is the compiler option whose entries make list, one of
// searchList's: "-I", "-L", or "" for any other list.
func listOption(list string) string {
	switch list {
	case "the -I order":
		return "-I"
	case "the -L order":
		return "-L"
	}
	return ""
}

// searchList names the list a search went through when the trace tells
// it: an -I or -L option of the process's own argv, ld.so's search path
// (opens of a shared library's name); else it says only that it is a
// list.
func searchList(g *findingGroup, dir string) string {
	if e, ok := includeEntry(g, dir); ok && e == dir {
		return "the -I order"
	}
	if e, ok := optionEntry(g, dir, "-L"); ok && e == dir {
		return "the -L order" // a linker's: its argv names the entry
	}
	if ldsoSearch(g) {
		return "the library search path (RUNPATH, LD_LIBRARY_PATH)"
	}
	return genericList
}

// suggestShebang: execve failed with ENOEXEC and a shell ran the file.
// A #! line saves only the ENOEXEC attempt: misses of a PATH search
// before it stay, and are told apart.
func suggestShebang(g *findingGroup, _ trace.StackSource, q quoter) string {
	f := g.findings[0]
	shell := "the shell"
	if f.Found != nil {
		shell = q(*f.Found)
	}
	var missed []string
	file := ""
	for _, a := range f.Attempts {
		if a.Errno == int32(unix.ENOEXEC) {
			file = a.Path
			break
		}
		if a.Errno != 0 {
			missed = append(missed, trace.NameDir(a.Path))
		}
	}
	s := fmt.Sprintf("%s has no #! line, so its execve fails with ENOEXEC before %s runs it: give it a #! line",
		q(g.subject), shell)
	if len(missed) == 0 || file == "" {
		return s + ": " + g.cost("failed execve", "launch", "launches")
	}
	return s + fmt.Sprintf(" (1 failed execve per launch), and call %s directly or put %s first in PATH for the other %s (%s): %s",
		q(file), q(trace.NameDir(file)), plural(len(missed), "miss", "misses"), missedList(missed, f.AttemptsOmitted, q), g.cost("failed execve", "launch", "launches"))
}

// suggestRemember: the same lookup failing the same way.
func suggestRemember(g *findingGroup, _ trace.StackSource, q quoter) string {
	f := g.findings[0]
	s := fmt.Sprintf("%s fails with %s every time: look it up once and keep the answer: %s",
		q(g.subject), ErrnoName(f.Errno), g.costPerProcess(g.kind.Info().Amount))
	if f.Errno == int32(unix.EEXIST) {
		// Only an exclusive create (O_CREAT|O_EXCL) fails so: the
		// name is there, and each retry finds it there until whoever
		// made it removes it (a lock file, a name taken); there is no
		// answer to keep.
		s = fmt.Sprintf("%s fails with EEXIST every time: an exclusive create (O_CREAT|O_EXCL) of a name that is there, retried; each retry fails until the file is removed: wait for that (inotify) or create another name rather than retrying: %s",
			q(g.subject), g.costPerProcess("failed creates"))
	}
	chained := 0
	for _, f := range g.findings {
		chained += f.Chained
	}
	if chained > 0 {
		if chained == 1 {
			s += "; 1 of the repeats is an attempt of a search reported as a finding of its own, whose time counts it"
		} else {
			s += fmt.Sprintf("; %d of the repeats are attempts of searches reported as findings of their own, whose time counts them", chained)
		}
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
	for _, c := range repeats(f) {
		n = max(n, c.Ns)
	}
	return n
}

// localeSuggestion words a search whose places (missed, and held's
// directory when found) are one path but for one component, each a form
// of one locale name: gettext's lookup of a message catalog, which tries
// the forms of the locale name from the most specific one
// (de_DE.UTF-8, de_DE.utf8, de_DE, de.UTF-8, de.utf8, de): no list to
// reorder. false when they are not.
func localeSuggestion(g *findingGroup, missed []string, held, cost, twice string, q quoter) (string, bool) {
	dirs := slices.Clone(missed)
	if held != "" {
		dirs = append(dirs, trace.NameDir(held))
	}
	forms, ok := localeForms(dirs)
	if !ok {
		return languageSuggestion(g, dirs, missed, held, cost, twice, q)
	}
	name := forms[0]
	tried := forms[:len(missed)]
	// A message catalog (.mo) is gettext's; a locale's own files
	// (LC_CTYPE, LC_IDENTIFICATION) are the C library's setlocale's,
	// which LANGUAGE does not change.
	catalog := strings.HasSuffix(g.subject, ".mo")
	who, none := "the program", "no form of the locale there has it"
	if catalog {
		who, none = "gettext", "no catalog of this name is installed for the locale there"
	}
	if held == "" {
		return fmt.Sprintf("%s was under none of the forms of the locale name %s that %s tries (%s): the places come from the locale name, most specific first, not from a list to reorder: %s; nothing traced says where it is: %s%s",
			q(g.subject), q(name), who, andList(quoteAll(tried, q)), none, cost, twice), true
	}
	won := forms[len(forms)-1]
	s := fmt.Sprintf("%s held %s after %s under the more specific forms of the locale name %s that %s tries before it (%s): the places come from the locale name, not from a list to reorder",
		q(trace.NameDir(held)), q(g.subject), plural(len(missed), "miss", "misses"), q(name), who, andList(quoteAll(tried, q)))
	if lang, _, _ := strings.Cut(won, "_"); catalog && lang != "C" && lang != "POSIX" {
		// LANGUAGE names the forms to try, in its own order (it is
		// ignored in the C locale).
		s += fmt.Sprintf("; LANGUAGE=%s, the form that held it, makes gettext try it first", q(won))
	}
	return s + ": " + cost + twice, true
}

// languageSuggestion: a message catalog (.mo) missed under the locale
// names of two or more languages, dir/LANG/LC_*/name.mo, the last of
// dirs (missed, then held when it was found) the one that held it:
// gettext trying the languages of its list (LANGUAGE: de_AT:fr, each in
// its forms, de_AT then de), in their order. The list is the user's
// choice of languages, not directories to reorder.
func languageSuggestion(g *findingGroup, dirs, missed []string, held, cost, twice string, q quoter) (string, bool) {
	if !strings.HasSuffix(g.subject, ".mo") {
		return "", false
	}
	forms, langs, ok := languageForms(dirs)
	if !ok || len(langs) < 2 {
		return "", false
	}
	tried := forms[:len(missed)]
	if held == "" {
		return fmt.Sprintf("%s was under none of the languages gettext was given (%s, each in the forms of its name it tries: %s): the places come from the list of languages (LANGUAGE), in its order, not from a list of directories: no catalog of this name is installed for them there; nothing traced says where it is: %s%s",
			q(g.subject), andList(quoteAll(langs, q)), andList(quoteAll(tried, q)), cost, twice), true
	}
	won := forms[len(forms)-1]
	return fmt.Sprintf("%s held %s after %s under the languages gettext was given before %s (%s): the places come from the list of languages (LANGUAGE), in its order, not from a list of directories: no catalog of this name is installed there for the languages before it; a list that names %s first (or leaves out those without it), if that is the language wanted, saves the misses: %s%s",
		q(trace.NameDir(held)), q(g.subject), plural(len(missed), "miss", "misses"), q(won), andList(quoteAll(tried, q)), q(won), cost, twice), true
}

// languageForms is, of dirs (two or more, with the same number of
// components, each .../LOCALE/LC_*), the locale component of each and
// the languages among them, in order, when they differ only there and
// each is a locale name.
func languageForms(dirs []string) (forms, langs []string, ok bool) {
	if len(dirs) < 2 {
		return nil, nil, false
	}
	var prefix, cat string
	for i, d := range dirs {
		rest, c := path.Split(d)
		loc := path.Base(rest)
		base := path.Dir(path.Clean(rest))
		if !strings.HasPrefix(c, "LC_") || loc == "" {
			return nil, nil, false
		}
		if i == 0 {
			prefix, cat = base, c
		} else if base != prefix || c != cat {
			return nil, nil, false
		}
		l, ok := localeLanguage(loc)
		if !ok {
			return nil, nil, false
		}
		forms = append(forms, loc)
		if !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	return forms, langs, true
}

func quoteAll(s []string, q quoter) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = q(v)
	}
	return out
}

// localeForms is the component in which dirs (two or more, with the
// same number of components) differ, of each, when it is the only one
// and each is a locale name (language[_territory][.codeset][@modifier])
// of one language, in two or more forms.
func localeForms(dirs []string) ([]string, bool) {
	if len(dirs) < 2 {
		return nil, false
	}
	split := make([][]string, len(dirs))
	for i, d := range dirs {
		split[i] = strings.Split(d, "/")
		if len(split[i]) != len(split[0]) {
			return nil, false
		}
	}
	at := -1
	for c := range split[0] {
		for _, p := range split[1:] {
			if p[c] != split[0][c] {
				if at >= 0 && at != c {
					return nil, false
				}
				at = c
			}
		}
	}
	if at < 0 {
		return nil, false
	}
	forms := make([]string, len(dirs))
	lang := ""
	for i, p := range split {
		l, ok := localeLanguage(p[at])
		if !ok || i > 0 && l != lang {
			return nil, false
		}
		lang, forms[i] = l, p[at]
	}
	return forms, true
}

// localeLanguage is the language of a locale name
// (language[_territory][.codeset][@modifier]: de_DE.UTF-8, de, sr@latin,
// C.UTF-8), false when s is none.
func localeLanguage(s string) (string, bool) {
	rest, mod, hasMod := strings.Cut(s, "@")
	if hasMod && !isAlnum(mod, false) {
		return "", false
	}
	rest, codeset, hasSet := strings.Cut(rest, ".")
	if hasSet && !isAlnum(codeset, true) {
		return "", false
	}
	lang, terr, hasTerr := strings.Cut(rest, "_")
	// A territory is two capital letters (ISO 3166) or three digits
	// (UN M.49).
	if hasTerr && !(len(terr) == 2 && strings.Trim(terr, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" ||
		len(terr) == 3 && strings.Trim(terr, "0123456789") == "") {
		return "", false
	}
	switch {
	case lang == "C" || lang == "POSIX":
	case len(lang) >= 2 && len(lang) <= 3 && strings.Trim(lang, "abcdefghijklmnopqrstuvwxyz") == "":
	default:
		return "", false
	}
	return lang, true
}

// isAlnum says whether s is non-empty and of ASCII letters and digits
// (and '-' when dash).
func isAlnum(s string, dash bool) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || dash && c == '-') {
			return false
		}
	}
	return true
}

// variants is the group's names of the same stem tried next to its
// misses (trace.ChainDetail.Variants), each once, and how many of its
// misses were such, of how many.
func variants(g *findingGroup) (names []string, n, failed int) {
	for _, f := range g.findings {
		n += f.VariantMisses
		failed += f.Failed
		for _, v := range f.Variants {
			if !slices.Contains(names, v) {
				names = append(names, v)
			}
		}
	}
	return names, n, failed
}

// variantSuggestion words a search that found nothing and whose every
// miss was tried in a row with another name of its stem in the same
// directory: the suffixes a loader tries for one name, not a search of
// its own. false otherwise.
func variantSuggestion(g *findingGroup, missed []string, held, cost, twice string, q quoter) (string, bool) {
	names, n, failed := variants(g)
	if held != "" || n == 0 || n < failed {
		return "", false
	}
	if s, ok := variantAlongSearch(g, names, n, missed, cost, twice, q); ok {
		return s, true
	}
	if variantsNowhere(g) {
		// Every suffix of the stem missed in every place: the search
		// of the one name they serve found nothing.
		return fmt.Sprintf("%s was in none of the places tried (%s), nor %s, tried with it in each of them: a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), whose search found it nowhere: %s; nothing traced says where it is: drop the search if it cannot succeed%s",
			q(g.subject), missedList(missed, 0, q), andList(quoteAll(names, q)), cost, twice), true
	}
	return fmt.Sprintf("%s was tried in a row with %s, of the same stem, in the same directory each time (%s in %s): a loader trying the file-name suffixes it accepts for one name (as Python's import does for a module, perl's require for .pmc before .pm, a compiler for a precompiled header before the header), not a search of its own: no order of the places saves these misses, and nothing traced says how to avoid them: %s%s",
		q(g.subject), andList(quoteAll(names, q)), allOf(n, "miss", "misses"), dirsList(missed, q), cost, twice), true
}

// variantsNowhere says whether each of g's searches, found nowhere, had
// a search of each name of its stem tried with it (its variants, theirs,
// and so on) by the same image, found nowhere either, in the very places
// it missed in: perl's Mod.pmc and Mod.pm of a module no @INC entry
// holds. Python's __init__ suffixes, tried before the __init__.py that
// each package's directory holds (no search of that name missed), are
// not.
func variantsNowhere(g *findingGroup) bool {
	places := func(f *trace.Finding) []string {
		var ds []string
		for _, a := range f.Attempts {
			if d := trace.NameDir(a.Path); !slices.Contains(ds, d) {
				ds = append(ds, d)
			}
		}
		slices.Sort(ds)
		return ds
	}
	for _, f := range g.findings {
		if f.Found != nil || f.AttemptsOmitted > 0 {
			return false
		}
		at := places(f)
		others := slices.Concat(g.others[othersKey{trace.KindFailedStatProbes, f.Key}], g.others[othersKey{trace.KindFailedOpenProbes, f.Key}])
		seen, todo := []string{f.Subject()}, slices.Clone(f.Variants)
		for len(todo) > 0 {
			name := todo[0]
			todo = todo[1:]
			if slices.Contains(seen, name) {
				continue
			}
			seen = append(seen, name)
			i := slices.IndexFunc(others, func(o *trace.Finding) bool {
				return o.Subject() == name && o.Found == nil && o.AttemptsOmitted == 0 && slices.Equal(places(o), at)
			})
			if i < 0 {
				return false
			}
			todo = append(todo, others[i].Variants...)
		}
	}
	return true
}

// variantAlongSearch words a variant search (variantSuggestion's) whose
// misses were made along the places another name of its stem was
// searched for, and found in after misses of its own (perl's Foo.pmc
// tried with Foo.pm in each @INC entry, ld's libfoo.so with libfoo.a in
// each -L directory): the misses in the places before the one that held
// the other name are that search's, and an order putting that place
// first saves them too; only those in it are the suffix's own. A suffix
// found nowhere goes on along the next search of a name of its stem and
// basename (perl's Exporter/Heavy.pmc, then Carp/Heavy.pmc): its misses
// may be along several such searches, each of them. false when no
// finding of the same image found a variant in a place these misses were
// in after others, or the attempts kept do not say exactly.
func variantAlongSearch(g *findingGroup, names []string, n int, missed []string, cost, twice string, q quoter) (string, bool) {
	type search struct {
		name, held string
		before     []string // the places it missed in
	}
	saved := 0
	var used []*search // the first finding's searches, in the order its misses went along them
	for _, f := range g.findings {
		if f.AttemptsOmitted > 0 || passes(f) != 1 {
			return "", false
		}
		var searches []*search
		for _, o := range slices.Concat(g.others[othersKey{trace.KindFailedStatProbes, f.Key}], g.others[othersKey{trace.KindFailedOpenProbes, f.Key}]) {
			h := heldBy(o)
			if h == "" || o.AttemptsOmitted > 0 || !slices.Contains(names, o.Subject()) {
				continue
			}
			s := &search{name: o.Subject(), held: trace.NameDir(h)}
			for _, a := range o.Attempts {
				if a.Errno != 0 {
					s.before = append(s.before, trace.NameDir(a.Path))
				}
			}
			searches = append(searches, s)
		}
		k, along := 0, true
		var with []*search
		for _, a := range f.Attempts {
			ad := trace.NameDir(a.Path)
			// In the place a search held it: the suffix's own miss.
			i := slices.IndexFunc(searches, func(s *search) bool { return s.held == ad })
			if i < 0 {
				if i = slices.IndexFunc(searches, func(s *search) bool { return slices.Contains(s.before, ad) }); i >= 0 {
					k++
				}
			}
			if i < 0 {
				along = false
				break
			}
			if !slices.Contains(with, searches[i]) {
				with = append(with, searches[i])
			}
		}
		if !along || k == 0 {
			continue
		}
		saved += k
		if used == nil {
			used = with
		}
	}
	if saved == 0 {
		return "", false
	}
	var others, helds []string
	for _, s := range used {
		if !slices.Contains(others, q(s.name)) {
			others = append(others, q(s.name))
		}
		if !slices.Contains(helds, q(s.held)) {
			helds = append(helds, q(s.held))
		}
	}
	other := andList(others)
	its, that, theirs, says := "its search", "that search", "its misses", "the finding of "+other+" says what"
	if len(used) > 1 {
		its, that, theirs = fmt.Sprintf("its %d searches", len(used)), "those searches", "their misses"
		says = "the findings of " + other + " say what"
	}
	rest := ""
	if left := failed(g) - saved; left > 0 {
		place := "the place that held it"
		if len(helds) > 1 {
			place = "the places that held it"
		}
		rest = fmt.Sprintf("; the %s in %s %s the suffix's own, and nothing traced says how to avoid %s", plural(left, "miss", "misses"), place, verbFor(left, "is", "are"), verbFor(left, "it", "them"))
	}
	return fmt.Sprintf("%s was tried in a row with %s, of the same stem, in the same directory each time (%s in %s): a loader trying the file-name suffixes it accepts for one name (as perl's require does for .pmc before .pm, a linker's -l for lib.so before lib.a, a compiler for a precompiled header before the header), along the places %s for %s went through, which found it in %s: the %s in places %s missed in are made with %s, and whatever saves those saves these (%s)%s: %s%s",
		q(g.subject), andList(quoteAll(names, q)), allOf(n, "miss", "misses"), dirsList(missed, q), its, other, andList(helds), plural(saved, "miss", "misses"), that, theirs, says, rest, cost, twice), true
}

// failed is the group's failed attempts, summed.
func failed(g *findingGroup) int {
	n := 0
	for _, f := range g.findings {
		n += f.Failed
	}
	return n
}

// allOf is "the 1 miss", "all 10 misses".
func allOf(n int, one, many string) string {
	if n == 1 {
		return "its 1 " + one
	}
	return fmt.Sprintf("all %d %s", n, many)
}

// variantNote says how many of the group's misses were tried in a row
// with another name of their stem in the same directory, when some were
// and variantSuggestion did not word the group; "" otherwise.
func variantNote(g *findingGroup, q quoter) string {
	names, n, failed := variants(g)
	if n == 0 {
		return ""
	}
	tried := fmt.Sprintf("it also tried %s, of the same stem, in the same directory", andList(quoteAll(names, q)))
	if n < failed {
		return fmt.Sprintf("; in %d of its %d misses %s", n, failed, tried)
	}
	what := "another file-name suffix"
	if len(names) > 1 {
		what = "other file-name suffixes"
	}
	each := "with each of its " + plural(n, "miss", "misses")
	if n == 1 {
		each = "with its 1 miss"
	}
	return fmt.Sprintf("; %s %s: %s the loader accepts for the name, tried with it where it missed", each, tried, what)
}
