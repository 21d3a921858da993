package container

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// This machine's mountinfo (hybrid), a unified one, a mount point with a
// space, a cgroup2 mount shadowed by a later one at the same point, and
// the node's hierarchy seen from inside a cgroup namespace.
func TestMountinfo(t *testing.T) {
	hybrid := `22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	unified := "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	cases := []struct {
		name, text  string
		layout      Layout
		point, root string
		havePoint   bool
		wantPrefix  string
	}{
		{"hybrid", hybrid, LayoutHybrid, "/sys/fs/cgroup/unified", "/", true, ""},
		{"unified", unified, LayoutUnified, "/sys/fs/cgroup", "/", true, ""},
		{"legacy", "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", LayoutLegacy, "", "", false, ""},
		{"none", "22 1 254:0 / / rw - ext4 /dev/vda rw\n", LayoutNone, "", "", false, ""},
		{"escaped point", `30 23 0:26 / /mnt/my\040cgroups rw - cgroup2 cgroup2 rw` + "\n", LayoutUnified, "/mnt/my cgroups", "/", true, ""},
		{"shadowed", "30 23 0:26 /kubepods/pod/x /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n" +
			"31 30 0:26 /../../.. /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", LayoutUnified, "/sys/fs/cgroup", "/../../..", true, ""},
		{"a subtree and the whole", "30 23 0:26 /kubepods /mnt/a rw - cgroup2 cgroup2 rw\n" +
			"31 23 0:26 / /mnt/b rw - cgroup2 cgroup2 rw\n", LayoutUnified, "/mnt/b", "/", true, ""},
		{"a subtree only", "30 23 0:26 /kubepods /mnt/a rw - cgroup2 cgroup2 rw\n", LayoutUnified, "/mnt/a", "/kubepods", true, "/kubepods"},
		{"garbage", "x\n - \n1 2 3 - cgroup2\n\x00 - cgroup2 x\n", LayoutNone, "", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms := parseMountinfo(c.text)
			if l := layoutOf(ms); l != c.layout {
				t.Errorf("layout %q, want %q", l, c.layout)
			}
			m, ok := pickCgroup2(ms)
			if ok != c.havePoint || m.point != c.point || m.root != c.root {
				t.Errorf("cgroup2 mount %+v %v, want %q root %q", m, ok, c.point, c.root)
			}
			if ok && mountPrefix(m.root) != c.wantPrefix {
				t.Errorf("prefix %q, want %q", mountPrefix(m.root), c.wantPrefix)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	// This machine's own /proc/self/cgroup.
	self := "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n4:memory:/process_api/27923c408cf30e7432a1c79d9024d8c4\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n"
	pc, ok := parseProcCgroup(self)
	if !ok || !pc.hasV2 || pc.v2 != "/" || len(pc.v1) != 9 || pc.v1[5] != "/process_api/27923c408cf30e7432a1c79d9024d8c4" {
		t.Fatalf("%+v %v", pc, ok)
	}
	if p, rt, id, uid := pc.choose(); p != "/" || rt != "" || id != "" || uid != "" {
		t.Errorf("no container: chose %q %q %q %q", p, rt, id, uid)
	}
	ctr := cgroupfsPodPath(uid1, id1)
	pc, _ = parseProcCgroup("9:name=systemd:/\n4:memory:" + ctr + "\n1:cpu:/kubepods/burstable/pod" + uid1 + "\n0::/\n")
	if p, _, id, uid := pc.choose(); p != ctr || id != id1 || uid != uid1 {
		t.Errorf("the v1 container line: %q %q %q", p, id, uid)
	}
	v2 := systemdPodPath("cri-containerd", uid1, id2)
	pc, _ = parseProcCgroup("4:memory:" + ctr + "\n0::" + v2 + "\n")
	if p, rt, id, _ := pc.choose(); p != v2 || id != id2 || rt != "containerd" {
		t.Errorf("the v2 line first: %q %q %q", p, rt, id)
	}
	mon := "/kubepods/burstable/pod" + uid1 + "/crio-conmon-" + id1
	pc, _ = parseProcCgroup("4:memory:" + mon + "\n0::/\n")
	if p, rt, id, uid := pc.choose(); p != mon || rt != "cri-o" || id != "" || uid != uid1 {
		t.Errorf("conmon: %q %q %q %q", p, rt, id, uid)
	}
	for _, bad := range []string{"", "\n", "0:/\n", "x::/\n", "0::relative\n", "4:memory:/a\n4:memory:/b\n0::/\n",
		strings.Repeat("1:cpu:/\n", 2), "-1::/\n", "99999999999::/\n", strings.Repeat("0::/\n", MaxProcCgroupLines+1)} {
		if pc, ok := parseProcCgroup(bad); ok {
			t.Errorf("parseProcCgroup(%q) = %+v, ok", bad, pc)
		}
	}
}

func TestLRU(t *testing.T) {
	c := newLRU[int, string](3)
	for i := 0; i < 3; i++ {
		c.put(i, "v")
	}
	c.get(0)      // 0 most recent: 1 is the oldest
	c.put(3, "v") // evicts 1
	c.put(0, "w") // an update, no eviction
	var keys []int
	for k := 0; k < 5; k++ {
		if _, ok := c.get(k); ok {
			keys = append(keys, k)
		}
	}
	if !reflect.DeepEqual(keys, []int{0, 2, 3}) || c.len() != 3 {
		t.Errorf("kept %v (%d)", keys, c.len())
	}
	if v, _ := c.get(0); v != "w" {
		t.Errorf("updated value %q", v)
	}
}

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("12345"), 0o600)
	if b, err := readBounded(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("%q %v", b, err)
	}
	if _, err := readBounded(p, 4); err != errTooLarge {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := readBounded(dir, 5); err != errNotRegular {
		t.Errorf("a directory: %v", err)
	}
	os.Symlink(p, filepath.Join(dir, "l"))
	if _, err := readBounded(filepath.Join(dir, "l"), 5); err == nil {
		t.Errorf("a symlink was followed")
	}
	// procfs says size 0: the read itself is bounded.
	if b, err := readBounded("/proc/self/mountinfo", 10); err != errTooLarge {
		t.Errorf("procfs over the cap: %d bytes, %v", len(b), err)
	}
}

func TestCleanField(t *testing.T) {
	for in, want := range map[string]string{
		"web": "web", "": "", "a\nb": "", "a\x1b[31m": "", "\xff": "", "caf\u00e9": "caf\u00e9", "a\u0085b": "",
		strings.Repeat("a", MaxFieldLen): strings.Repeat("a", MaxFieldLen), strings.Repeat("a", MaxFieldLen+1): "",
	} {
		if got := cleanField(in); got != want {
			t.Errorf("cleanField(%q) = %q", in, got)
		}
	}
}
