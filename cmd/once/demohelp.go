package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// uutilsCp is where Debian's rust-coreutils installs uutils cp, which
// opens every source twice.
const uutilsCp = "/usr/lib/cargo/bin/coreutils/cp"

// wastefulCopy is the real program the demo shows: uutils cp when it is
// installed, else the bundled dupcopy, which opens each source the way
// uutils cp 0.x did.
func wastefulCopy() (path, name string, err error) {
	if st, err := os.Stat(uutilsCp); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return uutilsCp, "uutils cp", nil
	}
	p, err := refBinary("dupcopy")
	return p, "dupcopy", err
}

// asUser makes cmd run as cred (nil: unchanged); session.Run and
// privdrop.OnThread start it from a thread that dropped once's privileges.
func asUser(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
}

// demoCopy is the copy the demo traces and times, absolute (it runs in
// the demo's own directory), and its name: --cp's when given.
func demoCopy(flag string) (path, name string, err error) {
	if flag == "" {
		return wastefulCopy()
	}
	st, err := os.Stat(flag)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", "", usagef("demo: --cp %q: want the path of an executable file", flag)
	}
	if path, err = filepath.Abs(flag); err != nil {
		return "", "", usagef("demo: --cp %q: %v", flag, err)
	}
	return path, filepath.Base(flag), nil
}

// symbolless returns the traced program's file when its stacks pass
// through it and not one of its frames has a name: a stripped binary
// with no debug file, whose call sites the report cannot name.
func symbolless(r *trace.Result) (string, bool) {
	if len(r.Processes) == 0 || r.Processes[0] == nil || r.Processes[0].Exe == "" {
		return "", false
	}
	exe, seen := r.Processes[0].Exe, false
	for _, st := range r.Stacks {
		for _, f := range st.Frames {
			if f.Module != exe {
				continue
			}
			if f.Func != "" {
				return "", false
			}
			seen = true
		}
	}
	return exe, seen
}

// refCommand is how to run the bundled program name from the working
// directory, its bare name when it cannot be found.
func refCommand(name string) string {
	p, err := refBinary(name)
	if err != nil {
		return name
	}
	return runnableArgv([]string{p})[0]
}

// selfCommand is how to run this once again from the working directory,
// with sudo when the demo was started through it.
func selfCommand() []string {
	wd, _ := os.Getwd()
	return selfCommandFrom(wd)
}

// selfCommandFrom is selfCommand for a shell in directory wd: the demo
// prints a `cd` into its tree before the first command, from where
// ./bin/once would not run.
func selfCommandFrom(wd string) []string {
	exe, err := os.Executable()
	if err != nil {
		exe = "once"
	}
	argv := runnableArgvFrom(wd, []string{exe})
	if os.Geteuid() == 0 && os.Getenv("SUDO_USER") != "" {
		argv = append([]string{"sudo"}, argv...)
	}
	return argv
}

// runnableArgv is argv with its program named so that it runs, as
// printed, from the working directory: ./bin/x under it, else the
// absolute path.
func runnableArgv(argv []string) []string {
	wd, _ := os.Getwd()
	return runnableArgvFrom(wd, argv)
}

// runnableArgvFrom is runnableArgv for a shell in directory wd ("" for
// unknown: the absolute path).
func runnableArgvFrom(wd string, argv []string) []string {
	out := append([]string(nil), argv...)
	if wd != "" && filepath.IsAbs(out[0]) {
		if rel, err := filepath.Rel(wd, out[0]); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			out[0] = "./" + rel
		}
	}
	return out
}

// demoShellLine is argv as the demo prints a command, each word escaped.
func demoShellLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = report.Escape(a)
	}
	return strings.Join(q, " ")
}
