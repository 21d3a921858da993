package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

//go:embed w5/statloop.c
var statloopC []byte

// W5, stat storms: lookups that open nothing, which once traces since its
// stat and access hooks.
const (
	w5stat = "W5-stat" // statloop: newfstatat, half hits, half misses
	w5find = "W5-find" // find over a tree, a stat per entry
	w5git  = "W5-git"  // git status in a generated repository
	w5bash = "W5-bash" // bash running commands through a PATH search
)

var w5Order = []string{w5stat, w5find, w5git, w5bash}

// w5RowKeys are the rows W5 runs, defined as in the main table.
var w5RowKeys = []string{"none", "floor", "once-run", "once-watch", "once-run-other"}

// lookupSyscalls are the syscalls once's lookup hooks trace, for strace.
const lookupSyscalls = "newfstatat,statx,stat,lstat,access,faccessat,faccessat2"

// w5Results is the W5 section of latest.json.
type w5Results struct {
	// Lookups: the traced lookups one run of each workload makes: the
	// stat loop's by construction, the others' counted under strace
	// before the rounds.
	Lookups map[string]int64 `json:"lookups_per_run"`
	Rounds  int              `json:"rounds_done"`
	Reps    int              `json:"reps"`
	Rows    []*w5Row         `json:"rows"`
	Samples []*w5Sample      `json:"samples"`
	// BPF: the system-wide rows' BPF programs' own time per lookup, by
	// the kernel's statistics (see w5BPFCosts).
	BPF    []w5BPF  `json:"bpf_cost,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// w5BPF is what one system-wide row's BPF programs spent while each W5
// workload ran once under it.
type w5BPF struct {
	Tracer string `json:"tracer"`
	Label  string `json:"label"`
	// NsPerLookup: the programs' summed run time / the run's lookups, by
	// workload (bash's includes its forks and execs).
	NsPerLookup map[string]float64 `json:"ns_per_lookup"`
	// Programs: by workload, ns per run of each program that ran at
	// least once per four of the run's lookups.
	Programs map[string]map[string]float64 `json:"ns_per_run_by_program"`
	Error    string                        `json:"error,omitempty"`
}

// w5Sample is one run of a W5 workload.
type w5Sample struct {
	Round    int    `json:"round"`
	Tracer   string `json:"tracer"`
	Workload string `json:"workload"`
	// PairedWith: an untraced run made right before this tracer's runs
	// of the same workload in the same round, its baseline.
	PairedWith string `json:"paired_with,omitempty"`
	// NsPerCall: the stat loop's, measured inside it; WallNs: the
	// others', from timecmd.
	NsPerCall float64 `json:"ns_per_call,omitempty"`
	WallNs    int64   `json:"wall_ns,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// value is what the sample measured: ns per call or wall ns.
func (s *w5Sample) value() float64 {
	if s.Workload == w5stat {
		return s.NsPerCall
	}
	return float64(s.WallNs)
}

// w5Row is one row's W5 figures, by workload.
type w5Row struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	// Median: the median sample (ns per call for the stat loop, wall ns
	// for the others).
	Median map[string]float64 `json:"median"`
	// AddedNs: ns added per lookup, the median over rounds of (the
	// cell's median − its paired untraced runs' median) / lookups per
	// run; Ratio: traced / untraced the same way.
	AddedNs map[string]float64 `json:"added_ns_per_lookup,omitempty"`
	Ratio   map[string]float64 `json:"ratio,omitempty"`
	Errors  []string           `json:"errors,omitempty"`
}

// w5Data is the workloads' files.
type w5Data struct {
	hit, miss string // the stat loop's names
	findDir   string
	gitDir    string
	bashPath  string // the 7-entry PATH, the command in its last directory
	bashCmds  string // the script
}

// prepareW5 creates the stat loop's file, the find tree, the git
// repository and bash's PATH directories under root.
func (b *bench) prepareW5(root string) (w5Data, error) {
	d := w5Data{hit: filepath.Join(root, "stat", "hit"), miss: filepath.Join(root, "stat", "miss"),
		findDir: filepath.Join(root, "find"), gitDir: filepath.Join(root, "git")}
	if err := os.MkdirAll(filepath.Dir(d.hit), 0o755); err != nil {
		return d, err
	}
	if err := os.WriteFile(d.hit, nil, 0o644); err != nil {
		return d, err
	}
	if err := writeTree(d.findDir, b.cfg.W5FindFiles, 100); err != nil {
		return d, err
	}
	if err := writeTree(d.gitDir, b.cfg.W5GitFiles, 100); err != nil {
		return d, err
	}
	// Files older than the index: else git takes them as racily clean
	// and reads them again at every status.
	old := time.Now().Add(-time.Hour)
	if err := filepath.Walk(d.gitDir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}); err != nil {
		return d, err
	}
	for _, argv := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "w5"}} {
		cmd := exec.Command("git", argv...)
		cmd.Dir, cmd.Env = d.gitDir, b.gitEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return d, fmt.Errorf("git %s: %v: %s", argv[0], err, out)
		}
	}
	var dirs []string
	for i := 1; i <= b.cfg.W5PathDirs; i++ {
		dir := filepath.Join(root, "path", fmt.Sprintf("p%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return d, err
		}
		dirs = append(dirs, dir)
	}
	// The command bash finds in the last directory: true, a small
	// dynamically linked program.
	tr, err := exec.LookPath("true")
	if err != nil {
		return d, err
	}
	src, err := os.ReadFile(tr)
	if err != nil {
		return d, err
	}
	if err := os.WriteFile(filepath.Join(dirs[len(dirs)-1], "w5cmd"), src, 0o755); err != nil {
		return d, err
	}
	d.bashPath = strings.Join(dirs, ":")
	// set +h: no hashing, a PATH search for every command, as in a
	// script after hash -r or a shell that runs each command once.
	d.bashCmds = fmt.Sprintf("set +h; for ((i = 0; i < %d; i++)); do w5cmd; done", b.cfg.W5Cmds)
	return d, nil
}

// writeTree creates n empty files under dir, per files to a directory.
func writeTree(dir string, n, per int) error {
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/per))
		if i%per == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.c", i)), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gitEnv keeps the machine's and the user's git configuration out.
func (b *bench) gitEnv() []string {
	return append(append([]string(nil), b.env...), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
}

// w5Argv is the command line of a W5 run: the stat loop times itself,
// the others run under timecmd.
func (b *bench) w5Argv(d w5Data, wl string) []string {
	switch wl {
	case w5stat:
		return []string{b.progs.statloop, d.hit, d.miss, strconv.Itoa(b.cfg.W5N)}
	case w5find:
		// -size makes find stat every entry (without a test needing the
		// inode, find reads types from the directory); +1M prints none.
		return []string{b.progs.timecmd, b.progs.find, d.findDir, "-size", "+1M"}
	case w5git:
		return []string{b.progs.timecmd, b.progs.git, "-C", d.gitDir, "status", "--porcelain"}
	case w5bash:
		return []string{b.progs.timecmd, "/usr/bin/env", "PATH=" + d.bashPath, b.progs.bash, "-c", d.bashCmds}
	}
	panic("unknown workload " + wl)
}

// w5Run runs one W5 workload, wrapped by wrap (nil: untraced).
func (b *bench) w5Run(round int, t *tracer, d w5Data, wl string, wrap []string) *w5Sample {
	s := &w5Sample{Round: round, Tracer: t.Key, Workload: wl}
	_, rested := b.settle(fmt.Sprintf("W5 round %d %s %s", round, t.Key, wl))
	b.warmUntraced(t, wl, rested, func() { _, _ = run(b.w5Argv(d, wl), b.gitEnv(), 5*time.Minute) })
	if wrap != nil {
		defer func() { b.tracerExited = true }()
	}
	argv := append(append([]string(nil), wrap...), b.w5Argv(d, wl)...)
	r, err := run(argv, b.gitEnv(), 5*time.Minute)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	out := bytes.TrimSpace(r.stdout)
	if wl == w5stat {
		var o struct {
			NsPerCall float64 `json:"ns_per_call"`
		}
		if err := jsonIn(out, &o); err != nil {
			s.Error = err.Error()
		}
		s.NsPerCall = o.NsPerCall
		return s
	}
	// timecmd's line is the last.
	var o struct {
		WallNs   int64 `json:"wall_ns"`
		ExitCode int   `json:"exit_code"`
	}
	if err := jsonIn(out[bytes.LastIndexByte(out, '\n')+1:], &o); err != nil {
		s.Error = "timecmd: " + err.Error()
		return s
	}
	if o.ExitCode != 0 {
		s.Error = fmt.Sprintf("exited %d", o.ExitCode)
	}
	s.WallNs = o.WallNs
	return s
}

// w5 runs the W5 section: a strace count of each workload's lookups, then
// interleaved rounds over the W5 rows, each traced run paired with
// untraced runs made right before it.
func (b *bench) w5() *w5Results {
	res := &w5Results{Lookups: map[string]int64{}, Reps: max(1, b.cfg.W5Reps)}
	for name, path := range map[string]string{"find": b.progs.find, "git": b.progs.git, "bash": b.progs.bash} {
		if path == "" {
			res.Errors = append(res.Errors, name+" not found: W5 not run")
			return res
		}
	}
	root := filepath.Join(b.cfg.Work, "w5")
	defer os.RemoveAll(root)
	logf("W5: generating %d files to find, a git repository of %d files", b.cfg.W5FindFiles, b.cfg.W5GitFiles)
	d, err := b.prepareW5(root)
	if err != nil {
		res.Errors = append(res.Errors, "preparing: "+err.Error())
		return res
	}
	all := map[string]*tracer{}
	for _, t := range b.tracers() {
		all[t.Key] = t
	}
	var rows []*tracer
	for _, k := range w5RowKeys {
		t := all[k]
		t.checkAvailable()
		res.Rows = append(res.Rows, &w5Row{Key: t.Key, Label: t.Label})
		if t.Unavailable != "" {
			res.Errors = append(res.Errors, t.Label+": not run: "+t.Unavailable)
			continue
		}
		rows = append(rows, t)
	}
	// Warm-up (page cache, dentries, git's index) and the count.
	none := all["none"]
	for _, wl := range w5Order {
		if s := b.w5Run(0, none, d, wl, nil); s.Error != "" {
			res.Errors = append(res.Errors, "warm-up "+wl+": "+s.Error)
			return res
		}
		if wl == w5stat {
			res.Lookups[wl] = int64(b.cfg.W5N)
			continue
		}
		n, err := b.countLookups(b.w5Argv(d, wl)[1:])
		if err != nil {
			res.Errors = append(res.Errors, "counting "+wl+"'s lookups: "+err.Error())
			continue
		}
		res.Lookups[wl] = n
		logf("W5: %s makes %d lookups", wl, n)
	}
	for r := 1; r <= b.cfg.W5Rounds; r++ {
		for i := range rows {
			t := rows[(i+r-1)%len(rows)]
			res.Samples = append(res.Samples, b.w5Cell(r, t, d)...)
		}
		res.Rounds = r
	}
	if b.cfg.BPFCost {
		res.BPF = b.w5BPFCosts(rows, d, res.Lookups)
	}
	res.summarize()
	return res
}

// w5BPFCosts runs each W5 workload once under every system-wide row with
// the kernel's BPF statistics on (as bpfCosts does for W1–W3). once run
// wraps the workload and unloads its programs before their time can be
// read: its kernel side is once watch's, less the image tables' sends.
func (b *bench) w5BPFCosts(rows []*tracer, d w5Data, lookups map[string]int64) []w5BPF {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return []w5BPF{{Error: "enabling BPF statistics: " + err.Error()}}
	}
	defer stats.Close()
	var out []w5BPF
	for _, t := range rows {
		if t.mode != modeSystem {
			continue
		}
		c := w5BPF{Tracer: t.Key, Label: t.Label, NsPerLookup: map[string]float64{}, Programs: map[string]map[string]float64{}}
		c.Error = b.w5BPFCost(t, d, lookups, &c)
		logf("W5 BPF time per lookup under %s: %v %s", t.Key, c.NsPerLookup, c.Error)
		out = append(out, c)
	}
	return out
}

func (b *bench) w5BPFCost(t *tracer, d w5Data, lookups map[string]int64, c *w5BPF) string {
	before, s, done, err := b.costSession(t)
	if err != "" {
		return err
	}
	defer done()
	for _, wl := range w5Order {
		a, err := progStats()
		if err != nil {
			return "listing programs: " + err.Error()
		}
		if smp := b.w5Run(0, none, d, wl, nil); smp.Error != "" {
			return wl + ": " + smp.Error
		}
		// Read at once: the programs run in the workload's syscalls,
		// and once watch's would go on counting the machine's while
		// its reader drains.
		z, err := progStats()
		if err != nil {
			return "listing programs: " + err.Error()
		}
		s.drainUpTo(3 * time.Second)
		ns, progs := progDelta(before, a, z, lookups[wl]/4)
		c.Programs[wl] = progs
		if lookups[wl] > 0 {
			c.NsPerLookup[wl] = float64(ns) / float64(lookups[wl])
		}
	}
	return ""
}

// w5Cell runs every W5 workload Reps times under t, each batch after as
// many untraced runs (a wrapping tracer: each run after one).
func (b *bench) w5Cell(round int, t *tracer, d w5Data) []*w5Sample {
	reps := max(1, b.cfg.W5Reps)
	var out []*w5Sample
	untraced := func(wl string) {
		s := b.w5Run(round, none, d, wl, nil)
		s.PairedWith = t.Key
		out = append(out, s)
	}
	start := time.Now()
	switch t.mode {
	case modeNone:
		for _, wl := range w5Order {
			for range reps {
				out = append(out, b.w5Run(round, t, d, wl, nil))
			}
		}
	case modeWrap:
		report := filepath.Join(b.outDir, "w5-"+t.Key+".out")
		for _, wl := range w5Order {
			for range reps {
				untraced(wl)
				out = append(out, b.w5Run(round, t, d, wl, t.wrap(report, nil)))
				os.Remove(report)
			}
		}
	case modeSystem:
		// Untraced in the reverse order, traced in the order: each
		// workload mirrored around the session's start, the stat loop
		// (the one the targets judge) innermost, nearest its baseline.
		// This VM's speed drifts within seconds, and bash alone runs
		// for seconds.
		for i := len(w5Order) - 1; i >= 0; i-- {
			for range reps {
				untraced(w5Order[i])
			}
		}
		dir := filepath.Join(b.outDir, "w5-"+t.Key)
		_ = os.MkdirAll(dir, 0o755)
		defer os.RemoveAll(dir)
		b.quiet()
		b.settle(fmt.Sprintf("W5 round %d %s", round, t.Key))
		sess, err := startSession(t, dir, b.env)
		if err != nil {
			out = append(out, &w5Sample{Round: round, Tracer: t.Key, Workload: w5stat, Error: "session: " + err.Error()})
			return out
		}
		for _, wl := range w5Order {
			for range reps {
				out = append(out, b.w5Run(round, t, d, wl, nil))
				// once watch sees the whole machine: where other jobs
				// keep it busy, waiting for it to go idle would take
				// the full 30 s after every run.
				sess.drainUpTo(3 * time.Second)
			}
		}
		sess.finish()
		b.tracerExited = true
		if sess.Error != "" {
			out = append(out, &w5Sample{Round: round, Tracer: t.Key, Workload: w5stat, Error: "session: " + sess.Error})
		}
	}
	var parts []string
	for _, s := range out {
		if s.Tracer != t.Key {
			continue
		}
		switch {
		case s.Error != "":
			parts = append(parts, s.Workload+" failed: "+s.Error)
		case s.Workload == w5stat:
			parts = append(parts, fmt.Sprintf("stat %.0f ns/call", s.NsPerCall))
		default:
			parts = append(parts, fmt.Sprintf("%s %.1f ms", strings.TrimPrefix(s.Workload, "W5-"), float64(s.WallNs)/1e6))
		}
	}
	logf("W5 round %d %-15s %s (%v)", round, t.Key, strings.Join(parts, ", "), time.Since(start).Round(100*time.Millisecond))
	return out
}

var straceLookupRe = regexp.MustCompile(`^\d+\s+(?:` + strings.ReplaceAll(lookupSyscalls, ",", "|") + `)\(`)

// countLookups runs argv under strace and counts its lookup syscalls.
func (b *bench) countLookups(argv []string) (int64, error) {
	out := filepath.Join(b.outDir, "w5.strace")
	defer os.Remove(out)
	sargv := append([]string{"strace", "-f", "-qq", "-e", "trace=" + lookupSyscalls, "-o", out}, argv...)
	if _, err := run(sargv, b.gitEnv(), 5*time.Minute); err != nil {
		return 0, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(string(data), "\n") {
		if straceLookupRe.MatchString(line) {
			n++ // an <unfinished ...> call's resumed half does not match
		}
	}
	return n, nil
}

// summarize fills the rows from the samples.
func (w *w5Results) summarize() {
	for _, row := range w.Rows {
		row.Median, row.AddedNs, row.Ratio, row.Errors = map[string]float64{}, map[string]float64{}, map[string]float64{}, nil
		errs := map[string]bool{}
		type side map[string][]float64 // by workload
		traced, untraced := map[int]side{}, map[int]side{}
		all := side{}
		for _, s := range w.Samples {
			var m map[int]side
			switch {
			case s.Tracer == row.Key && s.PairedWith == "":
				m = traced
				if s.Error != "" {
					errs[s.Workload+": "+s.Error] = true
					continue
				}
				all[s.Workload] = append(all[s.Workload], s.value())
			case s.Tracer == "none" && s.PairedWith == row.Key && s.Error == "":
				m = untraced
			default:
				continue
			}
			if m[s.Round] == nil {
				m[s.Round] = side{}
			}
			m[s.Round][s.Workload] = append(m[s.Round][s.Workload], s.value())
		}
		for e := range errs {
			row.Errors = append(row.Errors, e)
		}
		for wl, v := range all {
			row.Median[wl] = *median(v)
		}
		if row.Key == "none" {
			continue
		}
		for _, wl := range w5Order {
			var added, ratios []float64
			for round, t := range traced {
				u := untraced[round]
				if u == nil {
					continue
				}
				a, b := median(t[wl]), median(u[wl])
				if a == nil || b == nil || *b == 0 {
					continue
				}
				ratios = append(ratios, *a / *b)
				per := 1.0 // the stat loop's figure is per call already
				if wl != w5stat {
					per = float64(w.Lookups[wl])
				}
				if per > 0 {
					added = append(added, (*a-*b)/per)
				}
			}
			if m := median(added); m != nil {
				row.AddedNs[wl] = *m
			}
			if m := median(ratios); m != nil {
				row.Ratio[wl] = *m
			}
		}
	}
}

// row is the summary of key, nil when absent.
func (w *w5Results) row(key string) *w5Row {
	for _, r := range w.Rows {
		if r.Key == key {
			return r
		}
	}
	return nil
}

// markdown is the W5 section of latest.md.
func (w *w5Results) markdown(cfg config) string {
	var b strings.Builder
	b.WriteString("## W5: stat storms\n\n")
	fmt.Fprintf(&b, "Lookups that open nothing: **stat** %s `newfstatat` in a loop, alternately a file that exists and a name that does not (ns per call, timed inside the program); "+
		"**find** `find DIR -size +1M` over %s empty files (a stat per entry); **git** `git status --porcelain` in a repository of %s files; "+
		"**bash** `bash -c 'set +h; …'` running %s commands through a %d-entry PATH, the command in its last directory (a failed stat per earlier directory, and the fork and exec). "+
		"Lookups per run (the traced syscalls %s; strace's count):",
		fmtInt(int64(cfg.W5N)), fmtInt(int64(cfg.W5FindFiles)), fmtInt(int64(cfg.W5GitFiles)), fmtInt(int64(cfg.W5Cmds)), cfg.W5PathDirs, strings.ReplaceAll(lookupSyscalls, ",", ", "))
	for i, wl := range w5Order {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %s", sep, strings.TrimPrefix(wl, "W5-"), fmtInt(w.Lookups[wl]))
	}
	fmt.Fprintf(&b, ". Rounds: %d, each workload run %d times per cell, every traced run paired with untraced runs made right before it; "+
		"+ns/lookup is (traced − untraced) / lookups per run, the median over rounds: for find, git and bash the wall time's noise divided by the lookups, "+
		"and for bash the cost of tracing its forks and execs too. The floor has empty programs on the same 30 syscall tracepoints as once.\n\n", w.Rounds, w.Reps)
	b.WriteString("| tracer | stat ns/call | stat +ns/lookup | find wall | find × | find +ns/lookup | git status wall | git × | git +ns/lookup | bash wall | bash × | bash +ns/lookup |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range w.Rows {
		cell := func(m map[string]float64, wl string, f func(*float64) string) string {
			if v, ok := m[wl]; ok {
				return f(&v)
			}
			return "—"
		}
		ns := func(p *float64) string { return fmt.Sprintf("%.0f", *p) }
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Label,
			cell(row.Median, w5stat, ns), cell(row.AddedNs, w5stat, fmtAdded),
			cell(row.Median, w5find, fmtNs), cell(row.Ratio, w5find, fmtRatio), cell(row.AddedNs, w5find, fmtAdded),
			cell(row.Median, w5git, fmtNs), cell(row.Ratio, w5git, fmtRatio), cell(row.AddedNs, w5git, fmtAdded),
			cell(row.Median, w5bash, fmtNs), cell(row.Ratio, w5bash, fmtRatio), cell(row.AddedNs, w5bash, fmtAdded))
	}
	if len(w.BPF) > 0 {
		b.WriteString("\nBPF time per lookup: the system-wide rows' own BPF programs' run time by the kernel's statistics (`BPF_ENABLE_STATS`, after the rounds, one run of each workload), " +
			"summed over their programs and divided by the run's lookups; it includes the statistics' own clock reads, and under once watch what its programs spent on the rest of the machine meanwhile. " +
			"once run is not measured (its programs are gone before they can be read): its kernel side is once watch's.\n\n")
		b.WriteString("| tracer | stat | find | git | bash | programs in stat and find, ns per run |\n|---|--:|--:|--:|--:|---|\n")
		for _, c := range w.BPF {
			if c.Error != "" {
				fmt.Fprintf(&b, "| %s | failed: %s |||||\n", c.Label, mdEscape(c.Error))
				continue
			}
			cells := []string{c.Label}
			for _, wl := range w5Order {
				cell := "—"
				if v, ok := c.NsPerLookup[wl]; ok {
					cell = fmt.Sprintf("%.0f", v)
				}
				cells = append(cells, cell)
			}
			var parts []string
			for _, wl := range []string{w5stat, w5find} {
				var progs []string
				for n, v := range c.Programs[wl] {
					progs = append(progs, fmt.Sprintf("%s %.0f", mdEscape(n), v))
				}
				sort.Strings(progs)
				parts = append(parts, strings.TrimPrefix(wl, "W5-")+": "+strings.Join(progs, ", "))
			}
			cells = append(cells, strings.Join(parts, "; "))
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	var notes []string
	notes = append(notes, w.Errors...)
	for _, row := range w.Rows {
		for _, e := range row.Errors {
			notes = append(notes, row.Label+": "+e)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	return b.String()
}
