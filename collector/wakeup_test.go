package collector_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestWakeAtThreshold: with batched wakeups, a reader waiting on an empty
// ring is woken once the backlog reaches a sixteenth of the ring, not
// left to its deadline. The kernel's default wakeup only wakes a reader
// that has read up to the record committed, which a reader of a backlog
// sent without wakeups never has: the record that reaches the threshold
// must force one. The opener's failed opens (each sent, with its name
// and directory) make about twice the threshold of a 1 MiB ring.
func TestWakeAtThreshold(t *testing.T) {
	testprog.RequireRoot(t)
	opener := testprog.Build(t, testprog.Opener)
	tr, err := collector.Open(collector.Options{
		Filter:         collector.Filter{Comms: []string{filepath.Base(opener)}},
		RingBufferSize: 1 << 20,
		BatchWakeups:   true,
	})
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	dir := t.TempDir()
	var args []string
	long := strings.Repeat("n", 100)
	for i := range 600 {
		args = append(args, "fail:"+filepath.Join(dir, fmt.Sprintf("%s%04d", long, i)))
	}
	// The reader waits first, on an empty ring; the deadline is the
	// poll a session would never let run this long.
	const deadline = 20 * time.Second
	tr.SetDeadline(time.Now().Add(deadline))
	got := make(chan error, 1)
	start := time.Now()
	go func() {
		var ev trace.Event
		var c trace.Counters
		got <- tr.Next(&ev, &c)
	}()
	time.Sleep(100 * time.Millisecond)
	if out, err := exec.Command(opener, args...).CombinedOutput(); err != nil {
		t.Fatalf("opener: %v: %s", err, out)
	}
	err = <-got
	// Not a speed assertion: a reader left asleep wakes at the deadline
	// (and then reads the backlog), one woken does within milliseconds.
	if waited := time.Since(start); waited > deadline/2 {
		t.Fatalf("the reader slept %v, to its %v deadline, through a backlog past the wakeup threshold", waited.Round(time.Second), deadline)
	}
	if err != nil {
		t.Fatalf("next: %v", err)
	}
}
