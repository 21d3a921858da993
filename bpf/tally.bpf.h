/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Repeated opens counted in the kernel: a thread's recent opens, the
 * repeats counted in its slot, and their tallies in open_tallies.
 */
#ifndef ONCE_TALLY_BPF_H
#define ONCE_TALLY_BPF_H

#include "maps.bpf.h"
#include "emit.bpf.h"
#include "task.bpf.h"
#include "image_files.bpf.h"

/* A signature of the file and how it was opened. Two opens that collide
 * only cost a map lookup: the tally map, keyed by the whole open_key, is
 * what counts. One word, so the check below is four compares and the
 * verifier has few paths to walk. */
static __always_inline __u64 open_sig(struct open_key *k)
{
	return ((k->ino ^ (__u64)k->gen << 32) * 0x9e3779b97f4a7c15ULL) ^ ((__u64)k->dev << 40) ^
	       (k->flags << 8) ^ k->syscall;
}

/* The arguments of the open being counted in the slot, what open_enter
 * predicts by. pp->flags is still the entry's (openat2's are in how). */
static __always_inline void remember_local_args(struct pending_open *pp, __u8 sys)
{
	pp->local_fname = pp->fname;
	pp->local_how = pp->how;
	pp->local_flags = pp->flags;
	pp->local_dirfd = pp->dirfd;
	pp->local_sys = sys;
	pp->armed = 1;
}

/* At most this many repeats wait in a thread's slot before they are added
 * to open_tallies: what a live view lags by, per thread and kind. */
#define LOCAL_FLUSH 16

/* Add the repeats counted in local[i] to their kind's tally. A kind gone
 * from the map (evicted, or read for the last time at its image's end: a
 * thread that exits after its process's exit event) loses them, counted
 * in CNT_TALLIES_LATE. */
static __always_inline void flush_local(struct pending_open *pp, __u32 i)
{
	struct local_tally *lt = &pp->local[i & (RECENT_OPENS - 1)];
	struct open_tally *v;

	if (!lt->opens)
		return;
	v = bpf_map_lookup_elem(&open_tallies, &lt->key);
	if (v) {
		__sync_fetch_and_add(&v->opens, lt->opens);
		if (lt->timed) {
			__sync_fetch_and_add(&v->timed_ns, lt->ns);
			__sync_fetch_and_add(&v->timed, lt->timed);
		}
	} else {
		count(CNT_TALLIES_LATE);
	}
	lt->opens = 0;
	lt->timed = 0;
	lt->ns = 0;
}

/* Which of the thread's recent opens k's kind is (its file the same way),
 * or -1: then it takes the place of the oldest, whose local count is
 * added to the map first.
 *
 * The answer goes through pp->recent_hit and is read back as any byte:
 * returned as one of RECENT_OPENS + 1 constants, it would have the
 * verifier walk the rest of the exit (which indexes by it) once for each. */
static __always_inline int recent_index(struct pending_open *pp, struct open_key *k, __u64 gen)
{
	__u64 sig = open_sig(k);
	__u32 j;
	__u8 hit;

	pp->recent_hit = RECENT_OPENS;
#pragma unroll
	for (j = 0; j < RECENT_OPENS; j++) {
		if (pp->recent[j] == sig) {
			pp->recent_hit = j;
			break;
		}
	}
	hit = *(volatile __u8 *)&pp->recent_hit;
	if (hit < RECENT_OPENS)
		return hit;
	j = pp->recent_next++ & (RECENT_OPENS - 1);
	flush_local(pp, j);
	pp->local[j].on = 0;
	pp->recent[j] = sig;
	pp->recent_gen[j] = gen;
	pp->recent_base[j] = 0;
	return -1;
}

/* Recent kind i's repeats added to its tally, and the kind let go of. A
 * global function: inlined in end_local's loop, its outcomes had the
 * verifier walk the loop's rest once for each, at every step. */
__noinline int end_local_kind(struct pending_open *pp, __u32 i)
{
	if (!pp)
		return 0;
	flush_local(pp, i);
	pp->local[i & (RECENT_OPENS - 1)].on = 0;
	return 0;
}

/* The end of the thread's tallying: at its exit, and at an exec, which
 * starts a new image (new keys). */
static __always_inline void end_local(void)
{
	struct pending_open *pp =
		bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);

	if (!pp || !pp->local_any)
		return;
	for (__u32 i = 0; i < RECENT_OPENS; i++)
		end_local_kind(pp, i);
	pp->local_any = 0;
	/* A new image may pass the same name buffer: nothing to predict. */
	pp->armed = 0;
}

/* At an exec, after end_local: the new image has opened nothing yet.
 * recent[] left as the old image filled it made the new image's first
 * open of a file the old one had opened lately look like a repeat: sent
 * as one (with --stacks its snapshot kept, its call not), and under
 * once watch (one open sent per kind) its next open tallied, so that the
 * kept snapshot was never sent: the new image's duplicate of that file
 * had no call site at all, where a fresh process's has both. */
static __always_inline void forget_recent(void)
{
	struct pending_open *pp =
		bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);

	if (!pp)
		return;
#pragma unroll
	for (__u32 i = 0; i < RECENT_OPENS; i++) {
		pp->recent[i] = 0;
		pp->recent_gen[i] = 0;
		pp->recent_base[i] = 0;
	}
}

/*
 * Count one more repeated open of its key. Returns true when the open is
 * past the first open_send_max repeats counted for its key: tallied, and
 * not to be sent. *status gets ST_TALLY_NEXT on the last one to be sent,
 * which tells user space to read the key back. *exit_ns gets the call's
 * end when its key is new: read before the insert, which is once's own
 * work (the first on a CPU moves a batch of the LRU's free nodes, cold in
 * the cache, microseconds), and the open it counts is always sent.
 */
__noinline int tallied(struct open_key *k, __u64 enter_ns, __u16 *status, __u64 *exit_ns)
{
	struct task_struct *task = current_task();
	struct open_tally *v;
	__u64 n;

	if (!k || !status || !exit_ns)
		return 0;
	k->pid = task->tgid;
	k->start_ns = task->group_leader->start_time;
	k->exec_id = task->self_exec_id;
	v = bpf_map_lookup_elem(&open_tallies, k);
	if (!v) {
		struct open_tally fresh = { .opens = 1 };
		*exit_ns = bpf_ktime_get_ns();
		if (!bpf_map_update_elem(&open_tallies, k, &fresh, BPF_NOEXIST))
			n = 1;
		else if ((v = bpf_map_lookup_elem(&open_tallies, k)))
			n = __sync_fetch_and_add(&v->opens, 1) + 1;
		else
			return false; /* no slot: send it */
	} else {
		n = __sync_fetch_and_add(&v->opens, 1) + 1;
	}
	if (n < open_send_max)
		return false;
	if (n == open_send_max || !v) {
		*status |= ST_TALLY_NEXT;
		return false;
	}
	/* Those not sent are opens - open_send_max: no second count. */
	if (enter_ns && (n == open_send_max + 1 || !(n & (TALLY_TIME_EVERY - 1)))) {
		__sync_fetch_and_add(&v->timed_ns, bpf_ktime_get_ns() - enter_ns);
		__sync_fetch_and_add(&v->timed, 1);
	}
	return true;
}

/* The hash of the basename of the name in pp->fname, remembered as recent
 * kind i's (0: unreadable). */
static __always_inline __u64 recent_base_of(struct pending_open *pp, int i)
{
	struct scratch *s;
	long n;

	if (pp->recent_base[i & (RECENT_OPENS - 1)])
		return pp->recent_base[i & (RECENT_OPENS - 1)];
	s = get_scratch();
	if (!s)
		return 0;
	n = bpf_probe_read_user_str(s->open.data, ONCE_PATH_MAX, (const char *)pp->fname);
	if (n <= 1 || n >= ONCE_PATH_MAX)
		return 0;
	pp->recent_base[i & (RECENT_OPENS - 1)] = base_hash(s->open.data, n - 1);
	return pp->recent_base[i & (RECENT_OPENS - 1)];
}

/* A walk back through the name of a repeat, all of its components:
 * each one's stem (as fail_stem's) against the stems of the failures
 * in pp->fail_stem, and the basename's hash as base_hash makes it. */
struct spare_ctx {
	struct pending_open *pp;
	__u8 *buf;
	__u64 hash; /* the stem of the component walked */
	__u64 base; /* the basename's hash, as base_hash's */
	__u32 end;
	__u32 nfails;
	bool dirs; /* past the basename: at the directories */
	bool hit;
};

/* The stem of "ld.so.cache", ld.so's cache, walked back as stem_step
 * walks: an open of it between a chain's misses and its find is read
 * by user space (trace.ChainDetail.ViaCache). */
#define LD_STEM_HASH ((((FNV_OFFSET ^ 'd') * FNV_PRIME) ^ 'l') * FNV_PRIME)

static long spare_step(__u64 i, struct spare_ctx *c)
{
	bool at_end = i >= c->end;
	__u8 ch = 0;

	if (!at_end)
		ch = c->buf[(c->end - 1 - (__u32)i) & (ONCE_PATH_MAX - 1)];
	if (at_end || ch == '/') {
		__u64 stem = stem_bits(c->hash);

		if (!c->dirs && stem == stem_bits(LD_STEM_HASH))
			c->hit = true;
#pragma unroll
		for (__u32 j = 0; j < PROBE_FAILS; j++)
			if (j < c->nfails && c->pp->fail_stem[j] == stem)
				c->hit = true;
		if (c->hit || at_end)
			return 1;
		c->dirs = true;
		c->hash = FNV_OFFSET;
		return 0;
	}
	if (!c->dirs && i < 256)
		c->base = (c->base ^ ch) * FNV_PRIME;
	c->hash = ch == '.' ? FNV_OFFSET : (c->hash ^ ch) * FNV_PRIME;
	return 0;
}

/*
 * Where no image table tells which basenames failed (once run): may the
 * repeat of recent kind i, last looked at when the generation was old,
 * go uncounted by user space now that it is gen? Only if each failure
 * sent since, numbered old + 1 to gen, is still in its word and known,
 * and the name of the repeat has no component whose stem is a stem of
 * one of theirs. For user space a success ends the chain of its
 * basename, ends a chain of a directory on its way that missed there
 * (detect's dirsMade), is the variant of a miss of its stem just before
 * (noteVariants) and, as ld.so's cache, tells a find came through it:
 * each needs a stem in common with a failure. A failure overwritten, not
 * yet written, not known, or one stem matching (a hash collision
 * included): not spared, the repeat goes the whole way. The components
 * user space adds (a relative name's directory, an open's resolved
 * path) are not in the name: a failed lookup of one of them in between
 * needs the directory to have been missing while the file it leads to
 * was found before and after. Sets the kind's recent_base on the way.
 */
__noinline int fails_spare(struct pending_open *pp, __u32 i, __u64 old, __u64 gen)
{
	struct probe_gen *g = probe_gen_slot();
	struct spare_ctx c = {};
	struct scratch *s;
	__u64 n, w;
	long len;

	if (!pp || !g || gen - old > PROBE_FAILS)
		return 0;
#pragma unroll
	for (__u32 j = 0; j < PROBE_FAILS; j++) {
		n = old + 1 + j;
		if (n > gen)
			break;
		w = g->fail[n & (PROBE_FAILS - 1)];
		if ((w & FAIL_TAG) != (n & FAIL_TAG) || !(w & ~FAIL_TAG))
			return 0;
		pp->fail_stem[j] = w & ~FAIL_TAG;
	}
	s = get_scratch();
	if (!s)
		return 0;
	len = bpf_probe_read_user_str(s->open.data, ONCE_PATH_MAX, (const char *)pp->fname);
	if (len <= 1 || len >= ONCE_PATH_MAX)
		return 0;
	len -= 1;
	if (s->open.data[(len - 1) & (ONCE_PATH_MAX - 1)] == '/')
		return 0;
	c.pp = pp;
	c.buf = s->open.data;
	c.hash = FNV_OFFSET;
	c.base = FNV_OFFSET;
	c.end = len;
	c.nfails = gen - old;
	bpf_loop(len + 1, spare_step, &c, 0);
	if (c.hit)
		return 0;
	pp->recent_base[i & (RECENT_OPENS - 1)] = c.base | 1;
	return 1;
}

/* Whether b, a recent kind's basename hash, is the basename of one of
 * the thread's runs of misses on. */
static __always_inline bool miss_base_of(struct pending_open *pp, __u64 b)
{
	return (pp->miss.on && b == pp->miss.base) || (pp->lmiss.on && b == pp->lmiss.base);
}

/*
 * Count a successful open or lookup of kind k (its file, call and flags)
 * if it repeats one of the thread's recent kinds past the ones sent.
 * Returns true when it was counted: nothing more is done with it. *i gets
 * which recent kind it repeats, or -1 (it took the oldest's place);
 * *status, ST_TALLY_NEXT on the last one sent of its kind; pp->exit_ns,
 * the call's end if tallied() read it (else left as it was: 0).
 */
__noinline int tally_repeat(struct pending_open *pp, struct open_key *k, __u32 sys, int *i,
			     __u16 *status)
{
	__u64 enter_ns, gen;
	struct local_tally *lt;

	if (!pp || !k || !i || !status)
		return 0;
	enter_ns = pp->enter_ns;
	gen = probe_gen();
	*i = recent_index(pp, k, gen);
	if (*i < 0)
		return false;
	/* A basename failed in the image since this kind's name was last
	 * looked at: this one may end its probe. Where the image's table
	 * holds every basename that failed (first opens unsent, kept
	 * snapshots), its name is looked at there, and it goes the whole way
	 * (sent) only if it may end one: a loop that fails one name and
	 * repeats another keeps counting. Elsewhere (only lookups' failures
	 * are there) the failures' own words say (fails_spare): a loop of a
	 * hit and of names never tried before keeps counting too. */
	if (pp->recent_gen[*i & (RECENT_OPENS - 1)] != gen) {
		__u64 old = pp->recent_gen[*i & (RECENT_OPENS - 1)];

		pp->recent_gen[*i & (RECENT_OPENS - 1)] = gen;
		pp->recent_base[*i & (RECENT_OPENS - 1)] = 0;
		if (image_table_on()) {
			if (image_ends_probe(pp->fname) != SEEN_ADDED)
				return false;
		} else if (!fails_spare(pp, *i, old, gen)) {
			return false;
		}
	}
	/* The thread's failed lookups and opens counted in the kernel don't
	 * move the generation: one of this kind's basename (a loop trying
	 * one directory, then finding the name in another) may have started
	 * a search this one ends. */
	if ((pp->miss.on || pp->lmiss.on) && miss_base_of(pp, recent_base_of(pp, *i)))
		return false;
	lt = &pp->local[*i & (RECENT_OPENS - 1)];
	if (lt->on && lt->key.ino == k->ino && lt->key.dev == k->dev && lt->key.gen == k->gen &&
	    lt->key.flags == k->flags && lt->key.syscall == k->syscall) {
		lt->opens++;
		/* A predicted entry was timed only if it is the sample;
		 * another, one in TALLY_TIME_EVERY. */
		if (enter_ns && (pp->predicted || !(lt->opens & (TALLY_TIME_EVERY - 1)))) {
			lt->ns += bpf_ktime_get_ns() - enter_ns;
			lt->timed++;
		}
		/* Predicted: they are these already. */
		if (!pp->predicted)
			remember_local_args(pp, sys);
		if (lt->opens >= LOCAL_FLUSH)
			flush_local(pp, *i);
		return true;
	}
	if (tallied(k, enter_ns, status, &pp->exit_ns)) {
		/* Past the sent ones: its later repeats are counted in the
		 * slot. Another kind there (a signature collision) is added
		 * to the map first. */
		flush_local(pp, *i);
		lt->key = *k;
		lt->on = 1;
		pp->local_any = 1;
		remember_local_args(pp, sys);
		return true;
	}
	return false;
}

#endif /* ONCE_TALLY_BPF_H */
