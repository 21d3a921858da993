/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Miss runs: a thread's repeats of its last failed call sent (the same
 * call, flags, errno and name, from the same place), counted in the
 * kernel past the first open_send_max of them. Lookups and opens have
 * them alike, a run each: a program that retries a missing file, with
 * stat or with open, or polls with both (stats one name and opens
 * another), sends its first failures and counts the rest (struct
 * miss_run). A failure of one kind leaves the other kind's run be.
 */
#ifndef ONCE_MISS_BPF_H
#define ONCE_MISS_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"
#include "image_files.bpf.h"

/* Where a name is looked up from: the root for an absolute one, else the
 * cwd or the directory of dirfd (dentry and mount; 0 if unknown). */
static __always_inline void miss_place(__s32 dirfd, bool absolute, __u64 *d, __u64 *mnt)
{
	struct fs_struct *fs;
	struct file *f;

	if (absolute || dirfd == AT_FDCWD) {
		/* Plain loads through the task's BTF pointer, not helper
		 * calls: this is on every repeated miss. */
		fs = current_task()->fs;
		if (absolute) {
			*d = (__u64)fs->root.dentry;
			*mnt = (__u64)fs->root.mnt;
		} else {
			*d = (__u64)fs->pwd.dentry;
			*mnt = (__u64)fs->pwd.mnt;
		}
		return;
	}
	f = current_fd_file(dirfd);
	if (f) {
		*d = (__u64)BPF_CORE_READ(f, f_path.dentry);
		*mnt = (__u64)BPF_CORE_READ(f, f_path.mnt);
	}
}

/* Word i of a name of len bytes (without its NUL) in buf, the bytes past
 * the name zeroed. One load, unaligned as the architectures once runs on
 * allow: a memcpy from bytes is eight loads, shifts and ors, at each
 * word of miss_again's compare, which the verifier walks word by word. */
static __always_inline __u64 name_word(const __u8 *buf, __u32 i, __u32 len)
{
	__u64 w = *(const __u64 *)(buf + i * 8);

	if (i * 8 + 8 > len)
		w &= (1ULL << ((len - i * 8) * 8)) - 1;
	return w;
}

/* Copying a missed name's words into its run, by bpf_loop: only a miss
 * that is sent (a run's first) does it, where a callback per word costs
 * nothing that matters, and unrolled the 32 words were 1,950 of what the
 * verifier walks in the lookup exit. miss_again's compare, which every
 * repeated miss makes, stays unrolled: a callback per word made a
 * repeated miss 40 ns dearer. */
struct name_keep_ctx {
	struct miss_run *m;
	const __u8 *buf;
	__u32 len;
};

static long name_keep_step(__u64 i, struct name_keep_ctx *c)
{
	__u32 k = i & (MISS_NAME_MAX / 8 - 1);

	if (k * 8 >= c->len)
		return 1;
	c->m->name[k] = name_word(c->buf, k, c->len);
	return 0;
}

/* What a failed call's repeat must have the same of, besides its name,
 * place and errno: its flags, and openat2's resolve flags (from its how,
 * which the entry does not read) above them. Open flags fit in 32 bits. */
static __always_inline __u64 miss_flags(__u64 flags, __u64 resolve)
{
	return flags | resolve << 32;
}

enum miss_again_result {
	MISS_OTHER = 0,	  /* another failure: sent, and the run it starts remembered */
	MISS_SENT = 1,	  /* a repeat among the first open_send_max: sent */
	MISS_COUNTED = 2, /* a repeat past them: counted */
};

/* The thread's run of the kind of call sys is: its lookups' or its
 * opens'. */
static __always_inline struct miss_run *miss_run_of(struct pending_open *pp, __u32 sys)
{
	return is_lookup(sys) ? &pp->lmiss : &pp->miss;
}

/* How often a thread's counted repeats are reported when nothing else
 * it does carries them: once watch's live view lags by fewer. */
#define MISS_REPORT_WATCH 64

/* Whether the failed call in pp repeats the thread's run of its kind
 * (struct miss_run), counting it if past the repeats sent. flags are the call's
 * as its exit has them (miss_flags). Reads the name into the scratch,
 * where send_open finds it (fname_read). */
__noinline int miss_again(struct pending_open *pp, __u32 sys, long ret, struct scratch *s, __u64 flags)
{
	struct miss_run *m;
	__u64 d = 0, mnt = 0;
	__u32 len, full;
	long n;

	if (!pp || !s)
		return MISS_OTHER;
	m = miss_run_of(pp, sys);
	if (!m->on || m->sys != sys || m->ret != (__s32)ret || m->flags != flags ||
	    m->dirfd != pp->dirfd)
		return MISS_OTHER;
	n = bpf_probe_read_user_str(s->open.data, MISS_NAME_MAX + 1, (const char *)pp->fname);
	if (n <= 0 || n != m->len)
		return MISS_OTHER;
	s->fname_read = n;
	len = (__u32)n - 1;
	/* The whole words in the loop, the last one, cut, after it, its
	 * index made anew from the length: the loop's count, which the
	 * verifier knows a range of at each step it may end at, would have
	 * it walk the rest of the function once for each. */
	full = len / 8;
	for (__u32 i = 0; i < MISS_NAME_MAX / 8; i++) {
		if (i >= full)
			break;
		if (*(const __u64 *)(s->open.data + i * 8) != m->name[i])
			return MISS_OTHER;
	}
	barrier_var(len);
	if (len & 7) {
		__u32 t = (len / 8) & (MISS_NAME_MAX / 8 - 1);

		if (name_word(s->open.data, t, len) != m->name[t])
			return MISS_OTHER;
	}
	miss_place(pp->dirfd, s->open.data[0] == '/', &d, &mnt);
	if (d != m->dentry || mnt != m->mnt)
		return MISS_OTHER;
	if (m->sent < open_send_max) {
		m->sent++;
		return MISS_SENT;
	}
	m->count++;
	m->seen++;
	/* A predicted entry was timed only if it is the sample; another,
	 * one in TALLY_TIME_EVERY. */
	if (pp->enter_ns && (pp->predicted || !(m->seen & (TALLY_TIME_EVERY - 1)))) {
		m->ns += bpf_ktime_get_ns() - pp->enter_ns;
		m->timed++;
	}
	if (m->count >= (first_opens_unsent ? MISS_REPORT_WATCH : UNSENT_REPORT))
		report_unsent(pp, bpf_get_current_task_btf(), false, false);
	return MISS_COUNTED;
}

/* After a failed call was sent: the run of its kind it starts, its
 * flags as for miss_again. A name cut or unreadable, or longer than MISS_NAME_MAX,
 * starts none: its repeats are sent. The name is in the scratch
 * (send_open). A global function, verified once for the open and the
 * lookup exits, whose locals stay off their stacks. */
__noinline int miss_remember(struct pending_open *pp, __u32 sys, long ret, __u64 flags)
{
	struct scratch *s = get_scratch();
	struct miss_run *m;
	struct open_event *ev;
	__u32 len;

	if (!pp || !s)
		return 0;
	m = miss_run_of(pp, sys);
	ev = &s->open.ev;
	len = ev->fname_len;
	m->on = 0;
	m->sent = 0;
	m->seen = 0;
	if (!len || len >= MISS_NAME_MAX || (ev->hdr.status & (ST_FNAME_TRUNCATED | ST_FNAME_UNREADABLE)))
		return 0;
	struct name_keep_ctx c = { .m = m, .buf = s->open.data, .len = len };
	bpf_loop(MISS_NAME_MAX / 8, name_keep_step, &c, 0);
	m->dentry = 0;
	m->mnt = 0;
	miss_place(pp->dirfd, s->open.data[0] == '/', &m->dentry, &m->mnt);
	m->len = len + 1;
	/* probe_add hashed the basename already, for a probe errno. */
	m->base = s->base_hash ? s->base_hash : base_hash(s->open.data, len);
	m->fname = pp->fname;
	m->flags = flags;
	m->dirfd = pp->dirfd;
	m->ret = (__s32)ret;
	m->sys = sys;
	m->on = 1;
	return 0;
}

#endif /* ONCE_MISS_BPF_H */
