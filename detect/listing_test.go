package detect

import (
	"fmt"
	"slices"
	"testing"

	"github.com/oncetool/once/trace"
)

// w4 is a scaled-down W4 of make bench: jobs processes, two at a time,
// each opening files distinct files once, every tenth one file twice
// more.
func w4(jobs, files int) *seq {
	s := &seq{}
	for j := 0; j < jobs; j += 2 {
		var ts []trace.Task
		for k := j; k < min(j+2, jobs); k++ {
			pt := task(uint32(1000+k), uint32(1000+k), uint64(1e9+k), 1, "cc1")
			s.fork(pt, 999, 1)
			ts = append(ts, pt)
		}
		for i := 0; i < files; i++ {
			for _, pt := range ts { // two live at once, their opens interleaved
				f := fmt.Sprintf("/src/include/header%05d.h", i)
				s.open(pt, f, f, 1, uint64(10+i), 3)
			}
		}
		for _, pt := range ts {
			if pt.Pid%10 == 0 {
				f := "/src/include/header00000.h"
				s.open(pt, f, f, 1, 10, 3).open(pt, f, f, 1, 10, 3)
			}
			s.exit(pt, 0)
		}
	}
	return s
}

func findingKeys(r *trace.Result) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %d %s %d", f.Kind, f.Pid, f.Path, f.Count))
	}
	slices.Sort(out)
	return out
}

// TestListingNeverStarvesDetection: --files all of a run whose listing is
// past its budget (W4's 20,000 x 300 against 1 GiB, here 200 x 300 against
// 2 MiB) finds exactly the default report's findings: the listing is cut
// and counted, never the detection.
func TestListingNeverStarvesDetection(t *testing.T) {
	const jobs, files = 200, 300
	s := w4(jobs, files)
	def := s.runPolicy(KeepAll(trace.FilesDuplicates), 0)
	want := findingKeys(def)
	if len(want) != jobs/10 {
		t.Fatalf("default report: %d findings, want %d", len(want), jobs/10)
	}
	p := KeepAll(trace.FilesAll)
	p.MaxListBytes = 2 << 20
	e := New(Options{Policy: p})
	feed(e, s, t0)
	all := e.Result()
	if got := findingKeys(all); !slices.Equal(got, want) {
		t.Errorf("--files all past the listing's budget: %d findings, want the default's %d", len(got), len(want))
	}
	tt := e.Totals()
	if tt.FilesCapped != 0 {
		t.Errorf("files_capped %d: the listing's budget cut detection", tt.FilesCapped)
	}
	listed, wantListed := 0, 0
	for _, pr := range all.Processes {
		listed += len(pr.Opens)
		wantListed += pr.Totals.Files
	}
	if listed >= wantListed || tt.DetailDropped == 0 || uint64(wantListed-listed) != tt.DetailDropped {
		t.Errorf("%d of %d files listed, detail_dropped %d: want the listing cut and every file cut counted",
			listed, wantListed, tt.DetailDropped)
	}
	if e.listBytes > p.MaxListBytes+int64(jobs)*2*imageBytes {
		t.Errorf("listing holds %d bytes, budget %d", e.listBytes, p.MaxListBytes)
	}
	if e.bytes != 0 {
		t.Errorf("detection still holds %d bytes with every image ended", e.bytes)
	}
}
