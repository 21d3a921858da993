package collector

import (
	"testing"
	"time"
)

func feed(l *Live, s *seq, now time.Time) {
	for i := range s.evs {
		l.Handle(&s.evs[i], now)
	}
}

func TestLiveDetectors(t *testing.T) {
	now := time.Unix(1000, 0)
	cp := task(10, 10, 500, 3, "cp")
	env := task(20, 20, 600, 1, "env")
	envAfter := task(20, 20, 600, 2, "true")
	s := (&seq{}).
		open(cp, "src", "/tmp/src", 8, 42, 3).
		open(cp, "/tmp/link", "/tmp/link", 8, 42, 4).
		open(cp, "src", "/tmp/src", 8, 42, 5).
		open(cp, "dst", "/tmp/dst", 8, 43, 6)
	for _, d := range []string{"/a", "/b", "/c"} {
		s.exec(env, d+"/true", enoent, "true")
	}
	s.image(envAfter, "/usr/bin/true").exec(envAfter, "/usr/bin/true", 0, "true")
	l := NewLive(LiveOptions{})
	feed(l, s, now)

	rows := l.Rows(SortDup, 0)
	if len(rows) != 2 || rows[0].Comm != "cp" || rows[0].DupFiles != 1 || rows[0].ExtraOpens != 2 {
		t.Fatalf("rows by dup: %+v", rows)
	}
	if rows[0].Worst != "/tmp/src x3" {
		t.Errorf("worst %q", rows[0].Worst)
	}
	byExec := l.Rows(SortExec, 1)
	if len(byExec) != 1 || byExec[0].Comm != "env" || byExec[0].ExecProbes != 3 || byExec[0].Launches != 1 {
		t.Fatalf("rows by exec: %+v", byExec)
	}
	f := l.Drain()
	if len(f) != 1 || f[0].Kind != KindFailedExecProbes || f[0].Failed != 3 || *f[0].Found != "/usr/bin/true" {
		t.Fatalf("findings so far %+v", f)
	}
	// The duplicate is reported when the image ends, with its final count.
	feed(l, (&seq{}).exit(cp, 0), now)
	f = l.Drain()
	if len(f) != 1 || f[0].Kind != KindDuplicateOpen || f[0].Count != 3 || len(f[0].Paths) != 2 {
		t.Fatalf("findings at exit %+v", f)
	}
	if l.Totals.DuplicateOpens != 2 || l.Totals.ExecProbes != 3 || l.Totals.Opens != 4 {
		t.Errorf("totals %+v", l.Totals)
	}
	// Exited rows stay for the grace period, then go.
	if rows := l.Rows(SortDup, 0); !rows[0].Exited {
		t.Errorf("exited row not marked: %+v", rows[0])
	}
	l.Expire(now.Add(time.Minute))
	if l.Len() != 1 { // env exec.d: only true is live
		t.Errorf("after expiry %d images, want 1", l.Len())
	}
}

// TestLiveBounded: a churn of short-lived processes and of files never
// grows the state past its caps, and every eviction is counted.
func TestLiveBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLive(LiveOptions{MaxProcesses: 1000, MaxFiles: 50, Grace: time.Second})
	for i := 0; i < 100000; i++ {
		p := task(uint32(1000+i%30000), uint32(1000+i%30000), uint64(i), 1, "churn")
		evs := (&seq{}).open(p, "/etc/a", "/etc/a", 1, 1, 3).open(p, "/etc/a", "/etc/a", 1, 1, 3)
		if i%2 == 0 {
			evs.exit(p, 0) // half exit, half are killed without us seeing an exit
		}
		feed(l, evs, now.Add(time.Duration(i)*time.Millisecond))
		if l.Len() > 1000 {
			t.Fatalf("%d images after %d processes, cap 1000", l.Len(), i+1)
		}
		l.Drain()
	}
	if l.Totals.Evicted == 0 {
		t.Error("no eviction counted")
	}
	big := task(7, 7, 1, 1, "many")
	s := &seq{}
	for i := 0; i < 200; i++ {
		s.open(big, "/f", "/f", 1, uint64(i), 3)
	}
	feed(l, s, now)
	if im := l.current[procKey{7, 1}]; im == nil || len(im.files) != 50 || l.Totals.FilesCapped != 150 {
		t.Errorf("files not capped: %d, capped count %d", len(im.files), l.Totals.FilesCapped)
	}
}
