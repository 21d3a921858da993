package main

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/container"
	"github.com/oncetool/once/trace"
)

// containerLabels names the container of each process from the node's
// cgroups and its runtimes' state (container.Resolver: no cluster API),
// for the engine's Options.Label.
func containerLabels() func(pid uint32, cgroupID uint64) *trace.Container {
	return containerLabelsOf(container.New(container.Options{}))
}

// containerLabelsOf is containerLabels with the resolver r.
func containerLabelsOf(r *container.Resolver) func(pid uint32, cgroupID uint64) *trace.Container {
	return func(pid uint32, cgroupID uint64) *trace.Container {
		info := r.Observe(pid, cgroupID)
		if info.ContainerID == "" && info.PodUID == "" && info.Runtime == "" {
			return nil
		}
		return &trace.Container{Cgroup: info.CgroupPath, Runtime: info.Runtime, ID: info.ContainerID,
			Name: info.ContainerName, Pod: info.PodName, Namespace: info.PodNamespace, PodUID: info.PodUID}
	}
}

// containerSelect is --container, --pod and --namespace: a process is
// selected when it matches every kind given, any value of each.
type containerSelect struct {
	containers, pods, namespaces stringList
}

func (c *containerSelect) active() bool {
	return len(c.containers)+len(c.pods)+len(c.namespaces) > 0
}

// matches: a container by its name or its id (a prefix of at least 4 hex
// digits, as docker ps shows 12), a pod and a namespace by name.
func (c *containerSelect) matches(info container.Info) bool {
	if len(c.containers) > 0 && !slices.ContainsFunc(c.containers, func(v string) bool {
		return v == info.ContainerName || len(v) >= 4 && info.ContainerID != "" && strings.HasPrefix(info.ContainerID, v)
	}) {
		return false
	}
	if len(c.pods) > 0 && !slices.Contains(c.pods, info.PodName) {
		return false
	}
	if len(c.namespaces) > 0 && !slices.Contains(c.namespaces, info.PodNamespace) {
		return false
	}
	return true
}

// selectedCgroups walks the cgroup v2 hierarchy r resolves in and
// returns the ids of the cgroups whose container c selects (a cgroup's
// id is its directory's inode number).
func (c *containerSelect) selectedCgroups(r *container.Resolver) []uint64 {
	root := r.Cgroup2Mount()
	if root == "" {
		return nil
	}
	var ids []uint64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil {
			return nil
		}
		if c.matches(r.Lookup(st.Ino, 0)) {
			ids = append(ids, st.Ino)
			return filepath.SkipDir // the kernel looks up a cgroup's ancestors
		}
		return nil
	})
	return ids
}

// maxDecided bounds the cgroups whose verdict accept remembers; past it
// the memory starts again (the kernel keeps the verdicts that count).
const maxDecided = 65536

// nameWait bounds how long a new container's cgroup stays undecided while
// its runtime has not yet written the state that names it: its first
// processes (the runtime's own init) run before that.
const nameWait = 2 * time.Second

// accept finishes, in user space, the kernel's filter by cgroup id: a
// cgroup made since once started passes the kernel until its container
// is named here; then it is kept (SelectCgroup) or taken out
// (DropCgroup), and its events until then are dropped when not selected.
// A container whose cgroup names it but whose names are not written yet
// is decided once they are (or after nameWait): its events until then
// are dropped, and counted in undecided.
func (c *containerSelect) accept(tr *collector.Tracer, r *container.Resolver, undecided *uint64) func(*trace.Event) bool {
	decided := map[uint64]bool{}
	firstSeen := map[uint64]time.Time{}
	return func(ev *trace.Event) bool {
		id := ev.Task.CgroupID
		if id == 0 {
			return true
		}
		if v, ok := decided[id]; ok {
			return v
		}
		v := true
		if tr.CgroupPending(id) {
			info := r.Observe(ev.Task.Pid, id)
			named := info.ContainerName != "" || info.PodName != "" || info.PodNamespace != ""
			inContainer := info.ContainerID != "" || info.PodUID != ""
			if inContainer && !named {
				now := time.Now()
				t0, ok := firstSeen[id]
				if !ok {
					firstSeen[id], t0 = now, now
				}
				if now.Sub(t0) < nameWait {
					*undecided++
					return false
				}
			}
			delete(firstSeen, id)
			v = c.matches(info)
			if v {
				_ = tr.SelectCgroup(id)
			} else {
				_ = tr.DropCgroup(id)
			}
		}
		if len(decided) >= maxDecided {
			clear(decided)
		}
		decided[id] = v
		return v
	}
}
