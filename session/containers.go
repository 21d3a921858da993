package session

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/oncetool/once/container"
	"github.com/oncetool/once/trace"
)

// ContainerLabels names the container of each process from the node's
// cgroups and its runtimes' state (container.Resolver: no cluster API),
// for the engine's Options.Label.
func ContainerLabels(r *container.Resolver) func(pid uint32, cgroupID uint64) *trace.Container {
	return func(pid uint32, cgroupID uint64) *trace.Container {
		info := r.Observe(pid, cgroupID)
		if info.ContainerID == "" && info.PodUID == "" && info.Runtime == "" {
			return nil
		}
		return &trace.Container{Cgroup: info.CgroupPath, Runtime: info.Runtime, ID: info.ContainerID,
			Name: info.ContainerName, Pod: info.PodName, Namespace: info.PodNamespace, PodUID: info.PodUID}
	}
}

// Selection is --container, --pod and --namespace: a process is selected
// when it matches every kind given, any value of each.
type Selection struct {
	Containers, Pods, Namespaces []string

	r       *container.Resolver
	filter  CgroupFilter
	decided map[uint64]bool
	waiting map[uint64]*waitingCgroup
	// undecided: events of a new container's cgroup dropped while its
	// runtime had not yet named it (Counters.UnnamedDropped).
	undecided uint64
}

// Active reports whether anything is selected.
func (c *Selection) Active() bool {
	return len(c.Containers)+len(c.Pods)+len(c.Namespaces) > 0
}

// Matches: a container by its name or its id (a prefix of at least 4 hex
// digits, as docker ps shows 12), a pod and a namespace by name.
func (c *Selection) Matches(info container.Info) bool {
	if len(c.Containers) > 0 && !slices.ContainsFunc(c.Containers, func(v string) bool {
		return v == info.ContainerName || len(v) >= 4 && info.ContainerID != "" && strings.HasPrefix(info.ContainerID, v)
	}) {
		return false
	}
	if len(c.Pods) > 0 && !slices.Contains(c.Pods, info.PodName) {
		return false
	}
	if len(c.Namespaces) > 0 && !slices.Contains(c.Namespaces, info.PodNamespace) {
		return false
	}
	return true
}

// SelectedCgroups walks the cgroup v2 hierarchy r resolves in and
// returns the ids of the cgroups whose container c selects (a cgroup's
// id is its directory's inode number): the kernel's filter at the start.
func (c *Selection) SelectedCgroups(r *container.Resolver) []uint64 {
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
		if c.Matches(r.Lookup(st.Ino, 0)) {
			ids = append(ids, st.Ino)
			return filepath.SkipDir // the kernel looks up a cgroup's ancestors
		}
		return nil
	})
	return ids
}

// Select makes s finish, in user space, the kernel's filter by cgroup id
// that sel's SelectedCgroups started (see accept); s's source must be a
// CgroupFilter. A container started between that walk and the attach
// of cgroup_mkdir is found by a second walk, here.
func (s *Session) Select(sel *Selection, r *container.Resolver) error {
	f, ok := s.src.(CgroupFilter)
	if !ok {
		return fmt.Errorf("the source (%T) does not filter by cgroup", s.src)
	}
	sel.r, sel.filter = r, f
	sel.decided, sel.waiting = map[uint64]bool{}, map[uint64]*waitingCgroup{}
	for _, id := range sel.SelectedCgroups(r) {
		if err := f.SelectCgroup(id); err != nil {
			return err
		}
	}
	s.sel = sel
	return nil
}

// maxDecided bounds the cgroups whose verdict accept remembers; past it
// the memory starts again (the kernel keeps the verdicts that count).
const maxDecided = 65536

// nameWait bounds how long a new cgroup stays undecided while its
// runtime has not yet written the state that names it: its first
// processes (the runtime's own init) run before that.
const nameWait = 2 * time.Second

// accept finishes, in user space, the kernel's filter by cgroup id: a
// cgroup made since once started passes the kernel until its container
// is named here; then it is kept (SelectCgroup) or taken out
// (DropCgroup), and its events until then are dropped when not selected.
// A cgroup is kept as soon as what is known of it matches: names only
// add matches (a container selected by its id needs no name, and runc
// run by hand never gets one). One that does not match yet, and is not
// named, may still be: its runtime writes the state that gives the id
// (runc run by hand: the cgroup is /ID, told apart from any other only
// by runc's state.json) and the names after the container's first
// processes ran (the resolver looks for a new id's state again within
// milliseconds). It is decided once named, or nameWait after its first
// event (by the loop's clock now): its events until then are dropped,
// and counted when it is a container's (its id known then) or turns
// out selected.
func (c *Selection) accept(ev *trace.Event, now time.Time) bool {
	id := ev.Task.CgroupID
	if id == 0 {
		return true
	}
	if v, ok := c.decided[id]; ok {
		return v
	}
	v := true
	if c.filter.CgroupPending(id) {
		info := c.r.Observe(ev.Task.Pid, id)
		named := info.ContainerName != "" || info.PodName != "" || info.PodNamespace != ""
		inContainer := info.ContainerID != "" || info.PodUID != ""
		v = c.Matches(info)
		if !v && !named {
			w, ok := c.waiting[id]
			if !ok {
				if len(c.waiting) >= maxDecided {
					clear(c.waiting)
				}
				w = &waitingCgroup{since: now}
				c.waiting[id] = w
			}
			if now.Sub(w.since) < nameWait {
				if inContainer {
					c.undecided++
				} else {
					w.held++
				}
				return false
			}
		}
		if w, ok := c.waiting[id]; ok {
			if v {
				c.undecided += w.held // a selected container's, after all
			}
			delete(c.waiting, id)
		}
		if v {
			_ = c.filter.SelectCgroup(id)
		} else {
			_ = c.filter.DropCgroup(id)
		}
	}
	if len(c.decided) >= maxDecided {
		clear(c.decided)
	}
	c.decided[id] = v
	return v
}

// waitingCgroup is a cgroup accept has not decided on yet: since its
// first event, and how many of its events were dropped before it was
// known to be a container's.
type waitingCgroup struct {
	since time.Time
	held  uint64
}
