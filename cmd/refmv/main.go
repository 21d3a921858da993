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
// filesystems, permission bits and link targets are kept. A move that fails
// leaves its source in place. See refcopy.Move for the details.
//
// Exit status: 0 when everything was moved, 1 when anything failed (the
// other sources are still moved), 2 for a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
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
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s SRC DST\n       %s SRC... DIR\n", prog, prog)
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
		for _, err := range refcopy.Flatten(refcopy.Move(p.Src, p.Dst)) {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			status = 1
		}
	}
	return status
}
