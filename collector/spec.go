package collector

import (
	"sync"

	"github.com/cilium/ebpf"

	"github.com/oncetool/once/bpf"
)

// Decoding the embedded object (its programs and BTF; the line info is
// left out until a verifier's log needs it, see withLines) is a tenth of
// once watch's start-up, and needs nothing from the command line:
// PrefetchSpec starts it while the command parses its flags and checks
// the machine, and the next Open takes the result.
var prefetch struct {
	sync.Mutex
	ch chan specResult
}

type specResult struct {
	spec *ebpf.CollectionSpec
	err  error
}

// PrefetchSpec starts decoding the BPF object for the next Open, in the
// background. Calling it is only worth it for a command that opens a
// Tracer: the decoding costs some milliseconds of CPU.
func PrefetchSpec() {
	prefetch.Lock()
	defer prefetch.Unlock()
	if prefetch.ch != nil {
		return
	}
	ch := make(chan specResult, 1)
	prefetch.ch = ch
	go func() {
		spec, err := bpf.LoadOnceWithoutLines()
		ch <- specResult{spec, err}
	}()
}

// loadSpec is the prefetched spec, if one was started and not yet taken
// (each Open changes its spec: it is taken once), or a new one.
func loadSpec() (*ebpf.CollectionSpec, error) {
	prefetch.Lock()
	ch := prefetch.ch
	prefetch.ch = nil
	prefetch.Unlock()
	if ch != nil {
		r := <-ch
		return r.spec, r.err
	}
	return bpf.LoadOnceWithoutLines()
}

// withLines is ps, a program of a spec decoded without line info, with
// each instruction's source line from the object: what makes a verifier's
// log readable. ps itself if the lines can't be had.
func withLines(ps *ebpf.ProgramSpec) *ebpf.ProgramSpec {
	full, err := bpf.LoadOnce()
	if err != nil {
		return ps
	}
	fp := full.Programs[ps.Name]
	if fp == nil || len(fp.Instructions) != len(ps.Instructions) {
		return ps
	}
	cp := ps.Copy()
	for i := range cp.Instructions {
		if src := fp.Instructions[i].Source(); src != nil {
			cp.Instructions[i] = cp.Instructions[i].WithSource(src)
		}
	}
	return cp
}
