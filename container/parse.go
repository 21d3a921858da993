package container

import "strings"

// Runtime names, as Info.Runtime and ParseCgroupPath give them. The empty
// string is "not known": a process outside any container, or a container
// whose cgroup name does not say who made it (the kubelet's cgroupfs
// driver names a container's cgroup by its bare id) and whose runtime
// state was not found.
const (
	RuntimeDocker     = "docker"
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimePodman     = "podman"
	// RuntimeRunc: runc run by hand (no engine), its state in a runc
	// root, its cgroup named by the container's id.
	RuntimeRunc = "runc"
	// RuntimeCrun: crun run by hand, its state in a crun root.
	RuntimeCrun = "crun"
)

// MaxPathLen is the longest cgroup path ParseCgroupPath looks at (the
// kernel's PATH_MAX); a longer one is nobody's container.
const MaxPathLen = 4096

// ParseCgroupPath says which container, if any, a cgroup path (v2, or one
// v1 hierarchy's, as /proc/PID/cgroup or the cgroup filesystem show it)
// belongs to. It reads nothing: the answer is the path's alone.
//
// Recognised, with the systemd cgroup driver:
//
//	/system.slice/docker-<id>.scope                                docker
//	/kubepods.slice/kubepods-burstable.slice/
//	    kubepods-burstable-pod<uid_with_underscores>.slice/
//	    cri-containerd-<id>.scope                                  containerd (besteffort alike;
//	                                                               guaranteed pods: kubepods-pod<uid>.slice)
//	.../crio-<id>.scope                                            cri-o
//	.../docker-<id>.scope under a pod slice                        docker (cri-dockerd)
//	/machine.slice/libpod-<id>.scope[/container]                   podman
//	/system.slice/nerdctl-<id>.scope                               containerd (nerdctl)
//
// and with the cgroupfs driver:
//
//	/docker/<id>                                                   docker
//	/kubepods/burstable/pod<uid>/<id>                              "" (the path does not say)
//	/kubepods/besteffort/pod<uid>/<id>, /kubepods/pod<uid>/<id>    ""
//	/kubepods/.../pod<uid>/crio-<id>                               cri-o
//	/libpod_parent/libpod-<id>                                     podman
//
// containerID is 64 lowercase hex digits and nothing else: a cgroup
// anyone may name (a delegated subtree) called docker-x.scope, or with 63
// or 65 digits, or upper case, is no container. A bare 64-hex name counts
// only directly below a pod's cgroup or below /docker.
//
// podUID comes from the pod's cgroup (kubepods-...-pod<uid>.slice, or
// pod<uid> below kubepods or its QoS class), with the systemd slice's
// underscores turned back to dashes; it is a UUID or the 32 hex digits of
// a static pod's hash, lowercase.
//
// Decisions:
//   - conmon, CRI-O's and podman's monitor (crio-conmon-<id>.scope,
//     libpod-conmon-<id>.scope), runs outside the container it watches:
//     it is the runtime's process, not the workload's. It gives the
//     runtime and the pod (when it sits in the pod's slice, CRI-O's
//     conmon_cgroup = "pod") but no containerID.
//   - Nested containers (docker-in-docker /docker/<a>/docker/<b>, kind's
//     node containers, podman's /container subgroup, a workload's own
//     sub-cgroups): the outermost container counts. It is the one the
//     node's runtime made and knows (its state names it, see Resolver),
//     while the names below it are chosen by whoever runs inside it and
//     cannot be checked from the node. The pod is the one above that
//     container.
//   - ".." segments (a path seen from inside a cgroup namespace, leading
//     "/../..") and empty segments are skipped.
func ParseCgroupPath(path string) (runtime, containerID, podUID string) {
	if len(path) > MaxPathLen {
		return "", "", ""
	}
	var prev, prev2 string // the two segments above seg, ".." skipped
	podAt := -1            // index of the segment that named the pod
	i := 0
	for rest := path; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			continue
		}
		if podUID == "" {
			if uid, ok := podSegment(seg, prev, prev2); ok {
				podUID, podAt = uid, i
			}
		}
		if rt, id, ok := containerSegment(seg, prev, podAt >= 0 && podAt == i-1); ok {
			return rt, id, podUID
		}
		prev2, prev = prev, seg
		i++
	}
	return "", "", podUID
}

// containerSegment parses one cgroup name as a container's (or conmon's:
// ok with an empty id). underPod: the segment above is a pod's.
func containerSegment(seg, parent string, underPod bool) (runtime, id string, ok bool) {
	name, scope := strings.CutSuffix(seg, ".scope")
	for _, p := range scopePrefixes {
		tail, found := strings.CutPrefix(name, p.prefix)
		if !found || (!scope && !p.bare) {
			continue
		}
		if p.conmon {
			if isContainerID(tail) {
				return p.runtime, "", true
			}
			return "", "", false
		}
		if isContainerID(tail) {
			return p.runtime, tail, true
		}
	}
	if !scope && isContainerID(seg) {
		switch {
		case underPod:
			return "", seg, true
		case parent == "docker":
			return RuntimeDocker, seg, true
		}
	}
	return "", "", false
}

// scopePrefixes are the names runtimes give a container's cgroup, a
// prefix and the id, as a systemd scope (name.scope) and, where bare,
// also without the suffix (their cgroupfs driver). Longer prefixes first:
// crio-conmon- before crio-.
var scopePrefixes = []struct {
	prefix  string
	runtime string
	bare    bool // also without .scope (cgroupfs)
	conmon  bool // the monitor, not the container
}{
	{"cri-containerd-", RuntimeContainerd, false, false},
	{"crio-conmon-", RuntimeCRIO, true, true},
	{"crio-", RuntimeCRIO, true, false},
	{"libpod-conmon-", RuntimePodman, true, true},
	{"libpod-", RuntimePodman, true, false},
	{"docker-", RuntimeDocker, false, false},
	{"nerdctl-", RuntimeContainerd, false, false},
}

// podSegment parses one cgroup name as a pod's: kubepods[-qos]-pod<uid>.slice
// (systemd driver), or pod<uid> below kubepods[/qos] (cgroupfs).
func podSegment(seg, parent, parent2 string) (uid string, ok bool) {
	if s, found := strings.CutSuffix(seg, ".slice"); found {
		for _, p := range [...]string{"kubepods-pod", "kubepods-burstable-pod", "kubepods-besteffort-pod"} {
			if raw, found := strings.CutPrefix(s, p); found {
				if strings.Contains(raw, "-") { // a nested slice, not a uid
					return "", false
				}
				return normalizeUID(strings.ReplaceAll(raw, "_", "-"))
			}
		}
		return "", false
	}
	raw, found := strings.CutPrefix(seg, "pod")
	if !found {
		return "", false
	}
	switch {
	case parent == "kubepods":
	case (parent == "burstable" || parent == "besteffort") && parent2 == "kubepods":
	default:
		return "", false
	}
	if strings.Contains(raw, "_") {
		return "", false
	}
	return normalizeUID(raw)
}

// normalizeUID accepts a pod UID: a UUID (8-4-4-4-12 hex) or a static
// pod's 32 hex digits, lowercase.
func normalizeUID(s string) (string, bool) {
	switch len(s) {
	case 32:
		return s, isLowerHex(s)
	case 36:
		for i := 0; i < len(s); i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return "", false
				}
			} else if !lowerHexDigit(c) {
				return "", false
			}
		}
		return s, true
	}
	return "", false
}

// isContainerID: 64 lowercase hex digits.
func isContainerID(s string) bool { return len(s) == 64 && isLowerHex(s) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !lowerHexDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func lowerHexDigit(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// ExpandCgroupsPath turns an OCI config's linux.cgroupsPath into the
// cgroup path the runtime makes of it: an absolute path as it is
// (cgroupfs), "slice:prefix:name" as systemd lays it out
// (kubepods-burstable-pod<uid>.slice:cri-containerd:<id> is
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope).
// A relative path (relative to the runtime's own cgroup) or anything else
// gives ok false.
func ExpandCgroupsPath(p string) (path string, ok bool) {
	if len(p) > MaxPathLen || p == "" {
		return "", false
	}
	if p[0] == '/' {
		return cleanPath(p), true
	}
	parts := strings.Split(p, ":")
	if len(parts) != 3 || parts[2] == "" || strings.Contains(p, "/") {
		return "", false
	}
	slice, prefix, name := parts[0], parts[1], parts[2]
	if slice == "" {
		slice = "system.slice" // runc's default parent
	}
	dir, ok := expandSlice(slice)
	if !ok {
		return "", false
	}
	unit := name
	if !strings.HasSuffix(name, ".slice") {
		if prefix != "" {
			unit = prefix + "-" + name
		}
		unit += ".scope"
	}
	return strings.TrimSuffix(dir, "/") + "/" + unit, true
}

// expandSlice: a-b-c.slice is /a.slice/a-b.slice/a-b-c.slice; -.slice is /.
func expandSlice(slice string) (string, bool) {
	s, found := strings.CutSuffix(slice, ".slice")
	if !found {
		return "", false
	}
	if s == "-" {
		return "/", true
	}
	if s == "" || strings.HasPrefix(s, "-") || strings.HasSuffix(s, "-") || strings.Contains(s, "--") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			b.WriteString("/" + s[:i] + ".slice")
		}
	}
	b.WriteString("/" + s + ".slice")
	return b.String(), true
}

// cleanPath: an absolute path with no empty, "." or ".." segments. A
// cgroup cannot be named "..": the segments a cgroup namespace shows as
// "/.." are where the path left the namespace, dropped here.
func cleanPath(p string) string {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." && s != ".." {
			segs = append(segs, s)
		}
	}
	return "/" + strings.Join(segs, "/")
}

// underCgroup reports whether the observed cgroup path is the runtime's
// recorded cgroup for a container (expected, absolute) or below it. An
// observed path seen from inside a cgroup namespace ("/../../x/y") is
// known only from where it left the namespace, at some ancestor of the
// namespace's root: what follows the ".." segments must then start with a
// non-empty tail of expected (the ancestor being the rest of it).
func underCgroup(observed, expected string) bool {
	var exp []string
	if c := cleanPath(expected); c != "/" {
		exp = strings.Split(c[1:], "/")
	}
	var obs []string
	relative := false
	for _, s := range strings.Split(observed, "/") {
		switch {
		case s == "" || s == ".":
		case s == "..":
			if len(obs) > 0 {
				return false // ".." only ever leads
			}
			relative = true
		default:
			obs = append(obs, s)
		}
	}
	if !relative {
		return hasPrefix(obs, exp)
	}
	for k := 0; k < len(exp); k++ {
		if hasPrefix(obs, exp[k:]) {
			return true
		}
	}
	return false
}

func hasPrefix(s, prefix []string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range prefix {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}
