package collector

import (
	"sync"

	"github.com/cilium/ebpf"

	"github.com/oncetool/once/bpf"
)

// Decoding the embedded object (its programs, BTF and line info) is a
// tenth of once watch's start-up, and needs nothing from the command line:
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
		spec, err := bpf.LoadOnce()
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
	return bpf.LoadOnce()
}
