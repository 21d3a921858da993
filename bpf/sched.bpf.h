/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The programs of the process lifecycle: fork, exec and exit. Their
 * sections say raw_tp, how they run where btf_casts is set (Linux 6.2+).
 * Without it the loader makes them tp_btf (collector/tracer.go): then
 * fill_task and the like walk their arguments with plain loads, which
 * only tp_btf's typed arguments allow.
 */
#ifndef ONCE_SCHED_BPF_H
#define ONCE_SCHED_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "emit.bpf.h"
#include "follow.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"
#include "image_files.bpf.h"
#include "tally.bpf.h"
#include "exec.bpf.h"

enum image_class {
	IMAGE_NATIVE = 0,
	IMAGE_COMPAT = 1, /* i386 on x86-64, arm on arm64 */
	IMAGE_X32 = 2,	  /* x32 on x86-64 */
};

/*
 * Whether the image being started is a 32-bit ELF program. The kernel's
 * syscall tracepoints skip compat syscalls (ARCH_TRACE_IGNORE_COMPAT_SYSCALLS),
 * so none of its opens and execs will be seen: user space says so rather
 * than show it opening nothing. The exit of the execve that started it
 * is skipped too, once the new image has made the thread a compat one:
 * for i386 and arm, not for x32 (whose calls are told apart by their
 * number, and this one was made with a native number). bprm->buf holds the
 * head of the file the kernel ran (for a script, its interpreter's).
 */
static __always_inline enum image_class image_class_of(struct linux_binprm *bprm)
{
	__u8 head[20] = {};

	if (bpf_core_read(head, sizeof(head), &bprm->buf))
		return IMAGE_NATIVE;
	if (head[0] != 0x7f || head[1] != 'E' || head[2] != 'L' || head[3] != 'F' ||
	    head[4] != 1 /* ELFCLASS32 */)
		return IMAGE_NATIVE;
	/* e_machine, little-endian on both architectures that have compat
	 * tasks and BPF: EM_X86_64 is 62. */
	if (head[18] == 62 && head[19] == 0)
		return IMAGE_X32;
	return IMAGE_COMPAT;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 tree = TRACK_TREE;
	__u32 *kind;
	struct proc_buf *pb;

	/* Threads share their process's entry; only new processes matter. */
	if (BPF_CORE_READ(child, pid) != ctgid || !filter_tracked)
		return 0;
	kind = bpf_map_lookup_elem(&tracked, &ptgid);
	if (!kind || *kind == TRACK_ONLY)
		return 0;
	if (bpf_map_update_elem(&tracked, &ctgid, &tree, BPF_ANY))
		count(CNT_TRACKED_FULL);
	else
		set_tracked_bit(ctgid, true);
	/* Followed whatever its attributes (it may exec into a comm that
	 * passes), reported only if they pass now: its comm is the forking
	 * thread's, its own leader. */
	if (!current_thread_passes())
		return 0;
	pb = proc_event_for(child, EVENT_FORK);
	if (!pb)
		return 0;
	/* The child's cgroup, not current's (the parent's): clone3 with
	 * CLONE_INTO_CGROUP starts it in another (systemd, crun). */
	pb->ev.task.cgroup_id = BPF_CORE_READ(child, cgroups, dfl_cgrp, kn, id);
	pb->ev.parent_pid = ptgid;
	pb->ev.parent_start_ns = BPF_CORE_READ(parent, group_leader, start_time);
	emit(pb, sizeof(struct proc_event));
	return 0;
}

/*
 * How many bytes of the kernel's copy of an exec's filename (read into
 * data) precede the name the program passed: alloc_bprm names an
 * execveat of an empty or relative name with a dirfd "/dev/fd/N" or
 * "/dev/fd/N/NAME" (its fdpath, then its filename too), which strace and
 * the entry's own read show as "" or "NAME". 0 for any other exec, and
 * on a kernel without fdpath, whose copy is then reported as it is.
 */
static __always_inline __u32 fdpath_skip(struct linux_binprm *bprm, const char *fname, const __u8 *data)
{
	if (!bpf_core_field_exists(bprm->fdpath) || BPF_CORE_READ(bprm, fdpath) != fname)
		return 0;
	/* "/dev/fd/", then the descriptor's up to 10 digits. */
	for (__u32 i = 8; i < 8 + 11; i++) {
		if (data[i] == '/')
			return i + 1;
		if (!data[i])
			return i;
	}
	return 0;
}

/*
 * An exec past its last failure (Linux 6.10+; optional, see
 * collector/tracer.go): the caller's address space is still current, and
 * the exec has faulted in what it copied of it (the filename, argv's
 * pointers and strings). Strings the entry could not read or send are
 * read here as the caller passed them, and a relative name's directory is
 * walked while the caller's descriptors are all still open (close-on-exec
 * ones close after this). handle_exec's fallback, the kernel's copies,
 * are not the caller's for a script: binfmt_script drops argv[0], puts
 * the interpreter and the script's name first, and runs the interpreter.
 * Exec path only: not the cost of an open or a lookup.
 */
SEC("raw_tp/sched_prepare_exec")
int handle_prepare_exec(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct exec_pending *pe;
	struct exec_buf *eb;
	struct scratch *s;
	__u16 st;

	pe = bpf_map_lookup_elem(&pending_execs, &tid);
	if (!pe || !pe->in_flight || pe->by_new_comm ||
	    (pe->status & (ST_FNAME_REREAD | ST_ARGS_SENT)) == ST_ARGS_SENT)
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	eb = &s->exec;
	/* The re-read bit stays: the entry's read faulted. */
	eb->ev.hdr.status = pe->status & ~ST_ARGS_SENT;
	eb->ev.hdr.syscall = pe->syscall;
	read_exec_fname(eb, (const char *)pe->fname_ptr);
	read_argv(eb, pe->argv_ptr);
	exec_path(s, eb, pe->dirfd, pe->at_flags);
	st = eb->ev.hdr.status;
	if (send_exec_args(eb, pe->old_tid, STACK_NONE) == SNAP_NOT_SENT)
		return 0;
	pe->status = st | ST_ARGS_SENT;
	pe->argc = eb->ev.argc;
	/* Read whole: the kernel's copies would be less. */
	pe->strings_final = !(st & (ST_FNAME_UNREADABLE | ST_ARGV_UNREADABLE));
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 tid = BPF_CORE_READ(p, pid);
	__u32 old = old_pid;
	struct exec_pending *pe;
	struct proc_buf *pb;
	struct scratch *s;
	struct file *f;
	__u32 start = 0, plen = 0;
	enum image_class class;
	bool pending;

	if (!followed(tgid))
		return 0;
	/* current is the thread that exec'd, the process's only one now: its
	 * repeats count for the image it replaced, read back at the image
	 * event sent below. */
	end_local();
	forget_recent();
	/* Its unsent opens, before the image event that ends their image. */
	image_files_on_exec(p);
	kept_on_exec();

	/* An exec in flight passed the filters at its entry: complete it even
	 * if the new comm does not pass them. */
	pe = bpf_map_lookup_elem(&pending_execs, &old);
	if (pe && !pe->in_flight)
		pe = NULL;
	if (pe && pe->by_new_comm) {
		/* Entered under a comm the filter refused: followed if the
		 * new one passes, its strings the kernel's copies below. */
		if (!current_passes()) {
			bpf_map_delete_elem(&pending_execs, &old);
			pe = NULL;
		} else {
			pe->by_new_comm = 0;
			pe->status = ST_FNAME_REREAD;
		}
	}
	pending = pe != NULL;
	if (pe && !pe->strings_final && (pe->status & (ST_FNAME_REREAD | ST_ARGS_SENT)) != ST_ARGS_SENT &&
	    (s = get_scratch())) {
		/* The entry could not read or send the strings, nor could
		 * handle_prepare_exec (not attached: before Linux 6.10), and
		 * the old address space is gone: the kernel's copies, sent to
		 * replace what the entry sent. */
		struct exec_buf *eb = &s->exec;
		unsigned long as = BPF_CORE_READ(p, mm, arg_start);
		unsigned long ae = BPF_CORE_READ(p, mm, arg_end);
		__u32 len = ae > as ? ae - as : 0, at;
		long n;

		const char *fname = BPF_CORE_READ(bprm, filename);
		/* A script's (binfmt_script, binfmt_misc): the kernel's argv
		 * is its interpreter's, argv[0] dropped (overwritten) and the
		 * interpreter, its argument and the script's name put first,
		 * and bprm->file is the interpreter. */
		bool interp = BPF_CORE_READ(bprm, interp) != fname;
		__u32 skip;
		bool walk;

		eb->ev.hdr.status = pe->status & ~ST_EXEC_STRINGS;
		n = bpf_probe_read_kernel_str(eb->data, ONCE_PATH_MAX, fname);
		skip = n > 0 ? fdpath_skip(bprm, fname, eb->data) : 0;
		if (skip)
			n = bpf_probe_read_kernel_str(eb->data, ONCE_PATH_MAX, fname + skip);
		if (n <= 0) {
			eb->ev.hdr.status |= ST_FNAME_UNREADABLE;
			n = 1;
		}
		/* The kernel's copy is the name as passed if it was absolute
		 * or relative to the cwd; with a dirfd, the name after the
		 * fdpath skipped. But for an absolute name the file exec'd
		 * names where it was found (the attempts of a search are
		 * named as passed, the winner too). On a kernel without
		 * fdpath, "/dev/fd/..." is taken for a dirfd's. Decided
		 * before argv follows the name in data: an empty name's
		 * first byte is argv's. */
		walk = !(eb->ev.hdr.status & ST_FNAME_UNREADABLE) &&
		       (skip || eb->data[0] != '/' ||
			(eb->data[1] == 'd' && eb->data[2] == 'e' && eb->data[3] == 'v' && eb->data[4] == '/' &&
			 eb->data[5] == 'f' && eb->data[6] == 'd' && eb->data[7] == '/'));
		eb->ev.fname_len = n - 1;
		at = eb->ev.fname_len & (ONCE_PATH_MAX - 1);
		eb->ev.args_len = 0;
		eb->ev.argc = 0;
		/* The new image's argument area holds argv, NUL separated. */
		if (len > ONCE_ARGS_MAX) {
			len = ONCE_ARGS_MAX;
			eb->ev.hdr.status |= ST_ARGV_TRUNCATED;
		}
		barrier_var(len);
		len &= 2 * ONCE_ARGS_MAX - 1;
		if (interp) {
			/* Not the caller's argv, whose argv[0] is gone: none,
			 * marked unreadable, rather than the interpreter's. */
			eb->ev.hdr.status &= ~ST_ARGV_TRUNCATED;
			eb->ev.hdr.status |= ST_ARGV_UNREADABLE;
		} else if (len && !bpf_probe_read_user(&eb->data[at], len, (void *)as)) {
			eb->ev.args_len = len;
			eb->ev.argc = BPF_CORE_READ(bprm, argc);
		} else {
			eb->ev.hdr.status |= ST_ARGV_UNREADABLE;
		}
		eb->ev.path_len = 0;
		eb->ev.hdr.status &= ~ST_EXEC_PATH;
		if (walk)
			/* A relative name's directory, as the entry walks it
			 * (ST_PATH_IS_BASE: the exec line's path means the same
			 * whichever side read the strings). For a script, the
			 * script named, not its interpreter. */
			exec_path(s, eb, pe->dirfd, pe->at_flags);
		if (walk && !interp && !eb->ev.path_len) {
			/* A dirfd closed on exec by now (or an absolute
			 * /dev/fd/N name): the file exec'd. */
			__u32 start = 0;

			eb->ev.hdr.status &= ~ST_EXEC_PATH;
			__u32 plen_at = (eb->ev.fname_len + eb->ev.args_len) & (ONCE_PATH_MAX + ONCE_ARGS_MAX - 1);
			eb->ev.hdr.status |= walk_file_path((__u64)BPF_CORE_READ(bprm, file), &start);
			eb->ev.path_len = copy_path(&eb->data[plen_at], &s->path, start);
		}
		if (send_exec_args(eb, pe->old_tid, STACK_NONE) != SNAP_NOT_SENT) {
			pe->status = eb->ev.hdr.status | ST_ARGS_SENT;
			pe->argc = eb->ev.argc;
		}
	}
	if (pe && old != tid) {
		/* A non-leader thread exec'd: it now has the leader's pid, and
		 * its exit will be seen under that tid. */
		bpf_map_update_elem(&pending_execs, &tid, pe, BPF_ANY);
		bpf_map_delete_elem(&pending_execs, &old);
	}

	class = image_class_of(bprm);
	/* The image event is about the new image: comm is already its own. */
	if (current_passes() && (pb = proc_event_for(p, EVENT_IMAGE))) {
		pb->ev.parent_pid = old;
		if (class != IMAGE_NATIVE) {
			pb->ev.hdr.status |= ST_COMPAT;
			count(CNT_COMPAT_IMAGES);
		}
		f = BPF_CORE_READ(bprm, file);
		s = get_scratch();
		if (f && s) {
			pb->ev.exe_ino = BPF_CORE_READ(f, f_inode, i_ino);
			pb->ev.exe_dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
			pb->ev.hdr.status |= walk_file_path((__u64)f, &start);
			plen = copy_path(pb->data, &s->path, start);
			if (pb->ev.hdr.status & ST_PATH_INTERNAL)
				count(CNT_PATH_INTERNAL);
		}
		pb->ev.path_len = plen;
		emit(pb, sizeof(struct proc_event) + (plen & (ONCE_PATH_MAX - 1)));
	}
	/* An i386 or arm image: the exit of the execve that started it is a
	 * compat syscall's by then, which no tracepoint reports. The exec
	 * succeeded: complete it here, after the image it belongs to, as its
	 * exit would have. */
	if (class == IMAGE_COMPAT && pending)
		exec_exit(0);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 tid = BPF_CORE_READ(task, pid);
	struct proc_buf *pb;

	/* A spawner (TRACK_SPAWNER) is the tracer itself, whose entry goes
	 * with it: nothing to remove for a process that is not followed. */
	if (!followed(tgid)) {
		/* But a thread of a followed process can pass here after the
		 * thread that ended the group (group_dead) took the process
		 * off the followed ones: it left the group first and was
		 * preempted on its way here. Its slot still goes out, as at
		 * any exit: its kinds' repeats into their tallies, which user
		 * space reads for the last time only once it has read the
		 * exit event, or else are counted late (CNT_TALLIES_LATE);
		 * its counts unsent in an event after the exit event. Only
		 * followed threads have a slot. */
		if (!group_dead && bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0)) {
			end_local();
			flush_unsent(task, false);
		}
		return 0;
	}
	/* A thread killed inside an exec never reaches its exit. Done even
	 * when the attribute filters now reject the task: one that passed
	 * them at an entry (its comm changed since) must not leave an entry
	 * for a later thread with its tid to complete. */
	bpf_map_delete_elem(&pending_execs, &tid);
	/* current is the exiting thread. Before the exit event, which has
	 * user space read the image's tallies for the last time. */
	end_local();
	flush_unsent(task, false);
	if (!group_dead)
		return 0;
	if (current_passes()) {
		pb = proc_event_for(task, EVENT_EXIT);
		if (pb) {
			pb->ev.exit_code = BPF_CORE_READ(task, exit_code);
			/* The group's other threads not released yet: each
			 * left the group (signal->live) before this one, but
			 * may still be on its way here, its slot's repeats
			 * not added (user space waits a little for them). */
			pb->ev.parent_pid = BPF_CORE_READ(task, signal, nr_threads) - 1;
			emit(pb, sizeof(struct proc_event));
		}
	}
	if (filter_tracked) {
		bpf_map_delete_elem(&tracked, &tgid);
		set_tracked_bit(tgid, false);
	}
	return 0;
}

/* A cgroup made while --container/--pod/--namespace select: let its
 * tasks through until user space has named its container (it may hold one
 * that matches, started after once). Only cgroup v2 ids are filtered on. */
SEC("raw_tp/cgroup_mkdir")
int BPF_PROG(handle_cgroup_mkdir, struct cgroup *cgrp)
{
	__u8 pending = CGROUP_PENDING;
	__u64 id;

	if (!filter_cgroup_ids || BPF_CORE_READ(cgrp, root, hierarchy_id) != 0)
		return 0;
	id = BPF_CORE_READ(cgrp, kn, id);
	bpf_map_update_elem(&cgroup_ids, &id, &pending, BPF_NOEXIST);
	return 0;
}

#endif /* ONCE_SCHED_BPF_H */
