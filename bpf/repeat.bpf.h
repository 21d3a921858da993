/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's open that names the same bytes and walks to the same path as
 * its last one sent in full is sent without its strings
 * (EVENT_OPEN_REPEAT): user space takes them from that open. Reading the
 * name again and walking the path with plain loads, comparing, costs a
 * fraction of reading them into the record: a loop that opens one file
 * is the stream's heaviest load.
 */
#ifndef ONCE_REPEAT_BPF_H
#define ONCE_REPEAT_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"

/* Where every open is sent, without stacks, on a kernel with BTF casts
 * (the walk's loads). */
static __always_inline bool repeats_on(void)
{
	return !open_send_max && !stack_size && btf_casts;
}

/* The status of a record whose strings can't be repeated: cut, unread,
 * or not the file's path. */
#define ST_NOT_REPEATED                                                                   \
	(ST_FNAME_TRUNCATED | ST_FNAME_UNREADABLE | ST_PATH_TRUNCATED | ST_PATH_UNRESOLVED | \
	 ST_PATH_INTERNAL | ST_PATH_IS_BASE | ST_STACK)

/* w with its bytes from the n-th on cleared (little endian). */
static __always_inline __u64 bytes_below(__u64 w, __s32 n)
{
	if (n <= 0)
		return 0;
	if (n >= 8)
		return w;
	return w & ((1ULL << (n * 8)) - 1);
}

struct repeat_walk_ctx {
	struct open_repeat *rep;
	__u64 dentry;
	__u64 vfsmnt;
	__u64 root_d;
	__u64 root_m;
	__u64 diff;
	__u32 n;
	bool done; /* reached the root */
	bool bad;  /* a path not recorded */
};

/* One step of repeat_walk: compare and record one component, or cross one
 * mount. */
static long repeat_step(__u64 i, struct repeat_walk_ctx *c)
{
	__u64 mnt_off = bpf_core_field_offset(struct mount, mnt);
	__u64 dentry = c->dentry, vfsmnt = c->vfsmnt;
	struct open_repeat *rep = c->rep;

	if (dentry == c->root_d && vfsmnt == c->root_m) {
		c->done = true;
		return 1;
	}
	__u64 parent = dentry_parent(dentry);
	__u64 mnt_root = vfsmount_root(vfsmnt);
	if (dentry == mnt_root || dentry == parent) {
		__u64 mnt = vfsmnt - mnt_off;
		__u64 up = mount_parent(mnt);
		if (dentry != mnt_root) {
			c->bad = true; /* named by pseudo_name */
			return 1;
		}
		if (up == mnt) {
			c->done = true;
			return 1;
		}
		c->dentry = mount_mountpoint(mnt);
		c->vfsmnt = up + mnt_off;
		return 0;
	}
	__u32 n = c->n;
	if (n >= REPEAT_COMPS || !rep) {
		c->bad = true;
		return 1;
	}
	struct dentry *bd = btf_cast(dentry, struct dentry);
	__u64 hl = bd->d_name.hash_len;
	__u64 name = (__u64)bd->d_name.name;
	__s32 len = hl >> 32;
	if (len <= 0 || len > REPEAT_COMP_WORDS * 8) {
		c->bad = true;
		return 1;
	}
	struct timespec64 *a = btf_cast(name, struct timespec64);
	struct timespec64 *b = btf_cast(name + 16, struct timespec64);
	__u64 w0 = bytes_below(a->tv_sec, len);
	__u64 w1 = bytes_below(a->tv_nsec, len - 8);
	__u64 w2 = bytes_below(b->tv_sec, len - 16);
	__u64 w3 = bytes_below(b->tv_nsec, len - 24);
	struct repeat_comp *rc = &rep->comp[n & (REPEAT_COMPS - 1)];
	c->diff |= (rc->hash_len ^ hl) | (rc->w[0] ^ w0) | (rc->w[1] ^ w1) | (rc->w[2] ^ w2) | (rc->w[3] ^ w3);
	rc->hash_len = hl;
	rc->w[0] = w0;
	rc->w[1] = w1;
	rc->w[2] = w2;
	rc->w[3] = w3;
	c->n = n + 1;
	c->dentry = parent;
	return 0;
}

/*
 * Walk the path of file (an address: a global function's arguments can't
 * be pointers) up to the current task's root as build_path does,
 * recording each component in rep (its hash_len and bytes), and compare
 * with what rep held: 1 when the walk found the same components in the
 * same order, and so build_path would write the same path.
 * rep->walk_ok says whether this path could be recorded whole: not a file
 * deleted while open, nor an internal one (pseudo_name), nor one deeper
 * than REPEAT_COMPS or with a component longer than REPEAT_COMP_WORDS
 * words. A global function: verified once per program. Its steps are a
 * plain loop, which the verifier walks step by step: a bpf_loop's call
 * per step, on every repeat an event stream sends, cost more than that
 * walk costs the start-up.
 */
__noinline int repeat_walk(struct open_repeat *rep, __u64 file)
{
	struct repeat_walk_ctx c = { .rep = rep };
	struct fs_struct *fs;
	struct file *bf;

	if (!rep)
		return 0;
	rep->walk_ok = 0;
	if (!btf_casts || !file)
		return 0;
	bf = btf_cast(file, struct file);
	c.dentry = (__u64)bf->f_path.dentry;
	c.vfsmnt = (__u64)bf->f_path.mnt;
	if (!c.dentry || !c.vfsmnt || dentry_unlinked(c.dentry))
		return 0;
	fs = current_task()->fs;
	c.root_d = (__u64)fs->root.dentry;
	c.root_m = (__u64)fs->root.mnt;
	for (__u32 i = 0; i < 2 * REPEAT_COMPS; i++)
		if (repeat_step(i, &c))
			break;
	if (!c.done || c.bad)
		return 0;
	if (c.n != rep->ncomp)
		c.diff = 1;
	rep->ncomp = c.n;
	rep->walk_ok = 1;
	return !c.diff;
}

/* Opens in a row that repeated nothing before repeat_try tries only one in
 * REPEAT_TRY_EVERY: a copy opens a new file each time, and would pay the
 * walks before and after each send for nothing. */
#define REPEAT_MISSES 4
#define REPEAT_TRY_EVERY 16

static __always_inline bool repeat_try(struct open_repeat *rep)
{
	return rep->misses < REPEAT_MISSES || !(++rep->skip & (REPEAT_TRY_EVERY - 1));
}

/* Whether the name at fname is the one rep holds: its bytes and its NUL. */
static __always_inline bool repeat_name(struct open_repeat *rep, const char *fname)
{
	__u64 buf[REPEAT_NAME_WORDS] = {};
	__u64 diff = 0;
	__u32 len = rep->name_len;

	if (len >= REPEAT_NAME_WORDS * 8)
		return false;
	if (bpf_probe_read_user(buf, (len & (REPEAT_NAME_WORDS * 8 - 1)) + 1, fname))
		return false;
#pragma clang loop unroll(full)
	for (int j = 0; j < REPEAT_NAME_WORDS; j++)
		diff |= buf[j] ^ rep->name[j];
	return !diff;
}

/* Record the name just sent (flen bytes in data) in rep. */
static __always_inline void repeat_keep_name(struct open_repeat *rep, const __u8 *data, __u32 flen)
{
#pragma clang loop unroll(full)
	for (int j = 0; j < REPEAT_NAME_WORDS; j++)
		rep->name[j] = 0;
	rep->name_len = flen;
	bpf_probe_read_kernel(rep->name, flen & (REPEAT_NAME_WORDS * 8 - 1), data);
}

/* Record in rep what a repeat of the open ev, just sent in full, takes from
 * it besides its strings. */
static __always_inline void repeat_keep_fields(struct open_repeat *rep, const struct open_event *ev)
{
	struct repeat_fields *f = &rep->fields;

	f->task = ev->task;
	f->flags = ev->flags;
	f->mode = ev->mode;
	f->resolve = ev->resolve;
	f->ino = ev->ino;
	f->dev = ev->dev;
	f->gen = ev->gen;
	f->ftype = ev->ftype;
}

/* Whether the open ev (its task filled) has the fields rep recorded, and
 * brings no count of calls not sent: what a repeat record leaves out.
 * A thread's task fields change between its opens too: an exec (exec_id),
 * its comm, its credentials, its cgroup, a new parent. */
static __always_inline bool repeat_same_fields(const struct open_repeat *rep, const struct open_event *ev)
{
	const struct repeat_fields *f = &rep->fields;
	const __u64 *a = (const __u64 *)&ev->task, *b = (const __u64 *)&f->task;
	__u64 diff = 0;

#pragma clang loop unroll(full)
	for (int j = 0; j < sizeof(struct task_info) / 8; j++)
		diff |= a[j] ^ b[j];
	diff |= (ev->flags ^ f->flags) | (ev->mode ^ f->mode) | (ev->resolve ^ f->resolve) |
		(ev->ino ^ f->ino);
	diff |= (ev->dev ^ f->dev) | (ev->gen ^ f->gen) | (ev->ftype ^ f->ftype);
	diff |= ev->unsent | ev->lookups_unsent | ev->miss_repeats | ev->lookup_miss_repeats;
	return !diff;
}

#endif /* ONCE_REPEAT_BPF_H */
