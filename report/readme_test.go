package report

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/golden"
	"github.com/oncetool/once/trace"
)

// readmeResult is what once run reports for the README's example, env
// with a 7-entry PATH running a shell that cats one file twice, made by
// the engine from the events such a run sends.
func readmeResult() *trace.Result {
	eng := detect.New(detect.Options{Policy: detect.KeepAll(""), Spawner: 26080})
	env := trace.Task{Pid: 26087, Tid: 26087, PPid: 26080, UID: 1000, Start: 5_000_000_000, ExecID: 1, Comm: "once"}
	t0 := time.Unix(1000, 0)
	ns := uint64(1_000_000_000)
	ev := func(e trace.Event) {
		eng.Handle(&e, t0)
	}
	exec := func(t trace.Task, file string, ret int32, d uint64, argv ...string) {
		ev(trace.Event{Kind: trace.EventExec, Task: t, Exec: trace.ExecRecord{Syscall: trace.SysExecve, EnterNs: ns, ExitNs: ns + d, Ret: ret, Filename: file, Argv: argv}})
		ns += d + 1000
	}
	open := func(t trace.Task, file string, ino uint64, ret int32, d uint64) {
		ev(trace.Event{Kind: trace.EventOpen, Task: t, Open: trace.OpenRecord{Syscall: trace.SysOpenat, EnterNs: ns, ExitNs: ns + d, Flags: 0x80000,
			Dev: 0xfe00, Ino: ino, Gen: 1, Dirfd: -100, Ret: ret, Fname: file, Path: file}})
		ns += d + 1000
	}
	lookup := func(t trace.Task, file string, ino uint64, ret int32, d uint64) {
		ev(trace.Event{Kind: trace.EventOpen, Task: t, Open: trace.OpenRecord{Syscall: trace.SysNewfstatat, EnterNs: ns, ExitNs: ns + d,
			Dev: 0xfe00, Ino: ino, Dirfd: -100, Ret: ret, Fname: file}})
		ns += d + 1000
	}
	ev(trace.Event{Kind: trace.EventFork, Task: env, Proc: trace.ProcRecord{ParentPid: 26080}})
	envImg := env
	envImg.ExecID, envImg.Comm = 2, "env"
	ev(trace.Event{Kind: trace.EventImage, Task: envImg, Proc: trace.ProcRecord{Exe: "/usr/bin/env"}})
	argv := []string{"env", "PATH=/a:/b:/c:/d:/e:/f:/usr/bin", "sh", "-c", "cat /etc/hostname /etc/hostname"}
	exec(envImg, "/usr/bin/env", 0, 250_000, argv...)
	for _, d := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
		exec(envImg, d+"/sh", -2, 1400, "sh", "-c", "cat /etc/hostname /etc/hostname")
	}
	sh := envImg
	sh.ExecID, sh.Comm = 3, "sh"
	ev(trace.Event{Kind: trace.EventImage, Task: sh, Proc: trace.ProcRecord{Exe: "/usr/bin/dash"}})
	exec(sh, "/usr/bin/sh", 0, 144_000, "sh", "-c", "cat /etc/hostname /etc/hostname")
	// dash looks cat up along PATH with stat before it forks.
	for _, d := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
		lookup(sh, d+"/cat", 0, -2, 800)
	}
	lookup(sh, "/usr/bin/cat", 4242, 0, 1100)
	cat := trace.Task{Pid: 26088, Tid: 26088, PPid: 26087, UID: 1000, Start: 6_000_000_000, ExecID: 3, Comm: "sh"}
	ev(trace.Event{Kind: trace.EventFork, Task: cat, Proc: trace.ProcRecord{ParentPid: 26087, ParentStart: 5_000_000_000}})
	catImg := cat
	catImg.ExecID, catImg.Comm = 4, "cat"
	ev(trace.Event{Kind: trace.EventImage, Task: catImg, Proc: trace.ProcRecord{Exe: "/usr/bin/cat"}})
	exec(catImg, "/usr/bin/cat", 0, 120_000, "cat", "/etc/hostname", "/etc/hostname")
	open(catImg, "/etc/ld.so.cache", 100, 3, 2000)
	open(catImg, "/lib/x86_64-linux-gnu/libc.so.6", 101, 3, 2500)
	open(catImg, "/etc/hostname", 611, 3, 2100)
	open(catImg, "/etc/hostname", 611, 3, 1300)
	ev(trace.Event{Kind: trace.EventExit, Task: catImg})
	ev(trace.Event{Kind: trace.EventExit, Task: sh})
	r := eng.Result()
	r.Command, r.Duration, r.CPU = argv, 4900*time.Microsecond, 2100*time.Microsecond
	r.Counters.EventsReceived = 19
	return r
}

// updateREADME rewrites README.md's sample: -update never touches the
// README, which is not a file under testdata.
var updateREADME = flag.Bool("update-readme", false, "rewrite the sample report in ../README.md")

// TestREADMESample: the README's sample report is the renderer's output, so
// it can't go stale. go test ./report -run TestREADMESample -update rewrites
// testdata/readme.text.golden; -update-readme rewrites the README's copy.
func TestREADMESample(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, readmeResult()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "readme.text.golden", buf.Bytes())
	const cmd = "$ sudo once run -- env PATH=/a:/b:/c:/d:/e:/f:/usr/bin sh -c 'cat /etc/hostname /etc/hostname'\n"
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)(<!-- sample: report/testdata/readme.text.golden -->\n```\n).*?(```\n<!-- /sample -->)")
	if !block.Match(readme) {
		t.Fatal("README.md has no sample block")
	}
	want := block.ReplaceAll(readme, []byte("${1}"+cmd+escapeDollar(buf.String())+"${2}"))
	if bytes.Equal(readme, want) {
		return
	}
	if *updateREADME {
		if err := os.WriteFile("../README.md", want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("golden: rewrote ../README.md")
		return
	}
	t.Errorf("README.md's sample report is not the renderer's output; after checking, rewrite it: go test ./report -run TestREADMESample -update-readme\n%s",
		golden.Diff("README.md", "output", string(readme), string(want)))
}

func escapeDollar(s string) string {
	return string(bytes.ReplaceAll([]byte(s), []byte("$"), []byte("$$")))
}
