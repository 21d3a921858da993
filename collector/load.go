package collector

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/oncetool/once/bpf"
)

// maxLoaders bounds the threads loading programs: past four, the largest
// program alone is the bound, and each verification holds its states in
// kernel memory while it runs, however many CPUs the node has.
const maxLoaders = 4

// bigMapBytes is the size from which a map is made on its own thread: the
// kernel zeroes (and, for a preallocated hash, links) every entry, the
// one part of making the maps that takes milliseconds.
const bigMapBytes = 1 << 20

// loadObjects creates the maps, then loads the programs, largest first, on
// one thread per CPU (GOMAXPROCS: a CPU quota counts; at most maxLoaders),
// into objs: the verifier runs in the loading thread, and its time grows
// with a program's size, so the largest taken first keep the threads busy
// until about the same moment. spec comes linked
// (see link.go); kernel is only used where the kernel's BTF is still
// needed (tp_btf, before Linux 6.2). withMaps, when not nil, runs with the
// maps made while the programs load (see makeRings); its error fails the
// load.
func loadObjects(spec *ebpf.CollectionSpec, kernel *btf.Cache, objs *bpf.OnceObjects, phases *phaseClock, made map[string]*ebpf.Map, withMaps func(map[string]*ebpf.Map) error) (err error) {
	maps, err := createMaps(spec, kernel, made)
	if err != nil {
		return err
	}
	phases.mark("maps")
	all := &ebpf.Collection{Maps: maps.Maps, Variables: maps.Variables, Programs: map[string]*ebpf.Program{}}
	defer func() {
		// Whatever was not assigned to objs (all of it, on an error).
		all.Close()
	}()

	order := loadOrder(spec)
	progs := make([]*ebpf.Program, len(order))
	errs := make([]error, len(order))
	var next sync.Mutex
	taken := 0
	var wg sync.WaitGroup
	var mapsErr error
	if withMaps != nil {
		wg.Go(func() { mapsErr = withMaps(maps.Maps) })
	}
	for range min(runtime.GOMAXPROCS(0), maxLoaders, len(order)) {
		wg.Go(func() {
			for {
				next.Lock()
				i := taken
				taken++
				next.Unlock()
				if i >= len(order) {
					return
				}
				progs[i], errs[i] = loadProgram(spec, order[i], maps.Maps, kernel)
			}
		})
	}
	wg.Wait()
	phases.mark("programs")
	for i, p := range progs {
		if p != nil {
			all.Programs[order[i]] = p
		}
	}
	if mapsErr != nil {
		return mapsErr
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			// Again with the source lines, for a log that says where.
			lined := *spec
			lined.Programs = map[string]*ebpf.ProgramSpec{order[i]: withLines(spec.Programs[order[i]])}
			if p, err := loadProgram(&lined, order[i], maps.Maps, kernel); err != nil {
				errors.As(err, &ve)
			} else {
				p.Close()
			}
			// The whole log: the last line alone rarely says why.
			return fmt.Errorf("load BPF program %s: %+v", order[i], ve)
		}
		return fmt.Errorf("load BPF program %s: %w", order[i], err)
	}
	return all.Assign(objs)
}

// createMaps makes spec's maps but those premade (whose ownership it
// takes): each big one on a thread of its own, the rest in two halves
// meanwhile (each map is a BTF load and a map creation,
// some tens of microseconds apiece, and there are tens of them).
func createMaps(spec *ebpf.CollectionSpec, kernel *btf.Cache, premade map[string]*ebpf.Map) (*ebpf.Collection, error) {
	var big, small []string
	for name, m := range spec.Maps {
		if premade[name] != nil {
			continue
		}
		if mapBytes(m) >= bigMapBytes {
			big = append(big, name)
		} else {
			small = append(small, name)
		}
	}
	slices.Sort(small)
	groups := make([][]string, 0, len(big)+2)
	for _, name := range big {
		groups = append(groups, []string{name})
	}
	var half [2][]string
	for i, name := range small {
		half[i%2] = append(half[i%2], name)
	}
	groups = append(groups, half[0], half[1])
	made := make([]*ebpf.Collection, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, names := range groups {
		wg.Go(func() {
			part := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Types: spec.Types, ByteOrder: spec.ByteOrder}
			for _, name := range names {
				part.Maps[name] = spec.Maps[name]
			}
			// Variables name their map: each goes with the half
			// that makes it.
			for vname, v := range spec.Variables {
				if _, ok := part.Maps[v.SectionName]; ok {
					if part.Variables == nil {
						part.Variables = map[string]*ebpf.VariableSpec{}
					}
					part.Variables[vname] = v
				}
			}
			made[i], errs[i] = ebpf.NewCollectionWithOptions(part, ebpf.CollectionOptions{Cache: kernel})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range made {
			if c != nil {
				c.Close()
			}
		}
		for _, m := range premade {
			m.Close()
		}
		return nil, fmt.Errorf("create BPF maps: %w", err)
	}
	all := &ebpf.Collection{Maps: map[string]*ebpf.Map{}, Variables: map[string]*ebpf.Variable{}, Programs: map[string]*ebpf.Program{}}
	for name, m := range premade {
		all.Maps[name] = m
	}
	for i, names := range groups {
		for _, name := range names {
			all.Maps[name] = made[i].DetachMap(name)
		}
		for vname, v := range made[i].Variables {
			all.Variables[vname] = v
		}
		made[i].Close()
	}
	return all, nil
}

// mapBytes is about what the kernel allocates and clears for m at its
// creation.
func mapBytes(m *ebpf.MapSpec) int {
	switch m.Type {
	case ebpf.RingBuf:
		return int(m.MaxEntries)
	case ebpf.Hash, ebpf.LRUHash, ebpf.Array, ebpf.PerCPUArray, ebpf.PerCPUHash, ebpf.LRUCPUHash:
		return int(m.MaxEntries) * int(m.KeySize+m.ValueSize)
	}
	return 0
}

// loadOrder is the programs largest first (the verifier's time follows a
// program's size), ties by name.
func loadOrder(spec *ebpf.CollectionSpec) []string {
	var names []string
	for name, p := range spec.Programs {
		if p.Type != ebpf.UnspecifiedProgram {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(len(spec.Programs[b].Instructions), len(spec.Programs[a].Instructions)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return names
}

// loadProgram loads the program name of spec, given only the maps it uses:
// a collection clones every map it is given.
func loadProgram(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map, kernel *btf.Cache) (*ebpf.Program, error) {
	ps := spec.Programs[name]
	part := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{name: ps},
		Types: spec.Types, ByteOrder: spec.ByteOrder}
	replace := map[string]*ebpf.Map{}
	for _, ins := range ps.Instructions {
		if ref := ins.Reference(); ins.IsLoadFromMap() && ref != "" && maps[ref] != nil {
			part.Maps[ref], replace[ref] = spec.Maps[ref], maps[ref]
		}
	}
	c, err := ebpf.NewCollectionWithOptions(part, ebpf.CollectionOptions{MapReplacements: replace, Cache: kernel})
	if err != nil {
		return nil, err
	}
	defer c.Close() // its clones of the maps
	return c.DetachProgram(name), nil
}
