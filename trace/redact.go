package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RedactPrefix starts every redacted argument.
const RedactPrefix = "sha256:"

// RedactArg is what an argument becomes when arguments are redacted:
// "sha256:" and the first 12 hex digits of the SHA-256 of its bytes. Equal
// arguments still look equal (a report can show that two runs passed the
// same token), but the value is not recoverable short of guessing it.
func RedactArg(s string) string {
	sum := sha256.Sum256([]byte(s))
	return RedactPrefix + hex.EncodeToString(sum[:6])
}

// RedactArgv replaces, in place, every argument after argv[0].
func RedactArgv(argv []string) {
	for i := 1; i < len(argv); i++ {
		argv[i] = RedactArg(argv[i])
	}
}

// RedactCommand returns a copy of a command line with every argument after
// the program replaced by RedactArg.
func RedactCommand(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := append([]string(nil), argv...)
	RedactArgv(out)
	return out
}

// SameArg reports whether an argv entry is the string s, or s redacted:
// the shell fallback detector compares argv[1] with a file name, and with
// redacted arguments argv[1] is the name's hash.
func SameArg(arg, s string) bool {
	return arg == s || (strings.HasPrefix(arg, RedactPrefix) && arg == RedactArg(s))
}
