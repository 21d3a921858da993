package stack

import (
	"strconv"
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// demangleName demangles C++ (_Z), Rust legacy (_ZN...17h<hash>E, its
// hash dropped) and Rust v0 (_R) names, without parameters; other names
// are kept as they are.
//
// Rust's legacy names are demangled here rather than by the demangle
// package, which reads a '_' after a length as a separator and so turns
// std::fs::OpenOptions::_open into ::open (v0 has such a separator;
// legacy does not).
//
// A name longer than MaxNameBytes is not demangled: it is cut there and
// marked (NameCut), its mangled prefix shown. The demangle package takes
// time growing with the square of a name's length (a 300 KB name, a
// minute), and has no option bounding its work, only its output's
// length (MaxLength, also set): the input's length is what bounds it.
func demangleName(s string) string {
	if len(s) > MaxNameBytes {
		cut, _ := cutName(s, MaxNameBytes)
		return cut
	}
	if strings.HasPrefix(s, "_ZN") {
		if d, ok := demangleRustLegacy(s); ok {
			return d
		}
	}
	if !strings.HasPrefix(s, "_Z") && !strings.HasPrefix(s, "_R") && !strings.HasPrefix(s, "__Z") {
		return s
	}
	d := demangle.Filter(s, demangle.NoParams, demangle.NoClones, demangle.MaxLength(demangleMaxPow))
	d, _ = cutName(d, MaxNameBytes)
	return d
}

// demangleMaxPow bounds the demangled output at 2^demangleMaxPow bytes
// (past it the name stays mangled), twice MaxNameBytes.
const demangleMaxPow = 13

// demangleRustLegacy demangles _ZN{len ident}E whose last element is a
// Rust hash (17h + 16 hex digits). A suffix after the E (.llvm.NNN) is
// dropped.
func demangleRustLegacy(s string) (string, bool) {
	rest := s[3:]
	var parts []string
	for {
		if rest == "" {
			return "", false
		}
		if rest[0] == 'E' {
			break
		}
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 0 {
			return "", false
		}
		l, err := strconv.Atoi(rest[:n])
		if err != nil || l <= 0 || n+l > len(rest) {
			return "", false
		}
		parts = append(parts, rest[n:n+l])
		rest = rest[n+l:]
	}
	if len(parts) < 2 || !isRustHash(parts[len(parts)-1]) {
		return "", false
	}
	parts = parts[:len(parts)-1]
	for i, p := range parts {
		u, ok := unescapeRust(p)
		if !ok {
			return "", false
		}
		parts[i] = u
	}
	return strings.Join(parts, "::"), true
}

func isRustHash(p string) bool {
	if len(p) != 17 || p[0] != 'h' {
		return false
	}
	for _, c := range p[1:] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

var rustEscapes = map[string]string{
	"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ",",
}

// unescapeRust undoes the legacy escapes: $LT$, $u20$ and the like, ".."
// for "::", and a leading "_$".
func unescapeRust(p string) (string, bool) {
	if strings.HasPrefix(p, "_$") {
		p = p[1:]
	}
	var b strings.Builder
	for len(p) > 0 {
		switch {
		case p[0] == '$':
			end := strings.IndexByte(p[1:], '$')
			if end < 0 {
				return "", false
			}
			esc := p[1 : 1+end]
			if r, ok := rustEscapes[esc]; ok {
				b.WriteString(r)
			} else if len(esc) > 1 && esc[0] == 'u' {
				c, err := strconv.ParseUint(esc[1:], 16, 32)
				if err != nil {
					return "", false
				}
				b.WriteRune(rune(c))
			} else {
				return "", false
			}
			p = p[end+2:]
		case strings.HasPrefix(p, ".."):
			b.WriteString("::")
			p = p[2:]
		default:
			b.WriteByte(p[0])
			p = p[1:]
		}
	}
	return b.String(), true
}
