package metrics

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxCommInput is TASK_COMM_LEN-1: the bytes of a comm that are used.
	maxCommInput = 15
	// maxLabelLen caps a comm label value, in bytes.
	maxLabelLen = 16
	// otherComm is the label of comms beyond the cardinality cap.
	otherComm = "other"
)

// commLabel turns an attacker-controlled comm into a label value: valid
// UTF-8, at most maxLabelLen bytes, never "other" or "". See the package
// documentation for the rules.
func commLabel(comm string) string {
	if i := strings.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	if len(comm) > maxCommInput {
		comm = comm[:maxCommInput]
	}
	s := comm
	if !plain(comm) {
		s = escape(comm)
	}
	if reserved(s) {
		s += "_"
	}
	return s
}

// plain reports whether s needs no escaping: printable ASCII without '\'.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// maxWorkloadLen caps a namespace, pod or container label value, in
// bytes: Kubernetes names are at most 253 bytes, container names from
// other runtimes are whatever their user chose.
const maxWorkloadLen = 128

// labelValue turns a namespace, pod or container name into a label value:
// valid UTF-8, at most maxWorkloadLen bytes, "" kept as "" (no container)
// and a name that reads as the fold value given a trailing "_".
func labelValue(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > 4*maxWorkloadLen {
		s = s[:4*maxWorkloadLen]
	}
	v := s
	if !plain(s) || len(s) > maxWorkloadLen {
		v = escapeTo(s, maxWorkloadLen)
	}
	if reserved(v) {
		v += "_"
	}
	return v
}

// escape writes s with \xNN escapes, cut to maxLabelLen bytes at a piece
// boundary.
func escape(s string) string { return escapeTo(s, maxLabelLen) }

// escapeTo writes s with \xNN escapes, cut to max bytes at a piece
// boundary.
func escapeTo(s string, maxLabelLen int) string {
	var b strings.Builder
	b.Grow(maxLabelLen)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		var piece string
		var esc []byte
		switch {
		case r == utf8.RuneError && size == 1, r == '\\', !unicode.IsPrint(r):
			esc = make([]byte, 0, 4*size)
			for i := 0; i < size; i++ {
				c := s[i]
				esc = append(esc, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			}
			piece = string(esc)
		default:
			piece = s[:size]
		}
		if b.Len()+len(piece) > maxLabelLen {
			break
		}
		b.WriteString(piece)
		s = s[size:]
	}
	return b.String()
}

// reserved reports whether s matches ^(other)?_*$.
func reserved(s string) bool {
	s = strings.TrimPrefix(s, otherComm)
	return strings.Trim(s, "_") == ""
}
