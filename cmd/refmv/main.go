// Command refmv is a reference mv(1) for the once tracer: a move within one
// filesystem is a rename(2) that opens nothing; a move to another
// filesystem copies each source file with exactly one open and removes the
// source only once the copy is complete.
//
// Usage:
//
//	refmv SRC DST
//	refmv SRC... DIR
//
// As with mv, DST may be an existing directory, and then the source moves
// to DST/basename(SRC); with several sources the last operand must be a
// directory. Directories, files and symbolic links all move; across
// filesystems, link targets are kept, and so are the permission bits,
// access and modification times and (when allowed) owner of files and
// directories, as mv keeps them; those of a link itself are not. A move that fails
// leaves its source in place. See refcopy.Move for the details.
//
// Exit status: 0 when everything was moved, 1 when anything failed (the
// other sources are still moved), 2 for a usage error.
package main

import (
	"io"
	"os"

	"github.com/oncetool/once/internal/refcopy"
)

const prog = "refmv"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is refmv with arguments args (without the program name); it returns
// the exit status.
func run(args []string, stderr io.Writer) int {
	return refcopy.MoveMain(prog, args, stderr)
}
