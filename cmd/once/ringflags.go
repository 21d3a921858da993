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

// ringSize is the size of each ring: n as given, or the default n for one
// ring shared out over the rings --rings makes.
func ringSize(n int, given bool, rings int) int {
	if given {
		return n
	}
	return collector.RingSizeFor(n, ringCount(rings))
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
