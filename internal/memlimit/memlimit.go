// Package memlimit sets the Go runtime's soft memory limit from the
// memory cgroup once runs in, or from a flag.
//
// A memory cgroup's limit is a hard one: past it the kernel kills the
// process. The Go runtime knows nothing of it and lets the heap grow to
// twice what it holds live (GOGC=100) before it collects, so a heap that
// fits the limit live can still be killed between two collections. A
// soft limit below the cgroup's makes the collector run as the limit
// nears instead.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/oncetool/once/internal/bytesize"
	"github.com/oncetool/once/internal/mountinfo"
)

// None is the limit that does not limit: the runtime's default.
const None = math.MaxInt64

// Parse reads a limit in bytes: a number with an optional K, M or G
// (powers of 1,024; Ki, Mi and Gi as Kubernetes writes them, KiB, MiB,
// GiB, KB, MB and GB too), or 0 or none for
// no limit (None).
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "none") || t == "0" {
		return None, nil
	}
	n, err := bytesize.Parse(t)
	if err != nil {
		return 0, fmt.Errorf("%q: want bytes, with an optional K, M or G suffix, or 0 or none", s)
	}
	if n == 0 {
		return None, nil
	}
	return n, nil
}

// Cgroup is the memory limit of the cgroup once runs in, read from the
// system's files below root ("/" for the real ones): the lowest of the
// limits of its cgroup and of their ancestors, cgroup v2's memory.max or
// v1's memory.limit_in_bytes. None when nothing limits it.
func Cgroup(root string) (int64, error) { return cgroupLimit(root, nil) }

// cgroupLimit is Cgroup with root's proc/self/mountinfo already read
// (mounts; nil: read it).
func cgroupLimit(root string, mounts []byte) (int64, error) {
	fsys := os.DirFS(root)
	procs, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	if mounts == nil {
		if mounts, err = fs.ReadFile(fsys, "proc/self/mountinfo"); err != nil {
			return 0, fmt.Errorf("memlimit: %w", err)
		}
	}
	limit := int64(None)
	for _, m := range memoryMounts(mounts) {
		p, ok := cgroupPath(procs, m.v2)
		if !ok {
			continue
		}
		// The mount shows the hierarchy from m.root down: a container's
		// cgroup namespace or bind mount starts at its own cgroup.
		rel, ok := strings.CutPrefix(p, m.root)
		if !ok || (m.root != "/" && rel != "" && rel[0] != '/') {
			continue
		}
		file := "memory.limit_in_bytes"
		if m.v2 {
			file = "memory.max"
		}
		for dir := path.Join(m.point, rel); ; dir = path.Dir(dir) {
			if n, ok := readLimit(fsys, path.Join(dir, file)); ok {
				limit = min(limit, n)
			}
			if dir == m.point || dir == "." || dir == "/" {
				break
			}
		}
	}
	return limit, nil
}

// mount is a cgroup hierarchy with the memory controller: where it is
// mounted (relative to the root read), and which of its cgroups is the
// mount's top.
type mount struct {
	point, root string
	v2          bool
}

// memoryMounts finds the cgroup v1 hierarchies with the memory controller
// and the cgroup v2 ones in /proc/self/mountinfo. A v2 hierarchy without
// the memory controller enabled has no memory.max files to read.
func memoryMounts(text []byte) []mount {
	var out []mount
	for _, mi := range mountinfo.Parse(string(text)) {
		m := mount{point: strings.TrimPrefix(mi.Point, "/"), root: mi.Root}
		if m.point == "" {
			m.point = "."
		}
		switch mi.FSType {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			if !mi.HasOption("memory") {
				continue
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// hasOption reports whether the comma-separated list opts holds want.
func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// cgroupPath is the process's cgroup in the v2 hierarchy (its "0::" line)
// or in the v1 one with the memory controller, from /proc/self/cgroup.
func cgroupPath(procs []byte, v2 bool) (string, bool) {
	for line := range strings.SplitSeq(string(procs), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if v2 && id == "0" && ctrls == "" || !v2 && hasOption(ctrls, "memory") {
			return p, true
		}
	}
	return "", false
}

// readLimit reads a memory.max or memory.limit_in_bytes: false when it
// is absent, unreadable or says no limit ("max"; v1's largest page-aligned
// number).
func readLimit(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}

// Headroom is what Soft leaves of a cgroup's limit to the memory the Go
// runtime does not manage: the binary's pages, the BPF maps (the 8 MiB
// ring buffer among them, which its mapping counts twice in RSS) and
// the page cache charged to the cgroup. Measured under once watch's
// hostile churn, that was about 50 MiB.
const Headroom = 64 << 20

// Soft is the Go memory limit for a cgroup limit: the limit less
// Headroom and extra (a ring buffer larger than the default, say), and
// at least half of it.
func Soft(cgroup, extra int64) int64 {
	if cgroup == None || cgroup <= 0 {
		return None
	}
	return max(cgroup-Headroom-max(extra, 0), cgroup/2)
}

// Setup sets the runtime's soft memory limit: flag's when given (see
// Parse), else none when GOMEMLIMIT is set (the runtime has it already),
// else Soft of the cgroup's limit with extra. It returns the limit set
// and where it came from, for a log line.
func Setup(flag string, given bool, root string, extra int64) (int64, string, error) {
	return SetupMounts(flag, given, root, nil, extra)
}

// SetupMounts is Setup with root's proc/self/mountinfo already read
// (mounts; nil: read it), which the caller reads for more than this.
func SetupMounts(flag string, given bool, root string, mounts []byte, extra int64) (int64, string, error) {
	var limit int64
	var from string
	switch {
	case given:
		n, err := Parse(flag)
		if err != nil {
			return 0, "", err
		}
		limit, from = n, "--memory-limit"
	case os.Getenv("GOMEMLIMIT") != "":
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil
	default:
		n, err := cgroupLimit(root, mounts)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return None, "", nil // not Linux's /proc: nothing to read
			}
			return 0, "", err
		}
		limit, from = Soft(n, extra), "cgroup"
	}
	debug.SetMemoryLimit(limit)
	return limit, from, nil
}
