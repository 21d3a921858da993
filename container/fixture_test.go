package container

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixture is a fake node under t.TempDir(): procfs (self/mountinfo,
// PID/cgroup), a cgroup2 tree (whose directories' inode numbers are the
// cgroup ids, as on cgroup2), and the runtimes' state directories.
type fixture struct {
	t     testing.TB
	root  string
	proc  string
	cg2   string // the cgroup2 mount point
	clock time.Time
}

// newFixture lays out a node: "unified" (cgroup2 at /sys/fs/cgroup),
// "hybrid" (v1 memory and name=systemd, cgroup2 at
// /sys/fs/cgroup/unified), as this machine is, or "legacy" (v1 alone).
func newFixture(t testing.TB, layout string) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, root: root, proc: filepath.Join(root, "proc"), clock: time.Unix(1_000_000, 0)}
	sys := filepath.Join(root, "sys/fs/cgroup")
	var mi string
	switch layout {
	case "unified":
		f.cg2 = sys
		mi = fmt.Sprintf("30 23 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", sys)
	case "hybrid":
		f.cg2 = filepath.Join(sys, "unified")
		mi = fmt.Sprintf("31 23 0:28 / %s rw,relatime - tmpfs tmpfs rw,mode=755\n"+
			"35 31 0:32 / %s/memory rw,relatime - cgroup cgroup rw,memory\n"+
			"40 31 0:37 / %s/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"+
			"41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n", sys, sys, sys, f.cg2)
	case "legacy":
		f.cg2 = ""
		mi = fmt.Sprintf("31 23 0:28 / %s rw,relatime - tmpfs tmpfs rw,mode=755\n"+
			"35 31 0:32 / %s/memory rw,relatime - cgroup cgroup rw,memory\n"+
			"40 31 0:37 / %s/systemd rw,relatime - cgroup cgroup rw,name=systemd\n", sys, sys, sys)
	default:
		t.Fatalf("layout %q", layout)
	}
	mi = "22 1 8:1 / / rw,relatime - ext4 /dev/root rw\n23 22 0:21 / /sys rw - sysfs sysfs rw\n" + mi
	f.write("proc/self/mountinfo", mi)
	if f.cg2 != "" {
		f.mkdir(f.cg2)
	}
	return f
}

// opt is the Options of a Resolver over the fixture.
func (f *fixture) opt() Options {
	r := func(p string) []string { return []string{filepath.Join(f.root, p)} }
	return Options{
		ProcRoot:        f.proc,
		ContainerdRoots: r("run/containerd"),
		RuncRoots:       []string{filepath.Join(f.root, "run/runc"), filepath.Join(f.root, "run/containerd/runc")},
		CrunRoots:       r("run/crun"),
		StorageRoots:    r("run/containers/storage"),
		DockerRoots:     r("var/lib/docker"),
		Now:             func() time.Time { return f.clock },
	}
}

func (f *fixture) resolver() *Resolver { return New(f.opt()) }

func (f *fixture) mkdir(abs string) {
	f.t.Helper()
	if err := os.MkdirAll(abs, 0o755); err != nil {
		f.t.Fatal(err)
	}
}

// write writes a file below the fixture's root.
func (f *fixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	f.mkdir(filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) writeJSON(rel string, v any) string {
	f.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.write(rel, string(b))
}

// cgroup makes a cgroup2 directory (path as the hierarchy names it) and
// returns its id.
func (f *fixture) cgroup(path string) uint64 {
	f.t.Helper()
	p := filepath.Join(f.cg2, path)
	f.mkdir(p)
	return f.ino(p)
}

func (f *fixture) ino(p string) uint64 {
	f.t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// procCgroup writes /proc/PID/cgroup.
func (f *fixture) procCgroup(pid int, lines ...string) {
	f.t.Helper()
	f.write(filepath.Join("proc", strconv.Itoa(pid), "cgroup"), strings.Join(lines, "\n")+"\n")
}

// hybridLines are the /proc/PID/cgroup lines of a process in path in
// the v1 hierarchies, at v2's root.
func hybridLines(path string) []string {
	return []string{"9:name=systemd:" + path, "4:memory:" + path, "0::/"}
}

// ociConfig writes an OCI config.json with annotations and cgroupsPath.
func (f *fixture) ociConfig(rel string, ann map[string]string, cgroupsPath string) string {
	return f.writeJSON(rel, map[string]any{
		"ociVersion":  "1.0.2-dev",
		"process":     map[string]any{"args": []string{"sleep", "2"}, "env": []string{"PATH=/bin"}},
		"annotations": ann,
		"linux":       map[string]any{"cgroupsPath": cgroupsPath},
	})
}

func criAnnotations(name, pod, ns, uid string) map[string]string {
	return map[string]string{
		"io.kubernetes.cri.container-type":    "container",
		"io.kubernetes.cri.container-name":    name,
		"io.kubernetes.cri.sandbox-name":      pod,
		"io.kubernetes.cri.sandbox-namespace": ns,
		"io.kubernetes.cri.sandbox-uid":       uid,
		"io.kubernetes.cri.sandbox-id":        id2,
	}
}

func crioAnnotations(name, pod, ns, uid string) map[string]string {
	return map[string]string{
		"io.container.manager":              "cri-o",
		"io.kubernetes.cri-o.ContainerType": "container",
		"io.kubernetes.container.name":      name,
		"io.kubernetes.pod.name":            pod,
		"io.kubernetes.pod.namespace":       ns,
		"io.kubernetes.pod.uid":             uid,
	}
}

// systemdPodPath is a burstable pod's container scope, systemd driver.
func systemdPodPath(prefix, uid, id string) string {
	u := strings.ReplaceAll(uid, "-", "_")
	return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/" + prefix + "-" + id + ".scope"
}

func systemdCgroupsPath(prefix, uid, id string) string {
	return "kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice:" + prefix + ":" + id
}

func cgroupfsPodPath(uid, id string) string { return "/kubepods/burstable/pod" + uid + "/" + id }

func checkInfo(t *testing.T, what string, got, want Info) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
