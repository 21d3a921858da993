package detect

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// summary is what a finding says, in a form the two policies can be
// compared by: kind, subject, counts, winner, every attempt's result.
func summary(f *trace.Finding) string {
	switch f.Info().Shape {
	case trace.ShapeFile:
		return fmt.Sprintf("%s pid %d %s x%d paths %v wasted %d", f.Kind, f.Pid, f.Path, f.Count, f.Paths, f.WastedNs)
	case trace.ShapeMiss:
		return fmt.Sprintf("%s pid %d %s x%d errno %d wasted %d", f.Kind, f.Pid, f.Path, f.Count, f.Errno, f.WastedNs)
	}
	found := "none"
	if f.Found != nil {
		found = *f.Found
	}
	var att []string
	for _, a := range f.Attempts {
		att = append(att, fmt.Sprintf("%s:%d", a.Path, a.Errno))
	}
	return fmt.Sprintf("%s pid %d %s failed %d (+%d omitted) found %s wasted %d [%s]",
		f.Kind, f.Pid, f.Target, f.Failed, f.AttemptsOmitted, found, f.WastedNs, strings.Join(att, " "))
}

func summaries(fs []trace.Finding) []string {
	out := make([]string, len(fs))
	for i := range fs {
		out[i] = summary(&fs[i])
	}
	slices.Sort(out)
	return out
}

// TestParity: every sequence gives the same findings under the exact
// policy of once run and the bounded one of once watch, and those are the
// findings wanted.
func TestParity(t *testing.T) {
	lib := task(40, 40, 900, 1, "ld.so")
	sh := task(50, 50, 950, 1, "sh")
	shAfter := task(50, 50, 950, 2, "cat")
	tests := []struct {
		name   string
		ignore []string
		s      *seq
		want   []string // summary prefixes (whole fields), one per finding, in summaries order
	}{
		{
			// Decided: a probe chain is left out when every path it
			// tried matches; here every one is under /usr/lib/*/.
			name:   "--ignore covers a whole open probe chain",
			ignore: []string{"/usr/lib/*/*"},
			s: (&seq{}).
				open(lib, "/usr/lib/a/libx.so", "", 0, 0, enoent).
				open(lib, "/usr/lib/b/libx.so", "", 0, 0, enoent).
				open(lib, "/usr/lib/c/libx.so", "/usr/lib/c/libx.so", 1, 9, 3),
			want: nil,
		},
		{
			name:   "--ignore covering part of an open probe chain leaves it in",
			ignore: []string{"/usr/lib/**"},
			s: (&seq{}).
				open(lib, "/opt/a/libx.so", "", 0, 0, enoent).
				open(lib, "/opt/b/libx.so", "", 0, 0, enoent).
				open(lib, "/usr/lib/libx.so", "/usr/lib/libx.so", 1, 9, 3),
			want: []string{"failed_open_probes pid 40 libx.so failed 2"},
		},
		{
			// Decided: a file is left out when any of its names matches.
			name:   "--ignore on one name of a file leaves the file out",
			ignore: []string{"/ignored/*"},
			s: (&seq{}).
				open(cp, "/keep/a", "/keep/a", 1, 7, 3).
				open(cp, "/ignored/b", "/ignored/b", 1, 7, 4),
			want: nil,
		},
		{
			// Decided: one chain, with every attempt's real result.
			name: "ENOEXEC, the shell not found, then found",
			s: (&seq{}).
				exec(env, "/b/script", enoexec, "script").
				exec(env, "/bin/sh", enoent, "/bin/sh", "/b/script").
				image(envAfter, "/usr/bin/dash").
				exec(envAfter, "/usr/bin/sh", 0, "/usr/bin/sh", "/b/script"),
			want: []string{"exec_shell_fallback pid 20 script failed 2 (+0 omitted) found /usr/bin/sh wasted 4000 [/b/script:8 /bin/sh:2 /usr/bin/sh:0]"},
		},
		{
			name: "env PATH search ending in a script without #!",
			s: func() *seq {
				s := &seq{}
				for _, d := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
					s.exec(env, d+"/x", enoent, "x")
				}
				return s.exec(env, "/g/x", enoexec, "x").
					image(envAfter, "/usr/bin/dash").
					exec(envAfter, "/bin/sh", 0, "/bin/sh", "/g/x")
			}(),
			want: []string{"exec_shell_fallback pid 20 x failed 7 (+0 omitted) found /bin/sh"},
		},
		{
			name: "duplicates across threads, a hard link and a tally",
			s: (&seq{}).
				open(cp, "src", "/tmp/src", 8, 42, 3).
				open(cpThread, "/tmp/link", "/tmp/link", 8, 42, 4).
				tally(cp, trace.SysOpenat, 0, 8, 42, 3, 300),
			want: []string{"duplicate_open pid 10 /tmp/src x5 paths [/tmp/src /tmp/link] wasted 1300"},
		},
		{
			name: "an exec ends its image: the next image's opens are its own",
			s: (&seq{}).
				open(env, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3).
				image(envAfter, "/usr/bin/true").exec(envAfter, "/usr/bin/true", 0, "true").
				open(envAfter, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3).
				open(envAfter, "/lib/libc.so.6", "/lib/libc.so.6", 1, 7, 3),
			want: []string{"duplicate_open pid 20 /lib/libc.so.6 x2"},
		},
		{
			name: "O_PATH opens are never duplicates",
			s: (&seq{}).
				open(cp, "a", "/a", 1, 1, 3).with(func(ev *trace.Event) { ev.Open.Flags = trace.OPath }).
				open(cp, "a", "/a", 1, 1, 3).with(func(ev *trace.Event) { ev.Open.Flags = trace.OPath }).
				open(cp, "a", "/a", 1, 1, 3),
			want: nil,
		},
		{
			name: "a device, FIFO or socket opened again is never a duplicate",
			s: (&seq{}).
				open(sh, "/dev/null", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
				open(sh, "/dev/null", "/dev/null", 5, 4, 3).with(ftype(trace.FileChr)).
				open(sh, "/tmp/fifo", "/tmp/fifo", 1, 8, 3).with(ftype(trace.FileFIFO)).
				open(sh, "/tmp/fifo", "/tmp/fifo", 1, 8, 3).with(ftype(trace.FileFIFO)).
				tally(sh, trace.SysOpenat, 0, 5, 4, 40, 400).
				open(sh, "f", "/f", 1, 9, 3).with(ftype(trace.FileReg)).
				open(sh, "f", "/f", 1, 9, 3).with(ftype(trace.FileReg)),
			want: []string{"duplicate_open pid 50 /f x2"},
		},
		{
			// Decided: a directory read twice is work done twice.
			name: "a directory opened again is a duplicate",
			s: (&seq{}).
				open(sh, "d", "/d", 1, 10, 3).with(ftype(trace.FileDir)).
				open(sh, "d", "/d", 1, 10, 3).with(ftype(trace.FileDir)),
			want: []string{"duplicate_open pid 50 /d x2"},
		},
		{
			name: "an open the kernel did not send is counted first",
			s: (&seq{}).
				open(cp, "a", "/a", 1, 1, 3).with(func(ev *trace.Event) { ev.Open.Status |= trace.StSeenBefore }),
			want: []string{"duplicate_open pid 10 /a x2"},
		},
		{
			name: "PATH search that never finds, ended by exit",
			s: (&seq{}).
				exec(env, "/a/nope", enoent).exec(env, "/b/nope", enoent).exit(env, 127<<8),
			want: []string{"failed_exec_probes pid 20 nope failed 2 (+0 omitted) found none"},
		},
		{
			name: "two searches in a row are two chains",
			s: (&seq{}).
				exec(env, "/a/python3", enoent).exec(env, "/a/python", enoent).
				image(envAfter, "/b/python").exec(envAfter, "/b/python", 0, "python"),
			want: []string{
				"failed_exec_probes pid 20 python failed 1 (+0 omitted) found /b/python",
				"failed_exec_probes pid 20 python3 failed 1 (+0 omitted) found none",
			},
		},
		{
			name: "a forked child's PATH search is its own",
			s: (&seq{}).
				fork(sh, 1, 1).
				exec(sh, "/a/cat", enoent, "cat").
				image(shAfter, "/bin/cat").exec(shAfter, "/bin/cat", 0, "cat").
				exit(shAfter, 0),
			want: []string{"failed_exec_probes pid 50 cat failed 1 (+0 omitted) found /bin/cat"},
		},
		{
			name: "open probe that never finds, in two dirs",
			s: (&seq{}).
				failRel(lib, "libz.so", "/x", enoent).
				open(lib, "/y/libz.so", "", 0, 0, enoent).
				exit(lib, 0),
			want: []string{"failed_open_probes pid 40 libz.so failed 2 (+0 omitted) found none wasted 2000 [/x/libz.so:2 /y/libz.so:2]"},
		},
		{
			name: "two misses in one dir that never find are no search",
			s: (&seq{}).
				open(lib, "/x/libz.so", "", 0, 0, enoent).
				open(lib, "/x/libz.so", "", 0, 0, enoent).
				exit(lib, 0),
			// No search, but one path missed twice.
			want: []string{"repeated_miss pid 40 /x/libz.so x2 errno 2 wasted 1000"},
		},
		{
			// bash's PATH search: a stat per directory, the last found.
			name: "stat misses then a stat that finds are a failed_stat_probes chain",
			s: (&seq{}).
				lookup(sh, trace.SysNewfstatat, "/a/ls", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/b/ls", 0, 0, enoent, false).
				lookup(sh, trace.SysAccess, "/c/ls", 0, 0, -13, false).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 1, 7, 0, false).
				exit(sh, 0),
			want: []string{"failed_stat_probes pid 50 ls failed 3 (+0 omitted) found /usr/bin/ls wasted 3000 [/a/ls:2 /b/ls:2 /c/ls:13 /usr/bin/ls:0]"},
		},
		{
			// dash's PATH search past a file that is not executable:
			// found by the stat, refused by the X_OK check, one search.
			name: "a file an execute check refuses is no find: the search goes on",
			s: (&seq{}).
				lookup(sh, trace.SysNewfstatat, "/a/tool", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/b/tool", 1, 7, 0, false).
				lookup(sh, trace.SysFaccessat2, "/b/tool", 0, 0, -13, false).with(func(ev *trace.Event) { ev.Open.Mode = 1 }).
				lookup(sh, trace.SysNewfstatat, "/c/tool", 1, 8, 0, false).
				exit(sh, 0),
			want: []string{"failed_stat_probes pid 50 tool failed 2 (+0 omitted) found /c/tool"},
		},
		{
			name: "one stat miss before an open that finds is a chain",
			s: (&seq{}).
				lookup(sh, trace.SysStatx, "/a/m.js", 0, 0, enoent, false).
				open(sh, "/b/m.js", "/b/m.js", 1, 8, 3).
				exit(sh, 0),
			want: []string{"failed_stat_probes pid 50 m.js failed 1 (+0 omitted) found /b/m.js wasted 1000 [/a/m.js:2 /b/m.js:0]"},
		},
		{
			// A copy stats its destination, stats the source, then
			// creates the destination: a check before making it.
			name: "a miss where the name is made later is no stat probe",
			s: (&seq{}).
				lookup(sh, trace.SysStatx, "/dst/f", 0, 0, enoent, false).
				lookup(sh, trace.SysStatx, "/src/f", 1, 9, 0, false).
				open(sh, "/src/f", "/src/f", 1, 9, 3).
				open(sh, "/dst/f", "/dst/f", 1, 10, 4).
				exit(sh, 0),
			want: nil,
		},
		{
			name: "a command not found: stat misses in every directory, never found",
			s: (&seq{}).
				lookup(sh, trace.SysNewfstatat, "/a/nosuchcmd", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/b/nosuchcmd", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/c/nosuchcmd", 0, 0, enoent, false).
				exit(sh, 127),
			want: []string{"failed_stat_probes pid 50 nosuchcmd failed 3 (+0 omitted) found none wasted 3000"},
		},
		{
			name: "one stat miss that is never found is no finding",
			s: (&seq{}).
				lookup(sh, trace.SysNewfstatat, "/a/x", 0, 0, enoent, false).
				exit(sh, 0),
			want: nil,
		},
		{
			// The first stat was counted in the kernel: the second is
			// sent marked, the third as a repeat.
			name: "a file stat-ed three times is a duplicate_stat of 3",
			s: (&seq{}).
				unsentLookups(sh, 1).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 1, 7, 0, true).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/ls", 1, 7, 0, false).
				exit(sh, 0),
			want: []string{"duplicate_stat pid 50 /usr/bin/ls x3 paths [/usr/bin/ls] wasted 2000"},
		},
		{
			// Every lookup sent (once run --files all): the file is
			// named by its first repeat's spelling, as below.
			name: "a file stat-ed under two spellings, every stat sent",
			s: (&seq{}).
				lookup(sh, trace.SysNewfstatat, "/usr/lib/x86_64-linux-gnu", 1, 9, 0, false).
				lookup(sh, trace.SysNewfstatat, "/lib/x86_64-linux-gnu", 1, 9, 0, false).
				exit(sh, 0),
			want: []string{"duplicate_stat pid 50 /lib/x86_64-linux-gnu x2 paths [/usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu] wasted 1000"},
		},
		{
			// The first stat counted in the kernel, its spelling
			// never seen: the same subject as with it sent.
			name: "a file stat-ed under two spellings, the first counted",
			s: (&seq{}).
				unsentLookups(sh, 1).
				lookup(sh, trace.SysNewfstatat, "/lib/x86_64-linux-gnu", 1, 9, 0, true).
				exit(sh, 0),
			want: []string{"duplicate_stat pid 50 /lib/x86_64-linux-gnu x2 paths [/lib/x86_64-linux-gnu] wasted 1000"},
		},
		{
			name: "one path failing the same way 4 times is a repeated_miss of 4",
			s: (&seq{}).
				lookup(sh, trace.SysAccess, "/etc/app.conf", 0, 0, enoent, false).
				open(sh, "/etc/app.conf", "", 0, 0, enoent).
				lookup(sh, trace.SysNewfstatat, "/etc/app.conf", 0, 0, enoent, false).
				open(sh, "/etc/app.conf", "", 0, 0, enoent).
				open(sh, "/etc/app.conf", "", 0, 0, -13).
				exit(sh, 0),
			want: []string{"repeated_miss pid 50 /etc/app.conf x4 errno 2 wasted 3000"},
		},
		{
			name: "a single miss before a hit is no probe chain",
			s: (&seq{}).
				open(lib, "/usr/lib/locale/C.UTF-8/LC_CTYPE", "", 0, 0, enoent).
				open(lib, "/usr/lib/locale/C.utf8/LC_CTYPE", "/usr/lib/locale/C.utf8/LC_CTYPE", 1, 3, 3),
			want: nil,
		},
		{
			name: "EEXIST is not a probe miss",
			s: (&seq{}).
				open(lib, "/a/f", "", 0, 0, -17).open(lib, "/b/f", "", 0, 0, -17).
				open(lib, "/c/f", "/c/f", 1, 2, 3),
			want: nil,
		},
		{
			// git looks for its config in two places, then makes it in
			// the second: a file being created, not a search.
			name: "a file that appears where it was missing is no search",
			s: (&seq{}).
				open(lib, "/home/u/.config/git/config", "", 0, 0, enoent).
				failRel(lib, ".git/config", "/repo", enoent).
				open(lib, "/etc/gitconfig", "", 0, 0, enoent).
				open(lib, ".git/config", "/repo/.git/config", 1, 5, 3),
			want: nil,
		},
		{
			name: "ENAMETOOLONG and ELOOP are misses of a search",
			s: (&seq{}).
				open(lib, "/a/libq.so", "", 0, 0, -36).
				open(lib, "/b/libq.so", "", 0, 0, -40).
				open(lib, "/c/libq.so", "/c/libq.so", 1, 6, 3),
			want: []string{"failed_open_probes pid 40 libq.so failed 2 (+0 omitted) found /c/libq.so wasted 2000 [/a/libq.so:36 /b/libq.so:40 /c/libq.so:0]"},
		},
		{
			// node's package scope: package.json in each directory up
			// to the root, none; then, resolving a module, another
			// directory's package.json. The walk found it nowhere.
			name: "a walk up to the root that found nothing ends there",
			s: (&seq{}).
				open(lib, "/p/s/x/package.json", "", 0, 0, enoent).
				open(lib, "/p/s/package.json", "", 0, 0, enoent).
				open(lib, "/p/package.json", "", 0, 0, enoent).
				open(lib, "/package.json", "", 0, 0, enoent).
				open(lib, "/p/node_modules/bar/package.json", "/p/node_modules/bar/package.json", 1, 4, 3),
			want: []string{"failed_open_probes pid 40 package.json failed 4 (+0 omitted) found none wasted 4000 [/p/s/x/package.json:2 /p/s/package.json:2 /p/package.json:2 /package.json:2]"},
		},
		{
			name: "a lookup walk up to the root that found nothing ends there",
			s: (&seq{}).
				lookup(sh, trace.SysStatx, "/p/s/.toolrc", 0, 0, enoent, false).
				lookup(sh, trace.SysStatx, "/p/.toolrc", 0, 0, enoent, false).
				lookup(sh, trace.SysStatx, "/.toolrc", 0, 0, enoent, false).
				lookup(sh, trace.SysStatx, "/home/u/.toolrc", 1, 4, 0, false),
			want: []string{"failed_stat_probes pid 50 .toolrc failed 3 (+0 omitted) found none wasted 3000"},
		},
		{
			name: "a walk up that finds the name below the root is a search that found it",
			s: (&seq{}).
				lookup(sh, trace.SysStatx, "/p/s/x/node_modules", 0, 0, enoent, false).
				lookup(sh, trace.SysStatx, "/p/s/node_modules", 0, 0, enoent, false).
				lookup(sh, trace.SysStatx, "/p/node_modules", 1, 4, 0, false),
			want: []string{"failed_stat_probes pid 50 node_modules failed 2 (+0 omitted) found /p/node_modules"},
		},
		{
			// Not a walk: the root is no step up from itself, and
			// /usr/bin is no parent of /usr/local/bin.
			name: "misses that end in the root without a walk up stay one search",
			s: (&seq{}).
				lookup(sh, trace.SysNewfstatat, "/usr/local/bin/tool", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/usr/bin/tool", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/tool", 0, 0, enoent, false).
				lookup(sh, trace.SysNewfstatat, "/opt/bin/tool", 1, 4, 0, false),
			want: []string{"failed_stat_probes pid 50 tool failed 3 (+0 omitted) found /opt/bin/tool"},
		},
		{
			name: "pid reuse is a new process",
			s: (&seq{}).
				open(cp, "a", "/a", 1, 1, 3).exit(cp, 0).open(reused, "a", "/a", 1, 1, 3),
			want: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exact := summaries(tc.s.run(0, tc.ignore...).Findings)
			bounded := summaries(tc.s.bounded(tc.ignore...))
			if !slices.Equal(exact, bounded) {
				t.Fatalf("the policies disagree:\nexact   %q\nbounded %q", exact, bounded)
			}
			if len(exact) != len(tc.want) {
				t.Fatalf("findings %q, want %d like %q", exact, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !summaryMatches(exact[i], w) {
					t.Errorf("finding %q, want %q", exact[i], w)
				}
			}
		})
	}
}

// summaryMatches reports whether the summary got begins with the fields of
// want, each field equal: "failed 2" does not match "failed 20".
func summaryMatches(got, want string) bool {
	w, g := strings.Fields(want), strings.Fields(got)
	return len(w) > 0 && len(w) <= len(g) && slices.Equal(w, g[:len(w)])
}

func TestSummaryMatches(t *testing.T) {
	const got = "failed_exec_probes pid 20 x failed 20 (+0 omitted) found /bin/sh wasted 4000 [/a/x:2]"
	tests := []struct {
		want string
		ok   bool
	}{
		{got, true},
		{"failed_exec_probes pid 20 x failed 20", true},
		{"failed_exec_probes", true},
		{"failed_exec_probes pid 20 x failed 2", false},
		{"failed_exec_probes pid 2", false},
		{"failed_exec_probes pid 20 x failed 20 (+0 omitted) found /bin/s", false},
		{"pid 20 x failed 20", false},
		{got + " more", false},
		{"", false},
	}
	for _, tc := range tests {
		if ok := summaryMatches(got, tc.want); ok != tc.ok {
			t.Errorf("summaryMatches(%q) = %v, want %v", tc.want, ok, tc.ok)
		}
	}
}
