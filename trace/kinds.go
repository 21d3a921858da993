package trace

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The registry of finding kinds. Every output (text, JSON, Markdown,
// pprof, watch, metrics, compare, check) reads what it needs to know of a
// kind from its KindInfo, so that a new kind is its detector, its entry
// here and its golden files; no output branches on a kind's name.

// Shape is the layout a kind's findings share: which payload of Finding
// they fill, and so their JSON object and their tables.
type Shape uint8

const (
	// ShapeFile: one file used again and again (FileDetail: the file's
	// identity and spellings, its calls).
	ShapeFile Shape = iota
	// ShapeChain: one name searched for in several places (ChainDetail:
	// the attempts in order, the winner if any).
	ShapeChain
	// ShapeMiss: one path failing again and again with one errno
	// (FileDetail: Path, Errno, Count, Calls; no identity).
	ShapeMiss
)

// Remedy is the change a kind's findings call for. The report words it
// from the findings' own numbers (report/suggest.go): the registry says
// which, so that no output branches on a kind's name.
type Remedy uint8

const (
	// RemedyNone: nothing specific is known; the suggestion says so.
	RemedyNone Remedy = iota
	// RemedyReuse: one file used again and again: use it once, at the
	// first call site, and pass the result (KindInfo.Reuse) on.
	RemedyReuse
	// RemedySearch: a name searched for in a list of places: name the
	// place that held it, or put it before the misses.
	RemedySearch
	// RemedyShebang: a file without #! that the shell ran after execve
	// failed with ENOEXEC.
	RemedyShebang
	// RemedyRemember: one lookup failing the same way again and again.
	RemedyRemember
)

// KindInfo describes one finding kind.
type KindInfo struct {
	Kind FindingKind
	// Title heads the kind's section of a process ("duplicate opens").
	Title string
	Shape Shape
	// Call is what one of the calls a finding counts is, singular
	// ("open", "attempt"): "3 opens from 2 call sites".
	Call string
	// Amount is what Finding.Amount counts, as a table cell says it
	// after the number: "13 opens", "6 failed".
	Amount string
	// Avoidable says which of a finding's calls are avoidable: those
	// Finding.Avoidable counts and WastedNs is the cost of.
	Avoidable string
	// ExecSearch: a search made of execve calls; `once check
	// --max-exec-probes` bounds its failed attempts, and the metrics
	// count them as exec probes.
	ExecSearch bool
	// Remedy is the change a finding of the kind suggests.
	Remedy Remedy
	// Reuse is how RemedyReuse hands the kept call's result to the
	// others ("pass the descriptor to").
	Reuse string
	// Verb heads a finding's brief (Finding.Brief), which once watch's
	// WORST column shows: "launch cc (6 failed)", "stat /etc x4"; empty
	// for the duplicate open, whose brief is its file.
	Verb string
}

// The kinds, in the order a process's sections show them.
var (
	DuplicateOpen = KindInfo{
		Kind: KindDuplicateOpen, Title: "duplicate opens", Shape: ShapeFile,
		Call: "open", Amount: "opens", Avoidable: "every open of the file after the first",
		Remedy: RemedyReuse, Reuse: "pass the descriptor to",
	}
	FailedExecProbes = KindInfo{
		Kind: KindFailedExecProbes, Title: "exec probe chains", Shape: ShapeChain,
		Call: "attempt", Amount: "failed", Avoidable: "the failed execve attempts", ExecSearch: true,
		Remedy: RemedySearch, Verb: "launch",
	}
	FailedOpenProbes = KindInfo{
		Kind: KindFailedOpenProbes, Title: "failed open probes", Shape: ShapeChain,
		Call: "attempt", Amount: "failed", Avoidable: "the failed opens before the one that worked",
		Remedy: RemedySearch, Verb: "open",
	}
	ExecShellFallback = KindInfo{
		Kind: KindExecShellFallback, Title: "exec shell fallback", Shape: ShapeChain,
		Call: "attempt", Amount: "failed", Avoidable: "the execve that failed with ENOEXEC before the shell ran the file", ExecSearch: true,
		Remedy: RemedyShebang, Verb: "launch",
	}
	FailedStatProbes = KindInfo{
		Kind: KindFailedStatProbes, Title: "failed stat probes", Shape: ShapeChain,
		Call: "attempt", Amount: "failed", Avoidable: "the failed stat and access calls before the lookup that found the name",
		Remedy: RemedySearch, Verb: "look up",
	}
	RepeatedMiss = KindInfo{
		Kind: KindRepeatedMiss, Title: "repeated misses", Shape: ShapeMiss,
		Call: "lookup", Amount: "misses", Avoidable: "every failed lookup of the path after the first",
		Remedy: RemedyRemember, Verb: "miss",
	}
	DuplicateStat = KindInfo{
		Kind: KindDuplicateStat, Title: "duplicate stats", Shape: ShapeFile,
		Call: "stat", Amount: "stats", Avoidable: "every stat of the file after the first",
		Remedy: RemedyReuse, Reuse: "reuse its result in", Verb: "stat",
	}
)

// Kinds lists every kind once, in section order.
var Kinds = []*KindInfo{&DuplicateOpen, &FailedExecProbes, &FailedOpenProbes, &ExecShellFallback,
	&FailedStatProbes, &RepeatedMiss, &DuplicateStat}

// Info describes kind k. A kind this build does not know (a newer
// producer's) is described as a chain titled by its name, so that it is
// still shown.
func (k FindingKind) Info() *KindInfo {
	if ki := k.registered(); ki != nil {
		return ki
	}
	return &KindInfo{Kind: k, Title: string(k), Shape: ShapeChain, Call: "attempt", Amount: "failed", Avoidable: "the failed attempts"}
}

// Known says whether k is one of Kinds.
func (k FindingKind) Known() bool { return k.registered() != nil }

// registered is k's entry in Kinds, nil for none.
func (k FindingKind) registered() *KindInfo {
	for _, ki := range Kinds {
		if ki.Kind == k {
			return ki
		}
	}
	return nil
}

// Info describes the finding's kind.
func (f *Finding) Info() *KindInfo { return f.Kind.Info() }

// Subject is what the finding is about: the file (its first spelling)
// of a file kind, the name searched for of a chain.
func (f *Finding) Subject() string {
	if f.Info().Shape != ShapeChain {
		return f.Path
	}
	return f.Target
}

// Brief says the finding in a few words, its kind's Verb first: "launch
// cc (6 failed)" of a chain, "/usr/include/stddef.h x13" of a duplicate
// open, "stat /etc x4", "miss /etc/app.conf x100 (ENOENT)".
func (f *Finding) Brief() string {
	ki := f.Info()
	var b []byte
	if ki.Verb != "" {
		b = append(append(b, ki.Verb...), ' ')
	}
	switch ki.Shape {
	case ShapeChain:
		b = append(append(b, f.Target...), " ("...)
		b = strconv.AppendInt(b, int64(f.Failed), 10)
		b = append(b, " failed)"...)
	default:
		b = append(append(b, f.Path...), " x"...)
		b = strconv.AppendInt(b, int64(f.Count), 10)
		if ki.Shape == ShapeMiss {
			b = append(append(append(b, " ("...), ErrnoName(f.Errno)...), ')')
		}
	}
	return string(b)
}

// ErrnoName is the symbolic name of a positive errno ("ENOENT"), or
// "E<n>" for one without. The kernel's own codes, which a syscall's exit
// shows but its caller never gets (Restarted), are named as strace names
// them.
func ErrnoName(errno int32) string {
	if errno > 0 {
		if name := unix.ErrnoName(syscall.Errno(errno)); name != "" {
			return name
		}
		if name := kernelErrnos[errno]; name != "" {
			return name
		}
	}
	return "E" + strconv.FormatInt(int64(errno), 10)
}

// kernelErrnos: include/linux/errno.h's codes, which never reach user
// space.
var kernelErrnos = map[int32]string{
	512: "ERESTARTSYS",
	513: "ERESTARTNOINTR",
	514: "ERESTARTNOHAND",
	515: "ENOIOCTLCMD",
	516: "ERESTART_RESTARTBLOCK",
}

// Restarted says whether errno is one of the kernel's restart codes: the
// call was interrupted by a signal while it waited (a FIFO's open with no
// writer yet) and is restarted by the kernel once the handler returns, or
// its process was killed. The syscall's exit shows the code (strace -f:
// "= ? ERESTARTSYS"); the program saw no failure.
func Restarted(errno int32) bool {
	return errno >= 512 && errno <= 516 && errno != 515
}

// Canceled says whether errno is ECANCELED: io_uring's answer for a
// request it completed without running it (a request before it in its
// link failed, or it was cancelled). No open or lookup was tried: the
// program saw that it was not, so the path it names did not fail.
func Canceled(errno int32) bool {
	return errno == int32(syscall.ECANCELED)
}

// Amount is the number a table shows beside the subject (KindInfo.Amount
// says what it counts): a file's calls, a chain's failed attempts.
func (f *Finding) Amount() int {
	if f.Info().Shape != ShapeChain {
		return f.Count
	}
	return f.Failed
}

// Avoidable is how many of the finding's calls could have been avoided
// (KindInfo.Avoidable): WastedNs is what they cost.
func (f *Finding) Avoidable() int {
	if f.Info().Shape != ShapeChain {
		return max(f.Count-1-f.Chained, 0)
	}
	return f.Failed
}

// KindTotal sums the findings of one kind.
type KindTotal struct {
	Kind     FindingKind
	Findings int
	// Avoidable: the findings' avoidable calls (Finding.Avoidable).
	Avoidable int
	// Chained (ShapeMiss kinds): the findings' repeats that are
	// attempts of a search reported as a chain finding, counted there
	// and not in Avoidable (Finding.Chained).
	Chained  int
	WastedNs uint64
}

// TotalsOf sums findings per kind: one entry per kind of Kinds, in its
// order (zero ones included), then any unknown kind in order of
// appearance.
func TotalsOf(fs []Finding) []KindTotal {
	out := make([]KindTotal, len(Kinds), len(Kinds)+1)
	at := make(map[FindingKind]int, len(Kinds))
	for i, ki := range Kinds {
		out[i].Kind = ki.Kind
		at[ki.Kind] = i
	}
	for i := range fs {
		f := &fs[i]
		j, ok := at[f.Kind]
		if !ok {
			j = len(out)
			at[f.Kind] = j
			out = append(out, KindTotal{Kind: f.Kind})
		}
		out[j].Findings++
		out[j].Avoidable += f.Avoidable()
		if f.Info().Shape == ShapeMiss {
			out[j].Chained += f.Chained
		}
		out[j].WastedNs += f.WastedNs
	}
	return out
}
