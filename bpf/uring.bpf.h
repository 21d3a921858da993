/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Opens through io_uring (IORING_OP_OPENAT, IORING_OP_OPENAT2), and its
 * lookups (IORING_OP_STATX), which are no syscalls: no syscall tracepoint
 * sees them. Two io_uring tracepoints
 * do: io_uring_submit_req, once a request is prepared (the kernel has
 * copied its name and arguments), and io_uring_complete, as its
 * completion is posted. Each sends its half (once.h); user space joins
 * them. No map: nothing is kept in the kernel between the two.
 *
 * Both fire for every io_uring request on the machine: for one of a
 * process not followed they cost the bitmap's lookup, for one of a
 * followed process a load of its opcode more. The submitter, the ring's
 * SQPOLL thread and the io-wq workers that run a request are all threads
 * of the process that made the ring, so followed() asks of the right
 * process in each. The programs are raw tracepoints, whose arguments are
 * plain addresses: read with BTF casts (btf_casts) or CO-RE. Only the
 * request is read of their arguments (submit_req's first, complete's
 * second), where it is in every kernel with io_uring_submit_req (6.0+;
 * complete's result is read from the request, not from the CQE argument,
 * which older kernels pass otherwise). A kernel without io_uring loads them
 * with their bodies left out by the verifier (its BTF has no io_kiocb),
 * and they are not attached.
 *
 * Also here: sys_exit_io_uring_setup, which counts the rings traced
 * processes set up, so that user space can say its opens may be missing
 * where the two tracepoints could not be attached.
 */
#ifndef ONCE_URING_BPF_H
#define ONCE_URING_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "emit.bpf.h"
#include "follow.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"
#include "image_files.bpf.h"
#include "stat.bpf.h"

/* enum io_uring_op (uapi, fixed values) */
#define IORING_OP_OPENAT 18
#define IORING_OP_OPENAT2 28
#define IORING_OP_STATX 21
#define IORING_FILE_INDEX_ALLOC 0xffffffffU
/* The low bits of a fixed file's tagged pointer are flags (FFS_*: two
 * since 5.19, three before); a struct file is aligned well past them. */
#define FFS_FLAGS 7UL

static __always_inline bool uring_types(void)
{
	return bpf_core_type_exists(struct io_kiocb) && bpf_core_type_exists(struct io_open) &&
	       bpf_core_field_exists(struct io_kiocb, cmd) && bpf_core_field_exists(struct io_kiocb, cqe);
}

/* The request's opcode as a syscall_kind, or 0 for any but an open or a
 * statx. */
static __always_inline __u8 uring_open_kind(__u64 req)
{
	__u8 op;

	if (btf_casts)
		op = btf_cast(req, struct io_kiocb)->opcode;
	else
		op = BPF_CORE_READ((struct io_kiocb *)req, opcode);
	if (op == IORING_OP_OPENAT)
		return SYS_IORING_OPENAT;
	if (op == IORING_OP_OPENAT2)
		return SYS_IORING_OPENAT2;
	if (op == IORING_OP_STATX && bpf_core_type_exists(struct io_statx))
		return SYS_IORING_STATX;
	return 0;
}

/* The request's struct io_open (io_kiocb_to_cmd). */
static __always_inline struct io_open *uring_open_of(__u64 req)
{
	return (struct io_open *)(req + bpf_core_field_offset(struct io_kiocb, cmd));
}

/* The request's struct io_statx, for IORING_OP_STATX. */
static __always_inline struct io_statx *uring_statx_of(__u64 req)
{
	return (struct io_statx *)(req + bpf_core_field_offset(struct io_kiocb, cmd));
}

#define PF_IO_WORKER 0x00000010 /* include/linux/sched.h */

/*
 * current_passes for a request's submission: the filters of the process,
 * whose comm is its leader's where the submitter is one of io_uring's own
 * threads (PF_IO_WORKER): a ring's SQPOLL thread, "iou-sqp-PID", submits
 * its requests, and with --comm NAME its opens would be dropped unseen.
 */
static __always_inline bool uring_submitter_passes(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct comm_key key = {};

	if (!(BPF_CORE_READ(t, flags) & PF_IO_WORKER))
		return current_passes();
	if (!passes_but_comm())
		return false;
	if (!(filter_comm || filter_no_comm))
		return true;
	BPF_CORE_READ_STR_INTO(&key.comm, t, group_leader, comm);
	if (filter_comm && !bpf_map_lookup_elem(&comm_include, &key))
		return false;
	if (filter_no_comm && bpf_map_lookup_elem(&comm_exclude, &key))
		return false;
	return true;
}

SEC("raw_tp/io_uring_submit_req")
int BPF_PROG(uring_submit, struct io_kiocb *req)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct uring_submit_event *ev;
	struct filename *fn;
	struct scratch *s;
	const char *name;
	__u32 flen;
	__u8 sys;
	long n = -1;

	if (!uring_types() || !followed(tgid))
		return 0;
	sys = uring_open_kind((__u64)req);
	if (!sys || !uring_submitter_passes())
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	ev = &s->usubmit.ev;
	ev->hdr.kind = EVENT_URING_SUBMIT;
	ev->hdr.status = 0;
	ev->hdr.syscall = sys;
	ev->req = (__u64)req;
	ev->prep_failed = 0;
	if (sys == SYS_IORING_STATX) {
		/* As the statx syscall's lookup: its AT_* flags, its mask
		 * as the mode. */
		struct io_statx *x = uring_statx_of((__u64)req);
		ev->dirfd = BPF_CORE_READ(x, dfd);
		ev->file_slot = 0;
		ev->flags = BPF_CORE_READ(x, flags);
		ev->mode = BPF_CORE_READ(x, mask);
		ev->resolve = 0;
		fn = BPF_CORE_READ(x, filename);
	} else {
		struct io_open *o = uring_open_of((__u64)req);
		ev->dirfd = BPF_CORE_READ(o, dfd);
		ev->file_slot = BPF_CORE_READ(o, file_slot);
		ev->flags = BPF_CORE_READ(o, how.flags);
		ev->mode = BPF_CORE_READ(o, how.mode);
		ev->resolve = BPF_CORE_READ(o, how.resolve);
		fn = BPF_CORE_READ(o, filename);
	}
	/* The kernel's copy (getname): at most PATH_MAX with its NUL, or
	 * the request would have failed in prep, before this tracepoint. */
	name = fn ? BPF_CORE_READ(fn, name) : NULL;
	if (name)
		n = bpf_probe_read_kernel_str(s->usubmit.data, ONCE_PATH_MAX, name);
	/* statx(fd, "", AT_EMPTY_PATH) is an fstat: no file named, no
	 * lookup, as for the syscall (its completion, with no submission,
	 * is dropped by user space). */
	if (sys == SYS_IORING_STATX && (ev->flags & AT_EMPTY_PATH) && n <= 1)
		return 0;
	fill_current(&ev->task);
	ev->enter_ns = bpf_ktime_get_ns();
	if (n <= 0) {
		ev->hdr.status |= ST_FNAME_UNREADABLE;
		n = 1;
	}
	flen = (n - 1) & (ONCE_PATH_MAX - 1);
	ev->fname_len = flen;
	count_status(ev->hdr.status);
	emit(&s->usubmit, sizeof(struct uring_submit_event) + flen);
	return 0;
}

/* The head of struct io_uring_sqe (uapi: a fixed layout, read whole). */
struct once_sqe {
	__u8 opcode;
	__u8 flags;
	__u16 ioprio;
	__s32 fd;
	__u64 off; /* IORING_OP_OPENAT2: the user's struct open_how; STATX: its buffer */
	__u64 addr; /* the name, in the submitter's memory */
	__u32 len; /* OPENAT: the mode; OPENAT2: sizeof(struct open_how); STATX: the mask */
	__u32 op_flags; /* open_flags, statx_flags */
	__u64 user_data;
	__u16 buf_index;
	__u16 personality;
	__u32 file_index;
};

/*
 * A request that failed in its prep (io_init_req) never reaches
 * io_uring_submit_req: a name too long (ENAMETOOLONG) or not readable
 * (EFAULT), flags the opcode refuses. Its completion comes all the same,
 * and without its submission user space would drop it: an open or a
 * lookup, failed, lost with no count. io_uring_req_failed (in the
 * submitter, before the completion is posted) sends its submission half
 * instead, read from the SQE and the submitter's memory, where the
 * kernel's copy of the name was never made.
 */
SEC("raw_tp/io_uring_req_failed")
int BPF_PROG(uring_failed, const void *sqe_ptr, struct io_kiocb *req, int error)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct uring_submit_event *ev;
	struct once_sqe sqe = {};
	struct scratch *s;
	__u16 st = 0;
	long n;
	__u8 sys;

	if (!uring_types() || !followed(tgid))
		return 0;
	if (bpf_probe_read_kernel(&sqe, sizeof(sqe), sqe_ptr))
		return 0;
	if (sqe.opcode == IORING_OP_OPENAT)
		sys = SYS_IORING_OPENAT;
	else if (sqe.opcode == IORING_OP_OPENAT2)
		sys = SYS_IORING_OPENAT2;
	else if (sqe.opcode == IORING_OP_STATX && bpf_core_type_exists(struct io_statx))
		sys = SYS_IORING_STATX;
	else
		return 0;
	if (!uring_submitter_passes())
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	ev = &s->usubmit.ev;
	ev->hdr.kind = EVENT_URING_SUBMIT;
	ev->hdr.syscall = sys;
	ev->req = (__u64)req;
	ev->prep_failed = 1;
	ev->dirfd = sqe.fd;
	ev->file_slot = sys == SYS_IORING_STATX ? 0 : sqe.file_index;
	ev->flags = sqe.op_flags;
	ev->mode = sqe.len;
	ev->resolve = 0;
	if (sys == SYS_IORING_OPENAT2) {
		struct open_how how = {};
		bpf_probe_read_user(&how, sizeof(how), (void *)sqe.off);
		ev->flags = how.flags;
		ev->mode = how.mode;
		ev->resolve = how.resolve;
	}
	n = read_user_name(s->usubmit.data, (const char *)sqe.addr, 0, &st);
	if (sys == SYS_IORING_STATX && (ev->flags & AT_EMPTY_PATH) && n <= 0)
		return 0;
	fill_current(&ev->task);
	ev->enter_ns = bpf_ktime_get_ns();
	if (n < 0) {
		st |= ST_FNAME_UNREADABLE;
		n = 0;
	}
	ev->hdr.status = st;
	ev->fname_len = n & (ONCE_PATH_MAX - 1);
	count_status(ev->hdr.status);
	emit(&s->usubmit, sizeof(struct uring_submit_event) + (n & (ONCE_PATH_MAX - 1)));
	return 0;
}

/* The file in slot idx of the ring's fixed-file table, or 0. */
static __always_inline __u64 uring_fixed_file(__u64 req, __u32 idx)
{
	__u64 ctx = (__u64)BPF_CORE_READ((struct io_kiocb *)req, ctx);
	__u64 at = 0, ptr = 0;

	if (bpf_core_field_exists(struct io_rsrc_data, nodes) &&
	    bpf_core_field_exists(struct io_ring_ctx, file_table)) {
		struct io_ring_ctx *c = (struct io_ring_ctx *)ctx;
		if (idx >= BPF_CORE_READ(c, file_table.data.nr))
			return 0;
		at = (__u64)BPF_CORE_READ(c, file_table.data.nodes) + idx * sizeof(__u64);
		if (bpf_probe_read_kernel(&at, sizeof(at), (void *)at) || !at)
			return 0;
		ptr = BPF_CORE_READ((struct io_rsrc_node *)at, file_ptr);
	} else if (bpf_core_field_exists(struct io_file_table___old, files) &&
		   bpf_core_field_exists(struct io_ring_ctx___old, nr_user_files)) {
		struct io_ring_ctx___old *c = (struct io_ring_ctx___old *)ctx;
		if (idx >= BPF_CORE_READ(c, nr_user_files))
			return 0;
		at = (__u64)BPF_CORE_READ(c, file_table.files) +
		     idx * bpf_core_type_size(struct io_fixed_file);
		ptr = BPF_CORE_READ((struct io_fixed_file *)at, file_ptr);
	}
	return ptr & ~FFS_FLAGS;
}

/*
 * A failed open's name may have been relative: the directory it was tried
 * in goes with it, as for a failed syscall open. The name itself is not
 * here to tell (the kernel freed its copy before completing), so it is
 * walked for every failure, and user space drops it for an absolute name.
 */
static __always_inline __u16 uring_base_dir(__s32 dfd, __u32 *start)
{
	struct dentry *d = NULL;
	struct vfsmount *m = NULL;

	if (dfd == AT_FDCWD) {
		struct fs_struct *fs = current_task()->fs;
		d = BPF_CORE_READ(fs, pwd.dentry);
		m = BPF_CORE_READ(fs, pwd.mnt);
	} else {
		struct file *df = current_fd_file(dfd);
		if (df) {
			d = BPF_CORE_READ(df, f_path.dentry);
			m = BPF_CORE_READ(df, f_path.mnt);
		}
	}
	if (!d || !m)
		return 0;
	return walk_path(d, m, start) | ST_PATH_IS_BASE;
}

SEC("raw_tp/io_uring_complete")
int BPF_PROG(uring_complete, void *ring, struct io_kiocb *req)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct uring_complete_event *ev;
	struct io_open *o;
	struct scratch *s;
	__u32 slot, start = 0, plen = 0;
	__u64 f = 0;
	__u8 sys;

	/* Not current_passes(): the submission decided (a worker's comm is
	 * not the process's); a completion whose submission was not sent
	 * is dropped by user space. */
	if (!uring_types() || !followed(tgid))
		return 0;
	sys = uring_open_kind((__u64)req);
	if (!sys)
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	ev = &s->ucomplete.ev;
	ev->hdr.kind = EVENT_URING_COMPLETE;
	ev->hdr.status = 0;
	ev->hdr.syscall = sys;
	ev->req = (__u64)req;
	ev->exit_ns = bpf_ktime_get_ns();
	ev->pid = tgid;
	ev->ret = BPF_CORE_READ(req, cqe.res);
	ev->dev = 0;
	ev->ino = 0;
	ev->gen = 0;
	ev->ftype = 0;
	o = uring_open_of((__u64)req);
	/* The open's arguments outlive it in the request; only the name
	 * was freed. */
	slot = BPF_CORE_READ(o, file_slot);
	if (sys == SYS_IORING_STATX) {
		/* A lookup: the identity the call filled its buffer with (as
		 * the statx syscall's, read by this thread of the process),
		 * entered in the image's table as a lookup's, so that the
		 * image's next lookup of the file by a syscall is a repeat;
		 * and the directory it was tried in, for a relative name
		 * (user space drops it for an absolute one). */
		struct io_statx *x = uring_statx_of((__u64)req);
		__u64 ino = 0;
		__u32 dev = 0;
		__u16 ftype = 0, st;

		if (ev->ret >= 0) {
			lookup_id(SYS_STATX, (__u64)BPF_CORE_READ(x, buffer), &dev, &ino, &ftype);
			ev->dev = dev;
			ev->ino = ino;
			ev->ftype = ftype;
			if (ino && !(tracefs_dev && dev == tracefs_dev) &&
			    (image_seen(lookup_sig(dev, ino, ftype), file_place(dev, ino), 0) & SEEN_FOUND))
				ev->hdr.status |= ST_SEEN_BEFORE;
		} else if (probe_errno(ev->ret)) {
			/* Its name is not remembered as a pending probe: any
			 * later lookup or open may end one, and is sent. */
			image_probes_unknown();
		}
		st = uring_base_dir(BPF_CORE_READ(x, dfd), &start);
		if (st) {
			ev->hdr.status |= st;
			plen = copy_path(s->ucomplete.data, &s->path, start);
		}
	} else if (ev->ret >= 0) {
		/* Into the fixed-file table (res: 0, or the slot the kernel
		 * picked), or an fd in the process's table, which this thread
		 * shares (a worker is made with CLONE_FILES). */
		if (slot)
			f = uring_fixed_file((__u64)req, slot == IORING_FILE_INDEX_ALLOC ? ev->ret : slot - 1);
		else
			f = (__u64)current_fd_file(ev->ret);
		if (f) {
			bool named = file_id((struct file *)f, &ev->ino, &ev->dev, &ev->gen, &ev->ftype);
			/* Entered in the image's table, so that the image's
			 * next open of the file is a repeat, and marked the
			 * repeat of a first open counted, not sent; not a
			 * device, FIFO or socket (file_apart). A first open's
			 * kept call or snapshot waits for a repeat by a
			 * syscall (the worker that completes it is not the
			 * thread that submitted it), else is counted lost. */
			if (image_table_on() && !file_apart(ev->ftype) &&
			    (image_seen(file_sig(ev->dev, ev->ino, ev->gen), file_place(ev->dev, place_ino(ev->ino, ev->gen, named)), 0) &
			     SEEN_FOUND))
				ev->hdr.status |= ST_SEEN_BEFORE;
			/* A plain address for the global function: read back
			 * from the map, not the register a BTF cast left. */
			s->open_file = f;
			ev->hdr.status |= walk_file_path(*(volatile __u64 *)&s->open_file, &start);
			plen = copy_path(s->ucomplete.data, &s->path, start);
		} else {
			ev->hdr.status |= ST_PATH_UNRESOLVED;
		}
	} else {
		__u16 st = uring_base_dir(BPF_CORE_READ(o, dfd), &start);
		if (st) {
			ev->hdr.status |= st;
			plen = copy_path(s->ucomplete.data, &s->path, start);
		}
		/* Its name is not here to remember as a pending probe: any
		 * later first open may end one, and is sent. In run (no
		 * table), where repeats are counted, the generation moves, the
		 * failure's name unknown: each recent kind's next repeat goes
		 * the whole way, as past a failed open(2) of its name. */
		if (image_table_on() && probe_errno(ev->ret))
			image_probes_unknown();
		else if (open_send_max && probe_errno(ev->ret))
			probe_gen_fail(0);
	}
	ev->path_len = plen;
	count_status(ev->hdr.status);
	emit(&s->ucomplete, sizeof(struct uring_complete_event) + (plen & (ONCE_PATH_MAX - 1)));
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_io_uring_setup")
int exit_uring_setup(struct syscall_exit_ctx *ctx)
{
	if (ctx->ret >= 0 && traced(bpf_get_current_pid_tgid() >> 32))
		count(CNT_URING_SETUPS);
	return 0;
}

#endif /* ONCE_URING_BPF_H */
