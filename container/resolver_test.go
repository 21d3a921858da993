package container

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// containerd CRI, systemd driver, on a unified host: the kernel's id is
// the container's cgroup.
func TestResolverContainerdUnified(t *testing.T) {
	f := newFixture(t, "unified")
	path := systemdPodPath("cri-containerd", uid1, id1)
	cg := f.cgroup(path)
	svc := f.cgroup("/system.slice/sshd.service")
	f.ociConfig("run/containerd/io.containerd.runtime.v2.task/k8s.io/"+id1+"/config.json",
		criAnnotations("web", "web-5d8f7b-x2x9q", "shop", uid1), systemdCgroupsPath("cri-containerd", uid1, id1))
	r := f.resolver()
	if r.Layout() != LayoutUnified || r.Cgroup2Mount() != f.cg2 {
		t.Fatalf("layout %q at %q, want unified at %q", r.Layout(), r.Cgroup2Mount(), f.cg2)
	}
	want := Info{CgroupID: cg, CgroupPath: path, Runtime: "containerd", ContainerID: id1,
		ContainerName: "web", PodName: "web-5d8f7b-x2x9q", PodNamespace: "shop", PodUID: uid1}
	checkInfo(t, "container", r.Lookup(cg, 0), want)
	checkInfo(t, "again", r.Lookup(cg, 4242), want)
	checkInfo(t, "a service", r.Lookup(svc, 0), Info{CgroupID: svc, CgroupPath: "/system.slice/sshd.service"})
	checkInfo(t, "unknown id", r.Lookup(999999999, 0), Info{CgroupID: 999999999})
	checkInfo(t, "nothing", r.Lookup(0, 0), Info{})
}

// cri-o, cgroupfs driver, on a hybrid host: the kernel's id is the v2
// root's; /proc/PID/cgroup's v1 lines name the container.
func TestResolverCRIOHybrid(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	path := "/kubepods/burstable/pod" + uid1 + "/crio-" + id1
	f.procCgroup(100, hybridLines(path)...)
	f.procCgroup(101, hybridLines("/")...)
	f.ociConfig("run/containers/storage/overlay-containers/"+id1+"/userdata/config.json",
		crioAnnotations("db", "db-0", "data", uid1), "/kubepods/burstable/pod"+uid1+"/crio-"+id1)
	r := f.resolver()
	if r.Layout() != LayoutHybrid || r.Cgroup2Mount() != f.cg2 {
		t.Fatalf("layout %q at %q, want hybrid at %q", r.Layout(), r.Cgroup2Mount(), f.cg2)
	}
	want := Info{CgroupID: rootID, CgroupPath: path, Runtime: "cri-o", ContainerID: id1,
		ContainerName: "db", PodName: "db-0", PodNamespace: "data", PodUID: uid1}
	checkInfo(t, "container", r.Lookup(rootID, 100), want)
	checkInfo(t, "a host process", r.Lookup(rootID, 101), Info{CgroupID: rootID, CgroupPath: "/"})
	checkInfo(t, "no /proc entry", r.Lookup(rootID, 102), Info{CgroupID: rootID, CgroupPath: "/"})
	checkInfo(t, "Observe", r.Observe(100, rootID), want)
}

// runc run directly (no engine), its state.json in /run/runc; and under
// containerd, /run/containerd/runc/<ns>/<id>/state.json.
func TestResolverRunc(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	path1, path2 := cgroupfsPodPath(uid1, id1), cgroupfsPodPath(uid1, id2)
	f.procCgroup(200, hybridLines(path1)...)
	f.procCgroup(201, hybridLines(path2)...)
	labels := func(ann map[string]string, bundle string) []string {
		l := []string{"bundle=" + bundle}
		for k, v := range ann {
			l = append(l, k+"="+v)
		}
		return l
	}
	// As runc 1.1.5 writes it (see the root-only test): the annotations
	// as labels, the cgroup in config.cgroups; the bundle is not read.
	f.writeJSON("run/runc/"+id1+"/state.json", map[string]any{
		"id": id1, "init_process_pid": 200,
		"config": map[string]any{
			"labels":  labels(criAnnotations("app", "pod-a", "ns-a", uid1), "/nonexistent/bundle"),
			"cgroups": map[string]any{"path": path1, "scope_prefix": ""},
		},
		"cgroup_paths": map[string]string{"memory": "/sys/fs/cgroup/memory" + path1},
	})
	f.writeJSON("run/containerd/runc/k8s.io/"+id2+"/state.json", map[string]any{
		"config": map[string]any{"cgroups": map[string]any{"path": path2}},
	})
	r := f.resolver()
	checkInfo(t, "runc, CRI annotations", r.Lookup(rootID, 200), Info{CgroupID: rootID, CgroupPath: path1,
		Runtime: "containerd", ContainerID: id1, ContainerName: "app", PodName: "pod-a", PodNamespace: "ns-a", PodUID: uid1})
	// No annotations: containerd's runc root says who; the pod's names
	// are the ones learnt from its other container.
	checkInfo(t, "containerd's runc root", r.Lookup(rootID, 201), Info{CgroupID: rootID, CgroupPath: path2,
		Runtime: "containerd", ContainerID: id2, PodName: "pod-a", PodNamespace: "ns-a", PodUID: uid1})

	// runc run by hand, no cgroupsPath in its spec: the cgroup is named
	// by the id (/plainbox), as runc 1.1 writes the state; a cgroup of
	// that name elsewhere is not that container's.
	byHand, elsewhere := f.cgroup("/plainbox"), f.cgroup("/user.slice/plainbox")
	f.procCgroup(202, "9:name=systemd:/plainbox", "4:memory:/plainbox", "0::/plainbox")
	f.procCgroup(203, "9:name=systemd:/user.slice/plainbox", "4:memory:/user.slice/plainbox", "0::/user.slice/plainbox")
	f.writeJSON("run/runc/plainbox/state.json", map[string]any{
		"id": "plainbox", "init_process_pid": 202,
		"config": map[string]any{"cgroups": map[string]any{"name": "plainbox", "path": "", "scope_prefix": ""}},
	})
	r = f.resolver()
	checkInfo(t, "runc run by hand", r.Lookup(byHand, 202), Info{CgroupID: byHand, CgroupPath: "/plainbox",
		Runtime: "runc", ContainerID: "plainbox"})
	checkInfo(t, "its name elsewhere", r.Lookup(elsewhere, 203), Info{CgroupID: elsewhere, CgroupPath: "/user.slice/plainbox"})
}

// TestResolverStateLate: runc run by hand writes state.json after its
// init's first calls, and execs the container's program some 20 ms
// later: a new id's state is looked for again within milliseconds, so
// that the program is named by its exec; an id missing for longer, at
// most every StateRetryInterval.
func TestResolverStateLate(t *testing.T) {
	f := newFixture(t, "unified")
	state := func(id string, pid int) {
		f.writeJSON("run/runc/"+id+"/state.json", map[string]any{
			"id": id, "init_process_pid": pid,
			"config": map[string]any{"cgroups": map[string]any{"name": id, "path": "", "scope_prefix": ""}},
		})
	}
	late, old := f.cgroup("/latebox"), f.cgroup("/oldbox")
	f.procCgroup(210, "0::/latebox")
	f.procCgroup(211, "0::/oldbox")
	r := f.resolver()
	checkInfo(t, "before its state", r.Observe(210, late), Info{CgroupID: late, CgroupPath: "/latebox"})
	state("latebox", 210)
	f.clock = f.clock.Add(20 * time.Millisecond)
	checkInfo(t, "its state written 20 ms later", r.Observe(210, late), Info{CgroupID: late, CgroupPath: "/latebox",
		Runtime: "runc", ContainerID: "latebox"})

	checkInfo(t, "no state", r.Observe(211, old), Info{CgroupID: old, CgroupPath: "/oldbox"})
	f.clock = f.clock.Add(NewStateWindow + time.Second)
	checkInfo(t, "no state, still", r.Observe(211, old), Info{CgroupID: old, CgroupPath: "/oldbox"})
	state("oldbox", 211)
	f.clock = f.clock.Add(20 * time.Millisecond)
	checkInfo(t, "a state written past the window, 20 ms later", r.Observe(211, old), Info{CgroupID: old, CgroupPath: "/oldbox"})
	f.clock = f.clock.Add(StateRetryInterval)
	checkInfo(t, "StateRetryInterval later", r.Observe(211, old), Info{CgroupID: old, CgroupPath: "/oldbox",
		Runtime: "runc", ContainerID: "oldbox"})
}

// crun: /run/crun/<id>/status (JSON: pid, cgroup-path, bundle...) and
// config.json, its copy of the bundle's, as crun 1.8.1 writes them.
func TestResolverCrun(t *testing.T) {
	f := newFixture(t, "unified")
	path := "/kubepods/besteffort/pod" + uid1 + "/" + id1
	cg := f.cgroup(path)
	f.writeJSON("run/crun/"+id1+"/status", map[string]any{
		"pid": 21058, "process-start-time": 827624, "cgroup-path": path, "scope": "",
		"rootfs": "rootfs", "systemd-cgroup": false, "bundle": "/nonexistent", "owner": "root", "detached": true,
	})
	f.ociConfig("run/crun/"+id1+"/config.json", crioAnnotations("app2", "pod-b", "ns-b", uid1), path)
	checkInfo(t, "crun", f.resolver().Lookup(cg, 0), Info{CgroupID: cg, CgroupPath: path,
		Runtime: "cri-o", ContainerID: id1, ContainerName: "app2", PodName: "pod-b", PodNamespace: "ns-b", PodUID: uid1})

	// crun run by hand, no cgroupsPath in its spec: crun 1.8 makes the
	// cgroup /ID; no annotation says who made it, so crun did, as
	// runc run by hand is runc's.
	byHand := f.cgroup("/plaincrun")
	f.procCgroup(204, "0::/plaincrun")
	f.writeJSON("run/crun/plaincrun/status", map[string]any{
		"pid": 204, "cgroup-path": "/plaincrun", "scope": "", "rootfs": "rootfs", "systemd-cgroup": false, "bundle": "/nonexistent",
	})
	f.ociConfig("run/crun/plaincrun/config.json", nil, "")
	checkInfo(t, "crun run by hand", f.resolver().Lookup(byHand, 204), Info{CgroupID: byHand, CgroupPath: "/plaincrun",
		Runtime: "crun", ContainerID: "plaincrun"})
}

// Docker, no Kubernetes: the moby task's config.json (cgroupsPath) and
// config.v2.json's Name.
func TestResolverDocker(t *testing.T) {
	f := newFixture(t, "unified")
	path := "/system.slice/docker-" + id1 + ".scope"
	cg := f.cgroup(path)
	f.ociConfig("run/containerd/io.containerd.runtime.v2.task/moby/"+id1+"/config.json", nil, "system.slice:docker:"+id1)
	f.writeJSON("var/lib/docker/containers/"+id1+"/config.v2.json", map[string]any{
		"ID": id1, "Name": "/web", "Config": map[string]any{"Labels": map[string]string{"maintainer": "x"}},
	})
	checkInfo(t, "docker", f.resolver().Lookup(cg, 0), Info{CgroupID: cg, CgroupPath: path,
		Runtime: "docker", ContainerID: id1, ContainerName: "web"})
	// cgroupfs driver, the state in Docker's own containerd.
	f2 := newFixture(t, "unified")
	path2 := "/docker/" + id2
	cg2 := f2.cgroup(path2)
	o := f2.opt()
	o.ContainerdRoots = []string{filepath.Join(f2.root, "var/run/docker/containerd/daemon")}
	f2.ociConfig("var/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/"+id2+"/config.json", nil, path2)
	checkInfo(t, "docker cgroupfs", New(o).Lookup(cg2, 0), Info{CgroupID: cg2, CgroupPath: path2, Runtime: "docker", ContainerID: id2})
}

// A container that exits (its cgroup, state and process gone) is still
// named from what was found while it lived.
func TestResolverExitedContainer(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	path := systemdPodPath("cri-containerd", uid1, id1)
	cg := f.cgroup(path) // runc puts the container in the unified hierarchy too
	f.procCgroup(300, append(hybridLines(path)[:2], "0::"+path)...)
	f.procCgroup(301, hybridLines(path)...)
	bundle := "run/containerd/io.containerd.runtime.v2.task/k8s.io/" + id1
	f.ociConfig(bundle+"/config.json", criAnnotations("job", "job-28391", "batch", uid1), systemdCgroupsPath("cri-containerd", uid1, id1))
	r := f.resolver()
	want := Info{CgroupPath: path, Runtime: "containerd", ContainerID: id1,
		ContainerName: "job", PodName: "job-28391", PodNamespace: "batch", PodUID: uid1}
	w1, w2 := want, want
	w1.CgroupID, w2.CgroupID = cg, rootID
	checkInfo(t, "v2 id, alive", r.Observe(300, cg), w1)
	checkInfo(t, "v1 path, alive", r.Observe(301, rootID), w2)
	for _, p := range []string{filepath.Join(f.root, bundle), filepath.Join(f.proc, "300"), filepath.Join(f.proc, "301")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(f.cg2, path)); err != nil {
		t.Fatal(err)
	}
	f.clock = f.clock.Add(time.Hour)
	checkInfo(t, "v2 id, exited", r.Lookup(cg, 300), w1)
	checkInfo(t, "v1 path, exited", r.Lookup(rootID, 301), w2)
	checkInfo(t, "a new resolver knows nothing of it", f.resolver().Lookup(cg, 300), Info{CgroupID: cg})
}

// A FIFO in place of config.json must not hang the resolver; it is no
// state.
func TestResolverFIFOConfig(t *testing.T) {
	f := newFixture(t, "unified")
	path := systemdPodPath("cri-containerd", uid1, id1)
	cg := f.cgroup(path)
	dir := filepath.Join(f.root, "run/containerd/io.containerd.runtime.v2.task/k8s.io", id1)
	f.mkdir(dir)
	for _, fifo := range []string{filepath.Join(dir, "config.json"), filepath.Join(f.root, "var/lib/docker/containers", id1, "config.v2.json")} {
		f.mkdir(filepath.Dir(fifo))
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan Info, 1)
	go func() { done <- f.resolver().Lookup(cg, 0) }()
	select {
	case got := <-done:
		checkInfo(t, "FIFO config", got, Info{CgroupID: cg, CgroupPath: path, Runtime: "containerd", ContainerID: id1, PodUID: uid1})
	case <-time.After(10 * time.Second):
		t.Fatal("Lookup hung on a FIFO config.json")
	}
}

// A config.json over MaxStateFileBytes is skipped; a symlink in a state
// file's place is not followed.
func TestResolverOversizedAndSymlinkConfig(t *testing.T) {
	f := newFixture(t, "unified")
	p1, p2, p3 := systemdPodPath("cri-containerd", uid1, id1), systemdPodPath("cri-containerd", uid1, id2), "/system.slice/docker-"+id1+".scope"
	cg1, cg2 := f.cgroup(p1), f.cgroup(p2)
	f.cgroup(p3)
	ann := criAnnotations("big", "pod", "ns", uid1)
	ann["padding"] = strings.Repeat("x", MaxStateFileBytes)
	f.ociConfig("run/containerd/io.containerd.runtime.v2.task/k8s.io/"+id1+"/config.json", ann, "")
	ann["padding"] = strings.Repeat("x", MaxStateFileBytes-4096) // just below the cap: read
	ann["io.kubernetes.cri.container-name"] = "fits"
	f.ociConfig("run/containerd/io.containerd.runtime.v2.task/k8s.io/"+id2+"/config.json", ann, "")
	r := f.resolver()
	checkInfo(t, "oversized", r.Lookup(cg1, 0), Info{CgroupID: cg1, CgroupPath: p1, Runtime: "containerd", ContainerID: id1, PodUID: uid1})
	got := r.Lookup(cg2, 0)
	if got.ContainerName != "fits" || got.PodName != "pod" {
		t.Errorf("a config.json under the cap: %+v", got)
	}

	g := newFixture(t, "unified")
	cg := g.cgroup(p1)
	secret := g.ociConfig("elsewhere/config.json", criAnnotations("leak", "leak", "leak", uid1), "")
	link := filepath.Join(g.root, "run/containerd/io.containerd.runtime.v2.task/k8s.io", id1, "config.json")
	g.mkdir(filepath.Dir(link))
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	checkInfo(t, "symlinked config.json", g.resolver().Lookup(cg, 0), Info{CgroupID: cg, CgroupPath: p1, Runtime: "containerd", ContainerID: id1, PodUID: uid1})
}

// A cgroup anyone could make (a user's delegated subtree) named like a
// real container is not that container: the runtime's state says where
// the container's cgroup is.
func TestResolverImpostor(t *testing.T) {
	f := newFixture(t, "unified")
	real := systemdPodPath("cri-containerd", uid1, id1)
	fake := "/user.slice/user-1000.slice/user@1000.service/app.slice" + real
	fakeOther := "/user.slice/user-1000.slice/user@1000.service/kubepods-burstable-pod" + strings.ReplaceAll(uid1, "-", "_") + ".slice/cri-containerd-" + id1 + ".scope"
	fakePod := "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + strings.ReplaceAll(uidStatic, "-", "_") + ".slice/cri-containerd-" + id1 + ".scope"
	cgReal, cgFake, cgOther, cgPod := f.cgroup(real), f.cgroup(fake), f.cgroup(fakeOther), f.cgroup(fakePod)
	f.ociConfig("run/containerd/io.containerd.runtime.v2.task/k8s.io/"+id1+"/config.json",
		criAnnotations("web", "web-1", "shop", uid1), systemdCgroupsPath("cri-containerd", uid1, id1))
	r := f.resolver()
	if got := r.Lookup(cgReal, 0); got.PodName != "web-1" {
		t.Errorf("the real container: %+v", got)
	}
	checkInfo(t, "impostor below a user's app.slice", r.Lookup(cgFake, 0), Info{CgroupID: cgFake, CgroupPath: fake})
	checkInfo(t, "impostor pod slice in a user's tree", r.Lookup(cgOther, 0), Info{CgroupID: cgOther, CgroupPath: fakeOther})
	checkInfo(t, "another pod's uid", r.Lookup(cgPod, 0), Info{CgroupID: cgPod, CgroupPath: fakePod})
}

// conmon (CRI-O's monitor) in the pod's slice: the pod, named from its
// container, and no container.
func TestResolverConmonPod(t *testing.T) {
	f := newFixture(t, "unified")
	ctr := systemdPodPath("crio", uid1, id1)
	mon := systemdPodPath("crio-conmon", uid1, id1)
	cgC, cgM := f.cgroup(ctr), f.cgroup(mon)
	f.ociConfig("run/containers/storage/overlay-containers/"+id1+"/userdata/config.json",
		crioAnnotations("api", "api-7f9c", "prod", uid1), systemdCgroupsPath("crio", uid1, id1))
	r := f.resolver()
	checkInfo(t, "conmon before its container is seen", r.Lookup(cgM, 0), Info{CgroupID: cgM, CgroupPath: mon, Runtime: "cri-o", PodUID: uid1})
	if got := r.Lookup(cgC, 0); got.ContainerName != "api" || got.Runtime != "cri-o" {
		t.Errorf("container: %+v", got)
	}
	checkInfo(t, "conmon", r.Lookup(cgM, 0), Info{CgroupID: cgM, CgroupPath: mon, Runtime: "cri-o", PodUID: uid1, PodName: "api-7f9c", PodNamespace: "prod"})
}

// Podman: libpod-<id>.scope/container, names from containers/storage's
// containers.json.
func TestResolverPodman(t *testing.T) {
	f := newFixture(t, "unified")
	path := "/machine.slice/libpod-" + id1 + ".scope/container"
	cg := f.cgroup(path)
	store := "run/containers/storage/overlay-containers/"
	f.ociConfig(store+id1+"/userdata/config.json", map[string]string{"io.container.manager": "libpod"}, "machine.slice:libpod:"+id1)
	f.writeJSON(store+"containers.json", []map[string]any{{"id": id2, "names": []string{"other"}}, {"id": id1, "names": []string{"cache"}}})
	checkInfo(t, "podman", f.resolver().Lookup(cg, 0), Info{CgroupID: cg, CgroupPath: path, Runtime: "podman", ContainerID: id1, ContainerName: "cache"})
}

// The index: a cgroup made after the walk is found by the pid's /proc
// entry (checked by stat) at once, or by the next walk, at most every
// RewalkInterval.
func TestResolverRewalk(t *testing.T) {
	f := newFixture(t, "unified")
	f.cgroup("/system.slice")
	r := f.resolver()
	r.Lookup(f.ino(f.cg2), 0) // the first walk
	path := cgroupfsPodPath(uid1, id1)
	cg := f.cgroup(path)
	checkInfo(t, "made after the walk", r.Lookup(cg, 0), Info{CgroupID: cg})
	f.procCgroup(400, "0::"+path)
	want := Info{CgroupID: cg, CgroupPath: path, ContainerID: id1, PodUID: uid1}
	checkInfo(t, "by the pid's /proc entry", r.Lookup(cg, 400), want)

	path2 := cgroupfsPodPath(uid1, id2)
	cg2 := f.cgroup(path2)
	f.procCgroup(401, "0::/system.slice") // another cgroup's path: not taken
	checkInfo(t, "a /proc entry of another cgroup", r.Lookup(cg2, 401), Info{CgroupID: cg2})
	f.clock = f.clock.Add(DefaultRewalkInterval / 2)
	checkInfo(t, "too soon to walk again", r.Lookup(cg2, 0), Info{CgroupID: cg2})
	f.clock = f.clock.Add(DefaultRewalkInterval)
	checkInfo(t, "walked again", r.Lookup(cg2, 0), Info{CgroupID: cg2, CgroupPath: path2, ContainerID: id2, PodUID: uid1})
}

// On a hybrid host a process first seen outside any container (runc's
// init before it joins the container's cgroups) is read again after
// PidRecheckInterval, or at once by Observe; a /proc entry whose 0::
// path is not the id's is another process's.
func TestResolverPidRecheck(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	r := f.resolver()
	f.procCgroup(500, hybridLines("/system.slice/containerd.service")...)
	checkInfo(t, "before joining", r.Lookup(rootID, 500), Info{CgroupID: rootID, CgroupPath: "/"})
	path := cgroupfsPodPath(uid1, id1)
	f.procCgroup(500, hybridLines(path)...)
	checkInfo(t, "kept for a while", r.Lookup(rootID, 500), Info{CgroupID: rootID, CgroupPath: "/"})
	want := Info{CgroupID: rootID, CgroupPath: path, ContainerID: id1, PodUID: uid1}
	checkInfo(t, "Observe reads again", r.Observe(500, rootID), want)

	f.procCgroup(501, hybridLines("/")...)
	r.Lookup(rootID, 501)
	f.procCgroup(501, hybridLines(path)...)
	f.clock = f.clock.Add(PidRecheckInterval)
	checkInfo(t, "read again after PidRecheckInterval", r.Lookup(rootID, 501), want)

	f.procCgroup(502, "9:name=systemd:"+path, "4:memory:"+path, "0::/elsewhere")
	checkInfo(t, "another process's /proc", r.Lookup(rootID, 502), Info{CgroupID: rootID, CgroupPath: "/"})
}

// Hostile cgroup names in the tree (spaces, newlines a tmpfs allows,
// depth past MaxWalkDepth) neither break nor stall the walk.
func TestResolverHostileTree(t *testing.T) {
	f := newFixture(t, "unified")
	weird := "/user.slice/a b\tc/\x01\x7f/docker-" + id1 + ".scope\n0::"
	cgW := f.cgroup(weird)
	deep := strings.Repeat("/d", MaxWalkDepth+4)
	cgDeep := f.cgroup(deep)
	cgShallow := f.cgroup(strings.Repeat("/d", 3))
	r := f.resolver()
	checkInfo(t, "weird names", r.Lookup(cgW, 0), Info{CgroupID: cgW, CgroupPath: weird})
	checkInfo(t, "within the depth", r.Lookup(cgShallow, 0), Info{CgroupID: cgShallow, CgroupPath: "/d/d/d"})
	checkInfo(t, "past the depth", r.Lookup(cgDeep, 0), Info{CgroupID: cgDeep})
	long := "/" + strings.Repeat("l", 200) + "/" + strings.Repeat("m", 200) + "/" + strings.Repeat("n", 200)
	cgLong := f.cgroup(long)
	f.clock = f.clock.Add(time.Hour)
	if got := r.Lookup(cgLong, 0).CgroupPath; got != long[:402]+"/…" {
		t.Errorf("a long path is kept as %q", got)
	}
}

// A cgroup2 mount of a subtree: paths are the hierarchy's.
func TestResolverSubtreeMount(t *testing.T) {
	f := newFixture(t, "unified")
	cg := f.cgroup("/burstable/pod" + uid1 + "/" + id1)
	o := f.opt()
	o.Cgroup2Mount, o.Cgroup2Root = f.cg2, "/kubepods"
	checkInfo(t, "subtree", New(o).Lookup(cg, 0), Info{CgroupID: cg, CgroupPath: cgroupfsPodPath(uid1, id1), ContainerID: id1, PodUID: uid1})
}

// No /proc at all, no runtime state: nothing known, nothing fails.
func TestResolverNothing(t *testing.T) {
	dir := t.TempDir()
	r := New(Options{ProcRoot: filepath.Join(dir, "none"), ContainerdRoots: []string{}, RuncRoots: []string{},
		CrunRoots: []string{}, StorageRoots: []string{}, DockerRoots: []string{}})
	if r.Layout() != LayoutNone {
		t.Errorf("layout %q", r.Layout())
	}
	checkInfo(t, "nothing", r.Lookup(1, 1), Info{CgroupID: 1})
	checkInfo(t, "nothing", r.Observe(1, 1), Info{CgroupID: 1})
}

func TestResolverStateCaps(t *testing.T) {
	f := newFixture(t, "unified")
	r := f.resolver()
	for i := 0; i < MaxContainers+10; i++ {
		r.state(strings.Repeat("0", 60)+hex4(i), "")
	}
	if n := r.containers.len(); n != MaxContainers {
		t.Errorf("%d containers kept, cap %d", n, MaxContainers)
	}
	for i := 0; i < MaxPids+10; i++ {
		f.clock = f.clock.Add(time.Millisecond)
		r.pids.put(uint32(i), pidEntry{})
	}
	if n := r.pids.len(); n != MaxPids {
		t.Errorf("%d pids kept, cap %d", n, MaxPids)
	}
}

func hex4(i int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[i>>12&15], digits[i>>8&15], digits[i>>4&15], digits[i&15]})
}

// A process that outlived its cgroup (a zombie) shows the path marked
// " (deleted)": the path it had; a live cgroup so named keeps the mark.
func TestResolverDeletedCgroup(t *testing.T) {
	f := newFixture(t, "unified")
	path := cgroupfsPodPath(uid1, id1)
	f.procCgroup(600, "0::"+path+" (deleted)")
	checkInfo(t, "removed", f.resolver().Lookup(123456789, 600), Info{CgroupID: 123456789, CgroupPath: path, ContainerID: id1, PodUID: uid1})
	literal := "/kubepods/burstable/pod" + uid1 + "/" + id2 + " (deleted)"
	cg := f.cgroup(literal)
	f.procCgroup(601, "0::"+literal)
	checkInfo(t, "live, so named", f.resolver().Lookup(cg, 601), Info{CgroupID: cg, CgroupPath: literal, PodUID: uid1})
	checkInfo(t, "live, so named, by pid", f.resolver().Lookup(0, 601), Info{CgroupPath: literal, PodUID: uid1})
}

// State is read beneath its root through no symlink, with openat2 or
// without: a container's directory or config.json linked elsewhere is
// not followed; a root reached through a symlink (/var/run) is.
func TestResolverStateBeneathRoot(t *testing.T) {
	for _, noOpenat2 := range []bool{false, true} {
		name := "openat2"
		if noOpenat2 {
			name = "no openat2"
			saved := openat2
			openat2 = func(int, string, *unix.OpenHow) (int, error) { return -1, unix.ENOSYS }
			t.Cleanup(func() { openat2 = saved })
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "unified")
			p1, p2, p3 := systemdPodPath("cri-containerd", uid1, id1), systemdPodPath("cri-containerd", uid1, id2), systemdPodPath("cri-containerd", uid1, strings.Repeat("c", 64))
			cg1, cg2, cg3 := f.cgroup(p1), f.cgroup(p2), f.cgroup(p3)
			task := "run/containerd/io.containerd.runtime.v2.task/k8s.io/"
			f.ociConfig("elsewhere/"+id1+"/config.json", criAnnotations("leak", "leak", "leak", uid1), "")
			f.mkdir(filepath.Join(f.root, task))
			if err := os.Symlink(filepath.Join(f.root, "elsewhere", id1), filepath.Join(f.root, task, id1)); err != nil {
				t.Fatal(err)
			}
			secret := f.ociConfig("elsewhere/config.json", criAnnotations("leak", "leak", "leak", uid1), "")
			f.mkdir(filepath.Join(f.root, task, id2))
			if err := os.Symlink(secret, filepath.Join(f.root, task, id2, "config.json")); err != nil {
				t.Fatal(err)
			}
			f.ociConfig(task+strings.Repeat("c", 64)+"/config.json", criAnnotations("ok", "ok", "ok", uid1), "")
			o := f.opt()
			if err := os.Symlink(filepath.Join(f.root, "run"), filepath.Join(f.root, "varrun")); err != nil {
				t.Fatal(err)
			}
			o.ContainerdRoots = []string{filepath.Join(f.root, "varrun/containerd")}
			r := New(o)
			if got := r.Lookup(cg1, 0); got.ContainerName != "" {
				t.Errorf("through a linked container directory: %+v", got)
			}
			if got := r.Lookup(cg2, 0); got.ContainerName != "" {
				t.Errorf("through a linked config.json: %+v", got)
			}
			if got := r.Lookup(cg3, 0); got.ContainerName != "ok" {
				t.Errorf("below a linked root: %+v", got)
			}
		})
	}
}

// cgroup v1 alone: the kernel's id is the same root for everyone; the
// pid's /proc entry alone tells, docker's cgroupfs path here.
func TestResolverLegacy(t *testing.T) {
	f := newFixture(t, "legacy")
	path := "/docker/" + id1
	f.procCgroup(800, "9:name=systemd:"+path, "4:memory:"+path)
	f.procCgroup(801, "9:name=systemd:/user.slice", "4:memory:/user.slice")
	f.writeJSON("var/lib/docker/containers/"+id1+"/config.v2.json", map[string]any{"Name": "/db"})
	r := f.resolver()
	if r.Layout() != LayoutLegacy || r.Cgroup2Mount() != "" {
		t.Fatalf("layout %q, cgroup2 %q", r.Layout(), r.Cgroup2Mount())
	}
	checkInfo(t, "docker", r.Observe(800, 1), Info{CgroupID: 1, CgroupPath: path, Runtime: "docker", ContainerID: id1, ContainerName: "db"})
	checkInfo(t, "a host process", r.Lookup(1, 801), Info{CgroupID: 1, CgroupPath: "/user.slice"})
}

// TestResolverReadsProcOnce: one lookup reads a process's /proc/PID/cgroup
// at most once, whether the process lives (its "0::" path tried for the
// id, then its v1 paths for a container) or has exited (the read that
// failed is not tried again).
func TestResolverReadsProcOnce(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	sub := f.cgroup("/system.slice/x.service")
	f.procCgroup(100, hybridLines(cgroupfsPodPath(uid1, id1))...)
	f.procCgroup(101, "9:name=systemd:/a", "4:memory:/a", "0::/system.slice/x.service")
	for _, c := range []struct {
		name string
		id   uint64
		pid  uint32
	}{
		{"live, v2 root", rootID, 100},
		{"live, v2 path read for its id", sub, 101},
		{"exited", rootID, 102},
		{"exited, unknown id", rootID + 1000, 103},
	} {
		r := f.resolver()
		r.Lookup(c.id, c.pid)
		if r.procReads != 1 {
			t.Errorf("%s: /proc/%d/cgroup read %d times in one lookup, want 1", c.name, c.pid, r.procReads)
		}
	}
}

// TestResolverGivenMountinfo: the mountinfo a caller read already is the
// one used; ProcRoot/self/mountinfo is not read again.
func TestResolverGivenMountinfo(t *testing.T) {
	f := newFixture(t, "hybrid")
	mi, err := ReadMountinfo(f.proc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.proc, "self", "mountinfo")); err != nil {
		t.Fatal(err)
	}
	opt := f.opt()
	opt.Mountinfo = mi
	if r := New(opt); r.Layout() != LayoutHybrid || r.Cgroup2Mount() != f.cg2 {
		t.Errorf("layout %q at %q, want hybrid at %q", r.Layout(), r.Cgroup2Mount(), f.cg2)
	}
}

// NoPidFiles: /proc/PID/cgroup is not read (a procfs of another pid
// namespace, where PID is another process): on a hybrid host a process
// at the v2 root is then no container, not the one /proc/PID names.
func TestResolverNoPidFiles(t *testing.T) {
	f := newFixture(t, "hybrid")
	rootID := f.ino(f.cg2)
	path := "/kubepods/burstable/pod" + uid1 + "/crio-" + id1
	f.procCgroup(100, hybridLines(path)...)
	f.ociConfig("run/containers/storage/overlay-containers/"+id1+"/userdata/config.json",
		crioAnnotations("db", "db-0", "data", uid1), "/kubepods/burstable/pod"+uid1+"/crio-"+id1)
	for _, tc := range []struct {
		noPidFiles bool
		want       Info
	}{
		{false, Info{CgroupID: rootID, CgroupPath: path, Runtime: "cri-o", ContainerID: id1,
			ContainerName: "db", PodName: "db-0", PodNamespace: "data", PodUID: uid1}},
		{true, Info{CgroupID: rootID, CgroupPath: "/"}},
	} {
		r := f.resolver()
		r.SetNoPidFiles(tc.noPidFiles)
		checkInfo(t, fmt.Sprintf("NoPidFiles %v: Lookup", tc.noPidFiles), r.Lookup(rootID, 100), tc.want)
		checkInfo(t, fmt.Sprintf("NoPidFiles %v: Observe", tc.noPidFiles), r.Observe(100, rootID), tc.want)
	}
}
