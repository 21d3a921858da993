package collector

import "time"

// Phase is one part of Open and how long it took: decoding the BPF
// object, linking it to the kernel's BTF, making the maps, loading (and
// so verifying) the programs, attaching them.
type Phase struct {
	Name string
	Took time.Duration
}

// Startup is how long each part of Open took, in order.
func (t *Tracer) Startup() []Phase { return t.startup }

// phaseClock records phases as they end.
type phaseClock struct {
	last   time.Time
	phases []Phase
}

func (c *phaseClock) start() { c.last = time.Now() }

func (c *phaseClock) mark(name string) {
	now := time.Now()
	c.phases = append(c.phases, Phase{name, now.Sub(c.last)})
	c.last = now
}
