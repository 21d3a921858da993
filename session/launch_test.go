package session

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLaunchFallbackSpendsThread: a start that Launch cannot run on the
// launcher thread (none made, or one start already run there) runs on a
// thread the runtime then ends, never the caller's: startCommand drops
// the thread's privileges in it, which on a pooled thread would hold for
// whatever goroutine ran there next, and not surely where the fork is.
func TestLaunchFallbackSpendsThread(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *Stacks
	}{
		{"no launcher thread", &Stacks{}},
		{"the launcher's start already sent", func() *Stacks {
			s := &Stacks{launch: make(chan func() error, 1), launched: make(chan error, 1)}
			s.closing.Do(func() { close(s.launch) })
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The caller on a thread of its own, not the main one, as
			// the command's start may be called from.
			type launched struct {
				caller, tid int
				err         error
			}
			ch := make(chan launched, 1)
			var spare []chan struct{}
			defer func() {
				for _, c := range spare {
					close(c)
				}
			}()
			for range 8 {
				held := make(chan struct{})
				spare = append(spare, held)
				onMain := make(chan bool, 1)
				go func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					if unix.Gettid() == os.Getpid() {
						onMain <- true
						<-held // keep the main thread taken, so the next is not it
						return
					}
					onMain <- false
					var l launched
					l.caller = unix.Gettid()
					l.err = tc.s.Launch(func() error { l.tid = unix.Gettid(); return nil })
					ch <- l
				}()
				if !<-onMain {
					break
				}
			}
			l := <-ch
			if l.err != nil {
				t.Fatal(l.err)
			}
			tid := l.tid
			if tid == l.caller {
				t.Fatalf("start ran on the caller's thread %d", tid)
			}
			if tid == os.Getpid() {
				// The main thread, which the runtime cannot end: it
				// parks it for good instead, out of the pool too.
				return
			}
			task := "/proc/self/task/" + strconv.Itoa(tid)
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(task); os.IsNotExist(err) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("thread %d that ran start still runs: back in the runtime's pool", tid)
				}
			}
		})
	}
}
