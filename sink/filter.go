package sink

import (
	"fmt"
	"strings"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/report"
)

// FilterText says what a watch's filter selects, for its first line:
// "every process", "pids 7, 9 and their descendants, comm make".
func FilterText(f collector.Filter) string {
	var parts []string
	if len(f.Pids) > 0 {
		s := numberList("pid", "pids", f.Pids)
		if f.Tree {
			s += " and its descendants"
			if strings.HasPrefix(s, "pids ") {
				s = strings.TrimSuffix(s, "its descendants") + "their descendants"
			}
		}
		parts = append(parts, s)
	}
	if len(f.Comms) > 0 {
		parts = append(parts, commList("comm", "comms", f.Comms))
	}
	if len(f.ExcludeComms) > 0 {
		parts = append(parts, "not "+commList("comm", "comms", f.ExcludeComms))
	}
	if len(f.UIDs) > 0 {
		parts = append(parts, numberList("uid", "uids", f.UIDs))
	}
	if f.CgroupPath != "" {
		parts = append(parts, "cgroup "+report.Escape(f.CgroupPath))
	}
	if f.ByCgroupID {
		parts = append(parts, fmt.Sprintf("the selected containers (%d cgroups now, and those made from now on)", len(f.CgroupIDs)))
	}
	if len(parts) == 0 {
		return "every process"
	}
	return strings.Join(parts, ", ")
}

// commList is "comm make" or "comms cc1, ld": each once, in the order
// given, escaped; a name with a comma or a space in it (or none) quoted,
// so that --comm 'a,b' is not read as --comm a --comm b.
func commList(one, many string, cs []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c] {
			continue
		}
		seen[c] = true
		e := report.Escape(c)
		if e == "" || strings.ContainsAny(e, ", \"") {
			e = `"` + strings.ReplaceAll(e, `"`, `\"`) + `"`
		}
		parts = append(parts, e)
	}
	if len(parts) == 1 {
		return one + " " + parts[0]
	}
	return many + " " + strings.Join(parts, ", ")
}

// numberList is "pid 7" or "pids 7, 9": each number once, in the order
// given (--uid root --uid 0 is uid 0).
func numberList[N int | uint32](one, many string, ns []N) string {
	var parts []string
	seen := map[N]bool{}
	for _, n := range ns {
		if !seen[n] {
			seen[n] = true
			parts = append(parts, fmt.Sprint(n))
		}
	}
	if len(parts) == 1 {
		return one + " " + parts[0]
	}
	return many + " " + strings.Join(parts, ", ")
}
