package collector

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/oncetool/once/bpf"
)

// loadObjects creates the maps, then loads the programs in two groups at
// once, into objs: the verifier runs in the loading thread, so it checks
// two programs at a time. spec comes linked (see link.go); kernel is only
// used where the kernel's BTF is still needed (tp_btf, before Linux 6.2).
// withMaps, when not nil, runs with the maps made while the programs load
// (see makeRings); its error fails the load.
func loadObjects(spec *ebpf.CollectionSpec, kernel *btf.Cache, objs *bpf.OnceObjects, withMaps func(map[string]*ebpf.Map) error) (err error) {
	mapsOnly := spec.Copy()
	mapsOnly.Programs = nil
	maps, err := ebpf.NewCollectionWithOptions(mapsOnly, ebpf.CollectionOptions{Cache: kernel})
	if err != nil {
		return fmt.Errorf("create BPF maps: %w", err)
	}
	all := &ebpf.Collection{Maps: maps.Maps, Variables: maps.Variables, Programs: map[string]*ebpf.Program{}}
	defer func() {
		// Whatever was not assigned to objs (all of it, on an error).
		all.Close()
	}()

	groups := splitPrograms(spec)
	loaded := make([]*ebpf.Collection, len(groups))
	errs := make([]error, len(groups)+1)
	var wg sync.WaitGroup
	if withMaps != nil {
		wg.Go(func() { errs[len(groups)] = withMaps(maps.Maps) })
	}
	for i, names := range groups {
		part := spec.Copy()
		for name := range part.Programs {
			if !slices.Contains(names, name) {
				delete(part.Programs, name)
			}
		}
		wg.Go(func() {
			loaded[i], errs[i] = ebpf.NewCollectionWithOptions(part, ebpf.CollectionOptions{
				MapReplacements: maps.Maps, Cache: kernel})
		})
	}
	wg.Wait()
	for _, c := range loaded {
		if c == nil {
			continue
		}
		for name, p := range c.Programs {
			all.Programs[name] = p
		}
		c.Programs = nil
		c.Close() // its clones of the maps
	}
	if err := errors.Join(errs...); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			// The whole log: the last line alone rarely says why.
			return fmt.Errorf("load BPF programs: %+v", ve)
		}
		return fmt.Errorf("load BPF programs: %w", err)
	}
	return all.Assign(objs)
}

// splitPrograms deals the programs into two groups of about equal
// verification time: exit_open, the biggest, heads one and the rest go
// round-robin in name order.
func splitPrograms(spec *ebpf.CollectionSpec) [][]string {
	var names []string
	for name := range spec.Programs {
		if name != "exit_open" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	groups := [][]string{{"exit_open"}, nil}
	for i, name := range names {
		// The first group has exit_open: give it one in three.
		g := 1
		if i%3 == 0 {
			g = 0
		}
		groups[g] = append(groups[g], name)
	}
	return groups
}
