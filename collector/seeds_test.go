package collector

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"

	"github.com/oncetool/once/trace"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the FuzzDecode seed corpus in testdata/fuzz/FuzzDecode")

type seed struct {
	name  string
	rec   []byte
	valid bool // Decode must accept it (else: must reject it)
}

// decodeSeeds are FuzzDecode's committed seed corpus: a valid record of
// every kind, built from the bpf2go types (so a layout change shows up as
// a stale corpus), and the malformed ones a reader must survive: cut
// short, lengths past the end, unknown kinds, garbage.
func decodeSeeds() []seed {
	task := bpf.OnceTaskInfo{StartNs: 1e9, ExecId: 3, CgroupId: 77, Pid: 100, Tid: 101, Ppid: 1, Uid: 1000,
		Comm: [16]uint8{'c', 'a', 't'}}
	open := func(status trace.Status, ret int32, fname, path string) []byte {
		ev := bpf.OnceOpenEvent{
			Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN, Syscall: uint8(trace.SysOpenat), Status: uint16(status)},
			Task: task, EnterNs: 5, ExitNs: 9, Flags: unix.O_RDONLY | unix.O_CLOEXEC, Ino: 42, Dev: 8<<20 | 1,
			Dirfd: -100, Ret: ret, FnameLen: uint16(len(fname)), PathLen: uint16(len(path)),
		}
		return record(&ev, fname, path)
	}
	execAt := func(status trace.Status, ret int32, argc uint32, fname, args, path string) []byte {
		ev := bpf.OnceExecEvent{
			Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC, Syscall: uint8(trace.SysExecve), Status: uint16(status)},
			Task: task, EnterNs: 5, ExitNs: 9, OldTid: 101, Dirfd: -100, Ret: ret, Argc: argc,
			FnameLen: uint16(len(fname)), ArgsLen: uint16(len(args)), PathLen: uint16(len(path)),
		}
		return record(&ev, fname, args, path)
	}
	exec := func(status trace.Status, ret int32, argc uint32, fname, args string) []byte {
		return execAt(status, ret, argc, fname, args, "")
	}
	proc := func(kind bpf.OnceEventKind, exe string) []byte {
		ev := bpf.OnceProcEvent{Hdr: bpf.OnceEventHeader{Kind: kind}, Task: task, TsNs: 11, ExeIno: 7,
			ParentStartNs: 2, ExeDev: 259<<20 | 2, ParentPid: 1, ExitCode: 9, PathLen: uint16(len(exe))}
		return record(&ev, exe)
	}
	okOpen := open(0, 3, "/etc/hostname", "/etc/hostname")
	relExec := execAt(trace.StPathIsBase, -2, 1, "tgt", "tgt\x00", "/d1")
	okExec := exec(0, 0, 3, "/usr/bin/cat", "cat\x00-n\x00/etc/hostname\x00")
	execArgs := func() []byte {
		ev := bpf.OnceExecEvent{
			Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC_ARGS},
			Task: bpf.OnceTaskInfo{Pid: 100, Tid: 101}, OldTid: 101, FnameLen: 6, ArgsLen: 3,
		}
		return record(&ev, "/d1/ls", "ls\x00")
	}()
	repeat := record(&bpf.OnceOpenRepeatEvent{
		Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN_REPEAT, Syscall: uint8(trace.SysOpenat2)},
		Pid: 100, Tid: 101, Dirfd: -100, Ret: 4, EnterNs: 12, ExitNs: 15, RefNs: 9,
	})
	// Garbage from a fixed seed: the corpus must not change between runs.
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 300)
	for i := range garbage {
		garbage[i] = byte(rng.IntN(256))
	}
	hugeLens := bpf.OnceOpenEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN}, FnameLen: 0xffff, PathLen: 0xffff}
	return []seed{
		{"open-ok", okOpen, true},
		{"open-failed-relative", open(trace.StPathIsBase, -2, "lib/x.so", "/usr"), true},
		{"open-hostile-bytes", open(0, 4, "a\nb\x1b[2J\xff", "/tmp/a\nb\x1b[2J\xff"), true},
		{"open-truncated-unresolved", open(trace.StFnameTruncated|trace.StPathUnresolved, 5, "/very/long", ""), true},
		{"exec-ok", okExec, true},
		{"exec-failed", exec(0, -2, 1, "/a/cat", "cat\x00"), true},
		{"exec-argv-cut", exec(trace.StArgvTruncated, 0, 64, "/bin/x", "x\x00aaaa"), true},
		{"exec-empty-arg", exec(0, 0, 4, "/bin/x", "x\x00\x00y\x00"), true},
		{"exec-no-argv", exec(trace.StArgvUnreadable, 0, 0, "", ""), true},
		{"exec-args", execArgs, true},
		{"exec-args-sent", exec(trace.StArgsSent, -2, 1, "", ""), true},
		{"exec-relative", relExec, true},
		{"exec-empty-path", execAt(0, 0, 1, "", "x\x00", "/memfd:x (deleted)"), true},
		{"exec-cut-in-path", relExec[:len(relExec)-1], false},
		{"open-repeat", repeat, true},
		{"open-repeat-cut", repeat[:len(repeat)-1], false},
		{"fork", proc(bpf.OnceEventKindEVENT_FORK, ""), true},
		{"exit", proc(bpf.OnceEventKindEVENT_EXIT, ""), true},
		{"image", proc(bpf.OnceEventKindEVENT_IMAGE, "/usr/bin/cat"), true},
		{"empty", nil, false},
		{"short-header", []byte{1, 0}, false},
		{"open-cut-in-head", okOpen[:40], false},
		{"open-cut-in-strings", okOpen[:len(okOpen)-1], false},
		{"exec-cut-in-head", okExec[:unsafe.Sizeof(bpf.OnceExecEvent{})-1], false},
		{"exec-cut-in-argv", okExec[:len(okExec)-5], false},
		{"lengths-past-end", record(&hugeLens, "abc"), false},
		{"unknown-kind", record(&bpf.OnceEventHeader{Kind: 99}), false},
		{"kind-zero", make([]byte, 256), false},
		{"garbage", garbage, false},
	}
}

func seedFile(b []byte) []byte {
	return []byte("go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n")
}

// TestFuzzDecodeSeeds checks the committed corpus is what decodeSeeds
// builds now (rewrite it with -update-seeds) and that Decode accepts the
// valid seeds and rejects the malformed ones.
func TestFuzzDecodeSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	seeds := decodeSeeds()
	if *updateSeeds {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			if err := os.WriteFile(filepath.Join(dir, s.name), seedFile(s.rec), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (generate the corpus: go test ./collector -run TestFuzzDecodeSeeds -update-seeds)", err)
	}
	if len(ents) != len(seeds) {
		t.Errorf("%d files in %s, want the %d seeds (regenerate with -update-seeds)", len(ents), dir, len(seeds))
	}
	for _, s := range seeds {
		got, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil || !bytes.Equal(got, seedFile(s.rec)) {
			t.Errorf("seed %s is missing or stale (regenerate with -update-seeds): %v", s.name, err)
		}
		var ev trace.Event
		if err := Decode(s.rec, &ev); (err == nil) != s.valid {
			t.Errorf("seed %s: Decode error %v, want valid %v", s.name, err, s.valid)
		}
	}
}
