package main

import (
	"math"
	"slices"
)

// summary condenses the per-iteration times of one strategy. Minimum and
// median are the numbers to compare: the minimum is what the kernel patch
// reported, and the median resists the scheduling noise of a busy machine,
// which only ever adds time.
type summary struct {
	N      int
	Min    int64
	Median int64
	Mean   int64
	P90    int64
}

// summarize returns the statistics of ns, which must not be empty. It sorts
// a copy, leaving ns in iteration order.
func summarize(ns []int64) summary {
	s := slices.Clone(ns)
	slices.Sort(s)
	n := len(s)

	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	median := s[n/2]
	if n%2 == 0 {
		median = s[n/2-1] + (s[n/2]-s[n/2-1])/2
	}
	// Nearest rank: the smallest sample with at least 90% of the samples
	// at or below it.
	rank := int(math.Ceil(0.9 * float64(n)))
	return summary{
		N:      n,
		Min:    s[0],
		Median: median,
		Mean:   int64(math.Round(sum / float64(n))),
		P90:    s[rank-1],
	}
}
