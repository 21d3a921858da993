package report

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"io"

	"github.com/oncetool/once/trace"
)

// SchemaVersion is the value of the top-level "schema_version" field of the
// JSON report. It changes only when a field is removed or changes meaning;
// adding fields does not change it. The schema is documented in SCHEMA.md.
const SchemaVersion = 1

// JSON writes r as one JSON object followed by a newline: the top level
// with a 2-space indent, each process and each finding compact on a line
// of its own, written as it is encoded so that a report of a large tree
// is never held whole in memory. The schema is documented in SCHEMA.md.
// Strings from the traced system are encoded with surrogateescape so no
// byte is lost; see UnescapeJSONBytes.
func JSON(w io.Writer, r *trace.Result) error {
	if r == nil {
		return errNilResult
	}
	src := stackSource(r)
	head, tail := buildJSON(r)
	listed := listedFunc(r)
	programs, omitted := programRows(r, listed)
	head.ProgramsOmitted = omitted
	top, err := spliceCounters(head, &r.Counters, struct {
		Totals jsonTotals `json:"totals"`
	}{tail.Totals})
	if err != nil {
		return err
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, top, "", "  "); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(bytes.TrimSuffix(ind.Bytes(), []byte("\n}")))
	bw.WriteString(",\n  \"processes\": [")
	n := 0
	for _, p := range r.Processes {
		if p == nil || !listed(p) {
			continue
		}
		if err := writeElem(bw, n, jsonProc(p, src)); err != nil {
			return err
		}
		n++
	}
	closeArray(bw, n)
	bw.WriteString(",\n  \"programs\": [")
	for i, row := range programs {
		if err := writeElem(bw, i, jsonProgramOf(row)); err != nil {
			return err
		}
	}
	closeArray(bw, len(programs))
	bw.WriteString(",\n  \"findings\": [")
	for i := range r.Findings {
		if err := writeElem(bw, i, jsonFinding(&r.Findings[i], src)); err != nil {
			return err
		}
	}
	closeArray(bw, len(r.Findings))
	bw.WriteString(",\n  \"groups\": [")
	groups := jsonGroups(r)
	for i := range groups {
		if err := writeElem(bw, i, groups[i]); err != nil {
			return err
		}
	}
	closeArray(bw, len(groups))
	if src != nil {
		// Every stack a call or call site names, once: what the
		// call sites' stack_id refer to.
		// Those of the processes not listed are left out.
		named := jsonStackIDs(r, listed)
		bw.WriteString(",\n  \"stacks\": [")
		n := 0
		for i := range r.Stacks {
			if !named[r.Stacks[i].ID] {
				continue
			}
			if err := writeElem(bw, n, jsonStack(&r.Stacks[i])); err != nil {
				return err
			}
			n++
		}
		closeArray(bw, n)
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// jsonStackIDs is the stacks the JSON report names: those of the
// findings and of the processes it lists. r.Stacks has every process's
// (callstack's Export), listed or not.
func jsonStackIDs(r *trace.Result, listed func(*trace.Process) bool) map[trace.StackID]bool {
	ids := map[trace.StackID]bool{}
	sites := func(cs []trace.CallSite) {
		for _, c := range cs {
			ids[c.Stack] = true
		}
	}
	calls := func(cs []trace.OpenCall) {
		for _, c := range cs {
			ids[c.Stack] = true
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		sites(f.CallSites)
		calls(f.Calls)
		for _, a := range f.Attempts {
			ids[a.Stack] = true
		}
	}
	for _, p := range r.Processes {
		if p == nil || !listed(p) {
			continue
		}
		for _, group := range [][]*trace.FileOpens{p.Opens, p.PathOpens, p.SpecialOpens} {
			for _, fo := range group {
				sites(fo.CallSites)
				calls(fo.Calls)
			}
		}
		for _, e := range p.Execs {
			ids[e.Stack] = true
		}
	}
	return ids
}

// writeElem writes one element of an array, compact on its own line.
func writeElem(bw *bufio.Writer, i int, v any) error {
	b, err := marshalRaw(v)
	if err != nil {
		return err
	}
	if i > 0 {
		bw.WriteByte(',')
	}
	bw.WriteString("\n    ")
	_, err = bw.Write(b)
	return err
}

func closeArray(bw *bufio.Writer, n int) {
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
}

// jstr is a string of raw bytes from the traced system. It marshals with
// appendJSONString instead of encoding/json's string encoder, which would
// replace invalid UTF-8 with U+FFFD.
type jstr string

func (s jstr) MarshalJSON() ([]byte, error) {
	return appendJSONString(make([]byte, 0, len(s)+2), string(s)), nil
}

func jstrs(ss []string) []jstr {
	out := make([]jstr, len(ss)) // never nil: [] not null
	for i, s := range ss {
		out[i] = jstr(s)
	}
	return out
}

// The types below are the JSON schema. Field order is output order; every
// field is always present (no omitempty), so consumers can rely on a key
// existing. Keep SCHEMA.md in sync with any change.

// The report is jsonHead's fields, then every counter of trace.Shown
// (and events_lost), then jsonTail's.
type jsonHead struct {
	SchemaVersion int    `json:"schema_version"`
	Command       []jstr `json:"command"`
	ExitCode      int    `json:"exit_code"`
	// ExitSignal: the signal that killed the command ("SIGKILL"; its
	// exit_code is then 128 + its number), "" when it exited.
	ExitSignal string `json:"exit_signal"`
	// StartErrno, StartError: why the command's own exec failed (it
	// never ran); 0 and "" when it ran.
	StartErrno int32  `json:"start_errno"`
	StartError string `json:"start_error"`
	DurationNs int64  `json:"duration_ns"`
	// CPUNs: the command tree's user and system time (trace.Result.CPU),
	// 0 when unknown.
	CPUNs    int64 `json:"cpu_ns"`
	TimedOut bool  `json:"timed_out"`
	// Interrupted: the signal of once's own it passed on to the command
	// ("SIGTERM"), "" for none; StillRunning: the process images alive
	// when the trace ended (past --linger). Either leaves the run
	// incomplete (once check's violations).
	Interrupted  string `json:"interrupted"`
	StillRunning int    `json:"still_running"`
	// Violations: once check's failed assertions, [] for once run and
	// for a check that passed.
	Violations   []jstr `json:"violations"`
	ArgvRedacted bool   `json:"argv_redacted"`
	// Files says what processes[].opens lists: "duplicates" (files
	// opened more than once, and those an assertion names) or "all".
	Files string `json:"files"`
	// ProcessesListed says which processes processes[] has an entry of:
	// "findings" (those with a finding or anything listed) or "all";
	// programs[] sums every one, totals.processes counts every one.
	ProcessesListed string `json:"processes_listed"`
	// ProgramsOmitted: the programs past programs[]'s cap.
	ProgramsOmitted int `json:"programs_omitted"`
	// WastedNs is the sum of findings[].wasted_ns: what the run's
	// avoidable calls cost; WastedShareWall its share of duration_ns,
	// WastedShareCPU of cpu_ns (0 when that is unknown).
	WastedNs        uint64  `json:"wasted_ns"`
	WastedShareWall float64 `json:"wasted_share_wall"`
	WastedShareCPU  float64 `json:"wasted_share_cpu"`
	// WasteByKind: the findings' totals per kind, every registered kind.
	WasteByKind []jsonKindTotal `json:"waste_by_kind"`
}

type jsonKindTotal struct {
	Kind      string `json:"kind"`
	Findings  int    `json:"findings"`
	Avoidable int    `json:"avoidable"`
	WastedNs  uint64 `json:"wasted_ns"`
}

// kindTotalsJSON is waste_by_kind, of a run's report or a comparison's
// side: [] for none.
func kindTotalsJSON(ts []trace.KindTotal) []jsonKindTotal {
	out := make([]jsonKindTotal, len(ts))
	for i, t := range ts {
		out[i] = jsonKindTotal{Kind: string(t.Kind), Findings: t.Findings, Avoidable: t.Avoidable, WastedNs: t.WastedNs}
	}
	return out
}

// jsonGroup is the findings of one kind of one program about one subject,
// across processes (groups[]), most wasteful first.
type jsonGroup struct {
	Kind      string `json:"kind"`
	Program   jstr   `json:"program"`
	Subject   jstr   `json:"subject"`
	Processes int    `json:"processes"`
	Count     int    `json:"count"`
	WastedNs  uint64 `json:"wasted_ns"`
	// Suggestion: what to change, and the numbers it rests on (the
	// text report's line under the group).
	Suggestion jstr `json:"suggestion"`
	// Findings are the indexes of its findings in findings[].
	Findings []int `json:"findings"`
}

type jsonTail struct {
	Totals jsonTotals `json:"totals"`
}

type jsonTotals struct {
	Processes     int `json:"processes"`
	Opens         int `json:"opens"`
	FailedOpens   int `json:"failed_opens"`
	Execs         int `json:"execs"`
	FailedExecs   int `json:"failed_execs"`
	Lookups       int `json:"lookups"`
	FailedLookups int `json:"failed_lookups"`
	Findings      int `json:"findings"`
}

type jsonProcess struct {
	Pid           uint32 `json:"pid"`
	PPid          uint32 `json:"ppid"`
	Comm          jstr   `json:"comm"`
	LastComm      jstr   `json:"last_comm"`
	ParentComm    jstr   `json:"parent_comm"`
	Exe           jstr   `json:"exe"`
	Argv          []jstr `json:"argv"`
	ArgvTruncated bool   `json:"argv_truncated"`
	UID           uint32 `json:"uid"`
	CgroupID      uint64 `json:"cgroup_id"`
	jsonContainer
	ExecID        uint64           `json:"exec_id"`
	StartNs       uint64           `json:"start_ns"`
	Exited        bool             `json:"exited"`
	ExitCode      *int             `json:"exit_code"` // null while not exited
	Compat        bool             `json:"compat"`
	Threads       int              `json:"threads"`
	ThreadsCapped bool             `json:"threads_capped"`
	Totals        jsonProcTotals   `json:"totals"`
	Opens         []jsonFileOpens  `json:"opens"`
	PathOpens     []jsonFileOpens  `json:"path_opens"`
	SpecialOpens  []jsonFileOpens  `json:"special_opens"`
	FailedOpens   []jsonFailedOpen `json:"failed_opens"`
	Execs         []jsonExec       `json:"execs"`
	ExecsOmitted  int              `json:"execs_omitted"`
	DetailDropped int              `json:"detail_dropped"`
}

// jsonProcTotals are a process's exact counts, whatever its lists keep.
type jsonProcTotals struct {
	Opens         int `json:"opens"`
	Files         int `json:"files"`
	DupFiles      int `json:"duplicate_files"`
	FailedOpens   int `json:"failed_opens"`
	Execs         int `json:"execs"`
	FailedExecs   int `json:"failed_execs"`
	Lookups       int `json:"lookups"`
	FailedLookups int `json:"failed_lookups"`
}

func jsonProcTotalsOf(t trace.ProcessTotals) jsonProcTotals {
	return jsonProcTotals{Opens: t.Opens, Files: t.Files, DupFiles: t.DupFiles, FailedOpens: t.FailedOpens,
		Execs: t.Execs, FailedExecs: t.FailedExecs, Lookups: t.Lookups, FailedLookups: t.FailedLookups}
}

type jsonFileOpens struct {
	Path        jstr   `json:"path"`
	Paths       []jstr `json:"paths"`
	PathsCapped bool   `json:"paths_capped"`
	Dev         uint64 `json:"dev"`
	Ino         uint64 `json:"ino"`
	// Generation tells apart files that had the same inode number one
	// after the other; PathTruncated: path was cut at the kernel's bound.
	Generation uint32 `json:"generation"`
	// FileType: "reg", "dir", "chr", "blk", "fifo", "sock", "" unknown.
	FileType      string     `json:"file_type"`
	PathTruncated bool       `json:"path_truncated"`
	Count         int        `json:"count"`
	Syscalls      []string   `json:"syscalls"`
	Calls         []jsonCall `json:"calls"`
	// CallsOmitted: calls past the ones kept per file, counted in count but
	// not listed.
	CallsOmitted int `json:"calls_omitted"`
	// CallSites (--stacks only): the opens per distinct stack, exact.
	CallSites []jsonCallSite `json:"call_sites,omitempty"`
}

type jsonCall struct {
	Syscall         string `json:"syscall"`
	Tid             uint32 `json:"tid"`
	Fname           jstr   `json:"fname"`
	Dirfd           int32  `json:"dirfd"`
	Flags           uint64 `json:"flags"`
	FlagsText       string `json:"flags_text"`
	Mode            uint64 `json:"mode"`
	Resolve         uint64 `json:"resolve"`
	Ret             int32  `json:"ret"`
	Ns              uint64 `json:"ns"`
	Path            jstr   `json:"path"`
	FnameTruncated  bool   `json:"fname_truncated"`
	FnameUnreadable bool   `json:"fname_unreadable"`
	PathTruncated   bool   `json:"path_truncated"`
	Untimed         bool   `json:"untimed,omitempty"`
	// StackID and Stack: the caller's stack (--stacks only).
	StackID trace.StackID `json:"stack_id,omitempty"`
	Stack   []jsonFrame   `json:"stack,omitempty"`
}

type jsonFailedOpen struct {
	Fname jstr   `json:"fname"`
	Base  jstr   `json:"base"`
	Errno int32  `json:"errno"`
	Error string `json:"error"`
	Count int    `json:"count"`
}

type jsonExec struct {
	Syscall  string `json:"syscall"`
	Tid      uint32 `json:"tid"`
	Filename jstr   `json:"filename"`
	// Path: the file tried (trace.ExecAttempt.Path); filename is as passed.
	Path               jstr   `json:"path"`
	Argv               []jstr `json:"argv"`
	ArgvTruncated      bool   `json:"argv_truncated"`
	FilenameTruncated  bool   `json:"filename_truncated"`
	FilenameUnreadable bool   `json:"filename_unreadable"`
	ArgvUnreadable     bool   `json:"argv_unreadable"`
	Errno              int32  `json:"errno"`
	Error              string `json:"error"`
	OK                 bool   `json:"ok"`
	Ns                 uint64 `json:"ns"`
	// StackID and Stack: the caller's stack (--stacks only).
	StackID trace.StackID `json:"stack_id,omitempty"`
	Stack   []jsonFrame   `json:"stack,omitempty"`
}

// jsonFindingHead is the part every finding has. encoding/json flattens it
// into the kind-specific objects below.
type jsonFindingHead struct {
	Kind       string `json:"kind"`
	Pid        uint32 `json:"pid"`
	PPid       uint32 `json:"ppid"`
	Comm       jstr   `json:"comm"`
	LastComm   jstr   `json:"last_comm"`
	ParentComm jstr   `json:"parent_comm"`
	ExecID     uint64 `json:"exec_id"`
	// StartNs with Pid and ExecID identifies the process image; it matches
	// processes[].start_ns (a pid alone may have been reused).
	StartNs uint64 `json:"start_ns"`
}

type jsonDupFinding struct {
	jsonFindingHead
	Path        jstr   `json:"path"`
	Paths       []jstr `json:"paths"`
	PathsCapped bool   `json:"paths_capped"`
	Dev         uint64 `json:"dev"`
	Ino         uint64 `json:"ino"`
	Generation  uint32 `json:"generation"`
	Count       int    `json:"count"`
	// WastedNs: what the opens after the first cost.
	WastedNs uint64     `json:"wasted_ns"`
	Calls    []jsonCall `json:"calls"`
	// CallsOmitted: calls counted in Count but not listed.
	CallsOmitted int `json:"calls_omitted"`
	// CallSites (--stacks only): the opens per distinct stack, exact.
	CallSites []jsonCallSite `json:"call_sites,omitempty"`
}

// jsonMissFinding: one path failing again with one errno (repeated_miss).
type jsonMissFinding struct {
	jsonFindingHead
	Path  jstr   `json:"path"`
	Errno int32  `json:"errno"`
	Error string `json:"error"`
	Count int    `json:"count"`
	// Chained: of the failures after the first, those that are attempts
	// of chain findings, whose wasted_ns counts them.
	Chained int `json:"chained"`
	// WastedNs: what the failures after the first cost, but the chained
	// ones.
	WastedNs     uint64         `json:"wasted_ns"`
	Calls        []jsonCall     `json:"calls"`
	CallsOmitted int            `json:"calls_omitted"`
	CallSites    []jsonCallSite `json:"call_sites,omitempty"`
}

type jsonProbeFinding struct {
	jsonFindingHead
	Target   jstr          `json:"target"`
	Attempts []jsonAttempt `json:"attempts"`
	// AttemptsOmitted: attempts past the ones kept, counted in failed
	// and wasted_ns.
	AttemptsOmitted int   `json:"attempts_omitted"`
	Failed          int   `json:"failed"`
	Found           *jstr `json:"found"` // null when every attempt failed
	// AlsoFound: another directory the process found the name in, by
	// which the chain is a look in every place, not a search.
	AlsoFound *jstr `json:"also_found,omitempty"`
	// DirChecks: failed lookups of a missed directory, right after the
	// miss (ld.so's), counted in wasted_ns, not in failed.
	DirChecks int `json:"dir_checks,omitempty"`
	// ViaCache: the cache (ld.so's) the winner was found through.
	ViaCache *jstr `json:"via_cache,omitempty"`
	// Variants: names of the same stem tried in the same directory right
	// before or after a miss; VariantMisses: the misses that were.
	Variants      []jstr `json:"variants,omitempty"`
	VariantMisses int    `json:"variant_misses,omitempty"`
	WastedNs      uint64 `json:"wasted_ns"`
	// CallSites (--stacks only): the attempts per distinct stack, exact.
	CallSites []jsonCallSite `json:"call_sites,omitempty"`
}

type jsonAttempt struct {
	Path  jstr   `json:"path"`
	Errno int32  `json:"errno"`
	Error string `json:"error"`
	// Syscall: the call that made it, where known (open and lookup
	// chains).
	Syscall string `json:"syscall,omitempty"`
	Ns      uint64 `json:"ns"`
	// Fallback: the shell running a file that failed with ENOEXEC, or
	// the shell's own search.
	Fallback bool `json:"fallback"`
	// StackID and Stack: the caller's stack (--stacks only).
	StackID trace.StackID `json:"stack_id,omitempty"`
	Stack   []jsonFrame   `json:"stack,omitempty"`
}

func buildJSON(r *trace.Result) (jsonHead, jsonTail) {
	head := jsonHead{
		SchemaVersion: SchemaVersion,
		Command:       jstrs(r.Command),
		ExitCode:      r.ExitCode,
		ExitSignal:    r.ExitSignal,
		StartErrno:    r.StartErrno,
		StartError:    errorName(r.StartErrno),
		DurationNs:    r.Duration.Nanoseconds(),
		CPUNs:         r.CPU.Nanoseconds(),
		TimedOut:      r.TimedOut,
		Interrupted:   r.Interrupted,
		StillRunning:  r.StillRunning(),
		Violations:    jstrs(r.Violations),
		ArgvRedacted:  r.ArgvRedacted,
		Files:         r.Files,
	}
	if head.Files == "" {
		head.Files = trace.FilesAll
	}
	head.ProcessesListed = trace.ProcessesFindings
	if r.ProcessesListed == trace.ProcessesAll {
		head.ProcessesListed = trace.ProcessesAll
	}
	head.WastedNs = runWasted(r)
	head.WastedShareWall = share(head.WastedNs, r.Duration)
	head.WastedShareCPU = share(head.WastedNs, r.CPU)
	totals := r.Waste
	if totals == nil {
		totals = trace.TotalsOf(r.Findings)
	}
	head.WasteByKind = kindTotalsJSON(totals)
	tail := jsonTail{
		Totals: jsonTotals{
			Processes:     len(r.Processes),
			Opens:         r.Opens,
			FailedOpens:   r.FailedOpens,
			Execs:         r.Execs,
			FailedExecs:   r.FailedExecs,
			Lookups:       r.Lookups,
			FailedLookups: r.FailedLookups,
			Findings:      len(r.Findings),
		},
	}
	return head, tail
}

func jsonProc(p *trace.Process, src trace.StackSource) jsonProcess {
	jp := jsonProcess{
		Pid:           p.Pid,
		PPid:          p.PPid,
		Comm:          jstr(p.Comm),
		LastComm:      jstr(cmp.Or(p.LastComm, p.Comm)),
		ParentComm:    jstr(p.ParentComm),
		Exe:           jstr(p.Exe),
		Argv:          jstrs(p.Argv),
		ArgvTruncated: p.ArgvTruncated,
		UID:           p.UID,
		CgroupID:      p.CgroupID,
		jsonContainer: containerOf(p),
		ExecID:        p.Key.ExecID,
		StartNs:       p.Key.Start,
		Exited:        p.Exited,
		Compat:        p.Compat,
		Threads:       p.Threads,
		ThreadsCapped: p.ThreadsCapped,
		Totals:        jsonProcTotalsOf(p.Totals),
		Opens:         jsonFiles(p.Opens, src),
		PathOpens:     jsonFiles(p.PathOpens, src),
		SpecialOpens:  jsonFiles(p.SpecialOpens, src),
		FailedOpens:   make([]jsonFailedOpen, 0, len(p.FailedOpens)),
		Execs:         make([]jsonExec, 0, len(p.Execs)),
		ExecsOmitted:  p.ExecsOmitted,
		DetailDropped: p.DetailDropped,
	}
	if p.Exited {
		code := p.ExitCode
		jp.ExitCode = &code
	}
	for _, f := range p.FailedOpens {
		if f == nil {
			continue
		}
		jp.FailedOpens = append(jp.FailedOpens, jsonFailedOpen{
			Fname: jstr(f.Fname),
			Base:  jstr(f.Base),
			Errno: f.Errno,
			Error: errorName(f.Errno),
			Count: f.Count,
		})
	}
	for _, e := range p.Execs {
		jp.Execs = append(jp.Execs, jsonExec{
			Syscall:            e.Syscall.String(),
			Tid:                e.Tid,
			Filename:           jstr(e.Filename),
			Path:               jstr(e.Path),
			Argv:               jstrs(e.Argv),
			ArgvTruncated:      e.ArgvTruncated,
			FilenameTruncated:  e.FilenameTruncated,
			FilenameUnreadable: e.FilenameUnreadable,
			ArgvUnreadable:     e.ArgvUnreadable,
			Errno:              e.Errno,
			Error:              errorName(e.Errno),
			OK:                 e.Errno == 0,
			Ns:                 e.Ns,
			StackID:            e.Stack,
			Stack:              jsonFrames(src, e.Stack),
		})
	}
	return jp
}

func jsonFiles(files []*trace.FileOpens, src trace.StackSource) []jsonFileOpens {
	out := make([]jsonFileOpens, 0, len(files))
	for _, f := range files {
		if f == nil {
			continue
		}
		out = append(out, jsonFileOpens{
			Path:        jstr(f.Path),
			Paths:       jstrs(f.Paths),
			PathsCapped: f.PathsCapped,
			Dev:         f.Dev,
			Ino:         f.Ino,
			Count:       f.Count,

			Generation:    f.Gen,
			FileType:      trace.FileTypeName(f.FileType),
			PathTruncated: f.PathTruncated,
			Syscalls:      syscallNames(f.Kinds),
			Calls:         jsonCalls(f.Calls, src),

			CallsOmitted: f.CallsOmitted,
			CallSites:    jsonCallSites(f.CallSites),
		})
	}
	return out
}

// syscallNames lists the distinct syscalls of the kinds, in first-use
// order: from the exact kinds, not the calls kept, which past the first
// few hundred omit the rest.
func syscallNames(kinds []trace.CallKind) []string {
	out := []string{}
	seen := map[trace.Syscall]bool{}
	for _, c := range kinds {
		if !seen[c.Syscall] {
			seen[c.Syscall] = true
			out = append(out, c.Syscall.String())
		}
	}
	return out
}

func jsonCalls(calls []trace.OpenCall, src trace.StackSource) []jsonCall {
	out := make([]jsonCall, len(calls))
	for i, c := range calls {
		out[i] = jsonCall{
			Syscall:         c.Syscall.String(),
			Tid:             c.Tid,
			Fname:           jstr(c.Fname),
			Dirfd:           c.Dirfd,
			Flags:           c.Flags,
			FlagsText:       CallFlags(c.Syscall, c.Flags),
			Mode:            c.Mode,
			Resolve:         c.Resolve,
			Ret:             c.Ret,
			Ns:              c.Ns,
			Path:            jstr(c.Path),
			FnameTruncated:  c.FnameTruncated,
			FnameUnreadable: c.FnameUnreadable,
			PathTruncated:   c.PathTruncated,
			Untimed:         c.Untimed,
			StackID:         c.Stack,
			Stack:           jsonFrames(src, c.Stack),
		}
	}
	return out
}

func jsonFinding(f *trace.Finding, src trace.StackSource) any {
	head := jsonFindingHead{
		Kind:       string(f.Kind),
		Pid:        f.Pid,
		PPid:       f.PPid,
		Comm:       jstr(f.Comm),
		LastComm:   jstr(cmp.Or(f.LastComm, f.Comm)),
		ParentComm: jstr(f.ParentComm),
		ExecID:     f.Key.ExecID,
		StartNs:    f.Key.Start,
	}
	if f.Info().Shape == trace.ShapeFile {
		return jsonDupFinding{
			jsonFindingHead: head,
			Path:            jstr(f.Path),
			Paths:           jstrs(f.Paths),
			PathsCapped:     f.PathsCapped,
			Dev:             f.Dev,
			Ino:             f.Ino,
			Generation:      f.Gen,
			Count:           f.Count,
			WastedNs:        f.WastedNs,
			Calls:           jsonCalls(f.Calls, src),
			CallsOmitted:    f.CallsOmitted,
			CallSites:       jsonCallSites(f.CallSites),
		}
	}
	if f.Info().Shape == trace.ShapeMiss {
		return jsonMissFinding{
			jsonFindingHead: head,
			Path:            jstr(f.Path),
			Errno:           f.Errno,
			Error:           errorName(f.Errno),
			Count:           f.Count,
			Chained:         f.Chained,
			WastedNs:        f.WastedNs,
			Calls:           jsonCalls(f.Calls, src),
			CallsOmitted:    f.CallsOmitted,
			CallSites:       jsonCallSites(f.CallSites),
		}
	}
	// The probe kinds (and any future kind) share one shape.
	pf := jsonProbeFinding{
		jsonFindingHead: head,
		Target:          jstr(f.Target),
		Attempts:        make([]jsonAttempt, len(f.Attempts)),
		AttemptsOmitted: f.AttemptsOmitted,
		Failed:          f.Failed,
		DirChecks:       f.DirChecks,
		WastedNs:        f.WastedNs,
		CallSites:       jsonCallSites(f.CallSites),
	}
	for i, a := range f.Attempts {
		pf.Attempts[i] = jsonAttempt{Path: jstr(a.Path), Errno: a.Errno, Error: errorName(a.Errno), Syscall: syscallName(a.Syscall), Ns: a.Ns, Fallback: a.Fallback,
			StackID: a.Stack, Stack: jsonFrames(src, a.Stack)}
	}
	if f.Found != nil {
		found := jstr(*f.Found)
		pf.Found = &found
	}
	if f.AlsoFound != "" {
		also := jstr(f.AlsoFound)
		pf.AlsoFound = &also
	}
	if f.ViaCache != "" {
		via := jstr(f.ViaCache)
		pf.ViaCache = &via
	}
	for _, v := range f.Variants {
		pf.Variants = append(pf.Variants, jstr(v))
	}
	pf.VariantMisses = f.VariantMisses
	return pf
}

// syscallName is s's name, "" when unknown (not recorded).
func syscallName(s trace.Syscall) string {
	if s == trace.SysUnknown {
		return ""
	}
	return s.String()
}

// errorName is ErrnoName for a failure and "" for success (errno 0).
func errorName(errno int32) string {
	if errno == 0 {
		return ""
	}
	return ErrnoName(errno)
}

// jsonGroups is groupAcross's ranking, each group naming its findings by
// their index in findings[].
func jsonGroups(r *trace.Result) []jsonGroup {
	at := make(map[*trace.Finding]int, len(r.Findings))
	for i := range r.Findings {
		at[&r.Findings[i]] = i
	}
	groups := groupAcross(r)
	src := stackSource(r)
	out := make([]jsonGroup, len(groups))
	for i, g := range groups {
		idx := make([]int, len(g.findings))
		for j, f := range g.findings {
			idx[j] = at[f]
		}
		out[i] = jsonGroup{Kind: string(g.kind), Program: jstr(g.comm), Subject: jstr(g.subject),
			Processes: g.procs, Count: len(g.findings), WastedNs: g.wasted,
			Suggestion: jstr(suggest(g, src, func(s string) string { return s })), Findings: idx}
	}
	return out
}
