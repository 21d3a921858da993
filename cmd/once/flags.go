package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oncetool/once/detect"
	"github.com/oncetool/once/internal/bytesize"
)

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type intList []int

func (l *intList) String() string { return fmt.Sprint(*l) }
func (l *intList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive number, got %q", s)
		}
		*l = append(*l, n)
	}
	return nil
}

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

// durationValue is a duration flag whose error says what it accepts.
type durationValue struct{ p *time.Duration }

func (d durationValue) String() string {
	if d.p == nil {
		return "0s"
	}
	return d.p.String()
}

func (d durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 500ms, 2s or 1m30s")
	}
	*d.p = v
	return nil
}

func durationFlag(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationValue{p}, name, usage)
}

// intValue is a whole-number flag of at least min, whose error says so.
type intValue struct {
	p   *int
	min int
	set *bool
}

func (v intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number")
	}
	if n < v.min {
		return fmt.Errorf("want %d or more", v.min)
	}
	*v.p = n
	if v.set != nil {
		*v.set = true
	}
	return nil
}

func intFlag(fs *flag.FlagSet, p *int, name string, def, min int, usage string) {
	*p = def
	fs.Var(intValue{p: p, min: min}, name, usage)
}

// bytesValue is a size flag: a whole number of bytes with an optional K,
// M or G suffix (16M), as --memory-limit takes one.
type bytesValue struct{ p *int }

func (v bytesValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v bytesValue) Set(s string) error {
	n, err := bytesize.Parse(s)
	if err != nil || n > math.MaxInt {
		return fmt.Errorf("want bytes, with an optional K, M or G suffix")
	}
	*v.p = int(n)
	return nil
}

func bytesFlag(fs *flag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fs.Var(bytesValue{p: p}, name, usage)
}

// uidList is --uid: repeatable or comma-separated user ids, 0 (root)
// included, as execsnoop's -u takes it.
type uidList []uint32

func (l *uidList) String() string { return fmt.Sprint(*l) }
func (l *uidList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil || n == 1<<32-1 {
			return fmt.Errorf("want a user id (a number from 0 to 4294967294), got %q", s)
		}
		*l = append(*l, uint32(n))
	}
	return nil
}
