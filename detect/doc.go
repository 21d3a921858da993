// Package detect is once's one detector engine: it turns the stream of
// trace events into per-image state and findings (duplicate opens, exec
// and open probe chains, the ENOEXEC shell fallback), with --ignore
// applied in one place.
//
// The same Engine serves every command; a Policy says what it keeps:
//
//   - KeepAll (once run, check, compare): exact. An image's per-file state
//     lives while the image does; when it ends (exec, exit) what remains
//     is its findings, its totals and the files a report lists (those
//     opened more than once, those an assertion names, or all of them).
//     Memory grows with the live images and the findings, not with the
//     opens made.
//   - Bounded (once watch): images are held up to a cap and for a grace
//     period after they end, the oldest evicted and counted; findings are
//     delivered (Drain) as they complete.
//
// Under both, an event sequence gives the same findings while no cap is
// reached: the parity tests feed one table of sequences to both.
//
// The package is pure Go: it imports trace and nothing of the BPF side,
// and is tested without root.
package detect
