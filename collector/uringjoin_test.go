package collector

import (
	"testing"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/trace"
)

func uringSubmitRecord(req uint64, sys trace.Syscall, fname string) []byte {
	return record(&bpf.OnceUringSubmitEvent{
		Hdr:  bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_URING_SUBMIT, Syscall: uint8(sys)},
		Task: bpf.OnceTaskInfo{Pid: 10, Tid: 11, StartNs: 5, ExecId: 1, Comm: [16]uint8{'u'}},
		Req:  req, EnterNs: 100, Flags: 0o2000000, Dirfd: -100, FnameLen: uint16(len(fname)),
	}, fname)
}

func uringCompleteRecord(req uint64, pid uint32, ret int32, status trace.Status, path string) []byte {
	return record(&bpf.OnceUringCompleteEvent{
		Hdr: bpf.OnceEventHeader{Kind: bpf.OnceEventKindEVENT_URING_COMPLETE, Status: uint16(status)},
		Req: req, ExitNs: 150, Ino: 42, Dev: 8<<20 | 1, Gen: 7, Pid: pid, Ret: ret, PathLen: uint16(len(path)),
	}, path)
}

// feed decodes recs in order as Next does and returns the opens it makes.
func feed(t *testing.T, tr *Tracer, recs ...[]byte) []trace.Event {
	t.Helper()
	var out []trace.Event
	for _, b := range recs {
		var ev trace.Event
		if err := decode(b, &ev, &tr.half); err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case uringSubmit:
			tr.keepUringSubmit(&ev, &tr.half)
		case uringComplete:
			if tr.joinUring(&ev, &tr.half) {
				out = append(out, ev)
			}
		default:
			t.Fatalf("kind %d", ev.Kind)
		}
	}
	return out
}

func TestUringJoin(t *testing.T) {
	t.Run("success", func(t *testing.T) {
		var tr Tracer
		evs := feed(t, &tr, uringSubmitRecord(0xa0, trace.SysIoUringOpenat2, "f"),
			uringCompleteRecord(0xa0, 10, 4, 0, "/d/f"))
		if len(evs) != 1 {
			t.Fatalf("%d opens, want 1", len(evs))
		}
		ev := evs[0]
		o := ev.Open
		if ev.Kind != trace.EventOpen || ev.Task.Pid != 10 || ev.Task.Tid != 11 || ev.Task.Comm != "u" ||
			o.Syscall != trace.SysIoUringOpenat2 || o.Fname != "f" || o.Path != "/d/f" || o.Ret != 4 ||
			o.EnterNs != 100 || o.ExitNs != 150 || o.Ino != 42 || o.Gen != 7 || o.Flags != 0o2000000 || o.Dirfd != -100 {
			t.Errorf("joined %+v %+v", ev.Task, o)
		}
		if len(tr.uring) != 0 {
			t.Errorf("%d requests left", len(tr.uring))
		}
	})
	t.Run("completion without its submission", func(t *testing.T) {
		var tr Tracer
		if evs := feed(t, &tr, uringCompleteRecord(0xa0, 10, 4, 0, "/d/f")); len(evs) != 0 {
			t.Errorf("%d opens from a completion alone", len(evs))
		}
	})
	t.Run("request address reused", func(t *testing.T) {
		var tr Tracer
		evs := feed(t, &tr,
			uringSubmitRecord(0xa0, trace.SysIoUringOpenat, "x"), uringCompleteRecord(0xa0, 10, 3, 0, "/x"),
			uringSubmitRecord(0xa0, trace.SysIoUringOpenat, "y"), uringCompleteRecord(0xa0, 10, 4, 0, "/y"))
		if len(evs) != 2 || evs[0].Open.Fname != "x" || evs[1].Open.Fname != "y" || evs[1].Open.Path != "/y" {
			t.Errorf("opens %+v", evs)
		}
	})
	t.Run("failure: the base dir kept for a relative name only", func(t *testing.T) {
		var tr Tracer
		evs := feed(t, &tr,
			uringSubmitRecord(1, trace.SysIoUringOpenat, "rel"), uringCompleteRecord(1, 10, -2, trace.StPathIsBase, "/cwd"),
			uringSubmitRecord(2, trace.SysIoUringOpenat, "/abs"), uringCompleteRecord(2, 10, -2, trace.StPathIsBase, "/cwd"))
		if len(evs) != 2 {
			t.Fatalf("%d opens", len(evs))
		}
		if o := evs[0].Open; o.Path != "/cwd" || !o.Status.Has(trace.StPathIsBase) {
			t.Errorf("relative failure: %+v", o)
		}
		if o := evs[1].Open; o.Path != "" || o.Status.Has(trace.StPathIsBase) {
			t.Errorf("absolute failure: %+v", o)
		}
	})
	t.Run("completed by another process", func(t *testing.T) {
		var tr Tracer
		evs := feed(t, &tr, uringSubmitRecord(1, trace.SysIoUringOpenat, "f"), uringCompleteRecord(1, 99, 4, 0, "/other"))
		if len(evs) != 1 {
			t.Fatalf("%d opens", len(evs))
		}
		if o := evs[0].Open; o.Path != "" || o.Ino != 0 || o.Gen != 0 || !o.Status.Has(trace.StPathUnresolved) || o.Ret != 4 {
			t.Errorf("open %+v: want counted, unresolved", o)
		}
	})
	t.Run("bounded, and dropped at exit", func(t *testing.T) {
		var tr Tracer
		for i := range maxUringPending + 10 {
			feed(t, &tr, uringSubmitRecord(uint64(i+1), trace.SysIoUringOpenat, "f"))
		}
		if len(tr.uring) != maxUringPending {
			t.Errorf("%d requests kept, want the bound %d", len(tr.uring), maxUringPending)
		}
		tr.dropUring(10)
		if len(tr.uring) != 0 {
			t.Errorf("%d requests kept after the process's exit", len(tr.uring))
		}
	})
}
