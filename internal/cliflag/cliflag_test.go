package cliflag

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValues(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		// --uid 0 is root's processes, as execsnoop -u 0.
		{"good", []string{"-n", "3", "-d", "2s", "-b", "16M", "-uid", "0,1000", "-uid", "7", "-pid", "1,2", "-s", "a", "-s", "b"}, false},
		{"below min", []string{"-n", "0"}, true},
		{"not a number", []string{"-n", "x"}, true},
		{"bad duration", []string{"-d", "2"}, true},
		{"bad size", []string{"-b", "16Q"}, true},
		{"uid too big", []string{"-uid", "4294967295"}, true},
		// A user name, as run's --user and strace -u take it: root is 0.
		{"names", []string{"-n", "3", "-d", "2s", "-b", "16M", "-uid", "root,1000", "-uid", "7", "-pid", "1,2", "-s", "a", "-s", "b"}, false},
		{"unknown name", []string{"-uid", "no-such-user-xyz"}, true},
		{"negative uid", []string{"-uid", "-1"}, true},
		{"pid zero", []string{"-pid", "0"}, true},
		{"an empty user", []string{"-user", ""}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var n, b int
			var d time.Duration
			var uids UIDs
			var pids PositiveInts
			var s Strings
			var user string
			NonEmpty(fs, &user, "user", "", "")
			IntVar(fs, &n, "n", 5, 1, "")
			Duration(fs, &d, "d", time.Second, "")
			Bytes(fs, &b, "b", 4096, "")
			fs.Var(&uids, "uid", "")
			fs.Var(&pids, "pid", "")
			fs.Var(&s, "s", "")
			err := fs.Parse(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) = %v, want error %v", tc.args, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if n != 3 || d != 2*time.Second || b != 16<<20 || !slices.Equal(uids, UIDs{0, 1000, 7}) ||
				!slices.Equal(pids, PositiveInts{1, 2}) || !slices.Equal(s, Strings{"a", "b"}) {
				t.Errorf("got n=%d d=%v b=%d uids=%v pids=%v s=%v", n, d, b, uids, pids, s)
			}
		})
	}
}

// TestDefaults: a flag not given keeps its default; Int leaves its
// variable as it was.
func TestDefaults(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var n, keep int = 0, -1
	var d time.Duration
	IntVar(fs, &n, "n", 5, 1, "")
	Duration(fs, &d, "d", time.Second, "")
	fs.Var(Int{P: &keep}, "k", "")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if n != 5 || d != time.Second || keep != -1 {
		t.Errorf("n=%d d=%v keep=%d", n, d, keep)
	}
}

// TestUnsetDefaultNotShown: an Int left below its minimum (no assertion)
// offers no default in -h, where "(default -1)" would be a value the
// flag refuses.
func TestUnsetDefaultNotShown(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	keep := -1
	fs.Var(Int{P: &keep}, "max", "at most `N`")
	fs.PrintDefaults()
	if strings.Contains(out.String(), "default") {
		t.Errorf("-h offers a default:\n%s", out.String())
	}
}
