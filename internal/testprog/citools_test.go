package testprog_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ciTools is every program a test looks up, and the Debian package of it
// that .ci/run installs ("" for what any Debian with Go already has).
var ciTools = map[string]string{
	"gcc": "gcc", "make": "make", "strace": "strace", "git": "git", "python3": "python3",
	"tmux": "tmux", "setpriv": "util-linux", "unshare": "util-linux", "gdb": "gdb",
	"runuser": "util-linux", "nsenter": "util-linux", "mount": "mount", "chroot": "",
	"objcopy": "binutils", "strip": "binutils", "rustc": "rustc",
	"mkfs.ext4": "e2fsprogs", "mkfs.xfs": "xfsprogs", "mkfs.btrfs": "btrfs-progs", "btrfs": "btrfs-progs",
	"runc": "runc", "crun": "crun", "busybox": "busybox-static",
	"node": "nodejs", "bash": "", "truncate": "",
	"sh": "", "true": "", "cp": "", "go": "",
}

// TestCIInstallsEveryTool: each tool a test asks NeedTool (or stack's
// need) for is in ciTools, .ci/run installs its package, and the README's
// list of what make test uses names it: under CI=true a missing tool is a
// failure, so CI must have them all.
func TestCIInstallsEveryTool(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lookups := regexp.MustCompile(`(?:[Nn]eedTool\(\w+, |need\(t, )((?:"[^"]+"(?:, )?)+)\)`)
	quoted := regexp.MustCompile(`"([^"]+)"`)
	used := map[string]string{} // tool -> a file asking for it
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range lookups.FindAllSubmatch(b, -1) {
			for _, q := range quoted.FindAllSubmatch(m[1], -1) {
				used[string(q[1])] = p
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 10 {
		t.Fatalf("found only %d tools looked up: %v", len(used), used)
	}
	for tool, file := range used {
		if _, ok := ciTools[tool]; !ok {
			t.Errorf("%s looks up %s: add it to ciTools, .ci/run and the README", file, tool)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	installed := strings.Fields(strings.ReplaceAll(string(ci), "\\\n", " "))
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for tool, pkg := range ciTools {
		if pkg == "" {
			continue
		}
		if !slices.Contains(installed, pkg) {
			t.Errorf(".ci/run does not install %s (for %s)", pkg, tool)
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(tool) + `\b`).Match(readme) {
			t.Errorf("README.md does not name %s among the tools make test uses", tool)
		}
	}
	// Found by path, not looked up: uutils cp.
	if !slices.Contains(installed, "rust-coreutils") {
		t.Error(".ci/run does not install rust-coreutils (uutils cp)")
	}
}
