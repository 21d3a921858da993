package collector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/strace"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/detect"
)

// TestTalliedOpensAreExact: past SendOpensPerKind opens of one kind the
// kernel only counts; the counts, per kind and in total, must still be
// exact, from one thread or from several at once.
func TestTalliedOpensAreExact(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	f := tempFile(t, t.TempDir(), "target")
	argv := []string{opener, "repeat:1000:openat:" + f, "repeat:300:open:" + f, "threads:4:repeat:500:openat2:" + f}
	kinds := map[trace.Syscall]int{trace.SysOpenat: 1000, trace.SysOpen: 300, trace.SysOpenat2: 2000}
	const total = 3300
	for _, send := range []int{0, 1, 2, detect.DefaultMaxCalls} {
		t.Run(fmt.Sprintf("send %d per kind", send), func(t *testing.T) {
			r := traceCmd(t, exec.Command(argv[0], argv[1:]...), collector.Options{SendOpensPerKind: send})
			per := opensOf(r, idOf(t, f))
			if len(per) != 1 {
				t.Fatalf("target opened by %d images, want 1", len(per))
			}
			fo := per[0]
			if fo.Count != total {
				t.Errorf("count %d, want %d", fo.Count, total)
			}
			got := map[trace.Syscall]int{}
			for _, k := range fo.Kinds {
				got[k.Syscall] += k.Count
			}
			for sc, n := range kinds {
				if got[sc] != n {
					t.Errorf("%s: %d opens, want %d (kinds %+v)", sc, got[sc], n, fo.Kinds)
				}
			}
			if fo.CallsOmitted != fo.Count-len(fo.Calls) {
				t.Errorf("%d calls kept + %d omitted != count %d", len(fo.Calls), fo.CallsOmitted, fo.Count)
			}
			// Each thread's first open of a kind is sent before the
			// kernel counts repeats, then send more: at most that
			// many per thread (4 at most here) are sent beyond send.
			var most, least uint64
			if send > 0 {
				for _, n := range kinds {
					most += uint64(max(0, n-send))
					least += uint64(max(0, n-send-4))
				}
			}
			if c := r.Counters; c.OpensTallied > most || c.OpensTallied < least || c.Lost() != 0 {
				t.Errorf("tallied %d (want %d to %d), lost %d", c.OpensTallied, least, most, c.Lost())
			}
			if send > 0 && fo.ExtraNs == 0 {
				t.Error("no time counted for the extra opens")
			}
			if f := findings(r, trace.KindDuplicateOpen); len(f) != 1 || f[0].Count != total {
				t.Errorf("duplicate findings %+v, want one of %d opens", f, total)
			}
		})
	}
}

// TestTalliedOpensAgreeWithStrace: a shell reading one file 600 times,
// traced as once run traces (MaxCalls sent per kind, the rest tallied),
// with strace -f under once: the opens of each file must agree.
func TestTalliedOpensAgreeWithStrace(t *testing.T) {
	testprog.RequireRoot(t)
	stracePath := strace.Require(t)
	dir := t.TempDir()
	f := tempFile(t, dir, "input")
	out := filepath.Join(t.TempDir(), "strace.out")
	argv := []string{"sh", "-c", `i=0; while [ $i -lt 600 ]; do read x < "$0"; i=$((i+1)); done`, f}
	cmd := strace.Command(context.Background(), out, argv...)
	cmd.Path = stracePath
	r := traceCmd(t, cmd, collector.Options{SendOpensPerKind: detect.DefaultMaxCalls})
	calls, err := strace.ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, c := range calls {
		if c.IsOpen() && c.Succeeded() && c.Path == f {
			want++
		}
	}
	if want < 600 {
		t.Fatalf("strace saw %d opens of %s, want at least 600: the workload did not run", want, f)
	}
	got := 0
	for _, fo := range opensOf(r, idOf(t, f)) {
		got += fo.Count
	}
	if got != want {
		t.Errorf("once counted %d opens of %s, strace -f %d", got, f, want)
	}
	if r.Counters.OpensTallied == 0 {
		t.Error("nothing was tallied: the test did not reach the tally path")
	}
	if r.Counters.Lost() != 0 {
		t.Errorf("events lost: %+v", r.Counters)
	}
}

// TestTalliesComeBeforeImageEnd: the tallies of an image that ends (here
// by exec) must reach a consumer before the event that ends it, so a live
// view counts every open when it closes the image, without waiting for a
// SyncTallies.
func TestTalliesComeBeforeImageEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter collector.Filter
	}{
		{"unfiltered", collector.Filter{}},
		// The image exec'd (true) fails --comm opener: the kernel
		// sends no image event for it, and the successful exec's
		// record alone ends the image it replaced.
		{"comm filter the new image fails", collector.Filter{Comms: []string{"opener"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { talliesBeforeImageEnd(t, tc.filter) })
	}
}

func talliesBeforeImageEnd(t *testing.T, filter collector.Filter) {
	testprog.RequireRoot(t)
	opener := testprog.Build(t, testprog.Opener)
	f := tempFile(t, t.TempDir(), "target")
	tr, err := collector.Open(collector.Options{Tracked: true, SendOpensPerKind: 2, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	live := detect.New(detect.Options{Policy: detect.Bounded(0, 0)})
	var atExec []trace.Finding
	var tallies int
	cmd := exec.Command(opener, "repeat:500:openat:"+f, "exec:/bin/true")
	opts := runOpts{linger: 2 * time.Second, engine: live, onEvent: func(ev *trace.Event, _ detect.Annotation) {
		switch ev.Kind {
		case trace.EventTally:
			tallies++
		case trace.EventExec:
			// A successful exec's record ends the image it replaced.
			atExec = append(atExec, live.Drain()...)
		}
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := runCommand(ctx, tr, cmd, opts); err != nil {
		t.Fatal(err)
	}
	if tallies == 0 {
		t.Fatal("no tally event: the kernel sent every open")
	}
	id := idOf(t, f)
	for _, fd := range atExec {
		if fd.Kind == trace.KindDuplicateOpen && fd.Dev == id.dev && fd.Ino == id.ino {
			if fd.Count != 500 {
				t.Errorf("at the exec the image's duplicate finding counts %d opens, want 500", fd.Count)
			}
			return
		}
	}
	t.Errorf("no duplicate finding for %s when its image ended; findings then: %+v", f, atExec)
}

// TestTallyEvictionIsCounted: a tallied kind whose kernel count is evicted
// (the map full of newer kinds) before once read it back must show as
// tallies_evicted and as loss, never vanish: whether it stays gone or the
// kind comes back and the kernel counts it again from zero.
func TestTallyEvictionIsCounted(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	for _, reopen := range []bool{false, true} {
		t.Run(fmt.Sprintf("opened again after: %v", reopen), func(t *testing.T) {
			// hot is opened 50 times, its count then pushed out of a
			// 64-slot map by 400 kinds that are each repeated once.
			hot, args := hotThenOthers(t, 400, "repeat:2:openat:")
			made := 50
			if reopen {
				args = append(args, "repeat:50:openat:"+hot)
				made += 50
			}
			r := traceCmd(t, exec.Command(opener, args...), collector.Options{SendOpensPerKind: 1, TallySlots: 64})
			c := r.Counters
			if c.TalliesEvicted == 0 {
				t.Fatalf("no eviction counted (tallied %d)", c.OpensTallied)
			}
			if c.Lost() < c.TalliesLost() {
				t.Errorf("lost %d, evicted %d + late %d: an eviction must count as loss", c.Lost(), c.TalliesEvicted, c.TalliesLate)
			}
			per := opensOf(r, idOf(t, hot))
			if len(per) != 1 || per[0].Count > made {
				t.Errorf("hot counted %+v, want at most its %d opens", per, made)
			}
		})
	}
}

// TestLateTallyIsCounted: a thread's last repeats of a kind wait in its own
// slot until it exits. If the kind's kernel count is gone by then (here
// pushed out of a 64-slot map by other threads' kinds), those repeats must
// count as loss (tallies late), never vanish.
func TestLateTallyIsCounted(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	// hot: sent, sent as the last before tallying, counted in the map,
	// then 47 counted in the thread's slot, 16 at a time added to the
	// map: 15 wait for the main thread's exit. Each other file is a kind
	// tallied by a thread of its own, so hot's slot stays as it is.
	hot, args := hotThenOthers(t, 300, "threads:1:repeat:3:openat:")
	r := traceCmd(t, exec.Command(opener, args...), collector.Options{SendOpensPerKind: 1, TallySlots: 64})
	c := r.Counters
	if c.TalliesLate == 0 {
		t.Fatalf("no late tally counted (evicted %d, tallied %d)", c.TalliesEvicted, c.OpensTallied)
	}
	if c.Lost() < c.TalliesLost() {
		t.Errorf("lost %d, evicted %d + late %d: a late tally must count as loss", c.Lost(), c.TalliesEvicted, c.TalliesLate)
	}
	if per := opensOf(r, idOf(t, hot)); len(per) != 1 || per[0].Count > 50 || per[0].Count < 2 {
		t.Errorf("hot counted %d images, want one of 2 to 50 opens (the two sent, then what was read before its count went)", len(per))
	}
}

// TestPredictedRepeats: a loop opening one file through one name buffer,
// as C programs do, then the same buffer naming other files in turn. The
// kernel reads no clock at the entry of what it predicts is one more
// repeat of the loop's file (bar a sample); the loop's count and time must
// stay whole, the first other file's open, mispredicted, must come through
// counted and marked as having no latency (not with a made-up one), and
// the misprediction must stop the predicting: the rest are timed.
func TestPredictedRepeats(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	hot := tempFile(t, dir, "hot")
	args := []string{"repeat:100:bufat:" + hot}
	var others []string
	for i := range 20 {
		others = append(others, tempFile(t, dir, fmt.Sprintf("other%d", i)))
		args = append(args, "bufat:"+others[i])
	}
	r := traceCmd(t, exec.Command(opener, args...), collector.Options{SendOpensPerKind: 1})
	hp := opensOf(r, idOf(t, hot))
	if len(hp) != 1 || hp[0].Count != 100 {
		t.Fatalf("hot counted in %d images, want 1, with 100 opens", len(hp))
	}
	if hp[0].ExtraNs == 0 {
		t.Error("no time counted for hot's repeats")
	}
	for _, c := range hp[0].Calls {
		if c.Untimed {
			t.Errorf("hot's sent open at %d is untimed", c.EnterNs)
		}
	}
	// hot: opens 1 and 2 sent, 3 counted in the map (its arguments
	// remembered), 4 to 100 predicted: 97 entries, one in 8 timed. The
	// first other is the 98th prediction, not a sample.
	for i, f := range others {
		op := opensOf(r, idOf(t, f))
		if len(op) != 1 || op[0].Count != 1 || len(op[0].Calls) != 1 {
			t.Fatalf("%s: in %d images, want one open", f, len(op))
		}
		c := op[0].Calls[0]
		if want := i == 0; c.Untimed != want || (c.Ns == 0) != want {
			t.Errorf("%s: untimed %v, ns %d; want untimed %v", filepath.Base(f), c.Untimed, c.Ns, want)
		}
	}
	if c := r.Counters; c.OpensUntimed != 1 || c.Lost() != 0 {
		t.Errorf("opens untimed %d (want 1), lost %d", c.OpensUntimed, c.Lost())
	}
}

// TestPredictedLookupPair: W5's stat loop, a file and a missing name
// stat-ed in turn, each name from its own buffer. Past the first ones
// sent, the kernel counts both repeats, and predicts each entry from the
// arguments of its own kind (the hit's from its slot, the miss's from its
// run), reading the clock for one in TALLY_TIME_EVERY of each. In every
// mode the two findings count every call, and each kind's counted repeats
// carry time samples of their own: a count of predictions shared by the
// two kinds would time only the one on its beat.
func TestPredictedLookupPair(t *testing.T) {
	testprog.RequireRoot(t)
	opener := testprog.Build(t, testprog.Opener)
	const n = 4000
	dir := t.TempDir()
	hit := tempFile(t, dir, "hit")
	miss := filepath.Join(dir, "miss")
	id := idOf(t, hit)
	for _, m := range sendModes {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts
			opts.Tracked = true
			opts.Rings = envRings(t)
			tr, err := collector.Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			var hitTallied, hitNs uint64
			var missCounted, missTimed uint64
			onEvent := func(ev *trace.Event, _ detect.Annotation) {
				if ev.Kind == trace.EventTally && ev.Tally.Syscall.IsLookup() && ev.Tally.Ino == id.ino {
					hitTallied += ev.Tally.Opens
					hitNs += ev.Tally.Ns
				}
				// The event is reused: only its kind's record is its own.
				// A lookup's repeats are its thread's lookup run's.
				var r trace.Repeats
				switch ev.Kind {
				case trace.EventOpen:
					r = ev.Open.LookupMissRepeats
				case trace.EventUnsent:
					r = ev.Proc.LookupMissRepeats
				}
				missCounted += uint64(r.N)
				missTimed += uint64(r.Timed)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := runCommand(ctx, tr, exec.Command(opener, fmt.Sprintf("statpair:%d:%s:%s", n, hit, miss)),
				runOpts{linger: 2 * time.Second, onEvent: onEvent})
			if err != nil {
				t.Fatal(err)
			}
			got := findingLines(r)
			want := []string{fmt.Sprintf("duplicate_stat %s %d", hit, n), fmt.Sprintf("repeated_miss %s %d", miss, n)}
			if !slices.Equal(got, want) {
				t.Errorf("findings %q, want %q", got, want)
			}
			for i := range r.Findings {
				if fd := &r.Findings[i]; fd.WastedNs == 0 {
					t.Errorf("%s %s: no time wasted", fd.Kind, fd.Subject())
				}
			}
			if c := r.Counters; c.Lost() != 0 || c.OpensUntimed != 0 {
				t.Errorf("lost %d, untimed %d: %+v", c.Lost(), c.OpensUntimed, c)
			}
			if m.opts.SendOpensPerKind == 0 {
				if hitTallied != 0 || missCounted != 0 {
					t.Errorf("%d hits and %d misses counted in the kernel with every call to be sent", hitTallied, missCounted)
				}
				return
			}
			// All but a few of each are counted in the kernel, and of
			// those one in TALLY_TIME_EVERY (8) is timed.
			for _, c := range []struct {
				what           string
				counted, timed uint64
			}{{"hits", hitTallied, 0}, {"misses", missCounted, missTimed}} {
				if c.counted < n-8 || c.counted > n {
					t.Errorf("%d %s counted in the kernel, want %d less the few sent", c.counted, c.what, n)
				}
			}
			if hitNs == 0 {
				t.Errorf("%d hits counted in the kernel, none timed", hitTallied)
			}
			if lo, hi := (missCounted-16)/8, missCounted/8+1; missTimed < lo || missTimed > hi {
				t.Errorf("%d of %d misses counted in the kernel were timed, want %d to %d", missTimed, missCounted, lo, hi)
			}
		})
	}
}

// hotThenOthers makes a file opened 50 times with openat, then n other
// files each opened by the action prefix+file: the opener arguments that
// push hot's kind out of a small tally map.
func hotThenOthers(t *testing.T, n int, prefix string) (hot string, args []string) {
	dir := t.TempDir()
	hot = tempFile(t, dir, "hot")
	args = []string{"repeat:50:openat:" + hot}
	for i := range n {
		args = append(args, prefix+tempFile(t, dir, fmt.Sprintf("f%d", i)))
	}
	return hot, args
}

// TestNoPredictionAcrossExec: an exec starts a new image with nothing
// counted yet, so an open through a buffer at the old image's address (the
// same static binary) must not be taken for one more of the old image's
// repeats: it is timed like any other.
func TestNoPredictionAcrossExec(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	dir := t.TempDir()
	hot, other := tempFile(t, dir, "hot"), tempFile(t, dir, "other")
	// The opener's arguments split on ':', so the second opener is
	// started through a script (sh itself opens through other buffers).
	script := filepath.Join(dir, "again.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+opener+" bufat:"+other+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := traceCmd(t, exec.Command(opener, "repeat:100:bufat:"+hot, "exec:"+script), collector.Options{SendOpensPerKind: 1})
	op := opensOf(r, idOf(t, other))
	if len(op) != 1 || len(op[0].Calls) != 1 {
		t.Fatalf("other: in %d images, want one open", len(op))
	}
	if c := op[0].Calls[0]; c.Untimed || c.Ns == 0 {
		t.Errorf("other's open after the exec: untimed %v, ns %d; want timed", c.Untimed, c.Ns)
	}
	if hp := opensOf(r, idOf(t, hot)); len(hp) != 1 || hp[0].Count != 100 {
		t.Errorf("hot counted in %d images, want 1, with 100 opens", len(hp))
	}
	if c := r.Counters; c.OpensUntimed != 0 || c.Lost() != 0 {
		t.Errorf("opens untimed %d (want 0), lost %d", c.OpensUntimed, c.Lost())
	}
}

// TestThreadsExitingTogetherKeepTheirTallies: threads killed together by
// exit_group pass the exit hook in whatever order the scheduler picks, not
// in the order they left the group. Each keeps repeats in its own slot
// until it passes; every one of them must be counted in its process, none
// lost as late, in every child.
func TestThreadsExitingTogetherKeepTheirTallies(t *testing.T) {
	prog := testprog.Build(t, testprog.Threadexit)
	f := tempFile(t, t.TempDir(), "shared")
	const procs, threads, opens = 40, 8, 6
	for _, opts := range []collector.Options{{}, {SendOpensPerKind: 1}} {
		t.Run(fmt.Sprintf("send per kind %d", opts.SendOpensPerKind), func(t *testing.T) {
			r := traceCmd(t, exec.Command(prog, f, fmt.Sprint(procs), fmt.Sprint(threads), fmt.Sprint(opens)), opts)
			per := opensOf(r, idOf(t, f))
			if len(per) != procs {
				t.Fatalf("%d images opened the file, want %d", len(per), procs)
			}
			short := 0
			for _, fo := range per {
				if fo.Count != (threads+1)*opens {
					short++
				}
			}
			if short > 0 || r.Counters.TalliesLate != 0 {
				t.Errorf("%d of %d children counted other than %d opens; tallies late %d", short, procs, (threads+1)*opens, r.Counters.TalliesLate)
			}
		})
	}
}

// TestTallyPastUnrelatedFailures: a thread whose every repeat of one file
// comes right after a failed open. Where the kernel keeps the image's
// failed basenames (first opens unsent), a failure of another basename
// can't have started a search the repeat ends: the repeats are still
// counted in the kernel. A failure of the same basename (a search the
// repeat ends, over and over) keeps every repeat sent. Either way the
// counts and findings are those of every call sent.
func TestTallyPastUnrelatedFailures(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const n = 400
	d := t.TempDir()
	f := tempFile(t, d, "target")
	missing := filepath.Join(d, "nodir")
	cases := []struct {
		name     string
		failPath string
		tallied  bool // repeats counted in the kernel under first opens unsent
	}{
		{"another basename fails", filepath.Join(missing, "other"), true},
		{"the same basename fails", filepath.Join(missing, "target"), false},
	}
	modes := []struct {
		name string
		opts collector.Options
	}{
		{"every open sent", collector.Options{}},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}},
	}
	for _, c := range cases {
		var want []string
		for _, m := range modes {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				arg := fmt.Sprintf("alternate:%d:%s:%s", n, c.failPath, f)
				r := traceCmd(t, exec.Command(opener, arg), m.opts)
				per := opensOf(r, idOf(t, f))
				if len(per) != 1 || per[0].Count != n {
					t.Fatalf("opens of the target %v, want one image with %d", counts(per), n)
				}
				if r.FailedOpens != n {
					t.Errorf("%d failed opens, want %d", r.FailedOpens, n)
				}
				// The failures repeat the thread's last one sent: past
				// the first they are counted in the kernel too, in
				// OpensTallied. A success that may end a search is sent.
				tallied, sent := r.Counters.OpensTallied, r.Counters.EventsSent
				switch {
				case m.opts.SendOpensPerKind == 0 && tallied != 0:
					t.Errorf("%d opens tallied with every open to be sent", tallied)
				case m.opts.SendOpensPerKind > 0 && c.tallied && (tallied < 2*n-n/4 || sent > uint64(n/2)):
					t.Errorf("%d of %d opens tallied, %d events sent: each failure of another basename sent the repeats", tallied, 2*n, sent)
				case m.opts.SendOpensPerKind > 0 && !c.tallied && (tallied > uint64(n) || sent < uint64(n)):
					t.Errorf("%d opens tallied, %d events sent: want each success, which may end a search, sent", tallied, sent)
				}
				if r.Counters.Lost() != 0 {
					t.Errorf("lost: %+v", r.Counters)
				}
				got := findingLines(r)
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Errorf("findings %q, want those of every open sent %q", got, want)
				}
			})
		}
	}
}

// TestTallyRecentKinds: a thread counts in the kernel the repeats of its
// recent kinds, opens and lookups alike. A loop that opens three files
// and then stats them makes six kinds in turn: each repeat is counted,
// none sent past the first, where repeats are tallied; the counts and
// findings are those of every call sent.
func TestTallyRecentKinds(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const n = 300
	d := t.TempDir()
	files := []string{tempFile(t, d, "a"), tempFile(t, d, "b"), tempFile(t, d, "c")}
	var want []string
	for _, m := range sendModes {
		t.Run(m.name, func(t *testing.T) {
			r := traceCmd(t, exec.Command(opener, "cycle:"+strconv.Itoa(n)+":"+strings.Join(files, ",")), m.opts)
			for _, f := range files {
				if per := opensOf(r, idOf(t, f)); len(per) != 1 || per[0].Count != n {
					t.Errorf("opens of %s %v, want one image with %d", f, counts(per), n)
				}
			}
			opens, lookups := r.Counters.OpensTallied, r.Counters.LookupsTallied
			if m.opts.SendOpensPerKind == 0 {
				if opens != 0 || lookups != 0 {
					t.Errorf("%d opens and %d lookups tallied with every call to be sent", opens, lookups)
				}
			} else if min := uint64(len(files) * (n - 2)); opens < min || lookups < min {
				t.Errorf("%d opens and %d lookups tallied, want %d of each or more: six recent kinds were not all counted", opens, lookups, min)
			}
			if r.Counters.Lost() != 0 {
				t.Errorf("lost: %+v", r.Counters)
			}
			got := findingLines(r)
			if len(got) != 2*len(files) {
				t.Errorf("findings %q, want a duplicate_open and a duplicate_stat of each file", got)
			}
			if want == nil {
				want = got
			} else if !slices.Equal(got, want) {
				t.Errorf("findings %q, want those of every open sent %q", got, want)
			}
		})
	}
}

// TestFailedOpenRepeats: a thread that fails to open one name again and
// again (a retry loop) has its repeats past the first ones sent counted in
// the kernel, as a lookup's are: the counts, the repeated_miss and the
// failed opens listed are those of every call sent, from one thread or
// two at once.
func TestFailedOpenRepeats(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const n = 500
	missing := filepath.Join(t.TempDir(), "missing.conf")
	for _, threads := range []int{1, 2} {
		var want []string
		for _, m := range sendModes {
			t.Run(fmt.Sprintf("%d threads/%s", threads, m.name), func(t *testing.T) {
				arg := fmt.Sprintf("threads:%d:repeat:%d:fail:%s", threads, n, missing)
				r := traceCmd(t, exec.Command(opener, arg), m.opts)
				total := threads * n
				if r.FailedOpens != total {
					t.Errorf("%d failed opens, want %d", r.FailedOpens, total)
				}
				tallied := r.Counters.OpensTallied
				if m.opts.SendOpensPerKind == 0 && tallied != 0 {
					t.Errorf("%d failed opens counted in the kernel with every call to be sent", tallied)
				} else if m.opts.SendOpensPerKind > 0 && tallied < uint64(total-4*threads) {
					t.Errorf("%d of %d failed opens counted in the kernel: the repeats were sent", tallied, total)
				}
				if r.Counters.Lost() != 0 {
					t.Errorf("lost: %+v", r.Counters)
				}
				var listed int
				for _, p := range r.Processes {
					for _, fo := range p.FailedOpens {
						if fo.Fname == missing {
							listed += fo.Count
							if len(fo.Calls)+fo.CallsOmitted != fo.Count {
								t.Errorf("%d calls listed and %d omitted of %d", len(fo.Calls), fo.CallsOmitted, fo.Count)
							}
						}
					}
				}
				if listed != total {
					t.Errorf("failed opens of %s listed %d times, want %d", missing, listed, total)
				}
				got := findingLines(r)
				if want == nil {
					want = got
					if len(got) != 1 || !strings.HasPrefix(got[0], "repeated_miss "+missing+" ") {
						t.Errorf("findings %q, want one repeated_miss of %s", got, missing)
					}
				} else if !slices.Equal(got, want) {
					t.Errorf("findings %q, want those of every open sent %q", got, want)
				}
			})
		}
	}
}

// TestMissRunsPerKind: a poll loop that stats one missing name and fails
// to open another in turn, with and without a successful open of a file
// after them. A thread keeps a run of misses of each kind, so the repeats
// of both failures past the first ones sent are counted in the kernel,
// and so are the repeated opens of the file (no failure sent moves the
// image's probe generation): with one run for both kinds every call was
// sent. The counts (totals, the file's opens) and findings are those of
// every call sent.
func TestMissRunsPerKind(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const n = 2000
	d := t.TempDir()
	f := tempFile(t, d, "hit")
	statMiss := filepath.Join(d, "nodir", "m")
	failPath := filepath.Join(d, "nodir", "f")
	for _, withOpen := range []bool{false, true} {
		arg := fmt.Sprintf("pollmiss:%d:%s:%s", n, statMiss, failPath)
		name := "two misses"
		if withOpen {
			arg += ":" + f
			name = "two misses and a hit"
		}
		var want []string
		var wantTotals [4]int
		for _, m := range sendModes {
			t.Run(name+"/"+m.name, func(t *testing.T) {
				r := traceCmd(t, exec.Command(opener, arg), m.opts)
				if r.FailedOpens != n || r.FailedLookups != n {
					t.Errorf("%d failed opens and %d failed lookups, want %d of each", r.FailedOpens, r.FailedLookups, n)
				}
				if withOpen {
					if per := opensOf(r, idOf(t, f)); len(per) != 1 || per[0].Count != n {
						t.Errorf("opens of the file %v, want one image with %d", counts(per), n)
					}
				}
				totals := [4]int{r.Opens, r.FailedOpens, r.Lookups, r.FailedLookups}
				opens, lookups, sent := r.Counters.OpensTallied, r.Counters.LookupsTallied, r.Counters.EventsSent
				t.Logf("totals %v; tallied %d opens, %d lookups; %d events sent", totals, opens, lookups, sent)
				// Of each failure, the first and one repeat (one per
				// kind) are sent, the rest counted; of the file's opens,
				// the first is sent (or counted unsent), then one
				// repeat, then the one that reads its tally back.
				lo, hi := uint64(n-2), uint64(n-2)
				if withOpen {
					lo, hi = lo+n-3, hi+n-2
				}
				switch {
				case m.opts.SendOpensPerKind == 0:
					wantTotals = totals
					if opens != 0 || lookups != 0 {
						t.Errorf("%d opens and %d lookups tallied with every call to be sent", opens, lookups)
					}
				case opens < lo || opens > hi || lookups != n-2 || sent > 200:
					t.Errorf("%d opens tallied (want %d to %d), %d lookups (want %d), %d events sent (want 200 or fewer): "+
						"a failure of one kind ended the other's run", opens, lo, hi, lookups, n-2, sent)
				}
				if totals != wantTotals {
					t.Errorf("opens, failed, lookups, failed %v, want those of every call sent %v", totals, wantTotals)
				}
				if r.Counters.Lost() != 0 {
					t.Errorf("lost: %+v", r.Counters)
				}
				got := findingLines(r)
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Errorf("findings %q, want those of every call sent %q", got, want)
				}
			})
		}
	}
}

// TestFailedOpenRepeatsResolve: openat2 failing on one name, 20 times
// with no resolve flags and then 20 times with RESOLVE_NO_SYMLINKS. The
// second are other calls (their flags are in openat2's how, not in a
// register the entry sees): in every mode each kind's first call is
// listed with its own resolve flags, and all 40 are counted.
func TestFailedOpenRepeatsResolve(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const n = 20
	missing := filepath.Join(t.TempDir(), "missing.conf")
	for _, m := range sendModes {
		t.Run(m.name, func(t *testing.T) {
			r := traceCmd(t, exec.Command(opener, fmt.Sprintf("repeat:%d:fail2:%s", n, missing),
				fmt.Sprintf("repeat:%d:fail2nosym:%s", n, missing)), m.opts)
			if r.FailedOpens != 2*n {
				t.Errorf("%d failed opens, want %d", r.FailedOpens, 2*n)
			}
			if r.Counters.Lost() != 0 {
				t.Errorf("lost: %+v", r.Counters)
			}
			byResolve := map[uint64]int{}
			for _, p := range r.Processes {
				for _, fo := range p.FailedOpens {
					for _, c := range fo.Calls {
						if c.Fname == missing && c.Syscall == trace.SysOpenat2 {
							byResolve[c.Resolve]++
						}
					}
				}
			}
			if byResolve[0] == 0 || byResolve[unix.RESOLVE_NO_SYMLINKS] == 0 || len(byResolve) != 2 {
				t.Errorf("calls listed by resolve flags %v: want some of 0 and of RESOLVE_NO_SYMLINKS (%d), no other",
					byResolve, unix.RESOLVE_NO_SYMLINKS)
			}
		})
	}
}

// sendModes are the collector's three ways to send opens: every one,
// repeats tallied past the first of their kind, and first opens counted
// too (once watch): what one program's counts and findings must agree
// across.
var sendModes = []struct {
	name string
	opts collector.Options
}{
	{"every open sent", collector.Options{}},
	{"repeats tallied", collector.Options{SendOpensPerKind: 1}},
	{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}},
}

// findingLines is each of r's findings as "KIND SUBJECT AMOUNT", sorted:
// what two runs of one program compare.
func findingLines(r *trace.Result) []string {
	var got []string
	for i := range r.Findings {
		fd := &r.Findings[i]
		got = append(got, fmt.Sprintf("%s %s %d", fd.Kind, fd.Subject(), fd.Amount()))
	}
	slices.Sort(got)
	return got
}

// TestExitThreadsLeft: the exit event says how many of the group's other
// threads the kernel had not released yet (signal->nr_threads): none for
// a process that never had another, at most the threads it made for one
// whose threads all end in exit_group.
func TestExitThreadsLeft(t *testing.T) {
	testprog.RequireRoot(t)
	prog := testprog.Build(t, testprog.Threadexit)
	f := tempFile(t, t.TempDir(), "shared")
	const procs, threads = 10, 8
	tr, err := collector.Open(collector.Options{Tracked: true})
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(prog, f, fmt.Sprint(procs), fmt.Sprint(threads), "2")
	left := map[uint32]uint32{}
	_, err = runCommand(ctx, tr, cmd, runOpts{linger: 2 * time.Second, onEvent: func(ev *trace.Event, _ detect.Annotation) {
		if ev.Kind == trace.EventExit {
			left[ev.Task.Pid] = ev.Proc.ThreadsLeft
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != procs+1 {
		t.Fatalf("%d exits, want %d", len(left), procs+1)
	}
	if n := left[uint32(cmd.Process.Pid)]; n != 0 {
		t.Errorf("the parent, single-threaded: %d threads left, want 0", n)
	}
	for pid, n := range left {
		if n > threads {
			t.Errorf("pid %d: %d threads left, more than the %d it made", pid, n, threads)
		}
	}
}

// TestTallyPastNewFailures: a loop that stats a file and then a name
// never tried before (a cache's misses), from several threads at full
// speed, as once run traces it (no table of the failed basenames): each
// failure is sent, and moves the process's probe generation; the stat
// of the file after it can end no search (no failure had its name) and
// is counted in the kernel, not sent. Sent, every one of them filled the
// ring until most calls were lost (at 50,000 rounds a thread; the sent
// failures here fit the ring, whatever the reader's pace). The counts
// are exact, nothing lost.
func TestTallyPastNewFailures(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const threads, n = 4, 5000
	d := t.TempDir()
	hit := tempFile(t, d, "hit")
	arg := fmt.Sprintf("threads:%d:statsearch:%d:%s:%s", threads, n, filepath.Join(d, "miss-%d"), hit)
	r := traceCmd(t, exec.Command(opener, arg), collector.Options{SendOpensPerKind: detect.DefaultMaxCalls})
	if r.Counters.Lost() != 0 {
		t.Errorf("lost: %+v", r.Counters)
	}
	if r.Lookups != 2*threads*n || r.FailedLookups != threads*n {
		t.Errorf("%d lookups, %d failed, want %d and %d", r.Lookups, r.FailedLookups, 2*threads*n, threads*n)
	}
	// Each thread's first stats are sent, and a stat after more failures
	// of the other threads than a process's words hold: most are counted.
	if tallied := r.Counters.LookupsTallied; tallied < threads*n*3/4 {
		t.Errorf("%d of %d stats of the file counted in the kernel: the new names' failures had them sent", tallied, threads*n)
	}
	want := fmt.Sprintf("%s %s %d", trace.KindDuplicateStat, hit, threads*n)
	if got := findingLines(r); !slices.Contains(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
}

// TestTallyEndsSearches: a search made again and again, the file found
// in one directory after its name missed in others, each success ending
// a search strace shows: a stat of the file must not be counted in the
// kernel past a failure of its basename, whether the failures repeat
// names (another each time: a PATH's entries in turn) or are new (a new
// directory each time). Every mode finds the searches every call sent
// finds; where repeats are tallied, none of the file's stats is.
func TestTallyEndsSearches(t *testing.T) {
	opener := testprog.Build(t, testprog.Opener)
	const n = 300
	d := t.TempDir()
	for _, sub := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(d, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hit := tempFile(t, filepath.Join(d, "b"), "x")
	cases := []struct {
		name, misses string
		// Under first opens unsent the image's table of failed
		// basenames decides, by basename alone: a variant's find
		// may be counted there.
		basenames bool
	}{
		{"path entries", filepath.Join(d, "a", "x") + "," + filepath.Join(d, "c", "x"), false},
		// The thread's last miss of another name: its run of misses
		// does not have x's basename, the failures before it do.
		{"another name last", filepath.Join(d, "a", "x") + "," + filepath.Join(d, "c", "x") + "," +
			filepath.Join(d, "c", "z.%d"), false},
		{"new directories", filepath.Join(d, "a", "%d", "x") + "," + filepath.Join(d, "c", "x") + "," +
			filepath.Join(d, "c", "z.%d"), false},
		// Its chain, new each round, gets the found name as a variant
		// of its stem, missed in the same directory just before.
		{"a variant", filepath.Join(d, "a", "x.%d") + "," + filepath.Join(d, "b", "x.%d"), true},
	}
	// What strace shows of each round: the misses, then the find of x.
	searches := map[string]string{
		"path entries":      fmt.Sprintf("failed_stat_probes x 2 found %q variants []", hit),
		"another name last": fmt.Sprintf("failed_stat_probes x 2 found %q variants []", hit),
		"new directories":   fmt.Sprintf("failed_stat_probes x 2 found %q variants []", hit),
		"a variant":         `failed_stat_probes x.TID-I 2 found "" variants ["x"]`,
	}
	for _, c := range cases {
		var want []string
		for _, m := range sendModes {
			// Where the image's table of failed basenames decides (first
			// opens unsent: once watch), a variant's find is not a
			// basename that failed, and is counted: a known limit of
			// that mode (docs/hooks.md), not what this test is of.
			if c.basenames && m.opts.FirstOpensUnsent {
				continue
			}
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				// The file is looked up once first: every stat of it
				// in the loop repeats it. (A first lookup is counted,
				// not sent, unless its basename failed: a find of a
				// variant is.)
				arg := fmt.Sprintf("statsearch:%d:%s:%s", n, c.misses, hit)
				r := traceCmd(t, exec.Command(opener, "stat:"+hit, arg), m.opts)
				if r.Counters.Lost() != 0 {
					t.Errorf("lost: %+v", r.Counters)
				}
				misses := strings.Count(c.misses, ",") + 1
				if r.Lookups != (misses+1)*n+1 || r.FailedLookups != misses*n {
					t.Errorf("%d lookups, %d failed, want %d and %d", r.Lookups, r.FailedLookups, (misses+1)*n+1, misses*n)
				}
				if tallied := r.Counters.LookupsTallied; m.opts.SendOpensPerKind > 0 && !m.opts.FirstOpensUnsent && tallied != 0 {
					t.Errorf("%d stats counted in the kernel, want every one sent: each may end a search", tallied)
				}
				got := chainLines(r)
				found := 0
				for _, l := range got {
					if tidRound.ReplaceAllString(l, "TID-I ") == searches[c.name] {
						found++
					}
				}
				if found != n {
					t.Errorf("%d searches %s, want one a round, %d", found, searches[c.name], n)
				}
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Errorf("findings differ from those of every call sent (%d, %d of them): %q", len(got), len(want), lineDiff(got, want))
				}
			})
		}
	}
}

// tidName is the TID- of a name statsearch made up.
var tidName = regexp.MustCompile(`[0-9]+-`)

// tidRound is the TID-I of a name statsearch made up, in a chainLines line.
var tidRound = regexp.MustCompile(`TID-[0-9]+ `)

// chainLines is findingLines with each probe chain's variants and where
// it found its name.
func chainLines(r *trace.Result) []string {
	var got []string
	for i := range r.Findings {
		fd := &r.Findings[i]
		found := ""
		if fd.Found != nil {
			found = *fd.Found
		}
		// The names the opener made up have its thread's id: not
		// the same from one run to the next.
		subject := tidName.ReplaceAllString(fd.Subject(), "TID-")
		got = append(got, fmt.Sprintf("%s %s %d found %q variants %q", fd.Kind, subject, fd.Amount(), found, fd.Variants))
	}
	slices.Sort(got)
	return got
}

// lineDiff is the lines of got not in want, each with a "+", and those of
// want not in got, with a "-", the first few of each.
func lineDiff(got, want []string) []string {
	var d []string
	for _, l := range got {
		if !slices.Contains(want, l) && len(d) < 5 {
			d = append(d, "+"+l)
		}
	}
	n := len(d)
	for _, l := range want {
		if !slices.Contains(got, l) && len(d) < n+5 {
			d = append(d, "-"+l)
		}
	}
	return d
}
