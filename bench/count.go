package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Counting what each tracer reported, from its own output, so that the
// loss column compares the tracer's word with what the workloads did.

// eventIndex holds the counts taken from a tracer's output.
type eventIndex struct {
	opens     map[task]int64 // open-family calls by process
	fileOpens map[int]int64  // pid → opens of the W1 file
	execs     map[int]int64  // parent pid → exec calls of the W3 target
	execTotal int64          // the same over every parent

	// aggregated is once watch without --events: it reports only the
	// processes that wasted something, so cp's opens and a PATH-free
	// launch leave no trace to count.
	aggregated bool
	// silent: the tracer prints nothing per event (the floor).
	silent bool

	lost      int64 // events the tracer itself said it lost
	lostKnown bool  // it has a way to say so
}

func newIndex() *eventIndex {
	return &eventIndex{opens: map[task]int64{}, fileOpens: map[int]int64{}, execs: map[int]int64{}}
}

// task names a process by pid and comm: pids are reused within a session
// (pid_max is often 32768, and W3 alone forks 4,000 times). comm is ""
// when the output does not show it (strace).
type task struct {
	pid  int
	comm string
}

func (x *eventIndex) exec(ppid int, n int64) {
	x.execs[ppid] += n
	x.execTotal += n
}

// seen is how many of a run's events the tracer reported, -1 if its
// output can't tell. A wrapping tracer traced nothing but the run, so its
// exec count needs no parent pid.
func (x *eventIndex) seen(wl string, s *sample, wrapped bool) int64 {
	if x.silent {
		return -1
	}
	switch wl {
	case w1:
		return x.fileOpens[s.Pid]
	case w2:
		if x.aggregated {
			return -1
		}
		return x.opens[task{s.Pid, "cp"}] + x.opens[task{s.Pid, ""}]
	case w3abs:
		if x.aggregated {
			return -1
		}
	}
	if wrapped {
		return x.execTotal
	}
	return x.execs[s.Pid]
}

// isTargetExec reports whether an exec's file name is the W3 target.
func isTargetExec(name string) bool {
	return strings.HasSuffix(name, "/"+target)
}

// scanLines calls fn for each line of the file; lines may be long (argv).
func scanLines(path string, fn func(string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	return sc.Err()
}

// indexOnceReport reads a `once run --format json` report.
func indexOnceReport(path, w1File string) (*eventIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Only the fields counted; the decoder skips the rest (the per-call
	// arrays are most of a W1 report).
	var rep struct {
		EventsLost int64 `json:"events_lost"`
		Processes  []struct {
			Pid    int    `json:"pid"`
			PPid   int    `json:"ppid"`
			Comm   string `json:"comm"`
			Totals struct {
				Opens int64 `json:"opens"`
			} `json:"totals"`
			Opens []struct {
				Path  string   `json:"path"`
				Paths []string `json:"paths"`
				Count int64    `json:"count"`
			} `json:"opens"`
			Execs []struct {
				Filename string `json:"filename"`
			} `json:"execs"`
		} `json:"processes"`
	}
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&rep); err != nil {
		return nil, fmt.Errorf("once run report: %v", err)
	}
	x := newIndex()
	x.lost, x.lostKnown = rep.EventsLost, true
	for _, p := range rep.Processes {
		// The lists name only the files a finding needs (--files
		// duplicates): a process's every open is in its totals.
		x.opens[task{p.Pid, p.Comm}] += p.Totals.Opens
		for _, o := range p.Opens {
			if o.Path == w1File {
				x.fileOpens[p.Pid] += o.Count
			}
		}
		for _, e := range p.Execs {
			if isTargetExec(e.Filename) {
				x.exec(p.PPid, 1)
			}
		}
	}
	return x, nil
}

// indexWatch reads `once watch --format json` JSON lines: events (with
// --events) or findings, and the summaries with the loss counters.
func indexWatch(path, w1File string, aggregated bool) (*eventIndex, error) {
	x := newIndex()
	x.aggregated, x.lostKnown = aggregated, true
	var bad int
	err := scanLines(path, func(line string) {
		var ev struct {
			Type     string `json:"type"`
			Kind     string `json:"kind"`
			Pid      int    `json:"pid"`
			PPid     int    `json:"ppid"`
			Comm     string `json:"comm"`
			Fname    string `json:"fname"`
			Path     string `json:"path"`
			Filename string `json:"filename"`
			Count    int64  `json:"count"`
			Target   string `json:"target"`
			Attempts []struct {
				Path string `json:"path"`
			} `json:"attempts"`
			EventsLost int64 `json:"events_lost"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			bad++
			return
		}
		switch ev.Type {
		case "open":
			x.opens[task{ev.Pid, ev.Comm}]++
			if ev.Fname == w1File || ev.Path == w1File {
				x.fileOpens[ev.Pid]++
			}
		case "exec":
			if isTargetExec(ev.Filename) {
				x.exec(ev.PPid, 1)
			}
		case "finding":
			switch {
			case ev.Kind == "duplicate_open" && ev.Path == w1File:
				x.fileOpens[ev.Pid] += ev.Count
			case ev.Kind == "failed_exec_probes" && ev.Target == target:
				// Every attempt of the chain is one execve, the
				// failed ones and the one that worked.
				x.exec(ev.PPid, int64(len(ev.Attempts)))
			}
		case "summary":
			x.lost = ev.EventsLost // cumulative: the last one counts
		}
	})
	if err == nil && bad > 0 {
		err = fmt.Errorf("%d lines of %s are not JSON", bad, path)
	}
	return x, err
}

// lostRe matches the loss reports of bpftrace ("Lost 12 events") and the
// libbpf tools ("lost 12 events on CPU #0").
var lostRe = regexp.MustCompile(`(?i)\blost (\d+) events`)

func countLost(x *eventIndex, line string) bool {
	if m := lostRe.FindStringSubmatch(line); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		x.lost += n
		return true
	}
	return false
}

// indexSnoop reads bench/bt/snoop.bt's output: "open|exec PID PPID COMM RET
// NAME". COMM and NAME may hold spaces, so only the leading numbers are
// split off, the name is matched as a suffix, and a COMM with spaces is
// taken to its first word (no workload's has one).
func indexSnoop(path, w1File string) (*eventIndex, error) {
	x := newIndex()
	x.lostKnown = true
	err := scanLines(path, func(line string) {
		if countLost(x, line) {
			return
		}
		f := strings.SplitN(line, " ", 5)
		if len(f) < 5 {
			return
		}
		pid, err1 := strconv.Atoi(f[1])
		ppid, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return
		}
		switch f[0] {
		case "open":
			x.opens[task{pid, f[3]}]++
			if strings.HasSuffix(line, " "+w1File) {
				x.fileOpens[pid]++
			}
		case "exec":
			if strings.HasSuffix(line, "/"+target) {
				x.exec(ppid, 1)
			}
		}
	})
	return x, err
}

// indexLibbpfTools reads opensnoop ("PID COMM FD ERR PATH") and
// execsnoop -x ("PCOMM PID PPID RET ARGS") output, and their stderr for
// loss reports. execsnoop's ARGS starts with the file name as passed.
func indexLibbpfTools(opensnoopOut, execsnoopOut, w1File string, stderrs []string) (*eventIndex, error) {
	x := newIndex()
	x.lostKnown = true
	err := scanLines(opensnoopOut, func(line string) {
		if countLost(x, line) {
			return
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			return
		}
		x.opens[task{pid, f[1]}]++
		if strings.HasSuffix(line, " "+w1File) {
			x.fileOpens[pid]++
		}
	})
	if err != nil {
		return nil, err
	}
	err = scanLines(execsnoopOut, func(line string) {
		if countLost(x, line) {
			return
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return
		}
		ppid, err := strconv.Atoi(f[2])
		if err != nil {
			return
		}
		if isTargetExec(f[4]) {
			x.exec(ppid, 1)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, p := range stderrs {
		_ = scanLines(p, func(line string) { countLost(x, line) })
	}
	return x, nil
}

// straceSyscallRe matches the start of a traced call in `strace -f -o`
// output: "PID  name(". A call split by another thread's ("<unfinished
// ...>" then "<... name resumed>") is counted at its start.
var straceSyscallRe = regexp.MustCompile(`^(\d+)\s+(open|openat|openat2|creat|execve|execveat)\(`)

// indexStrace reads strace -f output. strace does not show the parent:
// wrapped, it traced nothing but the run.
func indexStrace(path, w1File string) (*eventIndex, error) {
	x := newIndex()
	quoted := strconv.Quote(w1File)
	err := scanLines(path, func(line string) {
		m := straceSyscallRe.FindStringSubmatch(line)
		if m == nil {
			return
		}
		pid, _ := strconv.Atoi(m[1])
		switch m[2] {
		case "execve", "execveat":
			if strings.Contains(line, "/"+target+`"`) {
				x.exec(0, 1)
			}
		default:
			x.opens[task{pid, ""}]++
			if strings.Contains(line, quoted) {
				x.fileOpens[pid]++
			}
		}
	})
	return x, err
}
