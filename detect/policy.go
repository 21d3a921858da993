package detect

import (
	"time"

	"github.com/oncetool/once/trace"
)

// Policy is what an Engine keeps: the one difference between the exact
// engine of once run and the bounded one of once watch.
type Policy struct {
	// Bounded: images are dropped Grace after they end and, past
	// MaxImages, the oldest ended (else the least recently active) is
	// evicted and counted. Without it every image's Process is kept for
	// Result.
	Bounded   bool
	MaxImages int
	Grace     time.Duration

	// Per live image: files told apart (0: no limit; opens of further
	// files are counted, their repeats not found), calls and spellings
	// kept per file, attempts kept per probe chain, and basenames with
	// failed opens pending. Counts stay exact past every one of them.
	MaxFiles      int
	MaxCalls      int
	MaxPaths      int
	MaxAttempts   int
	MaxProbeNames int
	// MaxExecs caps the exec attempts an image lists (Process.Execs).
	MaxExecs int
	// MaxImageBytes and MaxBytes bound, in bytes, the detail kept per
	// image and in all (see budget.go). 0: no bound. An image's listing
	// detail (calls, spellings, attempts) has half of MaxImageBytes
	// more, apart, so that it never takes the room detection needs
	// (keepDetail). Without Bounded they are detection's budget: what
	// live images hold, given back whole when an image ends.
	MaxImageBytes int64
	MaxBytes      int64
	// MaxListBytes (without Bounded) bounds what ended images keep for
	// the report, and the findings' detail: the listing, apart from
	// detection so that no listing a user asks for (--files all) can
	// starve it. Past it the files and failed opens listed only because
	// of FilesAll are cut and counted (DetailDropped), findings lose
	// their calls and attempts; what the default listing shows of an
	// image is kept whatever it says. 0: no bound.
	MaxListBytes int64

	// Lists: keep what a report lists per process (failed opens, exec
	// attempts, threads), not only its counts.
	Lists bool
	// Files: what an ended image's Process lists (trace.FilesDuplicates
	// or trace.FilesAll), with Lists.
	Files string
	// KeepFile, when set, keeps a file in an ended image's list whatever
	// Files says: the files an assertion names.
	KeepFile func(dev, ino uint64) bool
}

// The byte budgets: what once run, check and compare keep per process
// image, in all for detection and for the listing, and what once watch
// does (which evicts images to stay within its total). The README states
// them.
const (
	DefaultImageBytes = 16 << 20
	DefaultBytes      = 1 << 30
	DefaultListBytes  = 1 << 30
	WatchImageBytes   = 4 << 20
	WatchBytes        = 96 << 20
)

// DefaultMaxCalls is the calls kept per file by KeepAll: a loop that
// opens one file a million times must not cost a million records.
const DefaultMaxCalls = 256

// KeepAll is the exact policy of once run, check and compare.
func KeepAll(files string) Policy {
	if files == "" {
		files = trace.FilesDuplicates
	}
	return Policy{
		MaxCalls:      DefaultMaxCalls,
		MaxPaths:      256,
		MaxAttempts:   1024,
		MaxProbeNames: 1 << 16,
		MaxExecs:      1024,
		MaxImageBytes: DefaultImageBytes,
		MaxBytes:      DefaultBytes,
		MaxListBytes:  DefaultListBytes,
		Lists:         true,
		Files:         files,
	}
}

// Bounded is the policy of once watch: maxImages images at once (0:
// 65,536), their rows kept grace after they end (0: 30s).
func Bounded(maxImages int, grace time.Duration) Policy {
	if maxImages <= 0 {
		maxImages = 65536
	}
	if grace <= 0 {
		grace = 30 * time.Second
	}
	return Policy{
		Bounded:       true,
		MaxImages:     maxImages,
		Grace:         grace,
		MaxFiles:      4096,
		MaxCalls:      4,
		MaxPaths:      4,
		MaxAttempts:   64,
		MaxProbeNames: 1024,
		MaxImageBytes: WatchImageBytes,
		MaxBytes:      WatchBytes,
	}
}
