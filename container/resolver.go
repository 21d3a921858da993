package container

import (
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Caps on what a Resolver keeps, and how often it looks again. With
// every cache full of the longest entries it keeps (paths at
// MaxCachedPathLen, names at MaxFieldLen) and a full index, a Resolver
// holds 31 MiB of heap (TestResolverMemoryBound holds it under 36); on an
// ordinary node a few MiB at most.
const (
	// MaxCgroups is how many cgroup ids (id → path) are remembered once
	// seen, least recently used forgotten first: a cgroup that is gone
	// is still named for findings made after it.
	MaxCgroups = 8192
	// MaxPids is how many processes' /proc/PID/cgroup readings are kept.
	MaxPids = 16384
	// MaxContainers is how many containers' names are kept, found or not.
	MaxContainers = 2048
	// MaxPods is how many pods' names (by uid) are kept, to name a pod's
	// cgroups that are no container of it (the pod's own, conmon's).
	MaxPods = 2048
	// MaxMissed is how many unknown cgroup ids are remembered as such.
	MaxMissed = 4096

	// DefaultRewalkInterval is the least time between two walks of the
	// cgroup2 mount when an id is not found (Options.RewalkInterval).
	DefaultRewalkInterval = 10 * time.Second
	// PidRecheckInterval: a process found in no container is read again
	// after this long (it may since have joined one: runc's init does,
	// before it execs the container's program).
	PidRecheckInterval = time.Second
	// StateRetryInterval: a container whose runtime state was not found
	// is looked for again after this long; found, its names are kept.
	// Short: a container's first processes run before its runtime has
	// written the state (runc writes state.json once its init runs), and
	// each process is named when first seen.
	StateRetryInterval = 250 * time.Millisecond
	// NewStateRetryInterval is StateRetryInterval for the first
	// NewStateWindow after an id's state was first looked for: runc
	// writes state.json after its init's first calls, and the
	// container's program runs some 20 ms later, then named by its
	// exec (and, watched with --container, decided on).
	NewStateRetryInterval = 5 * time.Millisecond
	NewStateWindow        = 2 * time.Second
)

// Default state roots of the runtimes (Options).
var (
	DefaultContainerdRoots = []string{"/run/containerd", "/var/run/docker/containerd/daemon"}
	DefaultRuncRoots       = []string{"/run/runc", "/run/containerd/runc", "/var/run/docker/runtime-runc"}
	DefaultCrunRoots       = []string{"/run/crun", "/run/containerd/crun"}
	DefaultStorageRoots    = []string{"/run/containers/storage", "/var/lib/containers/storage"}
	DefaultDockerRoots     = []string{"/var/lib/docker"}
)

// Options say where a Resolver looks. The zero value is the node's own
// paths. A nil root list is the default one; an empty non-nil list turns
// that runtime off.
type Options struct {
	// ProcRoot is procfs ("/proc"): self/mountinfo, PID/cgroup.
	ProcRoot string
	// Cgroup2Mount, when set, is the cgroup2 mount to resolve ids in,
	// instead of the one ProcRoot/self/mountinfo names; Cgroup2Root is
	// its root's path in the hierarchy ("" or "/" for the whole).
	Cgroup2Mount string
	Cgroup2Root  string
	// Mountinfo is the text of ProcRoot/self/mountinfo when the caller
	// has read it already (ReadMountinfo); nil: New reads it.
	Mountinfo []byte
	// ContainerdRoots hold io.containerd.runtime.v2.task/<ns>/<id>/config.json.
	ContainerdRoots []string
	// RuncRoots hold <id>/state.json or <ns>/<id>/state.json.
	RuncRoots []string
	// CrunRoots hold <id>/status and <id>/config.json (or below <ns>/).
	CrunRoots []string
	// StorageRoots are containers/storage's run and graph roots (CRI-O,
	// podman): overlay-containers/<id>/userdata/config.json.
	StorageRoots []string
	// DockerRoots are Docker's data roots: containers/<id>/config.v2.json.
	DockerRoots []string
	// RewalkInterval: DefaultRewalkInterval when 0.
	RewalkInterval time.Duration
	// NoFileHandles: never try open_by_handle_at; find ids by walking.
	NoFileHandles bool
	// NoPidFiles: never read ProcRoot/PID/cgroup, whose PID is not the
	// pid asked about: a procfs of another pid namespace than the
	// kernel's pids' (once in a container without hostPID), where
	// /proc/PID is another process or none. A process is then known by
	// its cgroup v2 id alone (on a hybrid host, the v2 root's: no
	// container).
	NoPidFiles bool
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
}

// Info is what is known of the container a process ran in. Every field
// may be empty: not in a container, or not known.
type Info struct {
	CgroupID uint64 // the cgroup v2 id the kernel gave (bpf_get_current_cgroup_id)
	// CgroupPath is the cgroup v2 path of CgroupID, or, when that says no
	// container (the v2 root of a hybrid host), the /proc/PID/cgroup path
	// that identifies the container; a path longer than
	// MaxCachedPathLen is cut and ends with "/…".
	CgroupPath    string
	Runtime       string // RuntimeDocker, RuntimeContainerd, RuntimeCRIO, RuntimePodman or ""
	ContainerID   string // 64 lowercase hex digits
	ContainerName string
	PodName       string
	PodNamespace  string
	PodUID        string
}

// Resolver names the container, pod and namespace of a process from its
// cgroup, on the node, reading only the cgroup filesystem, procfs and the
// container runtimes' own state files: no Kubernetes API, no runtime
// socket. It never fails: what it cannot tell is empty. Safe for
// concurrent use (calls are serialized).
//
// Which id the kernel gives: bpf_get_current_cgroup_id() is the id of
// the task's cgroup in the cgroup v2 (default) hierarchy, which on 64-bit
// is the inode number of its directory in a cgroup2 mount (kernfs ids
// are not reused within a boot), and once's --cgroup filter
// (bpf_current_task_under_cgroup on a cgroup2 directory) is on the same
// hierarchy. So:
//
//   - unified (cgroup v2 only): the id is the container's cgroup; the
//     path comes from the cgroup2 mount, by file handle
//     (open_by_handle_at with the id as a FILEID_KERNFS handle, needs
//     CAP_DAC_READ_SEARCH) or else from an index made by walking the
//     mount (again at most every RewalkInterval on a miss), or from
//     /proc/PID/cgroup's "0::" line checked against the id by stat.
//   - hybrid (v1 controllers, cgroup2 at /sys/fs/cgroup/unified): the id
//     is the unified hierarchy's, usually its root (id 1) for every
//     process, unless the runtime placed the container there too (runc
//     does: this host's runc 1.1 puts it at 0::/kubepods/.../<id>). When
//     the id's path names no container, the v1 paths of /proc/PID/cgroup
//     tell, read while the process lives: call Observe when a process is
//     first seen and when it execs.
//   - legacy (v1 only): the id is the root's for all; only /proc tells.
//
// A cgroup removed since (its container gone) is named from what was
// kept. Unkept, it may still be told: while the kernel holds a removed
// cgroup it still opens by handle, reading back as "path (deleted)", and
// a zombie's /proc/PID/cgroup marks it so; either gives the path it had.
//
// /proc must be the node's (hostPID): when a pid's /proc entry is not
// there the cgroup id alone is used, and a /proc/PID/cgroup whose "0::"
// path is not the id's is taken for another process's and not used.
// Nothing is read through /proc/PID/root.
//
// Names come from the runtime's state for the container id, read at
// first sight and kept (MaxContainers): containerd's bundle config.json
// annotations (io.kubernetes.cri.*), CRI-O's (io.kubernetes.*) in
// containers/storage, runc's state.json labels, crun's status and
// config.json copy, Docker's config.v2.json. Each file's path below its
// configured root is made of fixed names, a validated id and namespace
// directories listed there, and is resolved beneath the root through no
// symlink (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; where openat2 is
// refused, component by component with O_NOFOLLOW); it is opened O_NONBLOCK,
// must be a regular file of at most MaxStateFileBytes, and no path read
// from a state file (runc's and crun's bundle) is followed.
//
// A cgroup anyone can name (a delegated subtree) may borrow a real
// container's id: when the runtime's state records the container's
// cgroup (linux.cgroupsPath, runc's cgroups, crun's cgroup-path) and the
// process's cgroup is neither it nor below it, the process is no
// container's and Info keeps only CgroupID and CgroupPath. Without state
// for the id, the path's word is taken.
type Resolver struct {
	mu  sync.Mutex
	opt Options
	now func() time.Time

	layout   Layout
	cg2      string // cgroup2 mount point, "" none
	cg2pfx   string // its root's path in the hierarchy ("" whole)
	handles  bool   // try file handles
	walkedAt time.Time
	walked   bool
	index    map[uint64]string

	ids        *lru[uint64, string]
	missed     *lru[uint64, time.Time]
	pids       *lru[uint32, pidEntry]
	containers *lru[string, stateEntry]
	pods       *lru[string, podNames]

	// read is the one reading of /proc/PID/cgroup a lookup makes: its
	// id's path and its container both come from it, and a process that
	// has exited is not looked for twice.
	read      procRead
	procReads int // of /proc/PID/cgroup, for tests
}

type procRead struct {
	pid    uint32
	done   bool
	pc     procCgroup
	exists bool
}

type pidEntry struct {
	cgroupID uint64
	at       time.Time
	path     string // the chosen path (capped)
	runtime  string
	id       string
	podUID   string
}

type stateEntry struct {
	containerState
	at    time.Time // last looked for
	first time.Time // first looked for
}

type podNames struct{ name, namespace string }

// New makes a Resolver; it reads only ProcRoot/self/mountinfo (unless
// given in Options) and statfs of the cgroup2 mount now, the rest when
// asked.
func New(opt Options) *Resolver {
	if opt.ProcRoot == "" {
		opt.ProcRoot = "/proc"
	}
	if opt.RewalkInterval <= 0 {
		opt.RewalkInterval = DefaultRewalkInterval
	}
	def := func(p *[]string, d []string) {
		if *p == nil {
			*p = d
		}
	}
	def(&opt.ContainerdRoots, DefaultContainerdRoots)
	def(&opt.RuncRoots, DefaultRuncRoots)
	def(&opt.CrunRoots, DefaultCrunRoots)
	def(&opt.StorageRoots, DefaultStorageRoots)
	def(&opt.DockerRoots, DefaultDockerRoots)
	r := &Resolver{
		opt:        opt,
		now:        opt.Now,
		ids:        newLRU[uint64, string](MaxCgroups),
		missed:     newLRU[uint64, time.Time](MaxMissed),
		pids:       newLRU[uint32, pidEntry](MaxPids),
		containers: newLRU[string, stateEntry](MaxContainers),
		pods:       newLRU[string, podNames](MaxPods),
	}
	if r.now == nil {
		r.now = time.Now
	}
	var ms []mount
	if opt.Mountinfo != nil {
		ms = parseMountinfo(string(opt.Mountinfo))
	} else if b, err := ReadMountinfo(opt.ProcRoot); err == nil {
		ms = parseMountinfo(string(b))
	}
	r.layout = layoutOf(ms)
	if m, ok := pickCgroup2(ms); ok {
		r.cg2, r.cg2pfx = m.point, mountPrefix(m.root)
	}
	if opt.Cgroup2Mount != "" {
		r.cg2, r.cg2pfx = opt.Cgroup2Mount, mountPrefix(opt.Cgroup2Root)
		switch r.layout {
		case LayoutNone:
			r.layout = LayoutUnified
		case LayoutLegacy:
			r.layout = LayoutHybrid
		}
	}
	r.handles = r.cg2 != "" && !opt.NoFileHandles && isCgroup2(r.cg2)
	return r
}

// ReadMountinfo reads procRoot/self/mountinfo as New does (a regular
// file, at most MaxProcFileBytes), for a caller that needs it for more
// than a Resolver: one read at start-up.
func ReadMountinfo(procRoot string) ([]byte, error) {
	return readBounded(filepath.Join(procRoot, "self", "mountinfo"), MaxProcFileBytes)
}

// Layout says how the node's cgroups are mounted.
func (r *Resolver) Layout() Layout { return r.layout }

// SetNoPidFiles sets Options.NoPidFiles, before the Resolver is first
// asked about a process (once knows whether its /proc gives the kernel's
// pids only once its tracer is open).
func (r *Resolver) SetNoPidFiles(v bool) { r.opt.NoPidFiles = v }

// Cgroup2Mount is the cgroup2 mount ids are resolved in ("" none).
func (r *Resolver) Cgroup2Mount() string { return r.cg2 }

// Lookup says which container the process pid, whose cgroup v2 id the
// kernel gave as cgroupID, runs in. Either may be 0 (unknown). Call it
// promptly: what it reads of the process (/proc/PID/cgroup, on hybrid
// and legacy hosts) is there only while the process lives; what it
// found is then kept, so a process or container that has since exited
// is still named.
func (r *Resolver) Lookup(cgroupID uint64, pid uint32) Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookup(cgroupID, pid, false)
}

// Observe reads and keeps what /proc says of pid now, in cgroup
// cgroupID, and resolves its container while its runtime's state is
// there: call it when a process is first seen and at each exec (a pid
// reused by a new process, or a process that joined a container, is
// then read afresh). It returns what Lookup would.
func (r *Resolver) Observe(pid uint32, cgroupID uint64) Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookup(cgroupID, pid, true)
}

// lookup: fresh, read pid's /proc entry again (Observe) rather than use
// the kept one.
func (r *Resolver) lookup(cgroupID uint64, pid uint32, fresh bool) Info {
	r.read = procRead{pid: pid}
	defer func() { r.read = procRead{} }()
	info := Info{CgroupID: cgroupID}
	v2, known := r.v2Path(cgroupID, pid)
	var rt, id, uid string
	if known {
		info.CgroupPath = v2
		rt, id, uid = ParseCgroupPath(v2)
	}
	if rt == "" && id == "" && uid == "" && pid != 0 && (r.layout != LayoutUnified || !known) {
		if e, ok := r.pidInfo(pid, cgroupID, fresh); ok && (e.id != "" || e.podUID != "" || e.runtime != "" || !known) {
			info.CgroupPath, rt, id, uid = e.path, e.runtime, e.id, e.podUID
		}
	}
	return r.complete(info, rt, id, uid)
}

// complete fills the names from the runtime's state, or drops a
// container whose state puts it elsewhere.
func (r *Resolver) complete(info Info, rt, id, uid string) Info {
	if id == "" && uid == "" && info.CgroupPath != "" {
		// runc run by hand names the cgroup by the container's id
		// (/mybox), a layout no engine's: a runc root's state of that
		// id that made this very cgroup says it is that container.
		if cand := path.Base(info.CgroupPath); plausibleID(cand) {
			if st := r.state(cand, ""); st.found && st.cgroup != "" && underCgroup(info.CgroupPath, st.cgroup) {
				id = cand
				if rt == "" {
					rt = st.runtime
				}
			}
		}
	}
	info.Runtime, info.ContainerID, info.PodUID = rt, id, uid
	if id != "" {
		st := r.state(id, rt)
		if st.found && (st.cgroup != "" && !underCgroup(info.CgroupPath, st.cgroup) ||
			uid != "" && st.podUID != "" && uid != st.podUID) {
			return Info{CgroupID: info.CgroupID, CgroupPath: info.CgroupPath}
		}
		if info.Runtime == "" {
			info.Runtime = st.runtime
		}
		if info.PodUID == "" {
			info.PodUID = st.podUID
		}
		info.ContainerName, info.PodName, info.PodNamespace = st.name, st.podName, st.podNamespace
		if info.PodUID != "" && (st.podName != "" || st.podNamespace != "") {
			r.pods.put(info.PodUID, podNames{st.podName, st.podNamespace})
		}
	}
	if info.PodUID != "" && info.PodName == "" && info.PodNamespace == "" {
		if p, ok := r.pods.get(info.PodUID); ok {
			info.PodName, info.PodNamespace = p.name, p.namespace
		}
	}
	return info
}

// v2Path finds the path of a cgroup v2 id: remembered, in the last
// walk's index, by file handle, from pid's "0::" line (checked by
// stat), or in a new walk (at most every RewalkInterval).
func (r *Resolver) v2Path(id uint64, pid uint32) (string, bool) {
	if id == 0 || r.cg2 == "" {
		return "", false
	}
	if p, ok := r.ids.get(id); ok {
		return p, true
	}
	if p, ok := r.index[id]; ok {
		r.ids.put(id, p)
		return p, true
	}
	at, missed := r.missed.get(id)
	recent := missed && r.now().Sub(at) < r.opt.RewalkInterval
	if r.handles && !recent {
		p, ok, err := byHandle(r.cg2, r.cg2pfx, id)
		if err != nil {
			r.handles = false
		} else if ok {
			r.ids.put(id, p)
			return p, true
		}
	}
	if pid != 0 {
		if p, ok := r.v2FromProc(id, pid); ok {
			r.ids.put(id, p)
			return p, true
		}
	}
	if !recent && (!r.walked || r.now().Sub(r.walkedAt) >= r.opt.RewalkInterval) {
		r.index = walkIndex(r.cg2, r.cg2pfx)
		r.walked, r.walkedAt = true, r.now()
		if p, ok := r.index[id]; ok {
			r.ids.put(id, p)
			return p, true
		}
	}
	if !recent {
		r.missed.put(id, r.now())
	}
	return "", false
}

// v2FromProc: the "0::" path of /proc/PID/cgroup, if the cgroup2 mount
// has a directory there whose id is id.
func (r *Resolver) v2FromProc(id uint64, pid uint32) (string, bool) {
	pc, ok := r.readProc(pid)
	if !ok || !pc.hasV2 {
		return "", false
	}
	p := cleanPath(pc.v2)
	rel, ok := r.mountRel(p)
	if !ok {
		return "", false
	}
	if got, ok := statID(r.cg2, rel); ok && got == id {
		return capPath(p), true
	}
	return "", false
}

// mountRel is where a hierarchy path p (cleanPath'd) is below the
// cgroup2 mount point, if the mount shows it.
func (r *Resolver) mountRel(p string) (string, bool) {
	if r.cg2pfx == "" {
		return p, true
	}
	if p == r.cg2pfx {
		return "/", true
	}
	if !hasPathPrefix(p, r.cg2pfx) {
		return "", false
	}
	return p[len(r.cg2pfx):], true
}

func hasPathPrefix(p, prefix string) bool {
	return len(p) > len(prefix) && p[:len(prefix)] == prefix && p[len(prefix)] == '/'
}

// readProc reads /proc/PID/cgroup, once in a lookup. A "0::" path the kernel marked
// removed keeps its mark when a live cgroup is so named.
func (r *Resolver) readProc(pid uint32) (procCgroup, bool) {
	if r.read.pid == pid && r.read.done {
		return r.read.pc, r.read.exists
	}
	pc, ok := r.readProcFile(pid)
	if r.read.pid == pid {
		r.read.done, r.read.pc, r.read.exists = true, pc, ok
	}
	return pc, ok
}

func (r *Resolver) readProcFile(pid uint32) (procCgroup, bool) {
	if r.opt.NoPidFiles {
		return procCgroup{}, false
	}
	r.procReads++
	b, err := readBounded(filepath.Join(r.opt.ProcRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"), MaxProcFileBytes)
	if err != nil {
		return procCgroup{}, false
	}
	pc, ok := parseProcCgroup(string(b))
	if ok && pc.dead && r.cg2 != "" {
		if rel, in := r.mountRel(cleanPath(pc.v2 + deletedMark)); in {
			if _, live := statID(r.cg2, rel); live {
				pc.v2, pc.dead = pc.v2+deletedMark, false
			}
		}
	}
	return pc, ok
}

// pidInfo is pid's kept reading when it is of the same cgroup id and
// either names a container or is recent (and not fresh); else a new
// reading, or the kept one if the process is gone.
func (r *Resolver) pidInfo(pid uint32, cgroupID uint64, fresh bool) (pidEntry, bool) {
	e, ok := r.pids.get(pid)
	same := ok && (cgroupID == 0 || e.cgroupID == 0 || e.cgroupID == cgroupID)
	if same && !fresh && (e.id != "" || r.now().Sub(e.at) < PidRecheckInterval) {
		return e, true
	}
	if n, ok := r.readPid(pid, cgroupID); ok {
		return n, true
	}
	return e, same
}

// readPid reads /proc/PID/cgroup and keeps what it says. A reading whose
// "0::" path is not that of cgroupID (when both are known) is another
// process's (a reused pid, another pid namespace's /proc): not kept.
func (r *Resolver) readPid(pid uint32, cgroupID uint64) (pidEntry, bool) {
	pc, ok := r.readProc(pid)
	if !ok {
		return pidEntry{}, false
	}
	if !r.v2Agrees(pc, cgroupID) {
		return pidEntry{}, false
	}
	path, rt, id, uid := pc.choose()
	e := pidEntry{cgroupID: cgroupID, at: r.now(), path: capPath(path), runtime: rt, id: id, podUID: uid}
	r.pids.put(pid, e)
	return e, true
}

// v2Agrees: the "0::" path of a /proc/PID/cgroup reading is that of
// cgroupID, or cannot be told apart from it: by the id's known path, else
// by the id of the directory at that path in the cgroup2 mount.
func (r *Resolver) v2Agrees(pc procCgroup, cgroupID uint64) bool {
	if cgroupID == 0 || !pc.hasV2 {
		return true
	}
	if p, known := r.ids.get(cgroupID); known {
		return sameV2(pc.v2, p)
	}
	if up, _ := rootDepth(pc.v2); up > 0 || r.cg2 == "" {
		return true
	}
	p, ok := r.mountRel(cleanPath(pc.v2))
	if !ok {
		return true
	}
	got, ok := statID(r.cg2, p)
	return !ok || got == cgroupID
}

// sameV2: a /proc "0::" path and an id's path (both capped alike) agree; a
// path seen from a cgroup namespace ("/..") cannot be compared and is
// taken to agree.
func sameV2(procPath, idPath string) bool {
	if up, _ := rootDepth(procPath); up > 0 {
		return true
	}
	return capPath(cleanPath(procPath)) == idPath
}

// state is the runtime state of container id, kept; hint is the
// runtime its cgroup name says, searched first.
func (r *Resolver) state(id, hint string) containerState {
	now := r.now()
	e, seen := r.containers.get(id)
	if seen {
		retry := StateRetryInterval
		if now.Sub(e.first) < NewStateWindow {
			retry = NewStateRetryInterval
		}
		if e.found || now.Sub(e.at) < retry {
			return e.containerState
		}
	}
	first := now
	if seen {
		first = e.first
	}
	type source struct {
		runtime string
		roots   []string
		read    func(root, id string) containerState
	}
	sources := []source{
		{RuntimeContainerd, r.opt.ContainerdRoots, containerdState},
		{RuntimeCRIO, r.opt.StorageRoots, storageState},
		{"", r.opt.RuncRoots, runcState},
		{"", r.opt.CrunRoots, crunState},
		{RuntimeDocker, r.opt.DockerRoots, dockerState},
	}
	var s containerState
	read := func(src source) {
		for _, root := range src.roots {
			s.merge(src.read(root, id))
		}
	}
	for _, src := range sources { // the hinted runtime's own first
		if hint != "" && (src.runtime == hint || hint == RuntimePodman && src.runtime == RuntimeCRIO) {
			read(src)
		}
	}
	for _, src := range sources {
		if !(hint != "" && (src.runtime == hint || hint == RuntimePodman && src.runtime == RuntimeCRIO)) {
			read(src)
		}
	}
	s.cgroup = capPath(s.cgroup)
	r.containers.put(id, stateEntry{s, now, first})
	return s
}

// plausibleID says whether name could be a container's id as runc takes
// one (letters, digits, '_', '+', '-' and '.', not "." or ".."), and so
// name a state directory: nothing else is looked up.
func plausibleID(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 1024 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_+-.", c)) {
			return false
		}
	}
	return true
}
