// Package trace holds once's domain types: what the kernel side reported
// (Event and its records), who caused it (Task), what the detectors
// concluded (Finding) and what one traced command tree amounts to
// (Process, Result), with the counters of what was lost or cut.
//
// It is a leaf: it imports nothing of the BPF side, so that the detector
// engine (detect) and the renderers (report) can be built, tested and
// linked without cilium/ebpf. The collector turns ring buffer records into
// these types; a test there holds the constants below to bpf/once.h.
//
// Strings that come from the traced system (paths, argv, comm) hold the
// raw bytes the kernel saw; they may contain any byte, including invalid
// UTF-8 and control characters. Renderers must escape them.
package trace
