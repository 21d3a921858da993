package container

import (
	"strings"

	"github.com/oncetool/once/internal/mountinfo"
)

// Layout is how the node's cgroups are mounted, as seen from
// /proc/self/mountinfo.
type Layout string

const (
	// LayoutUnified: cgroup2 only (/sys/fs/cgroup is cgroup2). The id the
	// kernel gives (bpf_get_current_cgroup_id) is the container's cgroup.
	LayoutUnified Layout = "unified"
	// LayoutHybrid: v1 controllers (/sys/fs/cgroup/<ctrl>) and cgroup2
	// beside them (/sys/fs/cgroup/unified). The kernel's id is still the
	// cgroup2 one, where most processes sit at the root (id 1), unless
	// the runtime also placed the container there (runc does); the
	// container is told by the v1 paths in /proc/PID/cgroup.
	LayoutHybrid Layout = "hybrid"
	// LayoutLegacy: v1 only. The kernel's id is the unmounted default
	// hierarchy's root for every task: only /proc/PID/cgroup tells.
	LayoutLegacy Layout = "legacy"
	// LayoutNone: no cgroup filesystem found.
	LayoutNone Layout = ""
)

// mount is one mountinfo line of a cgroup filesystem.
type mount struct {
	root   string // the hierarchy's directory at the mount point ("/", or a subtree)
	point  string // where it is mounted
	fstype string // "cgroup2" or "cgroup"
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a mountinfo
// text, in its order.
func parseMountinfo(text string) []mount {
	var ms []mount
	for _, m := range mountinfo.Parse(text) {
		if m.FSType == "cgroup2" || m.FSType == "cgroup" {
			ms = append(ms, mount{root: m.Root, point: m.Point, fstype: m.FSType})
		}
	}
	return ms
}

// pickCgroup2 chooses the cgroup2 mount to index: of mounts at the same
// point the last (it hides the others); then the one nearest the
// hierarchy's root: most leading ".." in its root (a mount of the node's
// hierarchy seen from inside a cgroup namespace), then fewest segments;
// the first of equals. ok false when there is none.
func pickCgroup2(ms []mount) (mount, bool) {
	visible := map[string]int{}
	for i, m := range ms {
		visible[m.point] = i
	}
	best, found := mount{}, false
	var bestUp, bestDown int
	for i, m := range ms {
		if m.fstype != "cgroup2" || visible[m.point] != i {
			continue
		}
		up, down := rootDepth(m.root)
		if !found || up > bestUp || (up == bestUp && down < bestDown) {
			best, found, bestUp, bestDown = m, true, up, down
		}
	}
	return best, found
}

func rootDepth(root string) (up, down int) {
	for _, s := range strings.Split(root, "/") {
		switch s {
		case "", ".":
		case "..":
			up++
		default:
			down++
		}
	}
	return up, down
}

// layoutOf says how the cgroup mounts are laid out.
func layoutOf(ms []mount) Layout {
	v1, v2 := false, false
	for _, m := range ms {
		if m.fstype == "cgroup2" {
			v2 = true
		} else {
			v1 = true
		}
	}
	switch {
	case v1 && v2:
		return LayoutHybrid
	case v2:
		return LayoutUnified
	case v1:
		return LayoutLegacy
	}
	return LayoutNone
}

// mountPrefix is the path of the mount's root in the hierarchy, to put
// before a path found under the mount point: "" for the hierarchy's root
// or a root outside this cgroup namespace ("/.."), else the subtree.
func mountPrefix(root string) string {
	if up, down := rootDepth(root); up > 0 || down == 0 {
		return ""
	}
	return cleanPath(root)
}
