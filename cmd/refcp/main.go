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
	"errors"
	"flag"
	"fmt"
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
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var recursive bool
	fs.BoolVar(&recursive, "r", false, "copy directories recursively; copy symbolic links as links")
	fs.BoolVar(&recursive, "R", false, "same as -r")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [-r] SRC DST\n       %s [-r] SRC... DIR\n", prog, prog)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	operands := fs.Args()
	switch len(operands) {
	case 0:
		fmt.Fprintf(stderr, "%s: missing file operand\n", prog)
		fs.Usage()
		return 2
	case 1:
		fmt.Fprintf(stderr, "%s: missing destination file operand after %s\n", prog, refcopy.Quote(operands[0]))
		fs.Usage()
		return 2
	}
	last := len(operands) - 1
	pairs, err := refcopy.Targets(operands[:last], operands[last])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	status := 0
	for _, p := range pairs {
		for _, err := range refcopy.Flatten(refcopy.CopyFile(p.Src, p.Dst, refcopy.Options{Recursive: recursive})) {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			status = 1
		}
	}
	return status
}
