// Package cliflag holds the flag.Value types once's commands share: each
// one's error says what it accepts, so that a bad value is one clear line
// (the flag package prefixes the flag's name).
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/oncetool/once/internal/bytesize"
)

// Strings is a repeatable flag: each use adds one value.
type Strings []string

func (s *Strings) String() string     { return fmt.Sprint(*s) }
func (s *Strings) Set(v string) error { *s = append(*s, v); return nil }

// PositiveInts is a repeatable or comma-separated list of numbers above 0
// (--pid 1,2 --pid 3).
type PositiveInts []int

func (l *PositiveInts) String() string { return fmt.Sprint(*l) }
func (l *PositiveInts) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive number, got %q", s)
		}
		*l = append(*l, n)
	}
	return nil
}

// UIDs is a repeatable or comma-separated list of user ids, 0 (root)
// included, as execsnoop's -u takes them, or user names (as run's --user
// and strace -u take them), looked up now.
type UIDs []uint32

func (l *UIDs) String() string { return fmt.Sprint(*l) }
func (l *UIDs) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil && s != "" && (s[0] < '0' || s[0] > '9') && s[0] != '-' && s[0] != '+' {
			u, lerr := user.Lookup(s)
			if lerr != nil {
				return fmt.Errorf("want a user id (a number from 0 to 4294967294) or a user name, got %q: no such user", s)
			}
			n, err = strconv.ParseUint(u.Uid, 10, 32)
		}
		if err != nil || n == 1<<32-1 {
			return fmt.Errorf("want a user id (a number from 0 to 4294967294) or a user name, got %q", s)
		}
		*l = append(*l, uint32(n))
	}
	return nil
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

// Duration defines a duration flag with default def.
func Duration(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationValue{p}, name, usage)
}

// Int is a whole-number flag of at least Min, whose error says so. It
// leaves *P as it is until the flag is given.
type Int struct {
	P   *int
	Min int
}

func (v Int) String() string {
	// A value below Min is a flag not given (check's -1: no assertion),
	// which no -h line should offer as a default: "0" is the zero
	// value's, which the flag package leaves out.
	if v.P == nil || *v.P < v.Min {
		return "0"
	}
	return strconv.Itoa(*v.P)
}

func (v Int) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number")
	}
	if n < v.Min {
		return fmt.Errorf("want %d or more", v.Min)
	}
	*v.P = n
	return nil
}

// IntVar defines an Int flag of at least min, with default def.
func IntVar(fs *flag.FlagSet, p *int, name string, def, min int, usage string) {
	*p = def
	fs.Var(Int{P: p, Min: min}, name, usage)
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

// Bytes defines a size flag with default def.
func Bytes(fs *flag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fs.Var(bytesValue{p: p}, name, usage)
}

// nonEmpty is a string flag that refuses an empty value: one that names
// a user or a file, where "" would quietly mean the default.
type nonEmpty struct{ p *string }

func (v nonEmpty) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v nonEmpty) Set(s string) error {
	if s == "" {
		return errors.New("empty: give a value or leave the flag out")
	}
	*v.p = s
	return nil
}

// NonEmpty defines a string flag whose value, when given, must not be
// empty.
func NonEmpty(fs *flag.FlagSet, p *string, name, def, usage string) {
	*p = def
	fs.Var(nonEmpty{p}, name, usage)
}
