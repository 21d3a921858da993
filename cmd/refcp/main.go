// Command refcp is a reference cp(1) for the once tracer: it copies files
// and, with -r, directory trees while opening every source file exactly
// once, and creating every destination file once.
//
// Usage:
//
//	refcp [-r] SRC DST
//	refcp [-r] SRC... DIR
//
// As with cp, DST may be an existing directory, and then the copy is
// DST/basename(SRC); with several sources the last operand must be a
// directory. Without -r a directory source is refused; with -r directories
// are copied recursively and symbolic links are copied as links. Permission
// bits are preserved. See package refcopy for how the copy is done.
//
// Exit status: 0 when everything was copied, 1 when anything failed (the
// other sources are still copied), 2 for a usage error.
package main

import (
	"io"
	"os"

	"github.com/oncetool/once/internal/refcopy"
)

const prog = "refcp"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is refcp with arguments args (without the program name); it returns
// the exit status.
func run(args []string, stderr io.Writer) int {
	return refcopy.Main(prog, args, stderr, refcopy.Options{})
}
