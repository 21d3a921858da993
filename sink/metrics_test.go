package sink

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/metrics"
	"github.com/oncetool/once/trace"
)

// TestMetricsCommIsTheImages: a call is counted under the name of the
// image that made it, as its findings are: not its thread's (a JVM's or a
// browser's threads each have one: pthread_setname_np), nor one its
// process took later (prctl PR_SET_NAME). The series are the images'
// names, a few; the opens add up.
func TestMetricsCommIsTheImages(t *testing.T) {
	tk := func(tid uint32, comm string) trace.Task {
		return trace.Task{Pid: 7, Tid: tid, PPid: 1, Start: 1, ExecID: 1, Comm: comm}
	}
	evs := []trace.Event{{Kind: trace.EventImage, Task: tk(7, "java"), Proc: trace.ProcRecord{Exe: "/usr/bin/java"}}}
	for i, c := range []trace.Task{tk(7, "java"), tk(8, "GC Thread#0"), tk(9, "C2 CompilerThre"), tk(7, "myservice")} {
		evs = append(evs, trace.Event{Kind: trace.EventOpen, Task: c, Open: trace.OpenRecord{
			Syscall: trace.SysOpenat, Fname: "/etc/hostname", Path: "/etc/hostname", Dev: 1, Ino: uint64(10 + i), Ret: 3, Dirfd: -100}})
	}
	exp := metrics.New(0)
	eng := detect.New(detect.Options{Policy: detect.Bounded(0, 0)})
	m := &Metrics{Exp: exp, Eng: eng}
	for i := range evs {
		m.Event(&evs[i], eng.Handle(&evs[i], time.Unix(1, 0)))
	}
	rec := httptest.NewRecorder()
	exp.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var series []string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, "once_opens_total{") && strings.Contains(l, `result="ok"`) {
			series = append(series, l)
		}
	}
	if len(series) != 1 || !strings.Contains(series[0], `comm="java"`) || !strings.HasSuffix(series[0], " 4") {
		t.Errorf("once_opens_total series %q; want one, comm=\"java\", 4 opens", series)
	}
}

// TestWhoOfUnnamedContainer: a container with no name is labelled by its
// short id: an engine's 64 hex digits cut to 12, any other id (runc run
// by hand: runc run web) whole, never left out.
func TestWhoOfUnnamedContainer(t *testing.T) {
	long := "3a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f9012"
	for _, tc := range []struct {
		c    trace.Container
		want string
	}{
		{trace.Container{ID: long, Name: "web"}, "web"},
		{trace.Container{ID: long}, "3a4b5c6d7e8f"},
		{trace.Container{ID: "c1test", Runtime: "runc"}, "c1test"},
		{trace.Container{ID: "webserver-production", Runtime: "runc"}, "webserver-production"},
	} {
		c := tc.c
		if got := whoOf("w", &trace.Process{Container: &c}).Container; got != tc.want {
			t.Errorf("container label of %+v = %q, want %q", tc.c, got, tc.want)
		}
	}
}
