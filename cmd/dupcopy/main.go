// Command dupcopy is cp done wastefully, on purpose: the bundled example
// of what once reports. It copies like refcp (same operands, -r), but
// opens every regular source three times, as uutils cp 0.x did: once to
// see whether the file holds data, once to look for holes, and once to
// copy it. once demo traces it when uutils cp is not installed.
//
// Usage:
//
//	dupcopy [-r] SRC DST
//	dupcopy [-r] SRC... DIR
package main

import (
	"os"

	"github.com/oncetool/once/internal/refcopy"
)

func main() {
	os.Exit(refcopy.Main("dupcopy", os.Args[1:], os.Stderr, refcopy.Options{Probe: true}))
}
