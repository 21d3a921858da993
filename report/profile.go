package report

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/oncetool/once/trace"
)

// The profile formats put the findings' calls where profilers' tools can
// read them: one sample per call site of each finding, its stack as the
// sample's locations, valued by how many calls it made and the time they
// took. pprof's profile package writes the format rather than hand-made
// protobuf: it is what go tool pprof, Pyroscope and speedscope read, and
// the package keeps the encoding's invariants (string table, IDs,
// gzip) right.

// siteWaste is the time a finding's calls from each stack took, as far
// as the calls and attempts kept tell: a duplicate's first open is not
// waste, and neither is a chain's winner.
func siteWaste(f *trace.Finding) map[trace.StackID]uint64 {
	out := map[trace.StackID]uint64{}
	if f.Info().Shape != trace.ShapeChain {
		for _, c := range repeats(f) {
			out[c.Stack] += c.Ns
		}
		return out
	}
	for _, a := range f.Attempts {
		if a.Errno != 0 {
			out[a.Stack] += a.Ns
		}
	}
	return out
}

// repeats are f's calls after its first (a file kind's), as far as
// they were kept. Its first call is not among f.Calls when it is in
// neither Calls nor CallsOmitted: a duplicate_stat's first lookup,
// counted in the kernel and never sent (SCHEMA.md), and under once watch
// a duplicate's first open. Every call kept is then a repeat.
func repeats(f *trace.Finding) []trace.OpenCall {
	if len(f.Calls) == 0 || len(f.Calls)+f.CallsOmitted < f.Count {
		return f.Calls
	}
	return f.Calls[1:]
}

// siteShares is the finding's WastedNs spread over its call sites, so
// that a profile's wasted time sums to the finding's, as every other
// format's does. The calls kept (siteWaste) tell each site's time, but
// not all of it: calls past the cap or counted in the kernel (stack 0)
// are not kept, and their time, what WastedNs has beyond the kept
// calls', goes to the sites by the calls each made beyond those kept;
// and a repeated miss's calls that are attempts of a chain reported
// apart (Chained) count there, not here, so the kept time is scaled
// down to WastedNs.
func siteShares(f *trace.Finding, sites []trace.CallSite) map[trace.StackID]uint64 {
	waste := siteWaste(f)
	var kept uint64
	for _, ns := range waste {
		kept += ns
	}
	switch {
	case kept == f.WastedNs:
		return waste
	case kept > f.WastedNs:
		return spread(f.WastedNs, sites, func(c trace.CallSite) uint64 { return waste[c.Stack] }, nil)
	}
	keptCalls := map[trace.StackID]uint64{}
	for _, c := range f.Calls {
		keptCalls[c.Stack]++
	}
	for _, a := range f.Attempts {
		if a.Errno != 0 { // the winner is not among the sites (amountSites)
			keptCalls[a.Stack]++
		}
	}
	unkept := func(c trace.CallSite) uint64 { return uint64(c.Count) - min(uint64(c.Count), keptCalls[c.Stack]) }
	var any bool
	for _, c := range sites {
		any = any || unkept(c) > 0
	}
	if !any {
		// Nothing says which site made the rest: by the calls each made.
		unkept = func(c trace.CallSite) uint64 { return uint64(c.Count) }
	}
	return spread(f.WastedNs-kept, sites, unkept, waste)
}

// spread adds total to into (made when nil) over sites, by weight; the
// rounding's rest goes to the heaviest site.
func spread(total uint64, sites []trace.CallSite, weight func(trace.CallSite) uint64, into map[trace.StackID]uint64) map[trace.StackID]uint64 {
	if into == nil {
		into = map[trace.StackID]uint64{}
	}
	var sum uint64
	heaviest := -1
	for i, c := range sites {
		w := weight(c)
		sum += w
		if w > 0 && (heaviest < 0 || w > weight(sites[heaviest])) {
			heaviest = i
		}
	}
	if heaviest < 0 {
		if len(sites) > 0 {
			into[sites[0].Stack] += total
		}
		return into
	}
	var given uint64
	for _, c := range sites {
		// total*w/sum without overflow: w <= sum.
		hi, lo := bits.Mul64(total, weight(c))
		share, _ := bits.Div64(hi, lo, sum)
		into[c.Stack] += share
		given += share
	}
	into[sites[heaviest].Stack] += total - given
	return into
}

// amountSites are the call sites of the calls a profile counts for f,
// as many as the number text and JSON give it (Amount): a search's
// failed attempts, its winner, which its call sites count too, left out
// (no waste; a site that made only the winner is dropped). Without
// --stacks, one site without a stack.
func amountSites(f *trace.Finding) []trace.CallSite {
	sites := f.CallSites
	if len(sites) == 0 {
		return []trace.CallSite{{Count: f.Amount()}}
	}
	if f.Info().Shape != trace.ShapeChain {
		return sites
	}
	n := 0
	for _, c := range sites {
		n += c.Count
	}
	extra := n - f.Amount()
	if extra <= 0 {
		return sites
	}
	// The winner is the last attempt that did not fail (always kept);
	// its site is its stack's, or the sites' past the ones kept.
	winner, at := trace.StackID(0), -1
	for i := len(f.Attempts) - 1; i >= 0; i-- {
		if f.Attempts[i].Errno == 0 {
			winner = f.Attempts[i].Stack
			break
		}
	}
	for i, c := range sites {
		if c.Stack == winner || at < 0 && c.Stack == trace.StackNotKept {
			at = i
			if c.Stack == winner {
				break
			}
		}
	}
	out := make([]trace.CallSite, 0, len(sites))
	for i, c := range sites {
		if i == at {
			c.Count -= min(c.Count, extra)
		}
		if c.Count > 0 {
			out = append(out, c)
		}
	}
	return out
}

// findingLeaf names what a finding is about, as the innermost element of
// its stacks in a flame graph: "duplicate_open /tmp/src" (not escaped).
func findingLeaf(f *trace.Finding) string {
	subject, _, _ := findingSummary(f)
	return string(f.Kind) + " " + subject
}

// PProf writes the findings' call sites of r (--stacks) as a gzipped
// pprof profile: sample values calls and wasted ns, labels kind, file
// (the subject) and process ("comm[pid]"). Frames of one return address
// share a location, inlined functions as its leading lines, as pprof
// models them. A run without stacks gives one sample per finding, with
// only its leaf.
func PProf(w io.Writer, r *trace.Result) error {
	if r == nil {
		return errNilResult
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "calls", Unit: "count"}, {Type: "wasted", Unit: "nanoseconds"}},
		// pprof shows the last sample type unless told: a duplicate's
		// first open wastes nothing, and by wasted time its call site
		// would be left out of -top. Every call site has calls.
		DefaultSampleType: "calls",
		PeriodType:        &profile.ValueType{Type: "calls", Unit: "count"},
		Period:            1,
	}
	// What was lost, cut or unreadable, as the text report's last line
	// says it: go tool pprof -comments.
	p.Comments = []string{SummaryLine(r)}
	// A run cut short, as the other formats' header says it.
	if c := RunCaveats(r); c != "" {
		p.Comments = append(p.Comments, "command: "+commandLine(r.Command)+" ("+c+")")
	}
	// once check's verdict, as the other formats carry it.
	if v := checkVerdict(r); v != "" {
		p.Comments = append(p.Comments, "check: "+v)
		for _, line := range r.Violations {
			p.Comments = append(p.Comments, "  "+Escape(line))
		}
	}
	if r.Duration > 0 {
		p.DurationNanos = r.Duration.Nanoseconds()
	}
	if !r.Started.IsZero() {
		p.TimeNanos = r.Started.UnixNano()
	}
	b := profileBuilder{p: p, src: stackSource(r), mappings: map[string]*profile.Mapping{},
		locations: map[locKey]*profile.Location{}, functions: map[funcKey]*profile.Function{}}
	for i := range r.Findings {
		f := &r.Findings[i]
		sites := amountSites(f)
		var waste map[trace.StackID]uint64
		if len(f.CallSites) == 0 {
			waste = map[trace.StackID]uint64{0: f.WastedNs}
		} else {
			waste = siteShares(f, sites)
		}
		for _, c := range sites {
			s := &profile.Sample{
				Location: b.stack(c.Stack, findingLeaf(f)),
				Value:    []int64{int64(c.Count), int64(waste[c.Stack])},
				Label: map[string][]string{
					"kind":    {string(f.Kind)},
					"file":    {Escape(f.Subject())},
					"process": {Escape(f.Comm) + "[" + strconv.FormatUint(uint64(f.Pid), 10) + "]"},
				},
			}
			p.Sample = append(p.Sample, s)
		}
	}
	mainMappingFirst(p, r)
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("report: pprof profile: %w", err)
	}
	return p.Write(w)
}

// mainMappingFirst moves the traced command's executable to the front of
// the profile's mappings: pprof takes the first for the program the
// profile is of ("File:" in go tool pprof -top), which was otherwise
// whichever module the first stack's leaf was in (libc). IDs follow the
// new order; locations point at their mappings, not at IDs.
func mainMappingFirst(p *profile.Profile, r *trace.Result) {
	var exe string
	for _, pr := range r.Processes {
		if pr.Exe != "" {
			exe = Escape(pr.Exe)
			break
		}
	}
	for i, m := range p.Mapping {
		if m.File != exe || i == 0 {
			continue
		}
		copy(p.Mapping[1:i+1], p.Mapping[:i])
		p.Mapping[0] = m
		for j, m := range p.Mapping {
			m.ID = uint64(j + 1)
		}
		return
	}
}

type locKey struct {
	module string
	addr   uint64
}

type funcKey struct{ name, file string }

// profileBuilder makes each mapping, location and function once.
type profileBuilder struct {
	p         *profile.Profile
	src       trace.StackSource
	mappings  map[string]*profile.Mapping
	locations map[locKey]*profile.Location
	functions map[funcKey]*profile.Function
}

// stack is the locations of a sample, leaf first: the finding's own leaf,
// then the stack's frames.
func (b *profileBuilder) stack(id trace.StackID, leaf string) []*profile.Location {
	locs := []*profile.Location{b.location(locKey{"[once]\x00" + leaf, 0}, []trace.Frame{{Func: leaf}})}
	var st *trace.Stack
	if b.src != nil && id != 0 && id != trace.StackNotKept {
		st = b.src.Stack(id)
	}
	if st == nil {
		why := siteLine(nil, id) // plain text: Escape leaves it as it is
		return append(locs, b.location(locKey{"[once]\x00" + why, 0}, []trace.Frame{{Func: why}}))
	}
	// The frames of one address are consecutive: inlined ones first.
	for i := 0; i < len(st.Frames); {
		j := i + 1
		for j < len(st.Frames) && st.Frames[j].Addr == st.Frames[i].Addr && st.Frames[j-1].Inlined {
			j++
		}
		f := st.Frames[i]
		locs = append(locs, b.location(locKey{f.Module + "\x00" + f.BuildID, f.Offset}, st.Frames[i:j]))
		i = j
	}
	return locs
}

func (b *profileBuilder) location(k locKey, frames []trace.Frame) *profile.Location {
	if l := b.locations[k]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: k.addr}
	if m := b.mapping(frames[0]); m != nil {
		l.Mapping = m
	}
	for _, f := range frames {
		// Escaped: go tool pprof prints them to a terminal as they are.
		l.Line = append(l.Line, profile.Line{Function: b.function(frameName(&f), Escape(f.File)), Line: int64(f.Line)})
	}
	b.locations[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *profileBuilder) mapping(f trace.Frame) *profile.Mapping {
	if f.Module == "" {
		return nil
	}
	k := f.Module + "\x00" + f.BuildID
	if m := b.mappings[k]; m != nil {
		return m
	}
	// Locations hold module offsets (the same in every process, ASLR
	// aside), so the mapping spans the whole address space from 0.
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: 0, Limit: ^uint64(0), File: Escape(f.Module), BuildID: f.BuildID,
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	b.mappings[k] = m
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

func (b *profileBuilder) function(name, file string) *profile.Function {
	k := funcKey{name, file}
	if fn := b.functions[k]; fn != nil {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: file}
	b.functions[k] = fn
	b.p.Function = append(b.p.Function, fn)
	return fn
}

// Folded writes the findings' call sites as Brendan Gregg's folded
// stacks, for flamegraph.pl and inferno: one line per call site,
// "comm;outermost;...;innermost;kind subject COUNT". Names are escaped;
// a ';' in one is written as ':' so that it cannot split a frame.
func Folded(w io.Writer, r *trace.Result) error {
	if r == nil {
		return errNilResult
	}
	src := stackSource(r)
	bw := bufio.NewWriter(w)
	for i := range r.Findings {
		f := &r.Findings[i]
		for _, c := range amountSites(f) {
			parts := []string{Escape(f.Comm)}
			var st *trace.Stack
			if src != nil && c.Stack != 0 && c.Stack != trace.StackNotKept {
				st = src.Stack(c.Stack)
			}
			if st == nil {
				parts = append(parts, siteLine(nil, c.Stack))
			} else {
				for j := len(st.Frames) - 1; j >= 0; j-- {
					parts = append(parts, frameName(&st.Frames[j]))
				}
			}
			parts = append(parts, Escape(findingLeaf(f)))
			for j := range parts {
				parts[j] = strings.ReplaceAll(parts[j], ";", ":")
			}
			fmt.Fprintf(bw, "%s %d\n", strings.Join(parts, ";"), c.Count)
		}
	}
	return bw.Flush()
}
