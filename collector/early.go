package collector

import (
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/oncetool/once/bpf"
)

// defaultTallySlots is open_tallies' max_entries in bpf/maps.bpf.h
// (TestTallySpecMatchesObject holds the two together).
const defaultTallySlots = 65536

// tallySpec is the open_tallies map Open makes for opts. It is made before
// the object is decoded (earlyMap): an LRU hash is preallocated, and the
// kernel clears and links its 65,536 entries, the one map that takes
// milliseconds to make.
func tallySpec(opts Options) *ebpf.MapSpec {
	n := defaultTallySlots
	switch {
	case opts.SendOpensPerKind == 0:
		// Nothing is tallied: a token size.
		n = 64
	case opts.TallySlots > 0:
		n = opts.TallySlots
	}
	return &ebpf.MapSpec{
		Name:       bpf.OnceMapOpenTallies,
		Type:       ebpf.LRUHash,
		KeySize:    uint32(unsafe.Sizeof(bpf.OnceOpenKey{})),
		ValueSize:  uint32(unsafe.Sizeof(bpf.OnceOpenTally{})),
		MaxEntries: uint32(n),
	}
}

// earlyMap is a map being made on a thread of its own.
type earlyMap struct {
	done chan struct{}
	m    *ebpf.Map
	err  error
}

func makeEarly(spec *ebpf.MapSpec) *earlyMap {
	e := &earlyMap{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.m, e.err = ebpf.NewMap(spec)
	}()
	return e
}

// take waits for the map and checks it against the decoded object's spec
// of it; the caller owns the map.
func (e *earlyMap) take(want *ebpf.MapSpec) (*ebpf.Map, error) {
	<-e.done
	if e.err != nil {
		return nil, fmt.Errorf("create BPF map %s: %w", want.Name, e.err)
	}
	if err := want.Compatible(e.m); err != nil {
		e.m.Close()
		return nil, fmt.Errorf("BPF map %s made before the object was decoded: %w", want.Name, err)
	}
	return e.m, nil
}

// discard closes the map once made, for an Open that fails before taking it.
func (e *earlyMap) discard() {
	go func() {
		<-e.done
		if e.m != nil {
			e.m.Close()
		}
	}()
}
