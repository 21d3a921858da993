/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which tasks are traced: the bitmap of followed processes, and the
 * attribute filters.
 */
#ifndef ONCE_FOLLOW_BPF_H
#define ONCE_FOLLOW_BPF_H

#include "maps.bpf.h"
#include "task.bpf.h"

static __always_inline bool tracked_bit(__u32 tgid)
{
	__u32 w = tgid >> 6;
	__u64 *v = bpf_map_lookup_elem(&tracked_bits, &w);

	return v && ((*v >> (tgid & 63)) & 1);
}

static __always_inline void set_tracked_bit(__u32 tgid, bool on)
{
	__u32 w = tgid >> 6;
	__u64 *v = bpf_map_lookup_elem(&tracked_bits, &w);
	__u64 m = 1ULL << (tgid & 63);

	if (!v)
		return;
	if (on)
		__sync_fetch_and_or(v, m);
	else
		__sync_fetch_and_and(v, ~m);
}

/* Whether tgid is in the traced set, by pid alone: not once itself and,
 * with filter_tracked, followed (the processes they fork are followed in
 * handle_fork whatever their other attributes). */
static __always_inline bool followed(__u32 tgid)
{
	if (tgid == self_tgid)
		return false;
	if (!filter_tracked)
		return true;
	return tracked_bit(tgid);
}

/* Whether the current task's cgroup v2, or one above it, is in cgroup_ids:
 * a container's processes may sit in cgroups it makes below its own. */
static __always_inline bool cgroup_selected(void)
{
	__u64 id = bpf_get_current_cgroup_id();

	if (bpf_map_lookup_elem(&cgroup_ids, &id))
		return true;
	for (int level = 1; level <= ONCE_CGROUP_DEPTH; level++) {
		id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			break;
		if (bpf_map_lookup_elem(&cgroup_ids, &id))
			return true;
	}
	return false;
}

/* Whether the current task passes the attribute filters: cgroup, real uid,
 * comm. Each costs a helper call and at most one map lookup when on, and
 * nothing when off. Every program runs in the context of the task its
 * event is about, except handle_fork: there current is the parent, whose
 * comm, credentials and (barring CLONE_INTO_CGROUP) cgroup the child has. */
static __always_inline bool passes_but_comm(void)
{
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_include, 0) != 1)
		return false;
	if (filter_cgroup_ids && !cgroup_selected())
		return false;
	if (filter_uid) {
		__u32 uid = (__u32)bpf_get_current_uid_gid();
		if (!bpf_map_lookup_elem(&uid_include, &uid))
			return false;
	}
	return true;
}

/*
 * Whether the current task passes --comm and --exclude-comm. With
 * process_too, a thread other than its process's group leader is judged
 * by its own comm and by the leader's: a JVM's compiler threads, a
 * browser's workers, any thread named by pthread_setname_np are their
 * process's, and --comm java must see them, --exclude-comm agent drop
 * them. Without (a fork, judged for the child it makes), by its own comm
 * alone: a new process has the comm of the thread that forked it, and is
 * its own leader. A global function: two keys on the stack of the
 * programs that ask, some at the verifier's bound, would not fit.
 */
__noinline int comm_passes(int process_too)
{
	struct comm_key key = {}, lead = {};
	__u64 id = bpf_get_current_pid_tgid();
	bool other = process_too && (__u32)id != (__u32)(id >> 32);

	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (other) {
		struct task_struct *t = bpf_get_current_task_btf();

		BPF_CORE_READ_STR_INTO(&lead.comm, t, group_leader, comm);
	}
	if (filter_comm && !bpf_map_lookup_elem(&comm_include, &key) &&
	    !(other && bpf_map_lookup_elem(&comm_include, &lead)))
		return 0;
	if (filter_no_comm &&
	    (bpf_map_lookup_elem(&comm_exclude, &key) || (other && bpf_map_lookup_elem(&comm_exclude, &lead))))
		return 0;
	return 1;
}

static __always_inline bool current_passes(void)
{
	if (!passes_but_comm())
		return false;
	return !(filter_comm || filter_no_comm) || comm_passes(1);
}

/* current_passes for a fork: the child is a process of its own, named as
 * the forking thread is (see comm_passes). */
static __always_inline bool current_thread_passes(void)
{
	if (!passes_but_comm())
		return false;
	return !(filter_comm || filter_no_comm) || comm_passes(0);
}

/*
 * current_passes at a syscall's entry, the comm filter's verdict kept in
 * the thread's slot with the comms it was given for, the thread's and its
 * group leader's: a comm changes at an exec or a prctl(PR_SET_NAME), and
 * their 16 bytes each, read as two words, are compared at every entry,
 * where the helper and the hash lookups cost as much as the rest of the
 * entry. Needs btf_casts (the words are plain loads); without, the
 * filter is asked every time.
 */
static __always_inline bool current_passes_slot(struct comm_verdict *cv)
{
	if (!passes_but_comm())
		return false;
	if (!(filter_comm || filter_no_comm))
		return true;
	if (!btf_casts)
		return comm_passes(1);
	/* task->comm as a 16-byte type of two words, the thread's and its
	 * leader's (the same where it is the leader). */
	struct task_struct *t = current_task();
	__u64 off = bpf_core_field_offset(struct task_struct, comm);
	struct timespec64 *c = btf_cast((__u64)t + off, struct timespec64);
	struct timespec64 *lc = btf_cast((__u64)t->group_leader + off, struct timespec64);
	__u64 lo = c->tv_sec, hi = c->tv_nsec, llo = lc->tv_sec, lhi = lc->tv_nsec;
	if (cv->known && cv->lo == lo && cv->hi == hi && cv->llo == llo && cv->lhi == lhi)
		return cv->pass;
	cv->pass = comm_passes(1);
	cv->lo = lo;
	cv->hi = hi;
	cv->llo = llo;
	cv->lhi = lhi;
	cv->known = 1;
	return cv->pass;
}

/* Whether events of the current task, of process tgid, reach user space.
 * Syscalls decide at entry: an exit, whatever the task's comm by then,
 * completes the event its entry started. */
static __always_inline bool traced(__u32 tgid)
{
	return followed(tgid) && current_passes();
}

#define SECCOMP_MODE_FILTER 2 /* include/uapi/linux/seccomp.h */

/*
 * What an exit whose entry was not recorded, in a thread seen at an entry
 * before, counts as: a seccomp filter answers a call before the entry
 * tracepoint runs (syscall_trace_enter), and the exit's still does, so in
 * a thread under a filter that is a call it refused (strace -f shows it,
 * with the filter's errno), not a loss. So does a ptrace tracer's entry
 * stop, before both: a thread killed there (SIGKILL to a process under
 * strace or gdb) or stopped by PTRACE_SYSEMU (a tracer emulating its
 * calls: gVisor, UML) skips the call, and its exit tracepoint still runs.
 * In a traced thread that is a call the kernel never ran, not a loss.
 */
static __always_inline __u32 missed_entry_counter(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	if (BPF_CORE_READ(t, seccomp.mode) == SECCOMP_MODE_FILTER)
		return CNT_SECCOMP_REFUSED;
	if (BPF_CORE_READ(t, ptrace))
		return CNT_PTRACE_SKIPPED;
	return CNT_MISSED_ENTER;
}

/*
 * An exit with no entry in a thread that has entered no call yet, under a
 * seccomp filter: refused by the filter if the thread started after every
 * program was attached (a call already in flight then is outside the
 * trace). A sandboxed program's first calls are often the refused ones.
 */
static __always_inline bool seccomp_refused_first(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return attach_ns && BPF_CORE_READ(t, seccomp.mode) == SECCOMP_MODE_FILTER &&
	       BPF_CORE_READ(t, start_time) > attach_ns;
}

#endif /* ONCE_FOLLOW_BPF_H */
