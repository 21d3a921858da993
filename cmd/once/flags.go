package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/oncetool/once/detect"
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
