// Package containertest runs a real OCI container for tests: runc or
// crun, a rootfs of a static busybox under t.TempDir(), the annotations
// and cgroupsPath a Kubernetes runtime would give it (containerd CRI's by
// default, the cgroupfs driver's .../kubepods/burstable/pod<uid>/<id>,
// below a cgroup of the test's own). It is for
// tests of what names a process's container (the container package, and
// the command's BPF-level tests over it).
//
// Run needs root; without it the test is skipped, or fails when CI=true.
// A missing runtime or busybox skips the test too, or fails under CI.
//
//	c := containertest.Run(t, containertest.Options{Runtime: "runc"})
//	// c.Pid runs "sleep 2" in cgroup c.CgroupsPath, its state in /run/runc/<c.ID>:
//	// /containertest-<8 hex>/kubepods/burstable/pod<uid>/<id>.
//	// t.Cleanup stops and deletes it, and removes the cgroups it made.
//
// On a hybrid cgroup host (v1 controllers, cgroup2 at
// /sys/fs/cgroup/unified, as the machine this was written on) runc puts
// the container in every v1 hierarchy and in the unified one. crun (1.8)
// refuses hybrid hosts ("cgroups in hybrid mode not supported"): Run
// then runs crun in a private mount namespace where /sys/fs/cgroup is
// the unified hierarchy alone, so the container has a cgroup2 cgroup
// only (its v1 cgroups stay the caller's). For both, linux.resources is
// dropped from the spec: crun's cgroup2 device filter is a BPF program,
// and raising RLIMIT_MEMLOCK for it needs CAP_SYS_RESOURCE, which a
// container (or this machine's root) may lack.
package containertest

import (
	"bytes"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
	"golang.org/x/sys/unix"
)

// Options describe the container. Every field has a default.
type Options struct {
	// Runtime is "runc" (the default) or "crun".
	Runtime string
	// Root is the runtime's --root, where it keeps its state; "" is its
	// default (/run/runc, /run/crun), where a resolver with default
	// options looks.
	Root string
	// ID is the container id, 64 lowercase hex digits; random when "".
	ID string
	// PodUID is the pod's uid; a random UUID when "".
	PodUID string
	// QoS is "burstable" (the default), "besteffort" or "guaranteed":
	// the pod's cgroup below CgroupParent.
	QoS string
	// CgroupParent is the kubelet's cgroup root (its --cgroup-root and
	// kubepods); when "", /containertest-<the id's first 8 hex>/kubepods,
	// a tree of this container's own: what Stop removes is then all Run
	// made, whichever other containers run at the same time. (A shared
	// /kubepods made by two containers at once is removed by neither.)
	CgroupParent string
	// CgroupsPath, when set, is the OCI linux.cgroupsPath as is, instead
	// of CgroupParent/QoS/pod<uid>/<id>.
	CgroupsPath string
	// ContainerName, PodName, PodNamespace: "app", "pod-<8 hex>",
	// "once-test" when "".
	ContainerName, PodName, PodNamespace string
	// Annotations of the OCI config; nil: CRIAnnotations of the names.
	Annotations map[string]string
	// Args run in the container; {"sleep", "2"} when nil. Every busybox
	// applet is in /bin.
	Args []string
	// Files are copied into the rootfs: path in the container → path on
	// the host (a static binary to run, say).
	Files map[string]string
}

// Container is a running container.
type Container struct {
	Runtime                              string
	Root                                 string // the runtime's state root ("" its default)
	ID                                   string
	PodUID                               string
	CgroupsPath                          string // linux.cgroupsPath as given to the runtime
	Annotations                          map[string]string
	Bundle                               string // the bundle directory (config.json, rootfs)
	Log                                  string // the container's stdout and stderr
	Pid                                  int    // the container's first process, in the caller's pid namespace
	ContainerName, PodName, PodNamespace string

	t          testing.TB
	hybridCrun bool
	created    []string // cgroup directories Run made, deepest last
	stopOnce   sync.Once
}

// CRIAnnotations are the annotations containerd's CRI plugin gives a
// container.
func CRIAnnotations(name, pod, namespace, uid string) map[string]string {
	return map[string]string{
		"io.kubernetes.cri.container-type":    "container",
		"io.kubernetes.cri.container-name":    name,
		"io.kubernetes.cri.sandbox-name":      pod,
		"io.kubernetes.cri.sandbox-namespace": namespace,
		"io.kubernetes.cri.sandbox-uid":       uid,
	}
}

// CRIOAnnotations are (some of) the annotations CRI-O gives a container.
func CRIOAnnotations(name, pod, namespace, uid string) map[string]string {
	return map[string]string{
		"io.container.manager":              "cri-o",
		"io.kubernetes.cri-o.ContainerType": "container",
		"io.kubernetes.container.name":      name,
		"io.kubernetes.pod.name":            pod,
		"io.kubernetes.pod.namespace":       namespace,
		"io.kubernetes.pod.uid":             uid,
	}
}

// Run starts the container, waits until its first process has exec'd
// Args[0], and registers Stop with t.Cleanup.
func Run(t testing.TB, opts Options) *Container {
	t.Helper()
	testprog.RequireRoot(t)
	c := &Container{t: t, Runtime: opts.Runtime, Root: opts.Root, ID: opts.ID, PodUID: opts.PodUID,
		ContainerName: opts.ContainerName, PodName: opts.PodName, PodNamespace: opts.PodNamespace}
	if c.Runtime == "" {
		c.Runtime = "runc"
	}
	if c.Runtime != "runc" && c.Runtime != "crun" {
		t.Fatalf("containertest: runtime %q: runc or crun", c.Runtime)
	}
	bin := testprog.NeedTool(t, c.Runtime)
	busybox := staticBusybox(t)
	if c.ID == "" {
		c.ID = randomHex(32)
	}
	if c.PodUID == "" {
		u := randomHex(16)
		c.PodUID = u[:8] + "-" + u[8:12] + "-4" + u[13:16] + "-a" + u[17:20] + "-" + u[20:]
	}
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&c.ContainerName, "app")
	def(&c.PodName, "pod-"+c.ID[:8])
	def(&c.PodNamespace, "once-test")
	c.Annotations = opts.Annotations
	if c.Annotations == nil {
		c.Annotations = CRIAnnotations(c.ContainerName, c.PodName, c.PodNamespace, c.PodUID)
	}
	c.CgroupsPath = opts.CgroupsPath
	if c.CgroupsPath == "" {
		parent := opts.CgroupParent
		def(&parent, "/containertest-"+c.ID[:8]+"/kubepods")
		qos := opts.QoS
		def(&qos, "burstable")
		pod := "pod" + c.PodUID
		switch qos {
		case "guaranteed":
			c.CgroupsPath = filepath.Join(parent, pod, c.ID)
		case "burstable", "besteffort":
			c.CgroupsPath = filepath.Join(parent, qos, pod, c.ID)
		default:
			t.Fatalf("containertest: QoS %q", qos)
		}
	}
	args := opts.Args
	if args == nil {
		args = []string{"sleep", "2"}
	}

	c.Bundle = t.TempDir()
	rootfs := filepath.Join(c.Bundle, "rootfs")
	makeRootfs(t, rootfs, busybox, opts.Files)
	c.hybridCrun = c.Runtime == "crun" && hybrid()
	if out, err := c.cmd(bin, "spec").CombinedOutput(); err != nil {
		t.Fatalf("containertest: %s spec: %v\n%s", c.Runtime, err, out)
	}
	c.editSpec(t, args)

	c.created = missingCgroupDirs(c.CgroupsPath)
	c.Log = filepath.Join(c.Bundle, "container.log")
	logf, err := os.Create(c.Log)
	if err != nil {
		t.Fatal(err)
	}
	run := c.cmd(bin, "run", "-d", "--bundle", c.Bundle, c.ID)
	run.Stdin, run.Stdout, run.Stderr = nil, logf, logf
	err = run.Run()
	logf.Close()
	t.Cleanup(c.Stop)
	if err != nil {
		log, _ := os.ReadFile(c.Log)
		t.Fatalf("containertest: %s run: %v\n%s", c.Runtime, err, log)
	}
	c.Pid = c.statePid(t, bin)
	c.waitExec(t, filepath.Base(args[0]))
	return c
}

// cmd is the runtime command with --root, in the bundle, in a private
// mount namespace with cgroup2 alone at /sys/fs/cgroup for crun on a
// hybrid host.
func (c *Container) cmd(bin string, args ...string) *exec.Cmd {
	full := []string{}
	if c.Root != "" {
		full = append(full, "--root", c.Root)
	}
	full = append(full, args...)
	var cmd *exec.Cmd
	if c.hybridCrun {
		cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"`, "sh", bin}, full...)...)
	} else {
		cmd = exec.Command(bin, full...)
	}
	cmd.Dir = c.Bundle
	return cmd
}

// editSpec sets the process, annotations and cgroupsPath of the
// generated config.json and drops its resources.
func (c *Container) editSpec(t testing.TB, args []string) {
	t.Helper()
	p := filepath.Join(c.Bundle, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatalf("containertest: %s: %v", p, err)
	}
	proc, _ := spec["process"].(map[string]any)
	linux, _ := spec["linux"].(map[string]any)
	if proc == nil || linux == nil {
		t.Fatalf("containertest: %s has no process or linux", p)
	}
	proc["args"] = args
	proc["terminal"] = false
	spec["annotations"] = c.Annotations
	linux["cgroupsPath"] = c.CgroupsPath
	delete(linux, "resources")
	if b, err = json.MarshalIndent(spec, "", "\t"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// statePid is the container's pid from `<runtime> state`.
func (c *Container) statePid(t testing.TB, bin string) int {
	t.Helper()
	out, err := c.cmd(bin, "state", c.ID).Output()
	var st struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	if err != nil || json.Unmarshal(out, &st) != nil || st.Pid <= 0 {
		t.Fatalf("containertest: %s state %s: %v\n%s", c.Runtime, c.ID, err, out)
	}
	return st.Pid
}

// waitExec waits until the first process is no longer the runtime's
// init: its comm is the program's.
func (c *Container) waitExec(t testing.TB, comm string) {
	t.Helper()
	if len(comm) > 15 {
		comm = comm[:15]
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/comm")
		got := strings.TrimSpace(string(b))
		if err == nil && got == comm {
			return
		}
		if err != nil || time.Now().After(deadline) {
			log, _ := os.ReadFile(c.Log)
			t.Fatalf("containertest: pid %d is %q (%v), never %q\n%s", c.Pid, got, err, comm, log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop kills and deletes the container and removes the cgroup
// directories Run made (only those, only if empty). Run registers it
// with t.Cleanup; calling it earlier (a test of what is known of a
// container after it is gone) is fine.
func (c *Container) Stop() {
	c.stopOnce.Do(func() {
		bin, err := exec.LookPath(c.Runtime)
		if err == nil {
			c.cmd(bin, "kill", c.ID, "KILL").Run()
			if out, err := c.cmd(bin, "delete", "--force", c.ID).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("does not exist")) {
				c.t.Logf("containertest: %s delete %s: %v\n%s", c.Runtime, c.ID, err, out)
			}
		}
		if c.Pid > 0 {
			deadline := time.Now().Add(5 * time.Second)
			for alive(c.Pid) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
		for i := len(c.created) - 1; i >= 0; i-- {
			if err := unix.Rmdir(c.created[i]); err != nil && err != unix.ENOENT {
				c.t.Logf("containertest: remove cgroup %s: %v", c.created[i], err)
			}
		}
	})
}

// alive: pid exists and is not a zombie (whoever reaps the container's
// first process, once runc has gone, may take its time).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// CgroupID is the cgroup v2 id of process pid: the inode number of its
// "0::" directory in the cgroup2 mount, which is what
// bpf_get_current_cgroup_id() gives for it.
func CgroupID(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return 0, err
	}
	var path string
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return 0, fmt.Errorf("pid %d: no cgroup2 line", pid)
	}
	mnt := Cgroup2Mount()
	if mnt == "" {
		return 0, fmt.Errorf("no cgroup2 mount")
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(mnt, path), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// Cgroup2Mount is where this process sees the whole cgroup2 hierarchy
// ("" none).
func Cgroup2Mount() string {
	for _, m := range cgroupMounts() {
		if m.v2 {
			return m.point
		}
	}
	return ""
}

type cgMount struct {
	point string
	v2    bool
}

// cgroupMounts are the cgroup and cgroup2 mounts of the whole
// hierarchies (root "/") in /proc/self/mountinfo.
func cgroupMounts() []cgMount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var ms []cgMount
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 || f[3] != "/" || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		ms = append(ms, cgMount{point: f[4], v2: g[0] == "cgroup2"})
	}
	return ms
}

// hybrid: /sys/fs/cgroup is not cgroup2 but a cgroup2 mount exists.
func hybrid() bool {
	var fs unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &fs) == nil && fs.Type != unix.CGROUP2_SUPER_MAGIC && Cgroup2Mount() != ""
}

// missingCgroupDirs lists, for every cgroup mount, the directories of an
// absolute cgroupsPath that do not exist yet, outermost first: what the
// runtime will make and delete will leave (all but the container's own).
func missingCgroupDirs(cgroupsPath string) []string {
	if !strings.HasPrefix(cgroupsPath, "/") {
		return nil
	}
	var dirs []string
	segs := strings.Split(strings.Trim(cgroupsPath, "/"), "/")
	for _, m := range cgroupMounts() {
		for i := range segs {
			d := filepath.Join(append([]string{m.point}, segs[:i+1]...)...)
			if _, err := os.Lstat(d); os.IsNotExist(err) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// staticBusybox finds a statically linked busybox.
func staticBusybox(t testing.TB) string {
	t.Helper()
	p := testprog.NeedTool(t, "busybox")
	f, err := elf.Open(p)
	if err != nil {
		testprog.Skipf(t, "containertest: %s: %v", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			testprog.Skipf(t, "containertest: %s is dynamically linked; a static busybox is needed (busybox-static)", p)
		}
	}
	return p
}

// makeRootfs: /bin/busybox and a link per applet, and the extra files.
func makeRootfs(t testing.TB, rootfs, busybox string, files map[string]string) {
	t.Helper()
	bin := filepath.Join(rootfs, "bin")
	for _, d := range []string{bin, filepath.Join(rootfs, "tmp"), filepath.Join(rootfs, "proc"), filepath.Join(rootfs, "dev"), filepath.Join(rootfs, "sys")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, busybox, filepath.Join(bin, "busybox"), 0o755)
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatalf("containertest: busybox --list: %v", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			os.Symlink("busybox", filepath.Join(bin, applet))
		}
	}
	for in, host := range files {
		dst := filepath.Join(rootfs, filepath.Clean("/"+in))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, host, dst, 0o755)
	}
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(dst)
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
