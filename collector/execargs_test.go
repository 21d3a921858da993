package collector

import (
	"slices"
	"testing"

	"github.com/oncetool/once/bpf"

	"github.com/oncetool/once/trace"
)

// An exec's strings arrive in an EventExecArgs record before the exec
// record; Tracer.Next joins them by the tid that called exec.
func TestJoinExecArgs(t *testing.T) {
	args := func(pid, tid uint32, fname, argv string) []byte {
		h := bpf.OnceExecEvent{
			Hdr:      bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC_ARGS},
			Task:     bpf.OnceTaskInfo{Pid: pid, Tid: tid},
			OldTid:   tid,
			FnameLen: uint16(len(fname)), ArgsLen: uint16(len(argv)),
		}
		return record(&h, fname, argv)
	}
	exit := func(pid, oldTid uint32, ret int32, status trace.Status, fname, argv string) []byte {
		h := bpf.OnceExecEvent{
			Hdr:      bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXEC, Status: uint16(status)},
			Task:     bpf.OnceTaskInfo{Pid: pid, Tid: pid},
			OldTid:   oldTid,
			Ret:      ret,
			FnameLen: uint16(len(fname)), ArgsLen: uint16(len(argv)),
		}
		return record(&h, fname, argv)
	}
	procExit := func(pid uint32) []byte {
		h := bpf.OnceProcEvent{Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_EXIT}, Task: bpf.OnceTaskInfo{Pid: pid, Tid: pid}}
		return record(&h)
	}
	type want struct {
		fname  string
		argv   []string
		status trace.Status
	}
	tests := []struct {
		name    string
		recs    [][]byte
		want    []want // the exec records Next returns, in order
		decErrs uint64
		left    int // strings still kept
	}{
		{"joined", [][]byte{
			args(1, 1, "/d1/x", "x\x00-v\x00"),
			exit(1, 1, -2, trace.StArgsSent, "", ""),
		}, []want{{"/d1/x", []string{"x", "-v"}, 0}}, 0, 0},
		{"a non-leader thread's exec: joined by the tid that called it", [][]byte{
			args(1, 7, "/bin/t", "t\x00"),
			exit(1, 7, 0, trace.StArgsSent, "", ""),
		}, []want{{"/bin/t", []string{"t"}, 0}}, 0, 0},
		{"interleaved threads", [][]byte{
			args(1, 2, "/a", "a\x00"),
			args(1, 3, "/b", "b\x00"),
			exit(1, 3, -2, trace.StArgsSent, "", ""),
			exit(1, 2, -13, trace.StArgsSent, "", ""),
		}, []want{{"/b", []string{"b"}, 0}, {"/a", []string{"a"}, 0}}, 0, 0},
		{"a later send replaces the first", [][]byte{
			args(1, 1, "/x", ""),
			args(1, 1, "/x", "x\x00y\x00"),
			exit(1, 1, 0, trace.StArgsSent|trace.StFnameReread, "", ""),
		}, []want{{"/x", []string{"x", "y"}, trace.StFnameReread}}, 0, 0},
		{"strings sent by the exit win over the entry's", [][]byte{
			args(1, 1, "/x", ""),
			exit(1, 1, -8, trace.StFnameReread, "/x", "x\x00"),
		}, []want{{"/x", []string{"x"}, trace.StFnameReread}}, 0, 0},
		{"strings missing: unreadable, counted", [][]byte{
			exit(1, 1, -2, trace.StArgsSent, "", ""),
		}, []want{{"", nil, trace.StFnameUnreadable | trace.StArgvUnreadable}}, 1, 0},
		{"an exec that never returned is dropped at its process's exit", [][]byte{
			args(5, 6, "/k", "k\x00"),
			args(8, 8, "/l", "l\x00"),
			procExit(5),
		}, nil, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracer
			var c trace.Counters
			var got []want
			for _, b := range tc.recs {
				var ev trace.Event
				if err := Decode(b, &ev); err != nil {
					t.Fatalf("decode: %v", err)
				}
				switch ev.Kind {
				case trace.EventExecArgs:
					tr.keepExecArgs(&ev)
				case trace.EventExec:
					tr.joinExecArgs(&ev, &c)
					got = append(got, want{ev.Exec.Filename, ev.Exec.Argv, ev.Exec.Status})
				case trace.EventExit:
					tr.dropExecArgs(ev.Task.Pid)
				}
			}
			if !slices.EqualFunc(got, tc.want, func(a, b want) bool {
				return a.fname == b.fname && slices.Equal(a.argv, b.argv) && a.status == b.status
			}) {
				t.Errorf("execs %+v, want %+v", got, tc.want)
			}
			if c.DecodeErrors != tc.decErrs {
				t.Errorf("decode errors %d, want %d", c.DecodeErrors, tc.decErrs)
			}
			if len(tr.execArgs) != tc.left {
				t.Errorf("%d strings kept, want %d", len(tr.execArgs), tc.left)
			}
		})
	}
}
