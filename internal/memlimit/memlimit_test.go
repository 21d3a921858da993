package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: None},
		{in: "none", want: None},
		{in: "NONE", want: None},
		{in: "0M", want: None},
		{in: "1000", want: 1000},
		{in: "1000B", want: 1000},
		{in: "4K", want: 4 << 10},
		{in: "192M", want: 192 << 20},
		{in: "192m", want: 192 << 20},
		{in: "192MiB", want: 192 << 20},
		{in: "192MB", want: 192 << 20},
		{in: "192Mi", want: 192 << 20},
		{in: "1Gi", want: 1 << 30},
		{in: "2G", want: 2 << 30},
		{in: " 64M ", want: 64 << 20},
		{in: "", bad: true},
		{in: "M", bad: true},
		{in: "-1", bad: true},
		{in: "1.5G", bad: true},
		{in: "12X", bad: true},
		{in: "99999999999G", bad: true},
		{in: "9223372036854775807", want: 9223372036854775807},
	} {
		got, err := Parse(c.in)
		if (err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

// hybrid is this kind of machine's: v1 controllers, memory among them,
// and a cgroup2 hierarchy without controllers at /sys/fs/cgroup/unified.
const hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const hybridCgroup = `9:name=systemd:/
4:memory:/pods/once
1:cpu:/
0::/pods/once
`

// v2Mounts: a unified hierarchy, and a container's: its cgroup namespace
// makes its own cgroup the mount's root.
const v2Mounts = `25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
`

func TestCgroup(t *testing.T) {
	for _, c := range []struct {
		name   string
		mounts string
		cgroup string
		files  map[string]string
		want   int64
	}{
		{name: "v1 limit", mounts: hybridMounts, cgroup: hybridCgroup, files: map[string]string{
			"sys/fs/cgroup/memory/memory.limit_in_bytes":           "9223372036854771712\n",
			"sys/fs/cgroup/memory/pods/memory.limit_in_bytes":      "9223372036854771712\n",
			"sys/fs/cgroup/memory/pods/once/memory.limit_in_bytes": "268435456\n",
		}, want: 256 << 20},
		{name: "v1 parent's limit is lower", mounts: hybridMounts, cgroup: hybridCgroup, files: map[string]string{
			"sys/fs/cgroup/memory/pods/memory.limit_in_bytes":      "134217728\n",
			"sys/fs/cgroup/memory/pods/once/memory.limit_in_bytes": "268435456\n",
		}, want: 128 << 20},
		{name: "v1 unlimited", mounts: hybridMounts, cgroup: hybridCgroup, files: map[string]string{
			"sys/fs/cgroup/memory/pods/once/memory.limit_in_bytes": "9223372036854771712\n",
		}, want: None},
		{name: "v1 in a combined hierarchy", mounts: "35 31 0:32 / /sys/fs/cgroup/memory,cpu rw - cgroup cgroup rw,cpu,memory\n",
			cgroup: "4:cpu,memory:/a\n", files: map[string]string{
				"sys/fs/cgroup/memory,cpu/a/memory.limit_in_bytes": "1048576\n",
			}, want: 1 << 20},
		{name: "v2 limit", mounts: v2Mounts, cgroup: "0::/kubepods/pod1/once\n", files: map[string]string{
			"sys/fs/cgroup/kubepods/pod1/once/memory.max": "268435456\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":      "max\n",
			"sys/fs/cgroup/kubepods/memory.max":           "max\n",
		}, want: 256 << 20},
		{name: "v2 pod's limit is lower", mounts: v2Mounts, cgroup: "0::/kubepods/pod1/once\n", files: map[string]string{
			"sys/fs/cgroup/kubepods/pod1/once/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":      "100000000\n",
		}, want: 100000000},
		{name: "v2 in a cgroup namespace", mounts: "25 1 0:22 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", cgroup: "0::/\n",
			files: map[string]string{"sys/fs/cgroup/memory.max": "67108864\n"}, want: 64 << 20},
		{name: "v2 mount of a subtree", mounts: "25 1 0:22 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
			cgroup: "0::/kubepods/pod1/once\n", files: map[string]string{
				"sys/fs/cgroup/once/memory.max": "67108864\n",
			}, want: 64 << 20},
		{name: "hybrid, v2 has no memory controller", mounts: hybridMounts, cgroup: hybridCgroup, files: map[string]string{}, want: None},
		{name: "no cgroup mounts", mounts: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", cgroup: hybridCgroup, want: None},
		{name: "garbage in the files", mounts: hybridMounts + "junk\n- - -\n", cgroup: "junk\n::\n" + hybridCgroup, files: map[string]string{
			"sys/fs/cgroup/memory/pods/once/memory.limit_in_bytes": "lots\n",
			"sys/fs/cgroup/memory/pods/memory.limit_in_bytes":      "-5\n",
		}, want: None},
		{name: "mount point with a space", mounts: `35 31 0:32 / /sys/fs/cgroup/mem\040ory rw - cgroup cgroup rw,memory` + "\n",
			cgroup: "4:memory:/a\n", files: map[string]string{
				"sys/fs/cgroup/mem ory/a/memory.limit_in_bytes": "1048576\n",
			}, want: 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"proc/self/mountinfo": c.mounts, "proc/self/cgroup": c.cgroup}
			for k, v := range c.files {
				files[k] = v
			}
			for name, data := range files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Cgroup(root)
			if err != nil || got != c.want {
				t.Errorf("Cgroup = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestCgroupMissingProc(t *testing.T) {
	if _, err := Cgroup(t.TempDir()); err == nil {
		t.Error("no error without /proc/self/cgroup")
	}
}

func TestSoft(t *testing.T) {
	for _, c := range []struct{ in, extra, want int64 }{
		{None, 0, None},
		{0, 0, None},
		{256 << 20, 0, 192 << 20},
		{256 << 20, -8 << 20, 192 << 20},
		{256 << 20, 56 << 20, 136 << 20},
		{256 << 20, 1 << 30, 128 << 20},
		{1 << 30, 0, 1<<30 - Headroom},
		{64 << 20, 0, 32 << 20},
	} {
		if got := Soft(c.in, c.extra); got != c.want {
			t.Errorf("Soft(%d, %d) = %d, want %d", c.in, c.extra, got, c.want)
		}
	}
}

func TestSetup(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := t.TempDir()
	for name, data := range map[string]string{
		"proc/self/mountinfo": hybridMounts,
		"proc/self/cgroup":    hybridCgroup,
		"sys/fs/cgroup/memory/pods/once/memory.limit_in_bytes": "268435456\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(data), 0o644)
	}
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		name  string
		flag  string
		given bool
		extra int64
		env   string
		want  int64
		from  string
		bad   bool
	}{
		{name: "cgroup", want: 192 << 20, from: "cgroup"},
		{name: "cgroup, a larger ring", extra: 56 << 20, want: 136 << 20, from: "cgroup"},
		{name: "flag wins", flag: "100M", given: true, want: 100 << 20, from: "--memory-limit"},
		{name: "flag none", flag: "none", given: true, want: None, from: "--memory-limit"},
		{name: "bad flag", flag: "lots", given: true, bad: true},
		{name: "GOMEMLIMIT is kept", env: "150MiB", want: 77 << 20, from: "GOMEMLIMIT"},
		{name: "flag wins over GOMEMLIMIT", env: "150MiB", flag: "0", given: true, want: None, from: "--memory-limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", c.env)
			debug.SetMemoryLimit(77 << 20) // what the runtime read from GOMEMLIMIT, say
			got, from, err := Setup(c.flag, c.given, root, c.extra)
			if (err != nil) != c.bad {
				t.Fatalf("Setup: %v", err)
			}
			if c.bad {
				return
			}
			if got != c.want || from != c.from || debug.SetMemoryLimit(-1) != c.want {
				t.Errorf("Setup = %d from %q (runtime %d), want %d from %q", got, from, debug.SetMemoryLimit(-1), c.want, c.from)
			}
		})
	}
}

// TestSetupGivenMounts: a mountinfo the caller read already is used, not
// read again (here the file is not there to read).
func TestSetupGivenMounts(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := t.TempDir()
	for name, data := range map[string]string{
		"proc/self/cgroup": hybridCgroup,
		"sys/fs/cgroup/memory/pods/once/memory.limit_in_bytes": "268435456\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(data), 0o644)
	}
	t.Setenv("GOMEMLIMIT", "")
	got, from, err := SetupMounts("", false, root, []byte(hybridMounts), 0)
	if err != nil || got != 192<<20 || from != "cgroup" {
		t.Errorf("SetupMounts = %d, %q, %v; want %d from the cgroup", got, from, err, 192<<20)
	}
}
