/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The programs of open, openat, openat2 and creat.
 */
#ifndef ONCE_OPEN_BPF_H
#define ONCE_OPEN_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "emit.bpf.h"
#include "follow.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"
#include "image_files.bpf.h"
#include "tally.bpf.h"
#include "stack.bpf.h"
#include "repeat.bpf.h"
#include "miss.bpf.h"

/*
 * The thread's slot at an open's or a lookup's entry, made if it has
 * none; NULL when there is no memory for it (counted) or the filter
 * passes the task by. The caller has checked followed(): a thread of a
 * process outside the traced tree never gets a slot, so every slot is a
 * followed thread's.
 */
static __always_inline struct pending_open *pending_enter(void)
{
	struct pending_open *p;

	p = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p) {
		count(CNT_ENTER_MAP_FULL);
		return NULL;
	}
	return current_passes_slot(&p->comm) ? p : NULL;
}

/* Whether an entry has the arguments of the thread's last repeat counted
 * in its slot (remember_local_args): most likely one more. */
static __always_inline bool local_predicts(struct pending_open *p, __u8 sys, long dirfd, const char *fname,
					   __u64 flags, const void *how)
{
	return p->armed && p->local_fname == (__u64)fname && p->local_how == (__u64)how &&
	       p->local_flags == flags && p->local_dirfd == (__s32)dirfd && p->local_sys == sys;
}

/* Record an entry in the thread's slot. A predicted repeat's time is only
 * wanted for a sample, so the clock, the dearest part of an entry, is
 * read for one in TALLY_TIME_EVERY of them. Should it be something else
 * after all (the same buffer now naming another file), its exit sends it
 * marked ST_UNTIMED. */
static __always_inline void pending_record(struct pending_open *p, __u8 predicted, __u8 sys, long dirfd,
					   const char *fname, __u64 flags, __u64 mode, const void *how)
{
	__u8 skip = 0;

	if (predicted == PREDICTED_LOCAL)
		skip = ++p->local_skip;
	else if (predicted == PREDICTED_MISS)
		skip = ++p->miss_skip;
	p->predicted = predicted;
	if (skip & (TALLY_TIME_EVERY - 1))
		p->enter_ns = 0;
	else
		p->enter_ns = bpf_ktime_get_ns();
	p->fname = (__u64)fname;
	p->how = (__u64)how;
	p->flags = flags;
	p->mode = mode;
	p->dirfd = (__s32)dirfd;
	p->syscall = sys;
	p->entered |= attach_done;
}

static __always_inline int open_enter(__u8 sys, long dirfd, const char *fname, __u64 flags,
				      __u64 mode, const void *how)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct pending_open *p;

	if (!followed(tgid))
		return 0;
	p = pending_enter();
	if (!p)
		return 0;
	/* A loop reading one file. */
	pending_record(p, local_predicts(p, sys, dirfd, fname, flags, how) ? PREDICTED_LOCAL : PREDICTED_NOT, sys,
		       dirfd, fname, flags, mode, how);
	return 0;
}

#define RESOLVE_IN_ROOT 0x10 /* include/uapi/linux/openat2.h */

struct open_how_user {
	__u64 flags;
	__u64 mode;
	__u64 resolve;
};

/* Send the open event in the scratch with slen bytes of its strings, and
 * the snapshot if stacked is STACK_CAPTURED: an enum SNAP_*. A global
 * function, so that the send's outcomes are verified once rather than
 * after every path send_open takes to it. */
__noinline int emit_open(__u32 slen, int stacked)
{
	struct scratch *s = get_scratch();

	if (!s)
		return SNAP_NOT_SENT;
	return emit_snap(&s->open, sizeof(struct open_event) + (slen & (2 * ONCE_PATH_MAX - 1)),
			 &s->open.ev.hdr.status, stacked);
}

/*
 * Complete the open event open_exit left in the scratch (its fixed fields,
 * open_fname and open_file) with the name, the path, the task, and send
 * it, with the stack snapshot open_exit took if stacked is STACK_CAPTURED
 * (see stack_capture). A global function: the verifier checks it once,
 * not once more for every path open_exit can take to it.
 */
__noinline int send_open(int stacked)
{
	int sent;
	struct scratch *s = get_scratch();
	struct open_event *ev;
	__u32 start = 0, plen = 0;
	long flen;

	if (!s)
		return 0;
	ev = &s->open.ev;
	fill_current(&ev->task);
	flen = read_user_name(s->open.data, (const char *)s->open_fname, s->fname_read, &ev->hdr.status);
	s->fname_read = 0;
	if (flen < 0) {
		ev->hdr.status |= ST_FNAME_UNREADABLE;
		flen = 0;
	}
	flen &= ONCE_PATH_MAX - 1;
	ev->fname_len = flen;
	s->base_hash = 0;
	/* A failed probe, which a later open of its basename may end: that
	 * one must be sent even if it is its file's first. A lookup's miss
	 * is remembered in every mode: a successful lookup is sent only
	 * when it may end one (stat.bpf.h). */
	if ((image_table_on() || is_lookup(ev->hdr.syscall)) && probe_errno(ev->ret))
		probe_add(flen);
	/* Remembered or not (in run, a failed open's basename is not: its
	 * successful opens, all sent, end no probe in the kernel), pending
	 * already or not (a stale one, ended by an open never looked at),
	 * a repeat counted from now on might end it: see tally_repeat. In
	 * run, which has no table of the failed basenames, the failure's
	 * word keeps its stem for that (fails_spare). */
	if (open_send_max && probe_errno(ev->ret))
		probe_gen_fail(image_table_on() ? 0 : fail_stem(s->open.data, flen, ev->hdr.status));

	if (ev->ret >= 0 && !names_only(ev->hdr.syscall)) {
		if (s->open_file) {
			ev->hdr.status |= walk_file_path(s->open_file, &start);
			plen = copy_path(&s->open.data[flen], &s->path, start);
		} else {
			ev->hdr.status |= ST_PATH_UNRESOLVED;
		}
	} else if (flen > 0 && (s->open.data[0] != '/' || (ev->resolve & RESOLVE_IN_ROOT))) {
		/* A failed relative open, or a relative lookup: keep the
		 * directory it was tried in. So for a failed openat2 with
		 * RESOLVE_IN_ROOT, whose absolute name is resolved below
		 * its dirfd as below "/": its "/etc/x" is DIR/etc/x. */
		struct dentry *d = NULL;
		struct vfsmount *m = NULL;
		if (ev->dirfd == AT_FDCWD) {
			struct fs_struct *fs = current_task()->fs;
			d = BPF_CORE_READ(fs, pwd.dentry);
			m = BPF_CORE_READ(fs, pwd.mnt);
		} else {
			struct file *df = current_fd_file(ev->dirfd);
			if (df) {
				d = BPF_CORE_READ(df, f_path.dentry);
				m = BPF_CORE_READ(df, f_path.mnt);
			}
		}
		if (d && m) {
			ev->hdr.status |= walk_path(d, m, &start) | ST_PATH_IS_BASE;
			plen = copy_path(&s->open.data[flen], &s->path, start);
		}
	}
	ev->path_len = plen;
	count_status(ev->hdr.status);
	if (stacked == STACK_KEPT)
		ev->hdr.status |= ST_STACK_KEPT;
	sent = emit_open((flen + plen) & (2 * ONCE_PATH_MAX - 1), stacked);
	if (sent == SNAP_SENT_BARE && stack_size && stacked != STACK_KEPT && stacked != STACK_NONE)
		count(CNT_STACKS_DROPPED);
	return sent;
}

/* After an open that repeats a file of its image (in the scratch, just
 * sent): its first open's kept snapshot (see send_kept). */
__noinline int send_kept_open(__u64 sig)
{
	struct scratch *s = get_scratch();

	if (s)
		send_kept(&s->open.ev, sig);
	return 0;
}

/*
 * Sent: now the caller's stack, if asked for. Taken at the exit, where it
 * is known whether the open is sent at all: the user registers and the
 * stack above SP are as they were at the entry. A probe's end goes with
 * its snapshot: it is an attempt of the chain it ends. A function of its
 * own: its frame is not the exit's, which is at the verifier's bound.
 */
static __noinline int open_snapshot(void *ctx, int seen, __u64 sig, struct pending_open *pp)
{
	if ((seen & SEEN_ADDED) && !(seen & SEEN_ENDS_PROBE) && kept_nslots)
		return stack_keep(ctx, sig, &pp->stack, pp->exit_ns);
	return stack_capture(ctx, &pp->stack);
}

/*
 * The thread's slot at an open's or a lookup's exit, its call taken out
 * into *sys; NULL for a thread not followed, or with no entry recorded:
 * lost if the thread entered a call since every program was attached
 * (see attach_done), else begun before, outside the trace.
 */
static __always_inline struct pending_open *pending_exit(__u8 *sys)
{
	struct pending_open *pp;

	if (!followed(bpf_get_current_pid_tgid() >> 32))
		return NULL;
	pp = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);
	if (!pp || !pp->syscall) {
		if (pp && pp->entered) {
			if (current_passes())
				count(missed_entry_counter());
		} else if (seccomp_refused_first() && current_passes()) {
			count(CNT_SECCOMP_REFUSED);
		}
		return NULL;
	}
	/* The slot is the thread's own: nothing else writes it meanwhile. */
	*sys = pp->syscall;
	pp->syscall = 0;
	return pp;
}

/*
 * Send the open in the scratch (see send_open) as a repeat of the
 * thread's last one sent in full, or in full and remembered as the one to
 * repeat (repeat.bpf.h). A function of its own, with its own stack frame:
 * its locals in open_exit's frame took the deepest chain of calls
 * (open_exit, image_seen, its loop's step) past the verifier's 512 bytes.
 */
static __noinline int send_open_repeatable(struct pending_open *pp, struct scratch *s, int stacked)
{
	struct open_event *ev = &s->open.ev;
	struct open_repeat *rep = &pp->rep;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 cpu = bpf_get_smp_processor_id();
	bool same = repeat_walk(rep, *(volatile __u64 *)&s->open_file);
	int sent;

	if (same && rep->ns && rep->tid == tid && rep->cpu == cpu &&
	    repeat_name(rep, (const char *)pp->fname)) {
		fill_current(&ev->task);
		if (repeat_same_fields(rep, ev)) {
			struct open_repeat_event *r = &s->repeat;

			r->hdr.kind = EVENT_OPEN_REPEAT;
			r->hdr.status = ev->hdr.status;
			r->hdr.syscall = ev->hdr.syscall;
			r->hdr.pad = 0;
			r->pid = ev->task.pid;
			r->tid = ev->task.tid;
			r->dirfd = ev->dirfd;
			r->ret = ev->ret;
			r->enter_ns = ev->enter_ns;
			r->exit_ns = ev->exit_ns;
			r->ref_ns = rep->ns;
			rep->misses = 0;
			emit(r, sizeof(*r));
			return 0;
		}
	}
	/* Sent in full. Then the one to repeat if its strings are
	 * whole, and the path walked after the send is the one
	 * recorded before it (the walk sent read the same). The same
	 * path as the last one recorded is no miss: the opens not
	 * tried in between made it no repeat. */
	if (same)
		rep->misses = 0;
	else if (rep->misses < REPEAT_MISSES)
		rep->misses++;
	rep->ns = 0;
	sent = send_open(stacked);
	if (sent == SNAP_NOT_SENT)
		counts_back(pp);
	if (sent == SNAP_SENT_BARE && rep->walk_ok &&
	    ev->fname_len < REPEAT_NAME_WORDS * 8 && !(ev->hdr.status & ST_NOT_REPEATED) &&
	    repeat_walk(rep, *(volatile __u64 *)&s->open_file)) {
		repeat_keep_name(rep, s->open.data, ev->fname_len);
		repeat_keep_fields(rep, ev);
		rep->ns = ev->exit_ns;
		rep->tid = tid;
		rep->cpu = cpu;
	}
	return 0;
}

static __always_inline int open_exit(void *ctx, long ret)
{
	struct pending_open *pp;
	struct scratch *s;
	struct open_event *ev;
	struct file *f = NULL;
	struct open_key k;
	__u64 enter_ns, flags, mode, resolve = 0;
	__u16 status = 0, ftype = 0;
	bool named = false; /* the identity is by name (file_id) */
	__u8 sys;
	int i = -1; /* which of the thread's recent opens this one repeats */
	int stacked = -1, seen = 0;
	__u64 sig = 0;

	pp = pending_exit(&sys);
	/* The slot is another call's where that call's exit did not run (a
	 * lookup or a skipped fstat whose exit hook was not attached yet, or
	 * was let go of first): nothing this exit knows the arguments of. */
	if (!pp || !is_open_call(sys))
		return 0;
	enter_ns = pp->enter_ns;
	flags = pp->flags;
	mode = pp->mode;
	pp->exit_ns = 0; /* tallied() may read it, before its insert */

	if (sys == SYS_OPENAT2) {
		struct open_how_user how = {};
		if (!bpf_probe_read_user(&how, sizeof(how), (void *)pp->how)) {
			flags = how.flags;
			mode = how.mode;
			resolve = how.resolve;
		}
	}
	/* The mode is the call's only with O_CREAT or O_TMPFILE (open(2));
	 * else it is whatever its register held, which would make opens of
	 * one file by open and openat differ, and reports show it. */
	if (!(flags & (O_CREAT | __O_TMPFILE)))
		mode = 0;
	__builtin_memset(&k, 0, sizeof(k));
	if (ret >= 0) {
		f = current_fd_file(ret);
		if (f) {
			named = file_id(f, &k.ino, &k.dev, &k.gen, &ftype);
			k.flags = flags;
			k.syscall = sys;
			/* Checked before anything is read or resolved: a
			 * tallied open costs this and no more. Within one
			 * image a thread's pid, start and exec id are fixed
			 * (end_local runs at exec), so the file and the way it
			 * was opened tell the kind. */
			if (open_send_max && tally_repeat(pp, &k, sys, &i, &status))
				return 0;
		}
	}

	/* Not a repeat counted in the slot: were it predicted to be one,
	 * predict no more until the next is (a buffer that named a repeated
	 * file now naming others, one after the other). */
	if (pp->predicted == PREDICTED_LOCAL)
		pp->armed = 0;
	/* Only an open that repeats none of the thread's recent ones may go
	 * unsent: one that does went through tallied(), and user space must
	 * see it to read its kind's tally back (ST_TALLY_NEXT). It looks like
	 * a repeat yet may be its image's first open of the file (two kinds'
	 * signatures may collide; recent[] is emptied at an exec,
	 * forget_recent): then it is sent as one.
	 * With stacks the image's table (image_seen) also says which opens
	 * are a file's first, whose snapshot is kept (stack_keep), and which
	 * repeat one, after which the first's is sent (send_kept). */
	s = get_scratch();
	if (!s)
		return 0;
	s->fname_read = 0; /* image_seen or miss_again may read the name */
	/* A failure that repeats the thread's last one sent, past the first
	 * open_send_max: counted in its run, as a lookup's is. */
	s->open_again = MISS_OTHER;
	if (ret < 0 && open_send_max) {
		s->open_again = miss_again(pp, sys, ret, s, miss_flags(flags, resolve));
		if (s->open_again == MISS_COUNTED)
			return 0;
	}
	if (f && ((flags & O_PATH) || file_apart(ftype))) {
		/* O_PATH opens are no file's use, and a device's, FIFO's or
		 * socket's repeats no duplicate: counted, never told apart
		 * (nor are they by user space), and no call site of one. */
		if (first_opens_unsent && i < 0) {
			count_unsent(pp, false);
			return 0;
		}
		stacked = STACK_NONE;
	} else if (image_table_on() && f) {
		sig = file_sig(k.dev, k.ino, k.gen);
		seen = image_seen(sig, file_place(k.dev, place_ino(k.ino, k.gen, named)), pp->fname);
		if (seen & SEEN_FOUND) {
			if (first_opens_unsent || first_calls_kept)
				status |= ST_SEEN_BEFORE;
		} else if (first_opens_unsent && i < 0 && seen && !(seen & SEEN_ENDS_PROBE)) {
			/* A first open that ends no probe: counted. */
			count_unsent(pp, seen & SEEN_FULL);
			return 0;
		}
	}
	/* The call's end: before the snapshot, whose copy is once's time,
	 * not the open's (a duplicate's waste must not grow with --stacks). */
	if (!pp->exit_ns)
		pp->exit_ns = bpf_ktime_get_ns();
	s->kept_seq = 0;
	if (stacked < 0)
		stacked = open_snapshot(ctx, seen, sig, pp);
	ev = &s->open.ev;
	ev->hdr.kind = EVENT_OPEN;
	ev->hdr.status = status;
	ev->hdr.syscall = sys;
	ev->exit_ns = pp->exit_ns;
	ev->enter_ns = enter_ns;
	if (!enter_ns) {
		/* Predicted a counted repeat, it was not: no entry time. */
		ev->enter_ns = ev->exit_ns;
		ev->hdr.status |= ST_UNTIMED;
		count(CNT_OPENS_UNTIMED);
	}
	ev->flags = flags;
	ev->mode = mode;
	ev->resolve = resolve;
	ev->dirfd = pp->dirfd;
	ev->ret = (__s32)ret;
	ev->dev = k.dev;
	ev->ino = k.ino;
	ev->gen = k.gen;
	ev->ftype = ftype;
	/* FMODE_CREATED (include/linux/fs.h), 1 << 20: a macro, which BTF
	 * does not carry. TestCreatedOpens holds it to the kernel's. */
	ev->xstatus = f && (file_mode(f) & (1U << 20)) ? XST_CREATED : 0;
	if (f)
		ev->xstatus |= generated_fs(f, k.dev) << XST_FS_SHIFT;
	s->open_fname = pp->fname;
	s->open_file = (__u64)f;
	/* A first open whose snapshot was kept: its call too, beside it,
	 * counted and not sent (first_calls_kept). As under once watch, not
	 * one that repeats one of the thread's recent opens: it went through
	 * tallied(), and its status may ask user space to read its kind's
	 * tally back (see above), which an event sent in its time does. */
	if (stacked == STACK_KEPT && first_calls_kept && i < 0 && keep_first_call()) {
		count_unsent(pp, false);
		return 0;
	}
	take_counts(pp, ev);
	if (repeats_on() && f && repeat_try(&pp->rep))
		return send_open_repeatable(pp, s, stacked);
	/* The thread's last open sent in full is no longer the one recorded. */
	pp->rep.ns = 0;
	if (send_open(stacked) == SNAP_NOT_SENT) {
		counts_back(pp);
		if (ret < 0 && s->open_again == MISS_OTHER)
			pp->miss.on = 0;
	} else if (ret < 0 && open_send_max && s->open_again == MISS_OTHER) {
		miss_remember(pp, sys, ret, miss_flags(flags, resolve));
	}
	if (kept_nslots && (seen & SEEN_FOUND))
		send_kept_open(sig);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_open")
int enter_open(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_OPEN, AT_FDCWD, (const char *)ctx->args[0], ctx->args[1],
			  ctx->args[2], NULL);
}

SEC("tracepoint/syscalls/sys_enter_openat")
int enter_openat(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_OPENAT, (int)ctx->args[0], (const char *)ctx->args[1],
			  ctx->args[2], ctx->args[3], NULL);
}

SEC("tracepoint/syscalls/sys_enter_openat2")
int enter_openat2(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_OPENAT2, (int)ctx->args[0], (const char *)ctx->args[1], 0, 0,
			  (const void *)ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_enter_creat")
int enter_creat(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_CREAT, AT_FDCWD, (const char *)ctx->args[0],
			  O_CREAT | O_WRONLY | O_TRUNC, ctx->args[1], NULL);
}

/* One program for the exits of open, openat, openat2 and creat, which all
 * look alike (the entry recorded which call it was): the loader attaches
 * it to each, and the verifier checks it once instead of four times. */
SEC("tracepoint/syscalls/sys_exit_openat")
int exit_open(struct syscall_exit_ctx *ctx)
{
	return open_exit(ctx, ctx->ret);
}

#endif /* ONCE_OPEN_BPF_H */
