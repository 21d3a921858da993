/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The files each image has opened (first_opens_unsent): which opens are an
 * image's first of a file, which basenames failed to open, and the count of
 * the opens not sent.
 */
#ifndef ONCE_IMAGE_FILES_BPF_H
#define ONCE_IMAGE_FILES_BPF_H

#include "maps.bpf.h"
#include "emit.bpf.h"
#include "task.bpf.h"

/*
 * Which files an image has opened, so that only the opens a finding needs
 * are sent: a repeat (whose event then carries the path) and not the first
 * open of each file, which is counted. One open-addressing table per
 * process, in its group leader's task storage, shared by its threads and
 * deleted at exec: a new image starts with no files. A small table first,
 * for the many processes that open a few files; a big one for a file
 * whose first SEEN_SMALL_PROBES slots in the small one are taken.
 *
 * A slot holds a file's signature (file_sig), never 0, and is never
 * emptied while its image lives. Which table a file goes to and whether
 * it is there depend on nothing but the slots: two threads opening a new
 * file at once walk the same slots, and the compare-and-swap on the first
 * empty one makes exactly one of them its first open. (A count of files
 * deciding it let two threads both add one file, one to each table, at
 * the moment the small one filled: a repeat lost.) A file whose first
 * SEEN_BIG_PROBES slots in the big one are taken too goes to a second big
 * one; one whose slots are taken there too is not told apart: its opens
 * are counted (CNT_FILES_UNTRACKED), its repeats not found. Each big table
 * holds some 5,000 files before its sequences fill.
 */
#define SEEN_SMALL 256
#define SEEN_SMALL_PROBES 8
#define SEEN_BIG 8000 /* 64,256 bytes with the last sequence's: task storage's bound is 64 KiB */
#define SEEN_BIG_PROBES 32
#define PROBE_BASES 16

/*
 * A basename that failed to open (a probe errno): a later successful open
 * of the same basename ends user space's probe chain, and is sent. Then
 * the name is held (PROBE_HELD) for PROBE_HELD_MS: its successful opens
 * are still sent, so that user space sees it made where it was missing,
 * which makes the chain a check, not a search (a copy checks its
 * destination, opens its source of that name, then makes the
 * destination: a first open, which would otherwise go unsent).
 */
enum probe_state {
	PROBE_FREE = 0,
	PROBE_WRITING = 1,
	PROBE_PENDING = 2,
	PROBE_HELD = 3, /* until .until; past it, free */
};

struct probe_base {
	__u64 hash; /* FNV-1a of the basename, read backwards */
	__u64 head; /* its first 8 bytes, zero padded */
	__u64 tail; /* its last 8 bytes, zero padded */
	__u64 len;
	__u64 state; /* enum probe_state (64 bits: atomics) */
	__u64 until; /* PROBE_HELD: bpf_ktime_get_ns() it is held to */
};

struct image_files {
	struct probe_base probes[PROBE_BASES];
	__u64 pending;	/* probes[] PROBE_PENDING */
	/* The latest .until of the probes[] held (0: none, or all past):
	 * with none pending, whether an open's name must be looked at. */
	__u64 held_until;
	/* The last bytes of the basenames pending, a bit each (never
	 * cleared: a stale one only costs a look at probes[]). A name that
	 * ends in none of them ends no probe: most are told so here. */
	__u64 last[4];
	__u32 overflow; /* 1: a failed basename did not fit probes[]: any open may end one */
	__u32 no_big;	/* 1: making image_files_big failed: the small one is all */
	__u32 no_big2;	/* 1: making image_files_big2 failed */
	__u32 pad;
	__u64 slot[SEEN_SMALL];
};

/* A sequence starts in the first SEEN_BIG slots and runs on into the
 * SEEN_BIG_PROBES after them, never back to the first: one wrapping
 * around made the verifier walk each of its slots twice, in every
 * program that looks a file up. */
struct image_files_big {
	__u64 slot[SEEN_BIG + SEEN_BIG_PROBES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct image_files);
} image_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct image_files_big);
} image_files_big SEC(".maps");

/* A second big table, for a file whose sequence in the first one is full
 * too (task storage's bound keeps each to 64 KiB): an image that opens
 * more files than one holds (a copy of a large tree makes two per file)
 * has them told apart, not counted untracked. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct image_files_big);
} image_files_big2 SEC(".maps");

/* Where a file's slots are: its device and inode number, exact for an
 * inode number below 2^32 on a device below 2^31 (nearly every file),
 * else a 64-bit mix. Not its generation: files made together have
 * consecutive numbers, and share a group of slots (see image_seen). But
 * for tracefs's, which share one number: their name's hash is in what the
 * caller passes (place_ino), or they would all be in one group. */
static __always_inline __u64 file_place(__u32 dev, __u64 ino)
{
	if (ino < (1ULL << 32) && dev < (1U << 31))
		return (__u64)dev << 32 | ino;
	return (ino ^ ((__u64)dev << 17)) * 0x9e3779b97f4a7c15ULL;
}

/*
 * A file's signature, what a slot holds: its device, inode number and
 * generation (file_id), so that a file made with the number of one the
 * image opened and deleted is not seen before. Exact where the file has
 * no generation and its place is exact (top bit clear); otherwise a
 * 64-bit mix of the three with the top bit set, so it can't equal an
 * exact one: two files of one image share it by a chance of some n^2 /
 * 2^64 for n files, and then the second one's first open is sent marked
 * ST_SEEN_BEFORE. Never 0.
 */
__noinline __u64 file_sig(__u32 dev, __u64 ino, __u32 gen)
{
	__u64 sig;

	if (!gen && ino < (1ULL << 32) && dev < (1U << 31)) {
		sig = (__u64)dev << 32 | ino;
	} else {
		/* The finalizer of splitmix64 over the three. */
		sig = ino * 0x9e3779b97f4a7c15ULL ^ ((__u64)gen << 32 | dev);
		sig = (sig ^ (sig >> 30)) * 0xbf58476d1ce4e5b9ULL;
		sig = (sig ^ (sig >> 27)) * 0x94d049bb133111ebULL;
		sig = (sig ^ (sig >> 31)) | (1ULL << 63);
	}
	return sig ? sig : 1ULL << 63;
}

enum seen_result {
	SEEN_FOUND = 1,	    /* the image opened the file before */
	SEEN_ADDED = 2,	    /* its first open: now in the table */
	SEEN_FULL = 4,	    /* not in the table, which has no room: untracked */
	SEEN_ENDS_PROBE = 8, /* its name may end a pending probe: send it */
};

struct seen_ctx {
	struct image_files *small;
	struct image_files_big *big;
	__u64 sig;
	__u32 start;
	/* Not 0: the process has one thread, no other writes the table. As
	 * the caller passed it, not made a bool: the verifier would walk the
	 * loops below once for each of its two values. */
	__u32 solo;
	int res;   /* SEEN_FOUND, SEEN_ADDED, or 0: every slot looked at taken */
};

/* One slot of a probe sequence: is sig there (SEEN_FOUND), or could it
 * be added there (SEEN_ADDED)? 0: another file's, go on. A global
 * function: each of a sequence's slots is one call to the verifier, not
 * its four outcomes. */
__noinline int seen_at(__u64 *slot, __u64 sig, __u32 solo)
{
	__u64 v;

	if (!slot)
		return 0;
	v = *slot;
	if (v == sig)
		return SEEN_FOUND;
	if (v)
		return 0;
	/* An empty slot ends the sequence: sig is in no later one, nor in
	 * the big table (it went there only past a full sequence here). */
	if (solo) {
		*slot = sig;
		return SEEN_ADDED;
	}
	v = __sync_val_compare_and_swap(slot, 0, sig);
	if (v == 0)
		return SEEN_ADDED;
	if (v == sig) /* another thread of the image, just now */
		return SEEN_FOUND;
	return 0; /* another file took it: go on */
}

/* Returns 1 to stop the sequence. A slot another file holds is passed
 * over here, without the call: slots are never emptied, so seen_at would
 * find it the same, and in a table past its first files most slots a
 * first open looks at are such. */
static __always_inline long seen_slot(__u64 *slot, struct seen_ctx *c)
{
	__u64 v = *(volatile __u64 *)slot;
	int r;

	if (v && v != c->sig)
		return 0;
	r = seen_at(slot, c->sig, c->solo);

	if (!r)
		return 0;
	c->res = r;
	return 1;
}

static long seen_step_small(__u64 i, struct seen_ctx *c)
{
	if (i >= SEEN_SMALL_PROBES)
		return 1;
	return seen_slot(&c->small->slot[(c->start + i) & (SEEN_SMALL - 1)], c);
}

static long seen_step_big(__u64 i, struct seen_ctx *c)
{
	__u32 idx = c->start + (__u32)i;

	if (i >= SEEN_BIG_PROBES || idx >= SEEN_BIG + SEEN_BIG_PROBES)
		return 1;
	return seen_slot(&c->big->slot[idx], c);
}

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* A walk back through a name in buf, hashing its bytes: at most as many
 * as the loop runs, stopping at a '/' if slash_ends. */
struct base_ctx {
	__u8 *buf; /* ONCE_PATH_MAX bytes of a scratch buffer */
	__u64 hash;
	__u32 end; /* the byte after the last one hashed */
	__u32 len; /* bytes hashed */
	bool slash_ends;
};

static long base_step(__u64 i, struct base_ctx *c)
{
	__u8 ch;

	if (i >= c->end)
		return 1;
	ch = c->buf[(c->end - 1 - (__u32)i) & (ONCE_PATH_MAX - 1)];
	if (ch == '/' && c->slash_ends)
		return 1;
	c->hash = (c->hash ^ ch) * FNV_PRIME;
	c->len++;
	return 0;
}

/* The hash of the basename of the len-byte name in buf (as probe_base's),
 * never 0. */
static __always_inline __u64 base_hash(__u8 *buf, __u32 len)
{
	struct base_ctx c = { .buf = buf, .hash = FNV_OFFSET, .end = len, .slash_ends = true };

	bpf_loop(256, base_step, &c, 0);
	return c.hash | 1;
}

/* The first and the last 8 bytes of the len bytes at buf[start], zero
 * padded: a cheap test before the hash. buf is a scratch buffer of twice
 * ONCE_PATH_MAX bytes, and the name ends within the first half: each word
 * is one load (unaligned, as the architectures once runs on allow), the
 * bytes past the basename masked off, where a loop of byte loads was
 * walked by the verifier at each of its call sites. */
static __always_inline void base_words(__u8 *buf, __u32 start, __u32 len, __u64 *head, __u64 *tail)
{
	__u32 n = len < 8 ? len : 8;
	__u64 h = *(__u64 *)(buf + (start & (ONCE_PATH_MAX - 1)));
	__u64 t = *(__u64 *)(buf + ((start + len - n) & (ONCE_PATH_MAX - 1)));

	if (n < 8) {
		h &= (1ULL << (8 * n)) - 1;
		t &= (1ULL << (8 * n)) - 1;
	}
	*head = h;
	*tail = t;
}

/* A look through an image's pending probes (bpf_loop: its step is verified
 * once, where an unrolled loop of 16 multiplied exit_open's verification
 * time). */
struct probe_ctx {
	struct image_files *t;
	__u8 *buf; /* the name, in a scratch buffer */
	__u64 hash, head, tail;
	__u32 n;   /* ends_step: the name's length */
	__u32 len; /* add_step, claim_step: the basename's length */
	__u8 end;  /* claim_step: its last byte */
	bool done;
	int cand; /* ends_step: the first pending basename the name may end with */
};

/* Is pb held, and not past its time? (The clock is read for each: a
 * field for it in probe_ctx took exit_open's calls past the 512 bytes of
 * stack they may have.) */
static __always_inline bool probe_held(struct probe_base *pb)
{
	return pb->state == PROBE_HELD && bpf_ktime_get_ns() < pb->until;
}

/* May the name end with pending basename i (its length, the '/' before
 * it, its first and last 8 bytes)? The hash is checked after the loop:
 * a bpf_loop inside a bpf_loop step made the step's verification 1,350
 * instructions. */
static long ends_step(__u64 i, struct probe_ctx *c)
{
	struct probe_base *pb = &c->t->probes[i & (PROBE_BASES - 1)];
	__u32 len = pb->len, n = c->n;
	__u64 head, tail;

	if (pb->state != PROBE_PENDING && !probe_held(pb))
		return 0;
	if (len == 0 || len > 255 || len > n || n >= ONCE_PATH_MAX)
		return 0;
	if (len < n && c->buf[(n - len - 1) & (ONCE_PATH_MAX - 1)] != '/')
		return 0;
	base_words(c->buf, n - len, len, &head, &tail);
	if (head != pb->head || tail != pb->tail)
		return 0;
	c->cand = i & (PROBE_BASES - 1);
	return 1;
}

/* Is the basename pending already as i? Held, it is pending again: a new
 * chain of it has begun, which a later open may end. */
static long add_step(__u64 i, struct probe_ctx *c)
{
	struct probe_base *pb = &c->t->probes[i & (PROBE_BASES - 1)];
	__u64 st = pb->state;

	if ((st != PROBE_PENDING && st != PROBE_HELD) || pb->hash != c->hash || pb->len != c->len)
		return 0;
	if (st == PROBE_HELD) {
		if (__sync_val_compare_and_swap(&pb->state, PROBE_HELD, PROBE_PENDING) != PROBE_HELD)
			return 0; /* taken or ended meanwhile: look on */
		__sync_fetch_and_add(&c->t->pending, 1);
	}
	c->done = true;
	return 1;
}

/*
 * A process's probe generation, bumped at each failure it sends: a repeat
 * counted in the kernel (tally_repeat) must end no probe, which it can
 * tell without reading its name only while the generation is what it was
 * when its kind last went the whole way. Slots are by pid, shared by the
 * pids equal modulo their number: another process's failure only has a
 * repeat go the whole way once more. An array, not the image's table:
 * the lookup costs no helper call.
 *
 * Beside it, what each of the last PROBE_FAILS failures was, for where no
 * image table knows (once run): failure number n (the generation it made)
 * in fail[n % PROBE_FAILS], one word, the hash of its basename's stem
 * (fail_stem) in the bits above FAIL_TAG and n's low bits in FAIL_TAG,
 * written with one store after the generation's add numbered it: a
 * reader that finds n's bits there has n's stem, never half of another
 * failure's. No stem (0 above FAIL_TAG): its name is not known, and any
 * repeat may end its probe.
 */
#define PROBE_GENS (1 << 15)
#define FAIL_TAG ((1ULL << 24) - 1)

struct probe_gen {
	__u64 gen;
	__u64 fail[PROBE_FAILS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROBE_GENS);
	__type(key, __u32);
	__type(value, struct probe_gen);
} probe_gens SEC(".maps");

static __always_inline struct probe_gen *probe_gen_slot(void)
{
	__u32 k = (bpf_get_current_pid_tgid() >> 32) & (PROBE_GENS - 1);

	return bpf_map_lookup_elem(&probe_gens, &k);
}

/* A failure sent, of a basename whose stem is stem (0: not known): the
 * generation moves, and the failure's word is written. */
static __always_inline void probe_gen_fail(__u64 stem)
{
	struct probe_gen *g = probe_gen_slot();
	__u64 n;

	if (!g)
		return;
	n = __sync_fetch_and_add(&g->gen, 1) + 1;
	g->fail[n & (PROBE_FAILS - 1)] = (stem & ~FAIL_TAG) | (n & FAIL_TAG);
}

/* The current process's generation. */
static __always_inline __u64 probe_gen(void)
{
	struct probe_gen *g = probe_gen_slot();

	return g ? g->gen : 0;
}

/* A walk back through a failed name's basename, hashing its stem: the
 * bytes before its first '.', the hash started again at each '.'. */
struct stem_ctx {
	__u8 *buf;
	__u64 hash;
	__u32 end;
};

static long stem_step(__u64 i, struct stem_ctx *c)
{
	__u8 ch;

	if (i >= c->end)
		return 1;
	ch = c->buf[(c->end - 1 - (__u32)i) & (ONCE_PATH_MAX - 1)];
	if (ch == '/')
		return 1;
	c->hash = ch == '.' ? FNV_OFFSET : (c->hash ^ ch) * FNV_PRIME;
	return 0;
}

/* A stem's hash as a failure's word holds it: the top bit set, so that
 * a known one is never 0 above FAIL_TAG; FAIL_TAG's bits clear. */
static __always_inline __u64 stem_bits(__u64 hash)
{
	return (hash | (1ULL << 63)) & ~FAIL_TAG;
}

/* The stem of the basename of the failed name in buf (len bytes), as user
 * space names a probe chain: path.Base of the name, a chain's key, and
 * the stem its variants share (detect's variantOf). 0 where the name
 * can't say: none, maybe cut, or ending in '/' or '.' (path.Base strips
 * the slash, ".." is no chain, a name cleaned under RESOLVE_IN_ROOT
 * loses its last dots). */
static __always_inline __u64 fail_stem(__u8 *buf, long len, __u16 status)
{
	struct stem_ctx c = { .buf = buf, .hash = FNV_OFFSET };
	__u8 last;

	if (len <= 0 || len >= ONCE_PATH_MAX - 1 || (status & ST_FNAME_TRUNCATED))
		return 0;
	last = buf[(len - 1) & (ONCE_PATH_MAX - 1)];
	if (last == '/' || last == '.')
		return 0;
	c.end = len;
	bpf_loop(ONCE_PATH_MAX, stem_step, &c, 0);
	return stem_bits(c.hash);
}

/* Failed basenames the table can't hold: any open may end a probe. */
static __always_inline void probes_overflow(struct image_files *t)
{
	t->overflow = 1;
}

/* Take slot i for the basename if it is free (or held past its time). */
static long claim_step(__u64 i, struct probe_ctx *c)
{
	struct probe_base *pb = &c->t->probes[i & (PROBE_BASES - 1)];
	__u64 st = pb->state;
	__u8 end;

	/* Each case its own compare-and-swap: st kept past the clock's read
	 * would take stack, which probe_add's calls have no more of. */
	if (st == PROBE_HELD) {
		if (probe_held(pb) || __sync_val_compare_and_swap(&pb->state, PROBE_HELD, PROBE_WRITING) != PROBE_HELD)
			return 0;
	} else if (st != PROBE_FREE || __sync_val_compare_and_swap(&pb->state, PROBE_FREE, PROBE_WRITING) != PROBE_FREE) {
		return 0;
	}
	end = c->end;
	pb->hash = c->hash;
	pb->head = c->head;
	pb->tail = c->tail;
	pb->len = c->len;
	__sync_fetch_and_or(&c->t->last[(end >> 6) & 3], 1ULL << (end & 63));
	__sync_fetch_and_add(&c->t->pending, 1);
	__sync_lock_test_and_set(&pb->state, PROBE_PENDING);
	c->done = true;
	return 1;
}

/* Whether any of t's probes pends or is held: only then can a name end
 * one, and is ends_probe worth its call. */
static __always_inline bool probes_pend(struct image_files *t)
{
	return t->pending || t->overflow || t->held_until;
}

/* Whether the name in buf (n bytes) ends in "/ld.so.cache": ld.so's
 * cache, whose open between a library's misses in the search path's
 * entries and its find tells user space the find came through the cache
 * (trace.ChainDetail.ViaCache): sent while probes pend, as an open that
 * may end one is. */
static __always_inline bool ld_cache_name(const __u8 *buf, long n)
{
	const char want[] = "/ld.so.cache";
	const long len = sizeof(want) - 1;

	if (n < len)
		return false;
#pragma unroll
	for (int j = 0; j < len; j++)
		if (buf[(n - len + j) & (ONCE_PATH_MAX - 1)] != want[j])
			return false;
	return true;
}

/*
 * Whether a successful open of the name at user address fname may end one
 * of t's pending probes (its basename is a pending one's): if so, that one
 * is pending no more. Errs towards yes: an open it says yes to is sent.
 * Reading the name is most of its cost, paid only while probes pend; it
 * is read where send_open reads it (s->open.data), and kept there for it
 * (s->fname_read), so that an open sent is not read twice. A global
 * function: its two callers share one verification.
 */
__noinline int ends_probe(struct image_files *t, __u64 fname)
{
	struct scratch *s = get_scratch();
	struct probe_ctx c = { .t = t };
	long n;

	if (!t)
		return 0;
	/* No name (an io_uring open's): nothing read, nothing overwritten
	 * (a failed read zeroes its buffer, which shares the union with the
	 * io_uring event). */
	if (!s || t->overflow || !fname)
		return true;
	if (!t->pending) {
		/* Only held names, if any: none past their time. */
		__u64 until = t->held_until;

		if (bpf_ktime_get_ns() >= until) {
			__sync_val_compare_and_swap(&t->held_until, until, 0);
			return false;
		}
	}
	n = bpf_probe_read_user_str(s->open.data, ONCE_PATH_MAX, (const void *)fname);
	if (n <= 0)
		return true; /* unreadable: can't tell */
	s->fname_read = n;
	if (n == 1 || n >= ONCE_PATH_MAX)
		return true; /* empty, or maybe cut: can't tell */
	n -= 1;
	__u8 end = s->open.data[(n - 1) & (ONCE_PATH_MAX - 1)];
	if (end == '/')
		return true;
	if (ld_cache_name(s->open.data, n))
		return true;
	if (!(t->last[(end >> 6) & 3] & (1ULL << (end & 63))))
		return false;
	c.buf = s->open.data;
	c.n = n;
	c.cand = -1;
	bpf_loop(PROBE_BASES, ends_step, &c, 0);
	if (c.cand < 0)
		return false;
	/* A candidate: the open is sent. Only if the whole basename is the
	 * one pending (the hash) is it pending no more, but held; with a
	 * lookalike, the one it resembles stays pending, and others are not
	 * looked at: they too stay, at worst sending more. */
	struct probe_base *pb = &t->probes[c.cand & (PROBE_BASES - 1)];
	__u32 len = pb->len;
	struct base_ctx b = { .buf = s->open.data, .hash = FNV_OFFSET, .end = n };
	if (len > 255 || pb->state != PROBE_PENDING)
		return true;
	bpf_loop(len, base_step, &b, 0);
	if (b.hash != pb->hash)
		return true;
	/* .until before the state: a thread that sees it held reads it. */
	__u64 until = bpf_ktime_get_ns() + PROBE_HELD_MS * 1000000ULL;
	pb->until = until;
	if (__sync_val_compare_and_swap(&pb->state, PROBE_PENDING, PROBE_HELD) == PROBE_PENDING) {
		if (t->held_until < until)
			t->held_until = until;
		__sync_fetch_and_add(&t->pending, -1);
	}
	return true;
}

/* sig's sequence in an image's small table, from slot start: SEEN_FOUND,
 * SEEN_ADDED, or 0 when every slot looked at is another file's. A global
 * function, verified once apart from its callers: the loop's outcomes
 * don't multiply theirs. A plain loop: a bpf_loop step costs a call
 * each, and past the small table's size every first open scans a full
 * group. */
__noinline int seen_in_small(struct image_files *t, __u32 start, __u64 sig, __u32 solo)
{
	struct seen_ctx c = { .small = t, .sig = sig, .start = start, .solo = solo };

	if (!t)
		return 0;
	for (__u32 i = 0; i < SEEN_SMALL_PROBES; i++)
		if (seen_step_small(i, &c))
			break;
	return c.res;
}

/* The slots of a big table's sequence looked at in a plain loop, before
 * the rest by bpf_loop: most sequences end in their first group. */
#define SEEN_BIG_FIRST 8

static long seen_step_big_rest(__u64 i, struct seen_ctx *c)
{
	return seen_step_big(i + SEEN_BIG_FIRST, c);
}

/* The same in a big table, whose sequences are SEEN_BIG_PROBES long: the
 * first group of slots in a plain loop, not unrolled (unrolled, every
 * program using it was much slower to verify), the rest by bpf_loop. */
__noinline int seen_in_big(struct image_files_big *big, __u32 start, __u64 sig, __u32 solo)
{
	struct seen_ctx c = { .big = big, .sig = sig, .start = start, .solo = solo };

	if (!big || start >= SEEN_BIG)
		return 0;
	for (__u32 i = 0; i < SEEN_BIG_FIRST; i++)
		if (seen_step_big(i, &c))
			return c.res;
	bpf_loop(SEEN_BIG_PROBES - SEEN_BIG_FIRST, seen_step_big_rest, &c, 0);
	return c.res;
}

/* The leader's table, made if it has none. A thread of a new process
 * that loses the race to make it gets NULL from the create: then it is
 * there to look up. */
static __always_inline struct image_files *image_files_of(struct task_struct *leader)
{
	struct image_files *t;

	t = bpf_task_storage_get(&image_files, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		t = bpf_task_storage_get(&image_files, leader, 0, 0);
	return t;
}

/* The leader's big table in map (image_files_big or image_files_big2),
 * made if it has none; NULL, and *none set, if it can't be made. */
static __always_inline struct image_files_big *big_table(void *map, struct task_struct *leader, __u32 *none)
{
	struct image_files_big *big;

	big = bpf_task_storage_get(map, leader, 0, 0);
	if (big)
		return big;
	big = bpf_task_storage_get(map, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	/* Made by another thread just now, or no memory. */
	if (!big)
		big = bpf_task_storage_get(map, leader, 0, 0);
	if (!big)
		*none = 1;
	return big;
}

/*
 * The image's successful open of the file sig (file_sig), whose slots are
 * at place (file_place), through the name at fname: look it up in t, the
 * table of leader, adding it if it is new and there is room. Returns
 * enum seen_result bits (see image_seen).
 */
static __always_inline int seen_in(struct task_struct *leader, struct image_files *t, __u64 sig, __u64 place,
				   __u64 fname)
{
	struct image_files_big *big = NULL;
	/* Files made together have consecutive inode numbers, and are often
	 * opened together: eight of them share a group of slots (a cache
	 * line), which groups are spread over the table by a hash. */
	__u64 h = (place >> 3) * 0x9e3779b97f4a7c15ULL;
	__u32 in_group = place & 7;
	__u32 solo = 0;
	int res;

	if (btf_casts)
		solo = current_task()->signal->nr_threads == 1;
	res = seen_in_small(t, (h >> 59) * 8 + in_group, sig, solo);
	if (!res && !t->no_big) {
		big = big_table(&image_files_big, leader, &t->no_big);
		/* Multiply-shift: a group in [0, SEEN_BIG / 8). */
		if (big)
			res = seen_in_big(big, (((h >> 32) * (SEEN_BIG / 8)) >> 32) * 8 + in_group, sig, solo);
	}
	if (!res && big && !t->no_big2) {
		big = big_table(&image_files_big2, leader, &t->no_big2);
		/* Another group than in the first: the hash's low half. */
		if (big)
			res = seen_in_big(big, (((h & 0xffffffffULL) * (SEEN_BIG / 8)) >> 32) * 8 + in_group, sig,
					  solo);
	}
	if (!res)
		res = SEEN_FULL;
	if (res != SEEN_FOUND && probes_pend(t) && ends_probe(t, fname))
		res |= SEEN_ENDS_PROBE;
	return res;
}

static __always_inline bool probe_errno(long ret)
{
	/* enum miss_errno, as the engine's trace.IsMiss. */
	return ret == -MISS_ENOENT || ret == -MISS_EACCES || ret == -MISS_ENOTDIR || ret == -MISS_ENAMETOOLONG ||
	       ret == -MISS_ELOOP;
}

/*
 * A failed open of the name at s->open.data (flen bytes): remember its
 * basename among the pending ones of t, the image's table, or mark them
 * overflowed.
 */
static __noinline int probe_add_in(struct image_files *t, __u32 flen)
{
	struct scratch *s = get_scratch();
	struct base_ctx c = { .hash = FNV_OFFSET, .slash_ends = true };
	struct probe_ctx pc = {};

	if (!s)
		return 0;
	if (flen == 0 || flen >= ONCE_PATH_MAX)
		return 0; /* no name: user space starts no chain */
	c.buf = s->open.data;
	c.end = flen;
	if (s->open.data[(flen - 1) & (ONCE_PATH_MAX - 1)] == '/') {
		/* "dir/": its basename is not at the end. Rare: give up
		 * telling which opens end a probe. */
		probes_overflow(t);
		return 0;
	}
	bpf_loop(256, base_step, &c, 0);
	if (c.len == 0 || c.len > 255) {
		probes_overflow(t);
		return 0;
	}
	s->base_hash = c.hash | 1; /* as base_hash gives it */
	pc.t = t;
	pc.hash = c.hash;
	pc.len = c.len;
	pc.end = s->open.data[(flen - 1) & (ONCE_PATH_MAX - 1)];
	base_words(s->open.data, flen - c.len, c.len, &pc.head, &pc.tail);
	bpf_loop(PROBE_BASES, add_step, &pc, 0);
	if (pc.done)
		return 0; /* pending already */
	bpf_loop(PROBE_BASES, claim_step, &pc, 0);
	if (!pc.done)
		probes_overflow(t);
	return 0;
}

/* What image_op does with the current image's table. */
enum image_op_kind {
	IMAGE_SEEN = 0,
	IMAGE_ENDS_PROBE = 1,
	IMAGE_PROBE_ADD = 2,
	IMAGE_PROBES_UNKNOWN = 3,
};

/*
 * Everything done with the current image's table, made if it has none:
 * one global function, verified once per program, for what the ones
 * below ask. The process's table is in its group leader's task storage,
 * and the verifier checks each load of group_leader from the current
 * task by searching the kernel's BTF for types by name, several searches
 * of every type it has: the most of its time spent on any one
 * instruction. So one such load per program, not one per use. Returns 0
 * with no table (no memory): then the open is sent, as without
 * first_opens_unsent.
 */
__noinline int image_op(__u32 op, __u64 a, __u64 b, __u64 c)
{
	struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
	struct image_files *t = image_files_of(leader);

	if (!t)
		return 0;
	switch (op) {
	case IMAGE_SEEN:
		return seen_in(leader, t, a, b, c);
	case IMAGE_ENDS_PROBE:
		if (probes_pend(t) && ends_probe(t, a))
			return SEEN_ENDS_PROBE;
		return SEEN_ADDED;
	case IMAGE_PROBE_ADD:
		return probe_add_in(t, (__u32)a);
	case IMAGE_PROBES_UNKNOWN:
		probes_overflow(t);
		return 0;
	}
	return 0;
}

/*
 * The current image's successful open of the file sig (file_sig), whose
 * slots are at place (file_place), through the name at fname: look it
 * up, adding it if it is new and there is room. Returns
 * enum seen_result bits, or 0 when there is no table (no memory): then the
 * open is sent, as without first_opens_unsent.
 */
static __always_inline int image_seen(__u64 sig, __u64 place, __u64 fname)
{
	return image_op(IMAGE_SEEN, sig, place, fname);
}

/* Whether the current image's lookup of the name at fname may end a
 * pending probe (a lookup with no file identity to look up): SEEN_ENDS_PROBE,
 * else SEEN_ADDED (not sent), or 0 with no table. */
static __always_inline int image_ends_probe(__u64 fname)
{
	return image_op(IMAGE_ENDS_PROBE, fname, 0, 0);
}

/* A failed open of the name at s->open.data (flen bytes): remember its
 * basename among the image's pending ones (probe_add_in). */
static __always_inline int probe_add(__u32 flen)
{
	return image_op(IMAGE_PROBE_ADD, flen, 0, 0);
}

/* A failed open whose basename can't be remembered (an io_uring one: its
 * name is gone by its completion): any later open may end its probe. */
static __always_inline void image_probes_unknown(void)
{
	image_op(IMAGE_PROBES_UNKNOWN, 0, 0, 0);
	probe_gen_fail(0);
}

/* Report pp's count of opens counted, not sent, as an EVENT_UNSENT of
 * task t (current): for the image before t's present one if prev_image
 * (at exec, self_exec_id has just been incremented). A report the ring
 * has no room for leaves the counts in pp, for the thread's next event or
 * report to carry, and is counted deferred, not lost: nothing it held is;
 * where none will (final: the thread's exit, its image's end at exec),
 * its counts are counted lost, calls and not one record. */
static __always_inline void report_unsent(struct pending_open *pp, struct task_struct *t, bool prev_image,
					  bool final)
{
	struct proc_buf *pb = proc_event_for(t, EVENT_UNSENT);
	bool sent = false;

	if (pb) {
		pb->ev.unsent = pp->unsent;
		pb->ev.lookups_unsent = pp->lookups_unsent;
		pb->ev.miss_repeats = pp->miss.count;
		pb->ev.miss_timed = pp->miss.timed;
		pb->ev.miss_ns = pp->miss.ns;
		pb->ev.miss_sys = pp->miss.sys;
		pb->ev.lookup_miss_repeats = pp->lmiss.count;
		pb->ev.lookup_miss_timed = pp->lmiss.timed;
		pb->ev.lookup_miss_ns = pp->lmiss.ns;
		pb->ev.lookup_miss_sys = pp->lmiss.sys;
		if (prev_image)
			pb->ev.task.exec_id--;
		sent = emit_counted(pb, sizeof(struct proc_event), final ? CNT_MAX : CNT_REPORTS_DEFERRED);
	}
	if (!sent && !final)
		return;
	if (!sent)
		count_n(CNT_COUNTS_LOST, (__u64)pp->unsent + pp->lookups_unsent + pp->miss.count + pp->lmiss.count);
	pp->unsent = 0;
	pp->lookups_unsent = 0;
	pp->miss.count = 0;
	pp->miss.timed = 0;
	pp->miss.ns = 0;
	pp->lmiss.count = 0;
	pp->lmiss.timed = 0;
	pp->lmiss.ns = 0;
}

/* Move the thread's counts of calls not sent into ev, which reports
 * them: first opens and lookups, and repeats of its last failed open
 * and of its last failed lookup sent.
 * Should ev not be sent, counts_back puts them back. */
static __always_inline void take_counts(struct pending_open *pp, struct open_event *ev)
{
	ev->unsent = pp->unsent;
	ev->lookups_unsent = pp->lookups_unsent;
	ev->miss_repeats = pp->miss.count;
	ev->miss_timed = pp->miss.timed;
	ev->miss_ns = pp->miss.ns;
	ev->miss_sys = pp->miss.sys;
	ev->lookup_miss_repeats = pp->lmiss.count;
	ev->lookup_miss_timed = pp->lmiss.timed;
	ev->lookup_miss_ns = pp->lmiss.ns;
	ev->lookup_miss_sys = pp->lmiss.sys;
	pp->unsent = 0;
	pp->lookups_unsent = 0;
	pp->miss.count = 0;
	pp->miss.timed = 0;
	pp->miss.ns = 0;
	pp->lmiss.count = 0;
	pp->lmiss.timed = 0;
	pp->lmiss.ns = 0;
}

/* The counts take_counts moved into the scratch's open event, which the
 * ring had no room for: back in the thread's slot, for its next event or
 * report. A function of its own: the open exit's stack is at the
 * verifier's bound. */
__noinline int counts_back(struct pending_open *pp)
{
	struct scratch *s = get_scratch();
	struct open_event *ev;

	if (!pp || !s)
		return 0;
	ev = &s->open.ev;
	pp->unsent += ev->unsent;
	pp->lookups_unsent += ev->lookups_unsent;
	pp->miss.count += ev->miss_repeats;
	pp->miss.timed += ev->miss_timed;
	pp->miss.ns += ev->miss_ns;
	pp->lmiss.count += ev->lookup_miss_repeats;
	pp->lmiss.timed += ev->lookup_miss_timed;
	pp->lmiss.ns += ev->lookup_miss_ns;
	return 0;
}

/* The same, at current's exit or exec: the image it leaves. */
static __always_inline void flush_unsent(struct task_struct *t, bool prev_image)
{
	struct pending_open *pp;

	pp = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);
	if (pp && (pp->unsent || pp->lookups_unsent || pp->miss.count || pp->lmiss.count))
		report_unsent(pp, t, prev_image, true);
	/* A new image looks nothing up again yet. */
	if (pp && prev_image) {
		pp->miss.on = 0;
		pp->lmiss.on = 0;
	}
}

/* At an exec's entry: the thread's counted repeats of a miss go out
 * before the exec's events (the exec may end the search they are part
 * of), and its unsent opens and lookups with them, while the task still
 * has the comm of the image that made them. At the exec itself the comm
 * is already the new image's: a shell's forked child that opened a
 * redirection's file and sent nothing before its exec would have its
 * image first seen, and named, by the program it runs. */
static __always_inline void flush_miss_repeats(void)
{
	struct pending_open *pp;

	pp = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);
	if (pp && (pp->miss.count || pp->lmiss.count || pp->unsent || pp->lookups_unsent))
		report_unsent(pp, bpf_get_current_task_btf(), false, false);
}

/* Reported at least every this many: a thread that only opens new files
 * (a server, a long copy) has its opens reach the per-comm counts while
 * it runs, not only at its exit. */
#define UNSENT_REPORT 256

/* One more successful open counted, not sent. */
static __always_inline void count_unsent(struct pending_open *pp, bool untracked)
{
	count(CNT_OPENS_UNSENT);
	if (untracked)
		count(CNT_FILES_UNTRACKED);
	if (++pp->unsent >= UNSENT_REPORT)
		report_unsent(pp, bpf_get_current_task_btf(), false, false);
}

/* One more successful lookup counted, not sent. */
static __always_inline void count_lookup_unsent(struct pending_open *pp)
{
	count(CNT_LOOKUPS_UNSENT);
	if (++pp->lookups_unsent >= UNSENT_REPORT)
		report_unsent(pp, bpf_get_current_task_btf(), false, false);
}

/* At the exec of current (t), the process's only thread now: report its
 * unsent opens and lookups for the image it leaves; then the new image
 * starts with no files (lookups use the table in every mode). */
static __always_inline void image_files_on_exec(struct task_struct *t)
{
	flush_unsent(t, true);
	bpf_task_storage_delete(&image_files, bpf_get_current_task_btf());
	bpf_task_storage_delete(&image_files_big, bpf_get_current_task_btf());
	bpf_task_storage_delete(&image_files_big2, bpf_get_current_task_btf());
}

#endif /* ONCE_IMAGE_FILES_BPF_H */
