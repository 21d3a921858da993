package main

import (
	"os"

	"github.com/oncetool/once/collector"
)

// ringCount is the number of rings --rings n makes (0: the default).
func ringCount(n int) int {
	ncpu := collector.CPUCount()
	if n == 0 {
		return collector.DefaultRings(ncpu)
	}
	return min(n, ncpu)
}

// findingsRingSize is once watch's ring (one of up to 4) without
// --events: there the kernel counts first opens and repeats instead of
// sending them, and what is sent (failures, repeats' first sends, forks,
// execs, exits) is a small part of the stream --events sends, for which
// the collector's default stays. The ring's pages are mapped twice into
// the reader (its wrap-around), so each MiB here is two of RSS.
const findingsRingSize = collector.DefaultRingBufferSize / 2

// ringSize is the size of each ring: n as given, or the default n for one
// ring shared out over the rings --rings makes.
func ringSize(n int, given bool, rings int) int {
	if given {
		return n
	}
	return collector.RingSizeFor(n, ringCount(rings))
}

// watchRingSize is each of once watch's rings: --ring-size as given, else
// findingsRingSize, the collector's default with --events, 64 MiB with
// --stacks, shared out past 4 rings.
func watchRingSize(f *watchFlags, given bool) int {
	n := f.ringBuf
	if f.events && !given {
		n = collector.DefaultRingBufferSize
	}
	return ringSize(f.stacks.ringSize(n, given), given, f.rings)
}

// checkRingSize: the kernel wants a power of two, at least a page, that
// fits its 32-bit size.
func checkRingSize(cmd string, n int) error {
	page := os.Getpagesize()
	if n < page || n&(n-1) != 0 || n >= 1<<32 {
		return usagef("%s: --ring-size %d: want a power of two from %d to %d bytes", cmd, n, page, 1<<31)
	}
	return nil
}
