package refcopy

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// Main is the command line of a cp built on CopyFile, named prog, with
// arguments args (without the program name); it returns the exit status.
// refcp and dupcopy are both this command, dupcopy with opts.Probe.
func Main(prog string, args []string, stderr io.Writer, opts Options) int {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	var recursive bool
	fs.BoolVar(&recursive, "r", false, "copy directories recursively; copy symbolic links as links")
	fs.BoolVar(&recursive, "R", false, "same as -r")
	usage := fmt.Sprintf("usage: %s [-r] SRC DST\n       %s [-r] SRC... DIR\n", prog, prog)
	return run(prog, fs, usage, args, stderr, func(src, dst string, k known) error {
		c := newCopier(recursive)
		c.probe = opts.Probe
		c.topParent = k.parent
		c.top(src, loc{dirfd: unix.AT_FDCWD, name: dst, path: dst, looked: k.dst})
		return c.err()
	})
}

// MoveMain is the command line of an mv built on Move, named prog, with
// arguments args (without the program name); it returns the exit status.
func MoveMain(prog string, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	usage := fmt.Sprintf("usage: %s SRC DST\n       %s SRC... DIR\n", prog, prog)
	return run(prog, fs, usage, args, stderr, func(src, dst string, k known) error {
		return move(src, dst, k.parent)
	})
}

// Run is the command line the reference cp and mv share: the flags of fs,
// then SRC DST or SRC... DIR as cp and mv take them (Targets), do for
// each pair, every failure a line on stderr. It returns the exit status:
// 0, 1 when anything failed (the other sources are still done), 2 for a
// usage error.
func Run(prog string, fs *flag.FlagSet, usage string, args []string, stderr io.Writer, do func(src, dst string) error) int {
	return run(prog, fs, usage, args, stderr, func(src, dst string, _ known) error { return do(src, dst) })
}

// run is Run, with do given also what the command line learnt about dst.
func run(prog string, fs *flag.FlagSet, usage string, args []string, stderr io.Writer, do func(src, dst string, k known) error) int {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
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
		fmt.Fprintf(stderr, "%s: missing destination file operand after %s\n", prog, Quote(operands[0]))
		fs.Usage()
		return 2
	}
	last := len(operands) - 1
	pairs, ks, err := targets(operands[:last], operands[last])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	status := 0
	for i, p := range pairs {
		for _, err := range Flatten(do(p.Src, p.Dst, ks[i])) {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			status = 1
		}
	}
	return status
}
