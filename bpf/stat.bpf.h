/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The programs of the lookups: newfstatat, statx, stat, lstat, access,
 * faccessat and faccessat2, a name looked up without being opened (a
 * shell's PATH search, a module resolver's candidates).
 *
 * A lookup is sent as an EVENT_OPEN of its syscall, as an open would be,
 * but what is sent follows what a finding needs: a failure always (with
 * the directory a relative name was tried in), its basename remembered
 * among the image's pending probes; a success only when it may end one
 * of them (its basename is pending) or repeats a file the image looked
 * up before (ST_SEEN_BEFORE), told by the image's table of files with the
 * identity read back from the buffer the call filled. Other successes are
 * counted (lookups_unsent). access and faccessat fill no buffer: their
 * successes are sent only to end a probe.
 *
 * mkdir and mkdirat share the lookups' exit: a directory made is sent
 * only when it may end a probe, and nothing else of it is counted.
 */
#ifndef ONCE_STAT_BPF_H
#define ONCE_STAT_BPF_H

#include "kernel.h"
#include "maps.bpf.h"
#include "emit.bpf.h"
#include "follow.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"
#include "image_files.bpf.h"
#include "stack.bpf.h"
#include "open.bpf.h"

#define AT_EMPTY_PATH 0x1000
#define STATX_INO 0x100U

static __always_inline int lookup_enter(__u8 sys, long dirfd, const char *fname, const void *buf,
					__u64 flags, __u64 mode)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct pending_open *p;
	__u8 predicted = PREDICTED_NOT;
	char c = 0;

	if (!followed(tgid))
		return 0;
	/* fstatat(fd, "", AT_EMPTY_PATH), glibc's fstat, names no file: its
	 * exit is told so (an empty slot there means an entry missed). A
	 * name that can't be read here is recorded, and its exit reads it. */
	if ((flags & AT_EMPTY_PATH) && (!fname || (!bpf_probe_read_user(&c, 1, fname) && !c))) {
		p = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);
		if (p)
			p->syscall = SYS_SKIPPED;
		return 0;
	}
	p = pending_enter();
	if (!p)
		return 0;
	/* The same arguments as the thread's last repeat counted: a hit in
	 * its slot, or a miss past those sent (its lookups' struct
	 * miss_run). */
	if (local_predicts(p, sys, dirfd, fname, flags, buf))
		predicted = PREDICTED_LOCAL;
	else if (p->lmiss.on && p->lmiss.sent >= open_send_max && p->lmiss.fname == (__u64)fname &&
		 p->lmiss.flags == flags && p->lmiss.dirfd == (__s32)dirfd && p->lmiss.sys == sys)
		predicted = PREDICTED_MISS;
	pending_record(p, predicted, sys, dirfd, fname, flags, mode, buf);
	return 0;
}

/* The userspace st_dev encoding (glibc's makedev) as the kernel's dev_t
 * (MAJOR << 20 | MINOR), the one file_id gives. */
static __always_inline __u32 kernel_dev(__u32 major, __u32 minor)
{
	return (major & 0xfff) << 20 | (minor & 0xfffff);
}

struct user_stat_head {
	__u64 dev;
	__u64 ino;
	__u64 nlink;
	__u32 mode;
};

struct user_statx_head {
	__u32 mask;
	__u32 blksize;
	__u64 attributes;
	__u32 nlink;
	__u32 uid;
	__u32 gid;
	__u16 mode;
	__u16 spare0;
	__u64 ino;
};

#define STATX_DEV_OFFSET 136 /* stx_dev_major, stx_dev_minor */

/* The identity of the file a successful stat filled buf with; ino stays
 * 0 when it can't be read (the caller then only ends probes). */
static __always_inline void lookup_id(__u8 sys, __u64 buf, __u32 *dev, __u64 *ino, __u16 *ftype)
{
	if (!buf)
		return;
	if (sys == SYS_STATX) {
		struct user_statx_head h;
		__u32 d[2];

		if (bpf_probe_read_user(&h, sizeof(h), (void *)buf) ||
		    bpf_probe_read_user(d, sizeof(d), (void *)(buf + STATX_DEV_OFFSET)) ||
		    !(h.mask & STATX_INO))
			return;
		*ino = h.ino;
		*dev = kernel_dev(d[0], d[1]);
		*ftype = h.mode & FILE_TYPE_MASK;
		return;
	}
	if (sys == SYS_NEWFSTATAT || sys == SYS_NEWSTAT || sys == SYS_NEWLSTAT) {
		struct user_stat_head h;

		if (bpf_probe_read_user(&h, sizeof(h), (void *)buf))
			return;
		*ino = h.ino;
		*dev = kernel_dev((h.dev >> 8 & 0xfff) | (h.dev >> 32 & ~0xfffULL),
				  (h.dev & 0xff) | (h.dev >> 12 & ~0xffULL));
		*ftype = h.mode & FILE_TYPE_MASK;
	}
}

/* A looked-up file's signature in the image's table: apart from the
 * opened files' (file_sig), so that a stat after an open is no repeat.
 * A stat's buffer has no generation; its file type stands in where it
 * can: a file deleted and a symlink made with its inode number (git
 * init's check that symlinks work, on ext4) are two files. */
static __always_inline __u64 lookup_sig(__u32 dev, __u64 ino, __u16 ftype)
{
	__u64 sig = (ino ^ 0x6c6f6f6b75707321ULL) * 0x9e3779b97f4a7c15ULL ^ dev ^ (__u64)ftype << 32;

	sig = (sig ^ (sig >> 30)) * 0xbf58476d1ce4e5b9ULL;
	sig = (sig ^ (sig >> 27)) * 0x94d049bb133111ebULL;
	return (sig ^ (sig >> 31)) | (1ULL << 63);
}

SEC("tracepoint/syscalls/sys_exit_newfstatat")
int exit_lookup(struct syscall_exit_ctx *ctx)
{
	long ret = ctx->ret;
	struct pending_open *pp;
	struct scratch *s;
	struct open_event *ev;
	struct open_key k;
	__u64 ino = 0, enter_ns;
	__u32 dev = 0;
	__u16 ftype = 0, status = 0;
	__u8 sys;
	int seen = 0, i = -1, again = MISS_OTHER, sent;
	bool shared = false; /* on tracefs: sent, see tracefs_dev */
	bool made;

	pp = pending_exit(&sys);
	if (!pp || !names_only(sys))
		return 0; /* SYS_SKIPPED */
	/* An fstat whose empty name the entry could not read (its page not
	 * mapped then: a forked child's first touch of its binary's string)
	 * is told here, where the call itself has read the name. */
	if (pp->flags & AT_EMPTY_PATH) {
		char c = 1;

		if (!bpf_probe_read_user(&c, 1, (const char *)pp->fname) && !c) {
			if (pp->predicted == PREDICTED_LOCAL)
				pp->armed = 0;
			return 0;
		}
	}
	made = is_made(sys);
	if (made && ret < 0)
		return 0; /* no directory made: nothing a finding needs */
	enter_ns = pp->enter_ns;
	pp->exit_ns = 0; /* tallied() may read it, before its insert */
	if (ret >= 0 && !made) {
		lookup_id(sys, pp->how, &dev, &ino, &ftype);
		shared = ino && tracefs_dev && dev == tracefs_dev;
		/* A repeated hit of one file is counted as a repeated open
		 * is (tally.bpf.h), its kind the lookup's call and flags. */
		if (ino && !shared && open_send_max) {
			__builtin_memset(&k, 0, sizeof(k));
			k.ino = ino;
			k.dev = dev;
			k.flags = pp->flags;
			k.syscall = sys;
			k.gen = ftype; /* no generation: see lookup_sig */
			if (tally_repeat(pp, &k, sys, &i, &status))
				return 0;
		}
	}
	if (pp->predicted == PREDICTED_LOCAL)
		pp->armed = 0;
	s = get_scratch();
	if (!s)
		return 0;
	s->fname_read = 0; /* the table or miss_again may read the name */
	if (ret >= 0 && !shared) {
		if (ino)
			seen = image_seen(lookup_sig(dev, ino, ftype), file_place(dev, ino), pp->fname);
		else
			seen = image_ends_probe(pp->fname);
		if (seen & SEEN_FOUND) {
			status |= ST_SEEN_BEFORE;
		} else if (i < 0 && seen && !(seen & SEEN_ENDS_PROBE) && (made || open_send_max)) {
			/* Only a lookup that repeats none of the thread's
			 * recent ones may go unsent (see open_exit), and
			 * none where every call is sent (an event stream;
			 * the table still holds the file, and its probe
			 * bookkeeping tells which mkdir to send). A mkdir
			 * is no lookup: not counted, in no mode sent unless
			 * it may end a probe. */
			if (!made)
				count_lookup_unsent(pp);
			return 0;
		}
	} else if (ret < 0 && open_send_max) {
		again = miss_again(pp, sys, ret, s, pp->flags);
		if (again == MISS_COUNTED)
			return 0;
	}
	ev = &s->open.ev;
	ev->hdr.kind = EVENT_OPEN;
	ev->hdr.status = status;
	ev->hdr.syscall = sys;
	ev->exit_ns = pp->exit_ns ? pp->exit_ns : bpf_ktime_get_ns();
	ev->enter_ns = enter_ns;
	if (!enter_ns) {
		/* Predicted a counted repeat, it was not: no entry time. */
		ev->enter_ns = ev->exit_ns;
		ev->hdr.status |= ST_UNTIMED;
		count(CNT_OPENS_UNTIMED);
	}
	ev->flags = pp->flags;
	ev->mode = pp->mode;
	ev->resolve = 0;
	ev->dirfd = pp->dirfd;
	ev->ret = (__s32)ret;
	ev->dev = dev;
	ev->ino = ino;
	ev->gen = 0;
	ev->ftype = ftype;
	ev->xstatus = 0;
	if (made) {
		/* The thread's counts wait for its next call sent: user
		 * space reads a mkdir for the chains it ends, nothing else. */
		ev->unsent = 0;
		ev->lookups_unsent = 0;
		ev->miss_repeats = 0;
		ev->miss_timed = 0;
		ev->miss_ns = 0;
		ev->lookup_miss_repeats = 0;
		ev->lookup_miss_timed = 0;
		ev->lookup_miss_ns = 0;
	} else {
		take_counts(pp, ev);
	}
	s->open_fname = pp->fname;
	s->open_file = 0;
	sent = send_open(made ? STACK_NONE : stack_capture(ctx, &pp->stack));
	if (sent == SNAP_NOT_SENT && !made)
		counts_back(pp);
	if (sent != SNAP_NOT_SENT && ret < 0 && open_send_max && again == MISS_OTHER)
		miss_remember(pp, sys, ret, pp->flags);
	else if (ret < 0 && again == MISS_OTHER)
		pp->lmiss.on = 0;
	return 0;
}

/*
 * mkdir and mkdirat: a directory made where a lookup missed it was
 * checked before being made, no search (exit_lookup sends the mkdir only
 * while a probe pends or is held). Recorded as a lookup is, never
 * predicted a repeat.
 */
static __always_inline int made_enter(__u8 sys, long dirfd, const char *fname, __u64 mode)
{
	struct pending_open *p;

	if (!followed(bpf_get_current_pid_tgid() >> 32))
		return 0;
	p = pending_enter();
	if (p)
		pending_record(p, PREDICTED_NOT, sys, dirfd, fname, 0, mode, NULL);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mkdir")
int enter_mkdir(struct syscall_enter_ctx *ctx)
{
	return made_enter(SYS_MKDIR, AT_FDCWD, (const char *)ctx->args[0], ctx->args[1]);
}

SEC("tracepoint/syscalls/sys_enter_mkdirat")
int enter_mkdirat(struct syscall_enter_ctx *ctx)
{
	return made_enter(SYS_MKDIRAT, (int)ctx->args[0], (const char *)ctx->args[1], ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_enter_newfstatat")
int enter_newfstatat(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_NEWFSTATAT, (int)ctx->args[0], (const char *)ctx->args[1],
			    (const void *)ctx->args[2], ctx->args[3], 0);
}

SEC("tracepoint/syscalls/sys_enter_statx")
int enter_statx(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_STATX, (int)ctx->args[0], (const char *)ctx->args[1],
			    (const void *)ctx->args[4], ctx->args[2], ctx->args[3]);
}

SEC("tracepoint/syscalls/sys_enter_newstat")
int enter_newstat(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_NEWSTAT, AT_FDCWD, (const char *)ctx->args[0],
			    (const void *)ctx->args[1], 0, 0);
}

SEC("tracepoint/syscalls/sys_enter_newlstat")
int enter_newlstat(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_NEWLSTAT, AT_FDCWD, (const char *)ctx->args[0],
			    (const void *)ctx->args[1], 0, 0);
}

SEC("tracepoint/syscalls/sys_enter_access")
int enter_access(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_ACCESS, AT_FDCWD, (const char *)ctx->args[0], NULL, 0, ctx->args[1]);
}

SEC("tracepoint/syscalls/sys_enter_faccessat")
int enter_faccessat(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_FACCESSAT, (int)ctx->args[0], (const char *)ctx->args[1], NULL, 0,
			    ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_enter_faccessat2")
int enter_faccessat2(struct syscall_enter_ctx *ctx)
{
	return lookup_enter(SYS_FACCESSAT2, (int)ctx->args[0], (const char *)ctx->args[1], NULL,
			    ctx->args[3], ctx->args[2]);
}

#endif /* ONCE_STAT_BPF_H */
