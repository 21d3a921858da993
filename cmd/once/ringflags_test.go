package main

import (
	"testing"

	"github.com/oncetool/once/collector"
)

// TestWatchRingSize: once watch's rings are half the collector's default
// without --events, the default with it, 64 MiB with --stacks, and
// --ring-size when given; on one ring (--rings 1) none is shared out.
func TestWatchRingSize(t *testing.T) {
	for _, c := range []struct {
		name  string
		f     watchFlags
		given bool
		want  int
	}{
		{name: "findings", f: watchFlags{ringBuf: findingsRingSize}, want: 4 << 20},
		{name: "events", f: watchFlags{ringBuf: findingsRingSize, events: true}, want: collector.DefaultRingBufferSize},
		{name: "stacks", f: watchFlags{ringBuf: findingsRingSize, stacks: stackFlags{on: true}}, want: stackRingSize},
		{name: "given", f: watchFlags{ringBuf: 1 << 16, events: true}, given: true, want: 1 << 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.f.rings = 1
			if got := watchRingSize(&c.f, c.given); got != c.want {
				t.Errorf("watchRingSize = %d, want %d", got, c.want)
			}
		})
	}
}
