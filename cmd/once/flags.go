package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/oncetool/once/detect"
)

// splitDashDash separates once's flags from the command. The "--" is
// required: it keeps the command's own flags away from once's parser.
func splitDashDash(name string, args []string) (flags, command []string, err error) {
	for i, a := range args {
		if a == "--" {
			if i+1 == len(args) {
				return nil, nil, usagef("%s: no command after --", name)
			}
			return args[:i], args[i+1:], nil
		}
	}
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return args, nil, nil
		}
	}
	return nil, nil, usagef("%s: missing -- before the command (once %s [flags] -- CMD [ARGS...])", name, name)
}

// parseWithCommand parses flags up to "--" and returns the command after it.
func parseWithCommand(name string, fs *flag.FlagSet, args []string) (command []string, help bool, err error) {
	flagArgs, command, err := splitDashDash(name, args)
	if err != nil {
		return nil, false, err
	}
	help, err = parseFlags(name, fs, flagArgs, " before --")
	return command, help, err
}

// parseFlags parses args that must all be flags; help reports -h. A
// stray argument is a usage error whose message ends with stray.
func parseFlags(name string, fs *flag.FlagSet, args []string, stray string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, usagef("%s: %v", name, err)
	}
	if fs.NArg() > 0 {
		return false, usagef("%s: unexpected argument %q%s", name, fs.Arg(0), stray)
	}
	return false, nil
}

// ignoreRules compiles --ignore up front: a malformed pattern would
// otherwise just never match.
func ignoreRules(cmd string, globs []string) (detect.Ignore, error) {
	ig, err := detect.NewIgnore(globs)
	if err != nil {
		return ig, usagef("%s: bad --ignore pattern: %v", cmd, err)
	}
	return ig, nil
}

// cli is one subcommand's flags and help. Its help goes to stdout, with
// examples and exit codes (exit 0); a flag error is one line naming the
// flag, the value and what is accepted (exit 2).
type cli struct {
	name     string
	fs       *flag.FlagSet
	usage    string // after "usage: "
	about    string
	examples []string
	exits    string
	stray    string // what a stray argument's message ends with
}

func newCLI(name, usage, about string) *cli {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cli{name: name, fs: fs, usage: usage, about: about}
}

func (c *cli) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nflags:\n", c.usage, c.about)
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range c.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	if c.exits != "" {
		fmt.Fprintf(w, "\nexit status:\n%s\n", c.exits)
	}
}

func askedHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// parse parses args that are only flags; help reports -h, printed to
// stdout.
// given reports whether flag name was on the command line.
func (c *cli) given(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (c *cli) parse(args []string, stdout io.Writer) (help bool, err error) {
	if askedHelp(args) {
		c.help(stdout)
		return true, nil
	}
	return parseFlags(c.name, c.fs, args, c.stray)
}

// parseCommand parses flags up to "--" and returns the command after it.
func (c *cli) parseCommand(args []string, stdout io.Writer) (command []string, help bool, err error) {
	if askedHelp(args) {
		c.help(stdout)
		return nil, true, nil
	}
	return parseWithCommand(c.name, c.fs, args)
}
