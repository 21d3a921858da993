package container

import (
	"strings"
	"testing"
)

const (
	id1  = "8a1c2ef3b5d64c0f9e7a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a"
	id2  = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	uid1 = "5b8a2f3e-7c41-4d9a-9e0b-1f2a3b4c5d6e"
	uidU = "5b8a2f3e_7c41_4d9a_9e0b_1f2a3b4c5d6e" // as a systemd slice spells it
	// A static pod's uid: the hash of its manifest, 32 hex digits.
	uidStatic = "d41d8cd98f00b204e9800998ecf8427e"
)

func TestParseCgroupPath(t *testing.T) {
	cases := []struct {
		name, path       string
		runtime, id, uid string
	}{
		// systemd driver
		{"docker systemd", "/system.slice/docker-" + id1 + ".scope", "docker", id1, ""},
		{"containerd burstable", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", "containerd", id1, uid1},
		{"containerd besteffort", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", "containerd", id1, uid1},
		{"containerd guaranteed", "/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", "containerd", id1, uid1},
		{"containerd static pod", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidStatic + ".slice/cri-containerd-" + id1 + ".scope", "containerd", id1, uidStatic},
		{"cri-o systemd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-" + id1 + ".scope", "cri-o", id1, uid1},
		{"cri-o conmon in the pod", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-conmon-" + id1 + ".scope", "cri-o", "", uid1},
		{"cri-o conmon in system.slice", "/system.slice/crio-conmon-" + id1 + ".scope", "cri-o", "", ""},
		{"cri-dockerd systemd", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/docker-" + id1 + ".scope", "docker", id1, uid1},
		{"podman", "/machine.slice/libpod-" + id1 + ".scope", "podman", id1, ""},
		{"podman nested container cgroup", "/machine.slice/libpod-" + id1 + ".scope/container", "podman", id1, ""},
		{"podman conmon", "/machine.slice/libpod-conmon-" + id1 + ".scope", "podman", "", ""},
		{"podman rootless", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id1 + ".scope", "podman", id1, ""},
		{"nerdctl", "/system.slice/nerdctl-" + id1 + ".scope", "containerd", id1, ""},
		{"pod slice alone", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice", "", "", uid1},
		// cgroupfs driver
		{"docker cgroupfs", "/docker/" + id1, "docker", id1, ""},
		{"kubepods burstable cgroupfs", "/kubepods/burstable/pod" + uid1 + "/" + id1, "", id1, uid1},
		{"kubepods guaranteed cgroupfs", "/kubepods/pod" + uid1 + "/" + id1, "", id1, uid1},
		{"kubepods besteffort cgroupfs", "/kubepods/besteffort/pod" + uid1 + "/" + id1, "", id1, uid1},
		{"cri-o cgroupfs", "/kubepods/burstable/pod" + uid1 + "/crio-" + id1, "cri-o", id1, uid1},
		{"cri-o conmon cgroupfs", "/kubepods/burstable/pod" + uid1 + "/crio-conmon-" + id1, "cri-o", "", uid1},
		{"podman cgroupfs", "/libpod_parent/libpod-" + id1, "podman", id1, ""},
		{"pod dir alone cgroupfs", "/kubepods/besteffort/pod" + uid1, "", "", uid1},
		// nested: the outermost container counts
		{"docker in docker", "/docker/" + id1 + "/docker/" + id2, "docker", id1, ""},
		{"kind node, pods inside", "/system.slice/docker-" + id1 + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + id2 + ".scope", "docker", id1, ""},
		{"kind v1 cgroupfs", "/docker/" + id1 + "/kubepods/besteffort/pod" + uid1 + "/" + id2, "docker", id1, ""},
		{"seen from a cgroup namespace", "/../../kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", "containerd", id1, uid1},
		// not containers
		{"root", "/", "", "", ""},
		{"empty", "", "", "", ""},
		{"a service", "/system.slice/containerd.service", "", "", ""},
		{"a user session", "/user.slice/user-1000.slice/session-3.scope", "", "", ""},
		{"this host's sandbox", "/process_api/27923c408cf30e7432a1c79d9024d8c4", "", "", ""},
		// hostile look-alikes
		{"docker-x.scope", "/user.slice/user-1000.slice/user@1000.service/docker-x.scope", "", "", ""},
		{"63 hex", "/system.slice/docker-" + id1[:63] + ".scope", "", "", ""},
		{"65 hex", "/system.slice/docker-" + id1 + "a.scope", "", "", ""},
		{"upper case", "/system.slice/docker-" + strings.ToUpper(id1) + ".scope", "", "", ""},
		{"not hex", "/system.slice/docker-" + strings.Repeat("g", 64) + ".scope", "", "", ""},
		{"suffix after scope", "/system.slice/docker-" + id1 + ".scope.bak", "", "", ""},
		{"scope suffix twice", "/system.slice/docker-" + id1 + ".scope.scope", "", "", ""},
		{"bare id not below a pod or docker", "/user.slice/user-1000.slice/user@1000.service/" + id1, "", "", ""},
		{"bare id below a fake pod", "/kubepods/burstable/podnot-a-uid/" + id1, "", "", ""},
		{"pod below no kubepods", "/user.slice/burstable/pod" + uid1 + "/" + id1, "", "", ""},
		{"uid with dashes in a slice", "/kubepods.slice/kubepods-pod" + uid1 + ".slice/cri-containerd-" + id1 + ".scope", "containerd", id1, ""},
		{"uid upper case", "/kubepods/pod" + strings.ToUpper(uid1) + "/" + id1, "", "", ""},
		{"uid short", "/kubepods/pod1234/" + id1, "", "", ""},
		{"cri-containerd without scope", "/kubepods/burstable/pod" + uid1 + "/cri-containerd-" + id1, "", "", uid1},
		{"prefix only", "/system.slice/docker-.scope", "", "", ""},
		{"conmon with a bad id", "/system.slice/crio-conmon-xyz.scope", "", "", ""},
		{"docker id as a file name in a longer name", "/system.slice/mydocker-" + id1 + ".scope", "", "", ""},
		{"overlong", "/docker/" + id1 + strings.Repeat("/x", MaxPathLen), "", "", ""},
		{"NUL and newline", "/system.slice/docker-" + id1 + "\x00.scope\n", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, id, uid := ParseCgroupPath(c.path)
			if rt != c.runtime || id != c.id || uid != c.uid {
				t.Errorf("ParseCgroupPath(%q)\n = %q, %q, %q\nwant %q, %q, %q", c.path, rt, id, uid, c.runtime, c.id, c.uid)
			}
		})
	}
}

func TestExpandCgroupsPath(t *testing.T) {
	cases := []struct{ in, want string }{
		{"kubepods-burstable-pod" + uidU + ".slice:cri-containerd:" + id1,
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope"},
		{"kubepods-pod" + uidU + ".slice:crio:" + id1, "/kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + id1 + ".scope"},
		{"system.slice:docker:" + id1, "/system.slice/docker-" + id1 + ".scope"},
		{":docker:" + id1, "/system.slice/docker-" + id1 + ".scope"},
		{"machine.slice:libpod:" + id1, "/machine.slice/libpod-" + id1 + ".scope"},
		{"-.slice:x:" + id1, "/x-" + id1 + ".scope"},
		{"system.slice::foo", "/system.slice/foo.scope"},
		{"kubepods.slice:cri-containerd:kubepods-besteffort.slice", "/kubepods.slice/kubepods-besteffort.slice"},
		{"/kubepods/burstable/pod" + uid1 + "/" + id1, "/kubepods/burstable/pod" + uid1 + "/" + id1},
		{"/docker//" + id1 + "/", "/docker/" + id1},
		{"relative/path", ""},
		{"a:b", ""},
		{"bad:x:" + id1, ""},
		{"-bad.slice:x:y", ""},
		{"a--b.slice:x:y", ""},
		{"a.slice:x:y/z", ""},
		{"", ""},
	}
	for _, c := range cases {
		got, ok := ExpandCgroupsPath(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("ExpandCgroupsPath(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

func TestUnderCgroup(t *testing.T) {
	exp := "/kubepods/burstable/pod" + uid1 + "/" + id1
	cases := []struct {
		obs  string
		want bool
	}{
		{exp, true},
		{exp + "/", true},
		{exp + "/container", true},
		{exp + "/docker/" + id2, true},
		{"/kubepods/burstable/pod" + uid1, false},
		{"/user.slice" + exp, false},
		{"/kubepods/burstable/pod" + uid1 + "/" + id1 + "x", false},
		{"/../.." + exp, true},
		{"/../../burstable/pod" + uid1 + "/" + id1, true},
		{"/../../../" + id1, true},
		{"/../../user.slice" + exp, false},
		{"/..", false},
		{"/kubepods/../kubepods/burstable/pod" + uid1 + "/" + id1, false},
		{"", false},
	}
	for _, c := range cases {
		if got := underCgroup(c.obs, exp); got != c.want {
			t.Errorf("underCgroup(%q, %q) = %v, want %v", c.obs, exp, got, c.want)
		}
	}
}
