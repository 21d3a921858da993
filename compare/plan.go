package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oncetool/once/internal/exectarget"
)

// Spec is what once compare was asked: the two commands (or a bundled
// reference as the baseline) and the generated workload.
type Spec struct {
	Baseline []string // CMD_A, or nil with Ref
	Command  []string // CMD_B
	// Ref: "cp", "mv" or "launch", the bundled reference as the baseline;
	// RefBinary finds it ("refcp", "refmv").
	Ref       string
	RefBinary func(name string) (string, error)
	Files     int // cp/mv workload: files generated, of Size bytes
	Size      int
	PathDirs  int // launch workload: PATH entries, the target in the last
	Runs      int
	Warmup    int
	Dir       string // where the workload is generated
	// Flags: the other flags that change what is measured (--no-trace,
	// --ignore-failure, --user NAME), shell-quoted, which the reproduce
	// line repeats.
	Flags []string
}

// Plan is a comparison ready to run: the commands with their placeholders
// substituted, the options that regenerate the inputs before each run, and
// what to say about it.
type Plan struct {
	A, B      []string
	Options   Options
	Workload  string
	Reproduce []string
}

// NewPlan builds the workload a spec names in spec.Dir.
func NewPlan(spec Spec) (*Plan, error) {
	p := &Plan{A: spec.Baseline, B: spec.Command,
		Options: Options{Runs: spec.Runs, Warmup: spec.Warmup, Env: os.Environ()}}
	vars := map[string]string{}
	extra := ""
	for _, f := range spec.Flags {
		extra += " " + f
	}
	switch WorkloadOf(spec.Ref, p.A, p.B) {
	case WorkloadFiles:
		seed := filepath.Join(spec.Dir, "seed")
		src, dst := filepath.Join(spec.Dir, "src"), filepath.Join(spec.Dir, "dst")
		if err := GenerateTree(seed, spec.Files, spec.Size); err != nil {
			return nil, fmt.Errorf("generate workload: %w", err)
		}
		vars["src"], vars["dst"] = src, dst
		p.Options.Roles = map[string]string{src: "src", dst: "dst"}
		verb := "copying"
		if spec.Ref == "mv" {
			verb = "moving"
		}
		p.Workload = fmt.Sprintf("%s %d files of %d bytes", verb, spec.Files, spec.Size)
		// Every run starts from the same inputs: a fresh source (hard
		// links to the seed, so mv's renames don't consume it) and no
		// destination.
		p.Options.Prepare = func() error {
			if err := os.RemoveAll(dst); err != nil {
				return err
			}
			if err := os.RemoveAll(src); err != nil {
				return err
			}
			return LinkTree(seed, src)
		}
		if spec.Ref != "" {
			bin, err := spec.RefBinary("ref" + spec.Ref)
			if err != nil {
				return nil, err
			}
			if spec.Ref == "cp" {
				p.A = []string{bin, "-r", "{src}", "{dst}"}
			} else {
				p.A = []string{bin, "{src}", "{dst}"}
			}
		}
		p.A, p.B = withPlaceholders(p.A, "src", "dst"), withPlaceholders(p.B, "src", "dst")
		against := "--ref " + spec.Ref
		if spec.Ref == "" {
			against = "--baseline " + ShellQuote(ShellJoin(p.A))
		}
		p.Reproduce = append(p.Reproduce, fmt.Sprintf("once compare %s --files %d --size %d --runs %d --warmup %d%s -- %s",
			against, spec.Files, spec.Size, spec.Runs, spec.Warmup, extra, ShellJoin(p.B)))
	case WorkloadLaunch:
		dirs, target, err := LaunchWorkload(spec.Dir, spec.PathDirs)
		if err != nil {
			return nil, err
		}
		vars["target"] = "oncetarget"
		p.Options.Env = append(withoutPath(os.Environ()), "PATH="+strings.Join(dirs, ":")+":"+os.Getenv("PATH"))
		p.Workload = fmt.Sprintf("launching a program found in entry %d of PATH", spec.PathDirs)
		p.B = withPlaceholders(p.B, "target")
		if spec.Ref == "launch" {
			// The reference launcher looks the name up once: the same
			// command with the resolved path, one execve.
			p.A = Substitute(p.B, map[string]string{"target": target})
		} else {
			p.A = withPlaceholders(p.A, "target")
		}
		against := "--ref launch"
		if spec.Ref == "" {
			against = "--baseline " + ShellQuote(ShellJoin(p.A))
		}
		p.Reproduce = append(p.Reproduce, fmt.Sprintf("once compare %s --path-dirs %d --runs %d --warmup %d%s -- %s",
			against, spec.PathDirs, spec.Runs, spec.Warmup, extra, ShellJoin(p.B)))
	default:
		p.Workload = "running the command"
		p.Reproduce = append(p.Reproduce, fmt.Sprintf("once compare --baseline %s --runs %d --warmup %d%s -- %s",
			ShellQuote(ShellJoin(p.A)), spec.Runs, spec.Warmup, extra, ShellJoin(p.B)))
	}
	p.A, p.B = Substitute(p.A, vars), Substitute(p.B, vars)
	return p, nil
}

// The workloads a comparison generates (WorkloadOf).
const (
	// WorkloadFiles: a tree of --files files of --size bytes, {src}
	// and {dst} (--ref cp, mv).
	WorkloadFiles = "files"
	// WorkloadLaunch: --path-dirs PATH entries, {target} in the last
	// (--ref launch).
	WorkloadLaunch = "launch"
)

// WorkloadOf is the workload NewPlan generates for a comparison of a and
// b (a nil with ref): WorkloadFiles, WorkloadLaunch or "" for none, in
// which case --files, --size and --path-dirs shape nothing.
func WorkloadOf(ref string, a, b []string) string {
	switch {
	case ref == "cp" || ref == "mv" || names(a, b, "src") || names(a, b, "dst"):
		return WorkloadFiles
	case ref == "launch" || names(a, b, "target"):
		return WorkloadLaunch
	}
	return ""
}

// names reports whether either command names {name}.
func names(a, b []string, name string) bool {
	return HasPlaceholder(a, name) || HasPlaceholder(b, name)
}

// withPlaceholders is argv with the workload's placeholders appended, in
// order, when it names none of them: the two sides of a comparison run on
// the same inputs whichever of them spells the inputs out, so that
// `--baseline 'cp -r {src} {dst}' -- cp -r` copies on both sides rather
// than running the after side without operands.
func withPlaceholders(argv []string, names ...string) []string {
	for _, n := range names {
		if HasPlaceholder(argv, n) {
			return argv
		}
	}
	out := append([]string{}, argv...)
	for _, n := range names {
		out = append(out, "{"+n+"}")
	}
	return out
}

// LaunchWorkload makes k PATH directories under root with the tiny exec
// target in the last; it returns the directories and the target's path.
func LaunchWorkload(root string, k int) ([]string, string, error) {
	var dirs []string
	for i := 1; i <= k; i++ {
		d := filepath.Join(root, fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", err
		}
		dirs = append(dirs, d)
	}
	target := filepath.Join(dirs[k-1], "oncetarget")
	if err := exectarget.Write(target); err != nil {
		return nil, "", fmt.Errorf("write exec target: %w", err)
	}
	return dirs, target, nil
}

func withoutPath(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "PATH=") {
			out = append(out, e)
		}
	}
	return out
}

// ShellJoin quotes argv for a shell, word by word.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:{},+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
