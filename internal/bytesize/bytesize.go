// Package bytesize reads a size in bytes as people write one on a command
// line: 16M, 512KiB, 1G, 4096.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// suffixes are the units Parse takes, longest first so that "MiB" is not
// read as "B": powers of 1,024 however they are spelled (Ki, Mi and Gi
// as Kubernetes writes them).
var suffixes = []struct {
	suffix string
	shift  int
}{{"KIB", 10}, {"MIB", 20}, {"GIB", 30}, {"KI", 10}, {"MI", 20}, {"GI", 30}, {"KB", 10}, {"MB", 20}, {"GB", 30},
	{"K", 10}, {"M", 20}, {"G", 30}, {"B", 0}}

// Parse reads a whole number of bytes, 0 or more, with an optional K, M
// or G suffix (1,024, 1,024² and 1,024³ bytes; KiB, Ki and KB are K).
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	shift := 0
	upper := strings.ToUpper(t)
	for _, u := range suffixes {
		if strings.HasSuffix(upper, u.suffix) {
			t, shift = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q: want bytes, with an optional K, M or G suffix", s)
	}
	return n << shift, nil
}
