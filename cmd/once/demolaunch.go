package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/oncetool/once/internal/privdrop"
	"github.com/oncetool/once/report"
)

// launchReport is what the demo reads of reflaunch -json.
type launchReport struct {
	N, K       int
	Strategies []struct {
		Name         string
		N            int
		MinNS        int64  `json:"min_ns"`
		MedianNS     int64  `json:"median_ns"`
		MeanNS       int64  `json:"mean_ns"`
		P90NS        int64  `json:"p90_ns"`
		FailedExecs  int    `json:"failed_execs_per_iteration"`
		LookupNS     *int64 `json:"lookup_ns"`
		LookupProbes int    `json:"lookup_probes"`
	}
	Parts *struct {
		FailedExecveNS  int64 `json:"failed_execve_ns"`
		ForkNS          int64 `json:"fork_exit_wait_ns"`
		CloneVMNS       int64 `json:"clone_vm_exit_wait_ns"`
		ForkFailNS      int64 `json:"fork_failed_exit_wait_ns"`
		CloneVMFailNS   int64 `json:"clone_vm_failed_exit_wait_ns"`
		PageTablesBytes int64 `json:"page_tables_bytes"`
	}
}

func (r *launchReport) median(name string) int64 {
	for _, s := range r.Strategies {
		if s.Name == name {
			return s.MedianNS
		}
	}
	return 0
}

// launchHow says what each reflaunch strategy does.
var launchHow = map[string]string{
	"execvpe":  "fork, then execvpe: searches PATH",
	"spawnp":   "posix_spawnp: searches PATH",
	"absolute": "fork, then execve of the path",
	"resolved": "the same, the name looked up once first",
}

// demoLaunch runs the bundled launcher as cred, writes its table and what
// its own measurements say of the PATH search and of spawnp, and returns
// the command that reproduces it, runnable from where the demo ran.
func demoLaunch(ctx context.Context, w io.Writer, cred *syscall.Credential, stderr io.Writer) (string, error) {
	launcher, err := refBinary("reflaunch")
	if err != nil {
		return "", err
	}
	args := []string{"-n", "2000", "-k", "7"}
	repro := strings.Join(append(runnableArgv([]string{launcher}), args...), " ")
	fmt.Fprintf(w, "$ %s\n\n", report.Escape(repro))
	var out bytes.Buffer
	lc := exec.CommandContext(ctx, launcher, append(args, "-json")...)
	lc.Stdout, lc.Stderr = &out, stderr
	asUser(lc, cred)
	if err := privdrop.OnThread(cred, lc.Run); err != nil {
		return "", fmt.Errorf("reflaunch: %w", err)
	}
	var r launchReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return "", fmt.Errorf("reflaunch: its report: %w", err)
	}
	fmt.Fprintf(w, "%d launches per strategy, taking turns; PATH of %d directories, the program in the last.\n", r.N, r.K)
	fmt.Fprintf(w, "Time per launch, from fork or spawn until the child is reaped (µs):\n\n")
	// The words left-aligned, the numbers right: the words padded to
	// one width first, so that aligning every cell right keeps them so.
	wName, wHow := len("STRATEGY"), len("HOW")
	for _, s := range r.Strategies {
		wName, wHow = max(wName, len(s.Name)), max(wHow, len(launchHow[s.Name]))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t%-*s\tFAILED EXECVE\tMIN\tMEDIAN\tMEAN\tP90\t\n", wName, "STRATEGY", wHow, "HOW")
	for _, s := range r.Strategies {
		fmt.Fprintf(tw, "%-*s\t%-*s\t%d\t%s\t%s\t%s\t%s\t\n", wName, s.Name, wHow, launchHow[s.Name], s.FailedExecs,
			micros(s.MinNS), micros(s.MedianNS), micros(s.MeanNS), micros(s.P90NS))
	}
	tw.Flush()
	for _, s := range r.Strategies {
		if s.LookupNS != nil {
			fmt.Fprintf(w, "\n(resolved's one PATH lookup, not in its times: %s, %d entries probed)\n", report.Duration(uint64(*s.LookupNS)), s.LookupProbes)
		}
	}
	writeLaunchStory(w, &r)
	return repro, nil
}

// writeLaunchStory says, from reflaunch's own measurements, what the PATH
// search costs and why posix_spawnp is faster than fork+execvpe although
// both make the same failed execve.
func writeLaunchStory(w io.Writer, r *launchReport) {
	vpe, spawnp, abs := r.median("execvpe"), r.median("spawnp"), r.median("absolute")
	p := r.Parts
	if p == nil || vpe == 0 || spawnp == 0 || abs == 0 {
		return
	}
	d := func(ns int64) string { return report.Duration(uint64(max(ns, 0))) }
	// added is what with costs over without: noise can make it negative.
	added := func(with, without int64) string {
		if with <= without {
			return "nothing measurable"
		}
		return d(with - without)
	}
	failed := r.K - 1
	fmt.Fprintf(w, "\nWhat the PATH search costs, measured here:\n")
	fmt.Fprintf(w, "  - one failed execve, alone in this process: %s; each launch makes %d.\n", d(p.FailedExecveNS), failed)
	if p.ForkFailNS > 0 {
		fmt.Fprintf(w, "  - in a forked child the %d add %s (fork, %d failed execve, exit and wait: %s, against %s without them);\n",
			failed, added(p.ForkFailNS, p.ForkNS), failed, d(p.ForkFailNS), d(p.ForkNS))
		fmt.Fprintf(w, "    in a CLONE_VM child %s (%s against %s).\n", added(p.CloneVMFailNS, p.CloneVMNS), d(p.CloneVMFailNS), d(p.CloneVMNS))
	}
	fmt.Fprintf(w, "  - execvpe's median: %s; absolute's, the same program started by its path: %s.\n", d(vpe), d(abs))
	fmt.Fprintf(w, "\nWhy spawnp is %.2f times faster than execvpe (median %s against %s) with the same %d failed execve:\n", float64(vpe)/float64(spawnp), d(spawnp), d(vpe), failed)
	fmt.Fprintf(w, "  - execvpe's fork copies this process's page tables (%d kB) and the child's exec or exit frees them:\n", p.PageTablesBytes/1024)
	fmt.Fprintf(w, "    fork, the child's _exit and the wait took %s, measured alone.\n", d(p.ForkNS))
	fmt.Fprintf(w, "  - posix_spawnp's child shares the parent's memory (clone with CLONE_VM|CLONE_VFORK): the same took %s.\n", d(p.CloneVMNS))
	gap, diff := vpe-spawnp, p.ForkNS-p.CloneVMNS
	fmt.Fprintf(w, "  - fork costs %s more than that clone; execvpe's median is %s above spawnp's", added(p.ForkNS, p.CloneVMNS), added(vpe, spawnp))
	if gap > 0 && diff > 0 && diff <= gap*3/2 {
		fmt.Fprintf(w, ": making the child accounts for %s of the difference", strconv.Itoa(int(100*diff/gap))+"%")
	}
	fmt.Fprintln(w, ".")
	if p.ForkFailNS > 0 {
		inFork, inClone := p.ForkFailNS-p.ForkNS, p.CloneVMFailNS-p.CloneVMNS
		fmt.Fprintf(w, "  - the %d failed execve cost %s in the forked child and %s in the CLONE_VM one", failed,
			added(p.ForkFailNS, p.ForkNS), added(p.CloneVMFailNS, p.CloneVMNS))
		if diff > 0 && 4*abs64(inFork-inClone) < diff {
			fmt.Fprint(w, ": the difference is not there")
		}
		fmt.Fprintln(w, ".")
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// micros is ns in µs with one decimal: the one unit of the launch table.
func micros(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }
