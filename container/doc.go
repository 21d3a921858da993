// Package container tells which container, pod and namespace a process
// runs in, on the node, from its cgroup: no Kubernetes API, no runtime
// socket. It reads the cgroup filesystem, procfs and the container
// runtimes' own state files (read-only, bounded, never failing: what it
// cannot tell is empty).
//
// ParseCgroupPath is the pure part: which runtime, container id and pod
// uid a cgroup path names. Resolver does the rest: cgroup v2 id (the one
// the BPF programs record, bpf_get_current_cgroup_id) to path, the
// /proc/PID/cgroup fallback of hybrid and v1 hosts, and the names from
// the runtime's state, all kept in bounded caches so that a container
// that has exited is still named. See Resolver for which id the kernel
// gives in each cgroup layout and how each is resolved.
//
// The package imports nothing of once's: the collector gives it ids and
// pids, and whoever labels events and findings calls Lookup.
package container
