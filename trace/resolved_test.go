package trace

import "testing"

func TestExecResolved(t *testing.T) {
	for _, c := range []struct {
		name string
		r    ExecRecord
		want string
	}{
		{"absolute", ExecRecord{Filename: "/bin/ls", Path: "/ignored", Status: StPathIsBase}, "/bin/ls"},
		{"relative, no path known", ExecRecord{Filename: "ls"}, "ls"},
		{"relative to a dirfd", ExecRecord{Filename: "tgt", Path: "/d1", Status: StPathIsBase}, "/d1/tgt"},
		{"dot and dotdot", ExecRecord{Filename: "./../p3/tgt", Path: "/r/p2", Status: StPathIsBase}, "/r/p3/tgt"},
		{"from the root", ExecRecord{Filename: "tgt", Path: "/", Status: StPathIsBase}, "/tgt"},
		{"AT_EMPTY_PATH", ExecRecord{Filename: "", Path: "/memfd:x (deleted)"}, "/memfd:x (deleted)"},
		{"the kernel's copy of a dirfd-relative name", ExecRecord{Filename: "/dev/fd/3/tgt", Path: "/d4/tgt"}, "/d4/tgt"},
		{"base cut", ExecRecord{Filename: "tgt", Path: PathCut + "/deep/dir", Status: StPathIsBase | StPathTruncated}, PathCut + "/deep/dir/tgt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Resolved(); got != c.want {
				t.Errorf("Resolved() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestNameDir(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"/etc/pyenv.d/which/", "/etc/pyenv.d"},
		{"/etc/pyenv.d/which//", "/etc/pyenv.d"},
		{"/etc/pyenv.d/which", "/etc/pyenv.d"},
		{"lib/", "."},
		{"a/b/", "a"},
		{"/", "/"},
		{"//", "/"},
		{"/usr/", "/"},
		{"", "."},
	} {
		if got := NameDir(tc.name); got != tc.want {
			t.Errorf("NameDir(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
