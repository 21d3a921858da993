/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The task an event is about: its fields read as a BTF cast where the
 * kernel has one, its identity in an event, and its fd table.
 */
#ifndef ONCE_TASK_BPF_H
#define ONCE_TASK_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"

/* Linux 6.2+. Weak: on an older kernel the loader leaves btf_casts 0, the
 * verifier drops every branch that calls it, and the fields are read with
 * BPF_CORE_READ instead. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* addr as a read-only BTF pointer to a kernel type: its fields are then
 * read with plain loads (the JIT guards them with an exception table
 * entry; a fault reads zero), several times cheaper than one
 * bpf_probe_read_kernel call each. Only where btf_casts is set. */
#define btf_cast(addr, type) \
	((type *)bpf_rdonly_cast((void *)(addr), bpf_core_type_id_kernel(type)))

/*
 * t (a sched program's argument, or bpf_get_current_task_btf) as a
 * pointer to walk. Since 6.2 the verifier decides the trust of every
 * pointer loaded through a trusted one by looking up "<type>__safe_*"
 * names in the kernel's BTF, a linear search of some 100,000 types, up to
 * three per load and per path explored: that was most of once's
 * verification time (perf: btf_find_by_name_kind). Through an untrusted copy
 * the loads read the same fields and skip the search. Before 6.2 there
 * is no such check and t is walked as is: there the sched programs are
 * tp_btf, whose arguments are trusted; with btf_casts they are raw
 * tracepoints, whose arguments are plain addresses until cast. Not for
 * helpers that want a trusted task (bpf_task_storage_get).
 */
static __always_inline struct task_struct *walkable(struct task_struct *t)
{
	if (btf_casts)
		return btf_cast(t, struct task_struct);
	return t;
}

static __always_inline struct task_struct *current_task(void)
{
	return walkable(bpf_get_current_task_btf());
}

/* t: see walkable. Its fields are plain loads, not a helper call each. */
static __always_inline void fill_task(struct task_info *ti, struct task_struct *t)
{
	t = walkable(t);
	ti->pid = t->tgid;
	ti->tid = t->pid;
	ti->ppid = t->real_parent->tgid;
	ti->start_ns = t->group_leader->start_time;
	ti->exec_id = t->self_exec_id;
	if (btf_casts) {
		/* The comm as two words: loads, not a helper call. Past
		 * its NUL it is the task's bytes as they are (zeros when
		 * set_task_comm padded it): user space reads up to the NUL. */
		struct timespec64 *c = btf_cast((__u64)t + bpf_core_field_offset(struct task_struct, comm),
						struct timespec64);
		__u64 lo = c->tv_sec, hi = c->tv_nsec;
		__builtin_memcpy(&ti->comm[0], &lo, sizeof(lo));
		__builtin_memcpy(&ti->comm[8], &hi, sizeof(hi));
		return;
	}
	bpf_probe_read_kernel_str(ti->comm, sizeof(ti->comm), t->comm);
}

static __always_inline void fill_current(struct task_info *ti)
{
	fill_task(ti, bpf_get_current_task_btf());
	if (btf_casts) {
		/* What the helpers read, as loads: the subjective
		 * credentials' uid (from_kuid of the initial namespace is the
		 * kuid's value) and the default hierarchy's cgroup's id. */
		struct task_struct *t = current_task();
		ti->uid = t->cred->uid.val;
		ti->cgroup_id = t->cgroups->dfl_cgrp->kn->id;
		return;
	}
	ti->uid = (__u32)bpf_get_current_uid_gid();
	ti->cgroup_id = bpf_get_current_cgroup_id();
}

/* An event of kind about task t (uid and cgroup: current's), in the
 * scratch; its other fields zero. */
static __always_inline struct proc_buf *proc_event_for(struct task_struct *t, __u32 kind)
{
	struct scratch *s = get_scratch();
	struct proc_buf *pb;

	if (!s)
		return NULL;
	pb = &s->proc;
	pb->ev.hdr.kind = kind;
	pb->ev.hdr.status = 0;
	pb->ev.hdr.syscall = 0;
	fill_task(&pb->ev.task, t);
	pb->ev.task.uid = (__u32)bpf_get_current_uid_gid();
	pb->ev.task.cgroup_id = bpf_get_current_cgroup_id();
	pb->ev.ts_ns = bpf_ktime_get_ns();
	pb->ev.exe_ino = 0;
	pb->ev.exe_dev = 0;
	pb->ev.parent_pid = 0;
	pb->ev.parent_start_ns = 0;
	pb->ev.exit_code = 0;
	pb->ev.path_len = 0;
	pb->ev.unsent = 0;
	pb->ev.lookups_unsent = 0;
	pb->ev.miss_repeats = 0;
	pb->ev.miss_timed = 0;
	pb->ev.miss_ns = 0;
	pb->ev.lookup_miss_repeats = 0;
	pb->ev.lookup_miss_timed = 0;
	pb->ev.lookup_miss_ns = 0;
	return pb;
}

/* The file behind fd in the current task's table, or NULL (an address:
 * read its fields with file_id (path.bpf.h)). */
static __always_inline struct file *current_fd_file(long fd)
{
	struct task_struct *task = current_task();
	struct fdtable *fdt = task->files->fdt;
	struct file *f = NULL;

	if (fd < 0 || fd >= fdt->max_fds)
		return NULL;
	if (btf_casts) {
		/* The slot read as the first word of a list_head: a load,
		 * where a helper call costs more on every open. */
		struct list_head *slot = btf_cast((__u64)fdt->fd + fd * sizeof(f), struct list_head);
		return (struct file *)slot->next;
	}
	bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]);
	return f;
}

#endif /* ONCE_TASK_BPF_H */
