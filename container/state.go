package container

import (
	"encoding/json"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// MaxNamespaces is the most namespace directories (containerd's k8s.io,
// moby, default...) looked into below one state root.
const MaxNamespaces = 16

// MaxFieldLen is the longest name kept (a Kubernetes name is at most 253
// bytes); a longer one, or one with control characters or invalid
// UTF-8, is dropped.
const MaxFieldLen = 253

// The annotations that name a container, as the CRI runtimes write them
// into the OCI config (config.json) of the container.
const (
	// containerd's CRI plugin.
	annCRIContainerName = "io.kubernetes.cri.container-name"
	annCRISandboxName   = "io.kubernetes.cri.sandbox-name"
	annCRISandboxNS     = "io.kubernetes.cri.sandbox-namespace"
	annCRISandboxUID    = "io.kubernetes.cri.sandbox-uid"
	// CRI-O (and the labels cri-dockerd puts on a Docker container).
	annContainerName = "io.kubernetes.container.name"
	annPodName       = "io.kubernetes.pod.name"
	annPodNamespace  = "io.kubernetes.pod.namespace"
	annPodUID        = "io.kubernetes.pod.uid"
	// Who made the container: "cri-o" or "libpod" (podman).
	annManager = "io.container.manager"
)

// containerState is what the runtime's own files say of a container.
type containerState struct {
	found        bool   // some runtime has state for the id
	runtime      string // who made it, as far as its state says
	name         string
	podName      string
	podNamespace string
	podUID       string
	cgroup       string // the cgroup the runtime made for it (expanded, absolute), "" unknown
}

// merge fills what s lacks from t.
func (s *containerState) merge(t containerState) {
	if !t.found {
		return
	}
	if !s.found {
		s.found, s.runtime = true, t.runtime
	}
	if s.runtime == "" {
		s.runtime = t.runtime
	}
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fill(&s.name, t.name)
	fill(&s.podName, t.podName)
	fill(&s.podNamespace, t.podNamespace)
	fill(&s.podUID, t.podUID)
	fill(&s.cgroup, t.cgroup)
}

// ociConfig is the part of an OCI runtime config (config.json) read.
type ociConfig struct {
	Annotations map[string]string `json:"annotations"`
	Linux       struct {
		CgroupsPath string `json:"cgroupsPath"`
	} `json:"linux"`
}

// readJSON reads the bounded state file rel below root into v; false on
// any failure.
func readJSON(root, rel string, v any) bool {
	b, err := readBeneath(root, rel, MaxStateFileBytes)
	return err == nil && json.Unmarshal(b, v) == nil
}

// cleanField keeps a name fit to label with, or drops it.
func cleanField(s string) string {
	if len(s) > MaxFieldLen || !utf8.ValidString(s) {
		return ""
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ""
		}
	}
	return s
}

// fromAnnotations names the container from its annotations (containerd
// CRI's, else CRI-O's) and says who made it.
func fromAnnotations(a map[string]string, cgroupsPath string) containerState {
	s := containerState{found: true}
	if a[annCRISandboxName] != "" || a[annCRIContainerName] != "" || a[annCRISandboxUID] != "" {
		s.runtime = RuntimeContainerd
		s.name, s.podName, s.podNamespace, s.podUID = a[annCRIContainerName], a[annCRISandboxName], a[annCRISandboxNS], a[annCRISandboxUID]
	} else {
		s.name, s.podName, s.podNamespace, s.podUID = a[annContainerName], a[annPodName], a[annPodNamespace], a[annPodUID]
		if s.podName != "" || s.podUID != "" {
			s.runtime = RuntimeCRIO
		}
	}
	switch a[annManager] {
	case "cri-o":
		s.runtime = RuntimeCRIO
	case "libpod":
		s.runtime = RuntimePodman
	}
	s.name, s.podName, s.podNamespace = cleanField(s.name), cleanField(s.podName), cleanField(s.podNamespace)
	s.podUID, _ = normalizeUID(s.podUID)
	if p, ok := ExpandCgroupsPath(cgroupsPath); ok {
		s.cgroup = p
	}
	return s
}

// validName: a directory name from a state root fit to join (no '/',
// not "." or "..", short).
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 255 && !strings.ContainsAny(s, "/\x00")
}

// namespaces lists the namespace directories at rel below root (""
// root itself): the entries that are directories and not container ids,
// at most MaxNamespaces.
func namespaces(root, rel string) []string {
	f, err := openDirBeneath(root, rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	ents, err := f.ReadDir(256)
	if err != nil && len(ents) == 0 {
		return nil
	}
	var ns []string
	for _, e := range ents {
		if e.IsDir() && validName(e.Name()) && !isContainerID(e.Name()) && len(ns) < MaxNamespaces {
			ns = append(ns, e.Name())
		}
	}
	return ns
}

// containerdState: <root>/io.containerd.runtime.v2.task/<ns>/<id>/config.json
// (the bundle containerd's shim runs; v1.linux for the old shim). The
// namespace moby is Docker's.
func containerdState(root, id string) containerState {
	for _, task := range [...]string{"io.containerd.runtime.v2.task", "io.containerd.runtime.v1.linux"} {
		for _, ns := range namespaces(root, task) {
			var c ociConfig
			if !readJSON(root, filepath.Join(task, ns, id, "config.json"), &c) {
				continue
			}
			s := fromAnnotations(c.Annotations, c.Linux.CgroupsPath)
			if ns == "moby" {
				s.runtime = RuntimeDocker
			} else if s.runtime == "" {
				s.runtime = RuntimeContainerd
			}
			return s
		}
	}
	return containerState{}
}

// runcStateFile is the part of runc's <root>/<id>/state.json read: runc
// (1.1 here) keeps the OCI annotations as config.labels "key=value"
// (with "bundle=<dir>" among them) and the cgroup it made in
// config.cgroups (path for cgroupfs; parent, scope_prefix and name for
// systemd).
type runcStateFile struct {
	Config struct {
		Labels  []string `json:"labels"`
		Cgroups struct {
			Path        string `json:"path"`
			Name        string `json:"name"`
			Parent      string `json:"parent"`
			ScopePrefix string `json:"scope_prefix"`
		} `json:"cgroups"`
	} `json:"config"`
}

// runcState: <root>/<id>/state.json, or <root>/<ns>/<id>/state.json for
// the roots containerd and Docker give runc (/run/containerd/runc/k8s.io,
// /run/docker/runtime-runc/moby). The bundle it names is not followed:
// it can be anywhere, and the labels already hold the annotations.
func runcState(root, id string) containerState {
	try := func(rel, ns string) (containerState, bool) {
		var st runcStateFile
		if !readJSON(root, rel, &st) {
			return containerState{}, false
		}
		a := map[string]string{}
		for _, l := range st.Config.Labels {
			if k, v, ok := strings.Cut(l, "="); ok && k != "bundle" {
				a[k] = v
			}
		}
		cg := st.Config.Cgroups
		cp := cg.Path
		switch {
		case cp != "" || cg.Name == "":
		case cg.ScopePrefix == "" && !strings.HasSuffix(cg.Parent, ".slice"):
			// cgroupfs with no cgroupsPath in the spec: runc makes
			// Parent/Name under the root (runc run NAME: /NAME).
			cp = path.Join("/", cg.Parent, cg.Name)
		default:
			cp = cg.Parent + ":" + cg.ScopePrefix + ":" + cg.Name
		}
		s := fromAnnotations(a, cp)
		if s.runtime == "" {
			s.runtime = runtimeOf(ns, RuntimeRunc)
		}
		return s, true
	}
	if s, ok := try(filepath.Join(id, "state.json"), ""); ok {
		return s
	}
	for _, ns := range namespaces(root, "") {
		if s, ok := try(filepath.Join(ns, id, "state.json"), ns); ok {
			return s
		}
	}
	return containerState{}
}

// runtimeOf says who made a container found under a runtime's root,
// when no annotation says: Docker for containerd's moby namespace,
// containerd for another namespace, else the runtime itself (bare).
func runtimeOf(ns, bare string) string {
	switch {
	case ns == "moby":
		return RuntimeDocker
	case ns != "":
		return RuntimeContainerd
	}
	return bare
}

// crunStatus is the part of crun's <root>/<id>/status read (crun 1.8
// here): JSON with pid, cgroup-path (the cgroup it made), bundle and
// more. Beside it crun keeps config.json, a copy of the bundle's.
type crunStatus struct {
	CgroupPath string `json:"cgroup-path"`
}

// crunState: <root>/<id>/status and <root>/<id>/config.json. Who made
// it, when no annotation says: as runcState tells it.
func crunState(root, id string) containerState {
	try := func(dir, ns string) (containerState, bool) {
		var st crunStatus
		var c ociConfig
		okS := readJSON(root, filepath.Join(dir, "status"), &st)
		okC := readJSON(root, filepath.Join(dir, "config.json"), &c)
		if !okS && !okC {
			return containerState{}, false
		}
		s := fromAnnotations(c.Annotations, c.Linux.CgroupsPath)
		if strings.HasPrefix(st.CgroupPath, "/") {
			s.cgroup = cleanPath(st.CgroupPath)
		}
		if s.runtime == "" {
			s.runtime = runtimeOf(ns, RuntimeCrun)
		}
		return s, true
	}
	if s, ok := try(id, ""); ok {
		return s
	}
	for _, ns := range namespaces(root, "") {
		if s, ok := try(filepath.Join(ns, id), ns); ok {
			return s
		}
	}
	return containerState{}
}

// storageDrivers are the containers/storage drivers whose
// <driver>-containers directories are looked in.
var storageDrivers = [...]string{"overlay", "vfs", "btrfs", "zfs"}

// storageState: containers/storage (CRI-O, podman),
// <root>/<driver>-containers/<id>/userdata/config.json; podman's name
// from <root>/<driver>-containers/containers.json.
func storageState(root, id string) containerState {
	for _, d := range storageDrivers {
		dir := d + "-containers"
		var c ociConfig
		if !readJSON(root, filepath.Join(dir, id, "userdata", "config.json"), &c) {
			continue
		}
		s := fromAnnotations(c.Annotations, c.Linux.CgroupsPath)
		if s.runtime == RuntimePodman && s.name == "" {
			var list []struct {
				ID    string   `json:"id"`
				Names []string `json:"names"`
			}
			if readJSON(root, filepath.Join(dir, "containers.json"), &list) {
				for _, e := range list {
					if e.ID == id && len(e.Names) > 0 {
						s.name = cleanField(e.Names[0])
						break
					}
				}
			}
		}
		return s
	}
	return containerState{}
}

// dockerState: <root>/containers/<id>/config.v2.json, Docker's own
// record: the name ("/web" is web) and the labels, which for a pod's
// container (cri-dockerd) are the io.kubernetes.* ones.
func dockerState(root, id string) containerState {
	var c struct {
		Name   string `json:"Name"`
		Config struct {
			Labels map[string]string `json:"Labels"`
		} `json:"Config"`
	}
	if !readJSON(root, filepath.Join("containers", id, "config.v2.json"), &c) {
		return containerState{}
	}
	s := fromAnnotations(c.Config.Labels, "")
	s.runtime = RuntimeDocker
	if s.name == "" {
		s.name = cleanField(strings.TrimPrefix(c.Name, "/"))
	}
	return s
}
