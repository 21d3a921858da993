package strace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// AtFDCWD is the dirfd value meaning "relative to the current directory",
// as -X raw prints it.
const AtFDCWD = -100

// cloneThread is CLONE_THREAD: a clone with it makes a thread of the
// caller's process rather than a new process.
const cloneThread = 0x10000

// Call is one system call from the trace, with its entry and exit merged
// when strace printed them on separate lines.
type Call struct {
	// Line is the 1-based line number of the call's entry in the input.
	Line int
	// Pid is the thread id that strace printed for the call's entry (the
	// tid, which equals the process id only for a main thread). It is 0
	// when the line carried no pid prefix.
	Pid int
	// Tgid is the process (thread group) id, derived from the clone-family
	// calls in the trace; it equals Pid for threads whose creation was not
	// seen, such as the traced command itself.
	Tgid int
	// Syscall is the name as printed, e.g. "openat".
	Syscall string
	// Args are the top-level arguments exactly as printed, comments
	// included. For a call that never finished they may be incomplete.
	Args []string

	// Dirfd is what Path is resolved against: the dirfd argument of
	// openat, openat2 and execveat, and AtFDCWD for open, creat and execve.
	// It is 0 for other syscalls.
	Dirfd int
	// Path is the path argument decoded to its raw bytes, for the open
	// family, execve and execveat. HasPath is false when there is no such
	// argument or strace could not read it (printed as NULL or an address).
	Path    string
	HasPath bool
	// Flags is the flags argument as printed ("0x80000", or "0x1200000|17"
	// for clone): open/openat's flags, openat2's how.flags, execveat's
	// flags and the clone family's flags. Empty if absent. See FlagBits.
	Flags string
	// Mode is the mode argument as printed (e.g. "0644"), if any.
	Mode string
	// Argv is the decoded argument vector of execve and execveat.
	Argv []string

	// Ret is the return value; for a failure it is -1 and Errno is set.
	Ret int64
	// Errno is the error name strace printed ("ENOENT"), or "" on success.
	Errno string
	// NoReturn is true when strace printed no return value: the call was
	// cut short (its thread was killed, or another thread's execve replaced
	// the process) or its result was "?". Ret is then meaningless.
	NoReturn bool
}

// Failed reports whether the call returned an error.
func (c Call) Failed() bool { return c.Errno != "" }

// Succeeded reports whether the call returned without an error.
func (c Call) Succeeded() bool { return !c.NoReturn && c.Errno == "" }

// IsOpen reports whether the call is one of the open family.
func (c Call) IsOpen() bool {
	switch c.Syscall {
	case "open", "openat", "openat2", "creat":
		return true
	}
	return false
}

// IsExec reports whether the call is an execve or execveat.
func (c Call) IsExec() bool { return c.Syscall == "execve" || c.Syscall == "execveat" }

// IsLookup reports whether c looked a name up without opening it (the
// stat and access family), as once counts lookups: fstatat and statx of
// a descriptor (AT_EMPTY_PATH with an empty name) name no file.
func (c Call) IsLookup() bool {
	switch c.Syscall {
	case "newfstatat", "statx", "faccessat2":
		return !(c.HasPath && c.Path == "" && c.atEmptyPath())
	case "stat", "lstat", "access", "faccessat":
		return true
	}
	return false
}

// atEmptyPath: c's flags have AT_EMPTY_PATH (0x1000).
func (c Call) atEmptyPath() bool {
	v, err := c.FlagBits()
	return err == nil && v&0x1000 != 0
}

// FlagBits returns Flags as a number. It needs the numeric form that
// -X raw prints; symbolic flag names are an error.
func (c Call) FlagBits() (uint64, error) {
	if c.Flags == "" {
		return 0, fmt.Errorf("%s has no flags", c.Syscall)
	}
	var bits uint64
	for part := range strings.SplitSeq(c.Flags, "|") {
		if part == "" {
			// strace -X raw prints statx's AT_STATX_SYNC_AS_STAT
			// (0) as nothing: "|0x1000".
			continue
		}
		v, err := strconv.ParseUint(part, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("flags %q: %w", c.Flags, err)
		}
		bits |= v
	}
	return bits, nil
}

// Parse reads strace output produced with Args and returns the calls in the
// order of their entry lines.
//
// A call that strace split into "<unfinished ...>" and "<... NAME resumed>"
// lines, possibly with other threads' lines in between, comes back as one
// Call. When a non-leader thread's execve succeeds, the kernel gives that
// thread the process id; strace then reports the completion under the new
// pid ("+++ superseded by execve in pid N +++", "<pid changed to N ...>"),
// and Parse joins it to the entry, keeping the entry's tid in Pid. Exit,
// signal and informational lines are skipped. Calls that never complete
// are kept with NoReturn set; strace's "???" placeholders for calls
// interrupted by a detach are dropped.
//
// Parse returns an error for a line it cannot interpret, rather than
// guessing, since callers use its result as ground truth.
func Parse(r io.Reader) ([]Call, error) {
	p := &parser{pending: map[int]*pendingCall{}}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			p.lineNo++
			if perr := p.line(strings.TrimRight(line, "\r\n")); perr != nil {
				return nil, fmt.Errorf("strace output line %d: %w", p.lineNo, perr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	// Whatever is still pending never got a return value, e.g. a thread
	// killed by an exit in a sibling without strace reporting it.
	for pid := range p.pending {
		p.abandon(pid)
	}
	var out []Call
	for _, c := range p.calls {
		if c.Syscall != "???" {
			out = append(out, c)
		}
	}
	resolveTgids(out)
	return out, nil
}

// pendingCall is an entry line still waiting for its "resumed" line.
type pendingCall struct {
	idx  int    // index into parser.calls
	text string // the entry text without its trailing marker
	// newPid is the pid a successful execve will resume under, when strace
	// announced it with "<pid changed to N ...>"; 0 otherwise.
	newPid int
}

type parser struct {
	calls   []Call
	pending map[int]*pendingCall // by the tid expected to print the resumption
	lineNo  int
}

// Markers strace appends to entry lines that it will complete later (or,
// for detached, never).
const (
	unfinishedMark = " <unfinished ...>"
	detachedMark   = " <detached ...>"
	pidChangedMark = " <pid changed to "
)

func (p *parser) line(line string) error {
	pid, rest, err := splitPid(line)
	if err != nil {
		return err
	}
	switch {
	case rest == "":
		return nil
	case strings.HasPrefix(rest, "+++ "):
		return p.exitLine(pid, rest)
	case strings.HasPrefix(rest, "--- "), // signal delivery or stop
		strings.HasPrefix(rest, "[ "),       // e.g. "[ Process PID=1 runs in 32 bit mode. ]"
		strings.HasPrefix(rest, "strace: "): // diagnostics, if mixed into the file
		return nil
	case strings.HasPrefix(rest, "<... "):
		return p.resumed(pid, rest)
	}
	return p.entry(pid, rest)
}

// splitPid removes the "PID  " prefix that -f with -o prints, or the
// "[pid PID] " form strace uses when writing to a terminal or stderr.
func splitPid(line string) (int, string, error) {
	if rest, ok := strings.CutPrefix(line, "[pid "); ok {
		num, after, ok := strings.Cut(rest, "] ")
		if !ok {
			return 0, "", fmt.Errorf("malformed [pid N] prefix in %q", line)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil {
			return 0, "", fmt.Errorf("malformed [pid N] prefix in %q", line)
		}
		return pid, after, nil
	}
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	// Syscall names never start with a digit, so leading digits followed
	// by a space can only be the pid column.
	if i == 0 || i == len(line) || line[i] != ' ' {
		return 0, line, nil
	}
	pid, err := strconv.Atoi(line[:i])
	if err != nil {
		return 0, "", fmt.Errorf("pid %q: %w", line[:i], err)
	}
	return pid, strings.TrimLeft(line[i:], " "), nil
}

func (p *parser) exitLine(pid int, rest string) error {
	// "+++ superseded by execve in pid T +++" is printed for the old leader
	// pid when thread T execs: T continues under this pid, so its pending
	// execve will resume here. The old leader's own pending call (if any)
	// is dead.
	if s, ok := strings.CutPrefix(rest, "+++ superseded by execve in pid "); ok {
		tidStr, _, _ := strings.Cut(s, " ")
		tid, err := strconv.Atoi(tidStr)
		if err != nil {
			return fmt.Errorf("superseded line %q: %w", rest, err)
		}
		pc := p.pending[tid]
		if pc == nil {
			// strace saw no execve entry (e.g. attached late); nothing to join.
			return nil
		}
		if pid != tid {
			p.abandon(pid)
			delete(p.pending, tid)
			p.pending[pid] = pc
		}
		return nil
	}
	// "+++ exited with N +++" or "+++ killed by SIG +++": this thread is
	// gone, so a pending call of it will not return. Dropping it now also
	// keeps a later thread that reuses the tid from resuming it.
	p.abandon(pid)
	return nil
}

// abandon finalizes pid's pending call, if any, as never having returned.
func (p *parser) abandon(pid int) {
	if pc := p.pending[pid]; pc != nil {
		delete(p.pending, pid)
		p.calls[pc.idx].NoReturn = true
	}
}

func (p *parser) entry(pid int, text string) error {
	var (
		detached  bool
		newPid    int
		truncated bool
	)
	switch {
	case strings.HasSuffix(text, unfinishedMark):
		text, truncated = strings.TrimSuffix(text, unfinishedMark), true
	case strings.HasSuffix(text, detachedMark):
		text, truncated, detached = strings.TrimSuffix(text, detachedMark), true, true
	default:
		if i := strings.LastIndex(text, pidChangedMark); i >= 0 && strings.HasSuffix(text, " ...>") {
			n, err := strconv.Atoi(strings.TrimSuffix(text[i+len(pidChangedMark):], " ...>"))
			if err != nil {
				return fmt.Errorf("malformed pid change marker in %q", text)
			}
			text, truncated, newPid = text[:i], true, n
		}
	}
	c, err := parseCall(text, !truncated)
	if err != nil {
		return err
	}
	c.Line, c.Pid = p.lineNo, pid
	p.calls = append(p.calls, c)
	if !truncated {
		return nil
	}
	if detached {
		p.calls[len(p.calls)-1].NoReturn = true
		return nil
	}
	// A thread has at most one call in flight; an older pending one that
	// was never resumed is dead.
	p.abandon(pid)
	p.pending[pid] = &pendingCall{idx: len(p.calls) - 1, text: text, newPid: newPid}
	return nil
}

func (p *parser) resumed(pid int, text string) error {
	head, tail, ok := strings.Cut(text, " resumed>")
	if !ok {
		return fmt.Errorf("malformed resumed line %q", text)
	}
	name := strings.TrimPrefix(head, "<... ")
	key, pc := pid, p.pending[pid]
	if pc == nil || p.calls[pc.idx].Syscall != name {
		key, pc = p.findMoved(pid, name)
	}
	if pc == nil {
		return fmt.Errorf("%s resumed in pid %d without a matching unfinished call", name, pid)
	}
	delete(p.pending, key)

	// Splice the two halves back into the line strace would have printed
	// had nothing interleaved, and parse that.
	merged := pc.text + tail
	complete := true
	if strings.HasSuffix(merged, unfinishedMark) {
		// Interrupted again; keep waiting.
		merged, complete = strings.TrimSuffix(merged, unfinishedMark), false
	}
	c, err := parseCall(merged, complete)
	if err != nil {
		return err
	}
	old := p.calls[pc.idx]
	c.Line, c.Pid = old.Line, old.Pid
	p.calls[pc.idx] = c
	if !complete {
		pc.text = merged
		p.pending[pid] = pc
	}
	return nil
}

// findMoved locates the pending call that a resumption in pid belongs to
// when it was not registered under pid: an execve from another thread that
// now runs as pid, announced only by "<pid changed to pid ...>", or, if
// strace printed no hint at all, the only pending exec of that name.
func (p *parser) findMoved(pid int, name string) (int, *pendingCall) {
	var (
		key   int
		found *pendingCall
		n     int
	)
	for k, pc := range p.pending {
		if pc.newPid == pid && p.calls[pc.idx].Syscall == name {
			return k, pc
		}
		if p.calls[pc.idx].Syscall == name && (name == "execve" || name == "execveat") {
			key, found = k, pc
			n++
		}
	}
	if n == 1 {
		return key, found
	}
	return 0, nil
}

// parseCall parses "name(args...) = ret ..." or, if complete is false, an
// entry without its closing part.
func parseCall(text string, complete bool) (Call, error) {
	open := strings.IndexByte(text, '(')
	if open <= 0 || !validName(text[:open]) {
		return Call{}, fmt.Errorf("not a system call line: %q", text)
	}
	c := Call{Syscall: text[:open]}
	args, end := splitArgs(text[open+1:])
	c.Args = args
	if complete {
		if end < 0 {
			return Call{}, fmt.Errorf("unterminated argument list in %q", text)
		}
		if err := c.parseResult(text[open+1+end+1:]); err != nil {
			return Call{}, fmt.Errorf("%w in %q", err, text)
		}
	} else {
		c.NoReturn = true // until a resumed line says otherwise
	}
	if err := c.decodeArgs(); err != nil {
		return Call{}, fmt.Errorf("%s: %w in %q", c.Syscall, err, text)
	}
	return c, nil
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || b == '?' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

// parseResult parses what follows the closing parenthesis:
// "= 3", "= -1 ENOENT (No such file or directory)", "= ?",
// "= ? ERESTARTSYS (...)", "= 0x7f00..." and the like.
func (c *Call) parseResult(s string) error {
	s = strings.TrimLeft(s, " ")
	s, ok := strings.CutPrefix(s, "=")
	if !ok {
		return errors.New("missing return value")
	}
	s = strings.TrimLeft(s, " ")
	val, rest, _ := strings.Cut(s, " ")
	if val == "?" {
		c.NoReturn = true
	} else {
		// -y style "3</path>" annotations follow the number directly.
		if i := strings.IndexByte(val, '<'); i > 0 {
			val = val[:i]
		}
		ret, err := strconv.ParseInt(val, 0, 64)
		if err != nil {
			// Addresses such as mmap's are printed as large hex numbers.
			u, uerr := strconv.ParseUint(val, 0, 64)
			if uerr != nil {
				return fmt.Errorf("return value %q: %w", val, err)
			}
			ret = int64(u)
		}
		c.Ret = ret
	}
	switch {
	case len(rest) > 1 && rest[0] == 'E' && (rest[1] >= 'A' && rest[1] <= 'Z' || rest[1] >= '0' && rest[1] <= '9'): // E2BIG
		c.Errno, _, _ = strings.Cut(rest, " ")
	case strings.HasPrefix(rest, "(errno "):
		// An errno strace has no name for: "(errno 530)".
		num, _, _ := strings.Cut(strings.TrimPrefix(rest, "(errno "), ")")
		c.Errno = "errno " + num
	}
	return nil
}

// decodeArgs fills the typed fields from Args for the syscalls this package
// is about. Missing trailing arguments (from unfinished calls) are left
// empty.
func (c *Call) decodeArgs() error {
	arg := func(i int) string {
		if i < len(c.Args) {
			return c.Args[i]
		}
		return ""
	}
	var err error
	path := func(i int) {
		if err == nil && i < len(c.Args) {
			c.Path, c.HasPath, err = decodeString(c.Args[i])
		}
	}
	dirfd := func(i int) {
		if err == nil && i < len(c.Args) {
			c.Dirfd, err = parseDirfd(c.Args[i])
		}
	}
	argv := func(i int) {
		if err == nil && i < len(c.Args) {
			c.Argv, err = decodeArray(c.Args[i])
		}
	}
	switch c.Syscall {
	case "open":
		c.Dirfd = AtFDCWD
		path(0)
		c.Flags, c.Mode = arg(1), arg(2)
	case "creat":
		c.Dirfd = AtFDCWD
		path(0)
		c.Mode = arg(1)
	case "openat":
		dirfd(0)
		path(1)
		c.Flags, c.Mode = arg(2), arg(3)
	case "openat2":
		dirfd(0)
		path(1)
		c.Flags = structField(arg(2), "flags")
		c.Mode = structField(arg(2), "mode")
	case "execve":
		c.Dirfd = AtFDCWD
		path(0)
		argv(1)
	case "execveat":
		dirfd(0)
		path(1)
		argv(2)
		c.Flags = arg(4)
	case "newfstatat", "faccessat2":
		dirfd(0)
		path(1)
		c.Flags = arg(3)
	case "statx":
		dirfd(0)
		path(1)
		c.Flags = arg(2)
	case "stat", "lstat", "access":
		c.Dirfd = AtFDCWD
		path(0)
	case "faccessat":
		dirfd(0)
		path(1)
	case "clone":
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "flags="); ok {
				c.Flags = v
			}
		}
	case "clone3":
		c.Flags = structField(arg(0), "flags")
	}
	return err
}

// parseDirfd accepts "-100", "AT_FDCWD" (symbolic output) and "3</dir>"
// (-y output).
func parseDirfd(s string) (int, error) {
	if s == "AT_FDCWD" || strings.HasPrefix(s, "AT_FDCWD<") {
		return AtFDCWD, nil
	}
	if i := strings.IndexByte(s, '<'); i > 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("dirfd %q is not a number", s)
	}
	return n, nil
}

// splitArgs splits the text after a call's opening parenthesis into its
// top-level arguments. It returns the index of the closing parenthesis, or
// -1 if the text ends first (an unfinished call).
func splitArgs(s string) (args []string, end int) {
	return splitList(s, ')')
}

// splitList splits s at top-level commas up to the first top-level closing
// byte, whose index it returns (-1 if s ends first). Commas and brackets
// inside strings, nested arrays, structs and comments do not count, which
// is what makes paths containing `", "` or `)` safe.
func splitList(s string, closing byte) (items []string, end int) {
	depth, start := 0, 0
	add := func(a string) {
		a = strings.TrimSpace(a)
		if a != "" || len(items) > 0 {
			items = append(items, a)
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			i = skipString(s, i)
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				if j := strings.Index(s[i+2:], "*/"); j >= 0 {
					i += 2 + j + 1
				} else {
					i = len(s)
				}
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 && c == closing {
				add(s[start:i])
				return items, i
			}
			depth--
		case ',':
			if depth == 0 {
				add(s[start:i])
				start = i + 1
			}
		}
	}
	add(s[start:])
	return items, -1
}

// skipString returns the index of the quote closing the string that opens
// at s[i], or len(s)-1 if it is unterminated.
func skipString(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s) - 1
}

// structField returns the value of key in a printed struct such as
// "{flags=0x80000, mode=0, resolve=0}" (a trailing "=> {...}" with values
// written back by the kernel is ignored), or "" if absent.
func structField(s, key string) string {
	s, ok := strings.CutPrefix(s, "{")
	if !ok {
		return ""
	}
	fields, _ := splitList(s, '}')
	for _, f := range fields {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// decodeArray decodes a printed string array such as ["ls", "-l"]. An
// element strace could not print as a string (the "..." of an array cut
// short) is skipped; a pointer instead of an array yields nil.
func decodeArray(s string) ([]string, error) {
	s, ok := strings.CutPrefix(s, "[")
	if !ok {
		return nil, nil
	}
	elems, _ := splitList(s, ']')
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		v, ok, err := decodeString(e)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, nil
}
