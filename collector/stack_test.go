package collector

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"unsafe"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

// stacked is rec (a record made by record, its header's status at
// offset 4) with a snapshot behind it: ST_STACK set, the tail, the
// frames, the window.
func stacked(rec []byte, tail bpf.OnceStackTail, fp []uint64, window []byte) []byte {
	b := slices.Clone(rec)
	st := binary.NativeEndian.Uint16(b[4:])
	binary.NativeEndian.PutUint16(b[4:], st|uint16(stStack))
	b = append(b, unsafe.Slice((*byte)(unsafe.Pointer(&tail)), unsafe.Sizeof(tail))...)
	for _, a := range fp {
		b = binary.NativeEndian.AppendUint64(b, a)
	}
	return append(b, window...)
}

func testTail(nfp, wlen int) bpf.OnceStackTail {
	return bpf.OnceStackTail{Ip: 0x7f00_0000_1234, Sp: 0x7ffd_0000_0100, Bp: 1, Bx: 2, R12: 12, R13: 13, R14: 14, R15: 15,
		NrFp: uint16(nfp), WindowLen: uint32(wlen), Flags: stkWindowCut}
}

func TestDecodeSnapshot(t *testing.T) {
	open := bpf.OnceOpenEvent{
		Hdr:      bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_OPEN, Syscall: uint8(trace.SysOpenat), Status: uint16(trace.StSeenBefore)},
		Task:     bpf.OnceTaskInfo{Pid: 10, Tid: 11},
		FnameLen: 2, PathLen: 4, Ret: 3,
	}
	window := bytes.Repeat([]byte{0xab, 0xcd}, 100)
	fp := []uint64{0x7f00_0000_1234, 0x5555_0000_0042}
	rec := stacked(record(&open, "/a", "/x/a"), testTail(len(fp), len(window)), fp, window)

	var ev trace.Event
	if err := Decode(rec, &ev); err != nil {
		t.Fatal(err)
	}
	s := ev.Snapshot
	if s == nil {
		t.Fatal("no snapshot")
	}
	if ev.Open.Fname != "/a" || ev.Open.Path != "/x/a" || ev.Open.Status != trace.StSeenBefore {
		t.Errorf("open %+v: the strings and the status (without ST_STACK) as sent", ev.Open)
	}
	if s.IP != 0x7f00_0000_1234 || s.SP != 0x7ffd_0000_0100 || s.BP != 1 || s.BX != 2 ||
		s.R12 != 12 || s.R13 != 13 || s.R14 != 14 || s.R15 != 15 || !s.WindowCut {
		t.Errorf("registers %+v", s)
	}
	if !slices.Equal(s.FP, fp) || !bytes.Equal(s.Window, window) {
		t.Errorf("frames %#x, window %d bytes; want %#x, %d", s.FP, len(s.Window), fp, len(window))
	}
	// The window is the record's own bytes, not a copy.
	if &s.Window[0] != &rec[len(rec)-len(window)] {
		t.Error("the window was copied: it should alias the record")
	}

	// The next record says whether it has one: none left from before.
	if err := Decode(record(&open, "/a", "/x/a"), &ev); err != nil || ev.Snapshot != nil {
		t.Errorf("a record without ST_STACK: err %v, snapshot %v", err, ev.Snapshot)
	}

	// An empty window and no frames: a snapshot of registers only.
	if err := Decode(stacked(record(&open, "/a", "/x/a"), testTail(0, 0), nil, nil), &ev); err != nil ||
		ev.Snapshot == nil || ev.Snapshot.Window != nil || ev.Snapshot.FP != nil {
		t.Errorf("registers only: err %v, snapshot %+v", err, ev.Snapshot)
	}

	args := bpf.OnceExecEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC_ARGS}, OldTid: 4, FnameLen: 4, ArgsLen: 2}
	if err := Decode(stacked(record(&args, "/b/t", "t\x00"), testTail(1, 8), fp[:1], window[:8]), &ev); err != nil ||
		ev.Snapshot == nil || len(ev.Snapshot.Window) != 8 || ev.Exec.Filename != "/b/t" || ev.Exec.Status != 0 {
		t.Errorf("exec args: err %v, exec %+v, snapshot %+v", err, ev.Exec, ev.Snapshot)
	}

	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"window past the record", stacked(record(&open, "/a", "/x/a"), testTail(2, 300), fp, window)},
		{"bytes past the window", stacked(record(&open, "/a", "/x/a"), testTail(2, 100), fp, window)},
		{"frames past the record", stacked(record(&open, "/a", "/x/a"), testTail(40, 0), fp, nil)},
		{"more frames than the kernel takes", stacked(record(&open, "/a", "/x/a"), testTail(33, 0), make([]uint64, 33), nil)},
		{"a window past the bound", stacked(record(&open, "/a", "/x/a"), testTail(0, MaxStackSize+8), nil, make([]byte, MaxStackSize+8))},
		{"tail cut", stacked(record(&open, "/a", "/x/a"), testTail(0, 0), nil, nil)[:len(record(&open, "/a", "/x/a"))+20]},
		{"strings past the record", stacked(record(&open, "/a", "/x"), testTail(0, 0), nil, nil)[:len(record(&open))+4]},
	} {
		if err := Decode(tc.rec, &ev); err == nil {
			t.Errorf("%s: decoded, want an error", tc.name)
		}
	}
}

// An exec's snapshot comes with its strings at the entry, and is joined
// to the exit's record by the tid that called exec, whichever record has
// the strings.
func TestJoinExecSnapshot(t *testing.T) {
	window := []byte("0123456789abcdef")
	args := func(tid uint32, snap bool) []byte {
		h := bpf.OnceExecEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC_ARGS},
			Task: bpf.OnceTaskInfo{Pid: 1, Tid: tid}, OldTid: tid, FnameLen: 2, ArgsLen: 2}
		r := record(&h, "/x", "x\x00")
		if snap {
			r = stacked(r, testTail(1, len(window)), []uint64{0x1234}, window)
		}
		return r
	}
	exit := func(tid uint32, status trace.Status) []byte {
		h := bpf.OnceExecEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC, Status: uint16(status)},
			Task: bpf.OnceTaskInfo{Pid: 1, Tid: 1}, OldTid: tid}
		return record(&h)
	}
	for _, tc := range []struct {
		name string
		recs [][]byte
		snap bool
	}{
		{"joined", [][]byte{args(1, true), exit(1, trace.StArgsSent)}, true},
		{"kept over the kernel's copies of the strings", [][]byte{args(1, true), args(1, false), exit(1, trace.StArgsSent)}, true},
		{"joined when the exit sent the strings", [][]byte{args(1, true), exit(1, trace.StFnameReread)}, true},
		{"none sent", [][]byte{args(1, false), exit(1, trace.StArgsSent)}, false},
		{"another thread's", [][]byte{args(2, true), exit(1, trace.StArgsSent)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracer
			var c trace.Counters
			var got *trace.StackSnapshot
			for _, b := range tc.recs {
				var ev trace.Event
				if err := Decode(b, &ev); err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case trace.EventExecArgs:
					tr.keepExecArgs(&ev)
					clear(b) // the ring record is reused
				case trace.EventExec:
					tr.joinExecArgs(&ev, &c)
					got = ev.Snapshot
				}
			}
			if !tc.snap {
				if got != nil {
					t.Errorf("a snapshot %+v, want none", got)
				}
				return
			}
			if got == nil || !bytes.Equal(got.Window, window) || !slices.Equal(got.FP, []uint64{0x1234}) || got.IP != 0x7f00_0000_1234 {
				t.Errorf("snapshot %+v, want the entry's, its window copied", got)
			}
		})
	}
}

// TestStackBufMatchesBounds: the kernel's frame buffer holds the frames
// the decoder accepts (enum stack_bounds, which bpf2go generates).
func TestStackBufMatchesBounds(t *testing.T) {
	var b bpf.OnceStackBuf
	if len(b.Fp) != maxStackFrames {
		t.Errorf("stack_buf has %d frames, want %d", len(b.Fp), maxStackFrames)
	}
}

func TestStackSizeRounding(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, 0}, {1, 8}, {8192, 8192}, {1001, 1008}, {MaxStackSize, MaxStackSize}} {
		if got, err := stackSizeOf(tc.in); err != nil || got != tc.want {
			t.Errorf("stackSizeOf(%d) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
