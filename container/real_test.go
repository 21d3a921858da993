package container_test

import (
	"os"
	"testing"

	"github.com/oncetool/once/container"
	"github.com/oncetool/once/container/containertest"
	"github.com/oncetool/once/internal/testprog"
	"golang.org/x/sys/unix"
)

// Real containers on this machine's cgroups (root only; skipped without
// root, failed under CI=true): runc and crun, the Kubernetes annotations
// of containerd and CRI-O, the cgroupfs driver's pod paths, resolved by
// a Resolver with the node's default paths.
func TestRealContainers(t *testing.T) {
	cases := []struct {
		name, runtime, qos, want string
		crio                     bool
	}{
		{"runc containerd burstable", "runc", "burstable", "containerd", false},
		{"runc cri-o besteffort", "runc", "besteffort", "cri-o", true},
		{"crun containerd guaranteed", "crun", "guaranteed", "containerd", false},
		{"crun cri-o burstable", "crun", "burstable", "cri-o", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := containertest.Options{Runtime: tc.runtime, QoS: tc.qos,
				ContainerName: "web", PodName: "web-6d4cf56db6-q7x2z", PodNamespace: "shop"}
			if tc.crio {
				opts.PodUID = "0f3e9a4c-2b1d-4e8f-9a7b-6c5d4e3f2a1b"
				opts.Annotations = containertest.CRIOAnnotations(opts.ContainerName, opts.PodName, opts.PodNamespace, opts.PodUID)
			}
			c := containertest.Run(t, opts)
			cgid, err := containertest.CgroupID(c.Pid)
			if err != nil {
				t.Fatal(err)
			}
			want := container.Info{CgroupID: cgid, CgroupPath: c.CgroupsPath, Runtime: tc.want, ContainerID: c.ID,
				ContainerName: "web", PodName: "web-6d4cf56db6-q7x2z", PodNamespace: "shop", PodUID: c.PodUID}
			pid := uint32(c.Pid)

			r := container.New(container.Options{})
			check(t, "Observe", r.Observe(pid, cgid), want)
			check(t, "Lookup", r.Lookup(cgid, pid), want)
			// The id alone, found by walking the cgroup2 mount.
			check(t, "the id alone, walked", container.New(container.Options{NoFileHandles: true}).Lookup(cgid, 0), want)
			// The pid alone: /proc/PID/cgroup.
			wantPid := want
			wantPid.CgroupID = 0
			check(t, "the pid alone", container.New(container.Options{}).Lookup(0, pid), wantPid)

			c.Stop()
			check(t, "after the container is gone", r.Lookup(cgid, pid), want)
			check(t, "a new resolver after it is gone, walking", container.New(container.Options{NoFileHandles: true}).Lookup(cgid, 0), container.Info{CgroupID: cgid})
			// By file handle a removed cgroup still opens while the
			// kernel holds it: its path, and what the path says.
			got := container.New(container.Options{}).Lookup(cgid, 0)
			fromPath := container.Info{CgroupID: cgid, CgroupPath: c.CgroupsPath, ContainerID: c.ID, PodUID: c.PodUID}
			if got != (container.Info{CgroupID: cgid}) && got != fromPath {
				t.Errorf("a new resolver after it is gone, by handle:\n got %+v\nwant %+v\n  or %+v", got, container.Info{CgroupID: cgid}, fromPath)
			}
		})
	}
}

// This test's own process, as any user: no container (this machine's
// sandbox cgroup, memory:/process_api/<32 hex>, names none).
func TestRealSelf(t *testing.T) {
	r := container.New(container.Options{})
	if r.Layout() == container.LayoutNone {
		testprog.Skip(t, "no cgroup filesystem")
	}
	id, err := containertest.CgroupID(os.Getpid())
	if err != nil {
		testprog.Skipf(t, "this process's cgroup id: %v", err)
	}
	got := r.Observe(uint32(os.Getpid()), id)
	if got.ContainerID != "" || got.CgroupID != id {
		t.Errorf("this process: %+v", got)
	}
	t.Logf("layout %s, cgroup2 at %s, this process %+v", r.Layout(), r.Cgroup2Mount(), got)
	var fs unix.Statfs_t
	if unix.Statfs(r.Cgroup2Mount(), &fs) != nil || fs.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Errorf("%s is not cgroup2", r.Cgroup2Mount())
	}
}

func check(t *testing.T, what string, got, want container.Info) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
