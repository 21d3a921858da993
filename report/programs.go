package report

import (
	"cmp"
	"slices"

	"github.com/oncetool/once/trace"
)

// maxPrograms bounds the programs a JSON report aggregates: a tree whose
// every process takes a name of its own would make a row per process.
const maxPrograms = 1000

// listedFunc is which of r's processes its report gives an entry of
// (trace.Result.ProcessesListed): all of them, or those with a finding or
// anything listed. When the command's own exec failed (StartErrno), the
// process that tried, once's forked copy with that failed execve, is all
// the trace holds, and what the report is about: it is listed.
func listedFunc(r *trace.Result) func(*trace.Process) bool {
	if r.ProcessesListed == trace.ProcessesAll || r.StartErrno != 0 {
		return func(*trace.Process) bool { return true }
	}
	found := make(map[trace.ImageKey]struct{}, len(r.Findings))
	for i := range r.Findings {
		found[r.Findings[i].Key] = struct{}{}
	}
	return func(p *trace.Process) bool {
		_, ok := found[p.Key]
		return ok || p.Listed()
	}
}

// programRow sums the processes of one program (comm and executable):
// what a report says of the processes it does not list one by one.
type programRow struct {
	comm, exe string
	processes int
	listed    int
	totals    trace.ProcessTotals
	findings  int
	avoidable int
	wasted    uint64
}

// programRows sums r's processes per program, most wasteful first (then
// most findings, most processes), the first maxPrograms of them, and says
// how many programs were left out.
func programRows(r *trace.Result, listed func(*trace.Process) bool) ([]*programRow, int) {
	type key struct{ comm, exe string }
	byKey := map[key]*programRow{}
	byImage := make(map[trace.ImageKey]*programRow, len(r.Processes))
	var rows []*programRow
	for _, p := range r.Processes {
		if p == nil {
			continue
		}
		k := key{p.Comm, p.Exe}
		row := byKey[k]
		if row == nil {
			row = &programRow{comm: p.Comm, exe: p.Exe}
			byKey[k] = row
			rows = append(rows, row)
		}
		byImage[p.Key] = row
		row.processes++
		if listed(p) {
			row.listed++
		}
		row.totals.Add(p.Totals)
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		if row := byImage[f.Key]; row != nil {
			row.findings++
			row.avoidable += f.Avoidable()
			row.wasted += f.WastedNs
		}
	}
	slices.SortStableFunc(rows, func(a, b *programRow) int {
		return cmp.Or(cmp.Compare(b.wasted, a.wasted), cmp.Compare(b.findings, a.findings),
			cmp.Compare(b.processes, a.processes), cmp.Compare(a.comm, b.comm), cmp.Compare(a.exe, b.exe))
	})
	if len(rows) > maxPrograms {
		return rows[:maxPrograms], len(rows) - maxPrograms
	}
	return rows, 0
}

// jsonProgram is one program's processes summed (programs[]).
type jsonProgram struct {
	Comm jstr `json:"comm"`
	Exe  jstr `json:"exe"`
	// Processes: its process images; Listed: of them, those with an
	// entry in processes[].
	Processes int `json:"processes"`
	Listed    int `json:"listed"`
	jsonProcTotals
	Findings  int    `json:"findings"`
	Avoidable int    `json:"avoidable"`
	WastedNs  uint64 `json:"wasted_ns"`
}

func jsonProgramOf(row *programRow) jsonProgram {
	return jsonProgram{Comm: jstr(row.comm), Exe: jstr(row.exe), Processes: row.processes, Listed: row.listed,
		jsonProcTotals: jsonProcTotalsOf(row.totals),
		Findings:       row.findings, Avoidable: row.avoidable, WastedNs: row.wasted}
}
